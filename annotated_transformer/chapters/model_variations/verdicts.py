"""Chapter 06's budgets and the extended run's results as the chapter reads them.

The chapter's live run and the committed extended run (`table3_extended`) are read the same way: a
budget is a number of epochs of the whole corpus and of dropout's small one, and the six findings
are assessed there (`statistics.assess`). This module makes those budgets (`extended_budgets`,
labelled in words by `budget_label`), names the findings and their verdicts (from the phrase
table, `phrases`), and exports and reads the extended run's committed file; `findings` computes
what the verdicts say and `sentences` says it (`conclusion`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ...model.config import TABLE3_ALL_ROWS
from ...runtime.locks import output_lock
from ...training import long_run
from ..wording import capitalized
from . import extended
from . import statistics as f
from .phrases import FINDING_WORDS, SHARE_WORDS, VERDICT_MANY, VERDICT_ONE, say

EXTENDED_NAME = "runs.json"
# `table3 --epochs` when not given (commands/table3.py reads it from here)
DEFAULT_EXTENDED_EPOCHS = 8


def share_words(share: int) -> str:
    """1/`share` of the pairs in words: 20 -> "a twentieth"."""
    return SHARE_WORDS.get(share, f"1/{share}")


def budget_label(full_epochs: float, small_epochs: float, share: int) -> str:
    """A budget in words: "1 epoch; dropout rows: 10 epochs on a twentieth of the pairs"."""
    return say(
        "budget",
        full=epochs_words(full_epochs),
        small=epochs_words(small_epochs),
        share=share_words(share),
    )


# ------------------------------------------------------------------------------ the extended run
def export_targets(
    run_dir: str | os.PathLike,
    asked: Mapping[str, int] | None = None,
    say: Callable[[str], object] | None = None,
) -> dict[str, int]:
    """The epochs per corpus the export writes as the run's targets: the folder's own record
    (`table3_extended.Table3Run.write_identity`), never a flag's. `asked` (targets a caller was
    given) must agree with the record, else ValueError in one line; a folder made before the
    record takes `asked`, or the epochs its curves hold, saying so to `say`."""
    recorded = extended.recorded_targets(run_dir)
    if recorded is not None:
        differ = {k: v for k, v in (asked or {}).items() if recorded.get(k, v) != v}
        if differ:
            flags = {"full": "--epochs", "small": "--small-epochs"}
            raise ValueError(
                f"{run_dir} was trained to "
                + ", ".join(f"{flags.get(k, k)} {recorded[k]}" for k in differ)
                + ", not "
                + ", ".join(f"{v}" for v in differ.values())
                + ": its export writes the targets it records; leave the flag out, or train to "
                "more epochs first"
            )
        return dict(recorded)
    if asked:
        return dict(asked)
    held = extended.held_epochs(extended.collect(run_dir))
    held.setdefault("full", 0)
    held.setdefault("small", 0)
    if say is not None:
        say(
            f"{run_dir} records no targets (made before they were recorded): exporting with the "
            f"epochs its curves hold ({held['full']} of the whole corpus, {held['small']} of "
            "dropout's small one)"
        )
    return held


def export(
    run_dir: str | os.PathLike,
    path: str | os.PathLike,
    targets: Mapping[str, int] | None = None,
    say: Callable[[str], object] | None = None,
) -> Path:
    """Write every job's curve of an extended run folder to `path` (the committed results file),
    with the epochs the run aims at per corpus ({"full": 8, "small": 40}), read from the folder
    (`export_targets`: `targets`, when given, must agree with the folder's record).

    Refuses to replace a file that holds a job or an epoch the run folder lacks: a results file is
    only ever replaced by a longer run of the same jobs.
    """
    run_dir = Path(run_dir)
    run = extended.long_run(run_dir)
    records = run.jobs()
    plan = run.plan()
    # chapter 06 reads both corpora's targets: a corpus the run never trained has 0
    targets = (
        {"full": 0, "small": 0, **export_targets(run_dir, targets, say)}
        if records
        else {}
    )
    document = long_run.RunExport(
        extended.KIND,
        identity=plan.identity if plan else {},
        targets=targets,
        jobs=tuple(records),
        written=long_run.now(),
        machine=long_run.machines(records),
    )
    return run.export(
        path,
        document,
        other="other Table 3 settings",
        example="results/table3_extended_<profile>/runs.json",
    )


def merge_exports(
    paths: Sequence[str | os.PathLike],
    path: str | os.PathLike,
    say: Callable[[str], object] | None = None,
) -> Path:
    """Write to `path` one export of the jobs of the exports at `paths` (and of `path` itself where
    it exists, first): an extended run trained in parts, each part a group of rows on a machine of
    its own (a GPU machine returns the curves, never the checkpoints, so a later call cannot continue
    an earlier one's jobs; it trains other rows instead).

    The parts must share the Table 3 settings (`identity`, the precision included) and, for each
    corpus that both trained, the target epochs. A job in two parts keeps the longer curve (the
    first on a tie), so nothing the file held is lost; each such choice is said to `say`. Every
    job keeps the device it records; `machine` lists them all. A merge that would leave the file's
    budgets (the epoch every job of a corpus reached) shorter than they were is refused."""
    with output_lock(path, "table3 --merge"):
        return _merge_exports(paths, path, say)


def _merge_exports(paths, path, say) -> Path:
    path = Path(path)
    sources = ([path] if path.is_file() else []) + [Path(p) for p in paths]
    if len({p.resolve() for p in sources}) != len(sources):
        raise ValueError(
            "table3 --merge: an export is named twice (the --export file is read too)"
        )
    documents = [(p, read_extended(p)) for p in sources]
    first_path, first = documents[0]
    targets: dict[str, int] = {}
    jobs: dict[tuple, tuple[dict, Path]] = {}
    settings = first["identity"]
    for source, document in documents:
        theirs = document["identity"]
        changed = sorted(
            k for k in {*settings, *theirs} if settings.get(k) != theirs.get(k)
        )
        if changed:
            raise ValueError(
                f"{source} was trained with other Table 3 settings than {first_path} "
                f"({', '.join(changed)} differ): merge exports of one profile and precision only"
            )
        trained = {j["corpus"] for j in document["jobs"]}
        for corpus in sorted(trained):
            target = document["targets"].get(corpus, 0)
            if targets.setdefault(corpus, target) != target:
                raise ValueError(
                    f"{source} trains the {corpus} corpus to {target} epochs, another part to "
                    f"{targets[corpus]}: continue the shorter part to the same target first"
                )
        for job in document["jobs"]:
            key = _key(job)
            held = jobs.get(key)
            corpus, row, seed = key
            if (
                held is not None
                and len(job["curve"]) == len(held[0]["curve"])
                and job["curve"] != held[0]["curve"]
                and say is not None
            ):
                say(
                    f"{corpus}-{row}-seed{seed}: {held[1]} and {source} hold {len(job['curve'])} "
                    f"epochs of two runs of it; {held[1]}'s kept"
                )
            if held is None or len(job["curve"]) > len(held[0]["curve"]):
                if held is not None and say is not None:
                    say(
                        f"{corpus}-{row}-seed{seed}: {len(job['curve'])} epochs from {source} "
                        f"in place of {len(held[0]['curve'])} from {held[1]}"
                    )
                jobs[key] = (job, source)
    records = [jobs[key][0] for key in sorted(jobs)]
    if path.is_file():
        # the chapter's budgets end at the epoch every job of a corpus reached: a part short of
        # the file's would take readings away from the page
        held = documents[0][1]["jobs"]
        for corpus in ("full", "small"):
            before = _whole_epochs(held, corpus)
            after = _whole_epochs(records, corpus)
            if after < before:
                short = sorted(
                    f"{source}"
                    for key, (job, source) in jobs.items()
                    if key[0] == corpus and len(job["curve"]) < before
                )
                raise ValueError(
                    f"merging would cut the {corpus} corpus's budgets in {path} from {before} "
                    f"epochs to {after} ({', '.join(short)} holds fewer): train that part to "
                    f"{before} epochs first, or merge every part into a new file to read them "
                    "all at the shorter budget"
                )
    jobs_kept = tuple(
        long_run.JobRecord.from_view(r, extended.KIND, extended.JOB_KEYS) for r in records
    )
    document = long_run.RunExport(
        extended.KIND,
        identity=first["identity"],
        targets={"full": 0, "small": 0, **targets},
        jobs=jobs_kept,
        written=long_run.now(),
        machine=long_run.machines(jobs_kept),
        notes={
            "merged_from": [
                {
                    "file": source.name,
                    "written": d["written"],
                    "machine": d["machine"],
                    "jobs": sum(jobs[_key(j)][1] == source for j in d["jobs"]),
                }
                for source, d in documents
            ]
        },
    )
    return long_run.write_export(path, document)


def _whole_epochs(jobs: Sequence[Mapping], corpus: str) -> int:
    """The last epoch every job of `corpus` in `jobs` reached (0 where there is none)."""
    rows = sorted({j["row"] for j in jobs if j["corpus"] == corpus})
    return extended.complete_epoch(jobs, corpus, rows) if rows else 0


def _key(record: Mapping) -> tuple:
    return (record["corpus"], record["row"], record["seed"])


def read_extended(path: str | os.PathLike) -> dict:
    """The committed extended run as the chapter reads it (`long_run.RunExport.view`):
    {"identity", "targets", "written", "machine", "jobs": [job records with curves], ...}."""
    return long_run.read_export(path, extended.KIND).view()


def load_extended(
    root: str | os.PathLike | None, profile: str
) -> tuple[dict | None, list[dict]]:
    """The committed extended run of `profile` under the results root `root`, and its budgets
    (`extended_budgets`); (None, []) when none is committed."""
    path = Path(root) / f"table3_extended_{profile}" / EXTENDED_NAME if root else None
    if path is None or not path.is_file():
        return None, []
    document = read_extended(path)
    return document, extended_budgets(document)


def full_corpus_rows(document: Mapping) -> list[str]:
    """The rows an extended run `document` trains on the whole corpus, in Table 3's order."""
    trained = {j["row"] for j in document["jobs"] if j["corpus"] == "full"}
    return [r for r in TABLE3_ALL_ROWS if r in trained]


def reproducing_command(
    document: Mapping | None,
    profile: str,
    rows: Sequence[str] | None = None,
    epochs: int | None = None,
) -> str:
    """The `table3` command that trains what the committed extended run `document` aims at (its
    profile, target epochs, seeds and rows; `--rows` only where they are not the default thirteen),
    or, with none committed, `profile`'s run of `rows` (default the thirteen) for `epochs` (default
    the command's); lines broken as a shell reads them. Workers, device and a time limit change how
    fast and how far one invocation gets, not what the run aims at: they are left out."""
    groups = ["python -m annotated_transformer table3"]  # a flag and its values each
    if document is None:
        groups.append(f"--profile {profile}")
        if epochs is not None:
            groups.append(f"--epochs {epochs}")
        groups.append("--seeds 1 2 3")
        rows = list(rows or extended.extended_rows())
    else:
        profile = document["identity"]["profile"]
        targets = document["targets"]
        seeds = sorted({j["seed"] for j in document["jobs"]})
        rows = full_corpus_rows(document)
        groups += [f"--profile {profile}", f"--epochs {targets['full']}"]
        if targets.get("small"):
            groups.append(f"--small-epochs {targets['small']}")
        groups.append("--seeds " + " ".join(map(str, seeds)))
    if rows != extended.extended_rows():
        groups.append("--rows " + " ".join(rows))
    groups.append(f"--export results/table3_extended_{profile}/{EXTENDED_NAME}")
    lines = [groups[0]]
    for group in groups[1:]:
        if len(lines[-1]) + 1 + len(group) > 86:
            lines[-1] += " \\"
            lines.append("    " + group)
        else:
            lines[-1] += " " + group
    return "\n".join(lines)


def extended_budgets(document: Mapping) -> list[dict]:
    """One budget per whole epoch that every full-corpus job has finished, with dropout's rows
    at the same share of their own target: {"full_epoch", "small_epoch", "label", "ppl",
    "findings"}."""
    jobs = document["jobs"]
    rows = sorted({j["row"] for j in jobs if j["corpus"] == "full"})
    share = document["identity"]["overfit_share"]
    full_done = extended.complete_epoch(jobs, "full", rows)
    small_rows = sorted({j["row"] for j in jobs if j["corpus"] == "small"})
    small_done = extended.complete_epoch(jobs, "small", small_rows) if small_rows else 0
    # dropout's small corpus at the same share of its target as the full corpus (rounded down, so
    # that the last budget holds both targets whole; at least one epoch)
    targets = document["targets"]
    out = []
    for epoch in range(1, full_done + 1):
        share_of_target = max(1, epoch * targets["small"] // targets["full"])
        small_epoch = min(small_done, share_of_target)
        ppl = {
            "full": extended.ppl_at_epoch(jobs, "full", epoch),
            "small": extended.ppl_at_epoch(jobs, "small", small_epoch)
            if small_epoch
            else {},
        }
        out.append(
            {
                "full_epoch": epoch,
                "small_epoch": small_epoch,
                "label": budget_label(epoch, small_epoch, share),
                "ppl": ppl,
                "findings": f.assess(f.FINDINGS, ppl),
            }
        )
    return out


def mean_curves(document: Mapping, corpus: str = "full") -> dict[str, list[float]]:
    """{row: geometric-mean validation perplexity over seeds after each epoch all seeds reached}."""

    by_row: dict[str, list[list[float]]] = {}
    for job in document["jobs"]:
        if job["corpus"] == corpus:
            by_row.setdefault(job["row"], []).append([p["ppl"] for p in job["curve"]])
    out = {}
    for row, curves in by_row.items():
        n = min(len(c) for c in curves)
        out[row] = [
            math.exp(sum(math.log(c[i]) for c in curves) / len(curves)) for i in range(n)
        ]
    return out


# ------------------------------------------------------------------------------ the words


def verdict_count(n: int, verdict: str) -> str:
    """ "1 holds", "2 hold", "0 do not hold": a count of findings with their verdict."""
    return say("count", n=n, words=(VERDICT_ONE if n == 1 else VERDICT_MANY)[verdict])


def finding_name(name: str) -> str:
    """A finding's name for a heading or a table: "small d_k hurts" -> "Small keys hurt"."""
    return FINDING_WORDS.get(name) or capitalized(name)


def epochs_words(n: float) -> str:
    """1 -> "1 epoch", 0.5 -> "0.5 epochs"."""
    return say("epochs.one" if n == 1 else "epochs.many", n=n)
