"""Chapter 06's findings in words, and the extended run's results as the chapter reads them.

The chapter's live run and the committed extended run (`table3_extended`) are read the same way: a
budget is a number of epochs of the whole corpus and of dropout's small one, and the six findings
are assessed there (`findings.assess`). This module turns those verdicts into the sentences a
student reads first (`conclusion`), with each finding's direction, size, interval and the smallest
change the runs could have seen, and exports and reads the extended run's committed file.
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
from .phrases import FINDING_WORDS, VERDICT_MANY, VERDICT_ONE, say

EXTENDED_NAME = "runs.json"
# `table3 --epochs` when not given (commands/table3.py reads it from here)
DEFAULT_EXTENDED_EPOCHS = 8

_PARTS = {
    2: "a half",
    3: "a third",
    4: "a quarter",
    5: "a fifth",
    10: "a tenth",
    20: "a twentieth",
}


def share_words(share: int) -> str:
    """1/`share` of the pairs in words: 20 -> "a twentieth"."""
    return _PARTS.get(share, f"1/{share}")


def budget_label(full_epochs: float, small_epochs: float, share: int) -> str:
    """A budget in words: "1 epoch; dropout rows: 10 epochs on a twentieth of the pairs"."""

    def epochs(n: float) -> str:
        return f"{n:g} epoch" + ("" if n == 1 else "s")

    return (
        f"{epochs(full_epochs)}; dropout rows: {epochs(small_epochs)} on "
        f"{share_words(share)} of the pairs"
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


def extended_budgets(document: Mapping, rows: Sequence[str] | None = None) -> list[dict]:
    """One budget per whole epoch that every full-corpus job of `rows` has finished (default: all
    rows in the file), with dropout's rows at the same share of their own target: {"full_epoch",
    "small_epoch", "label", "ppl", "findings"}."""
    jobs = document["jobs"]
    rows = rows or sorted({j["row"] for j in jobs if j["corpus"] == "full"})
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
_VERDICT = VERDICT_ONE


def verdict_words(verdict: str) -> str:
    """A verdict as a sentence says it of one finding: "holds", "does not hold", "cannot be
    told"."""
    return _VERDICT[verdict]


def verdict_count(n: int, verdict: str) -> str:
    """ "1 holds", "2 hold", "0 do not hold": a count of findings with their verdict."""
    return say("count", n=n, words=(VERDICT_ONE if n == 1 else VERDICT_MANY)[verdict])


# What a pair of C rows varies, by the field the pair changes from base.
_ASPECTS = (("n_layers", "depth"), ("d_model", "width"), ("d_ff", "feed-forward size"))


def finding_name(name: str) -> str:
    """A finding's name for a heading or a table: "small d_k hurts" -> "Small keys hurt"."""
    return FINDING_WORDS.get(name, name[:1].upper() + name[1:])


def epochs_words(n: float) -> str:
    """1 -> "1 epoch", 0.5 -> "0.5 epochs"."""
    return say("epochs.one" if n == 1 else "epochs.many", n=n)


def _aspect(first: str, second: str) -> str | None:
    """ "depth" for C1 against C3: the size the two rows vary (None for other pairs)."""
    from . import rows as variations

    try:
        fields = set(variations.changes(first)) | set(variations.changes(second))
    except ValueError:
        return None
    return next((word for field, word in _ASPECTS if field in fields), None)


def comparison_clause(kind: str, c: Mapping, names: Mapping[str, str] = {}) -> str:
    """One comparison in words: which row ends where, by how much, the interval, and what that
    says. A difference whose interval includes no change is said to be within the noise, never
    called a difference; a tie is read against the margin."""
    a, b = names.get(c["first"], c["first"]), names.get(c["second"], c["second"])
    if not c["trained"]:
        return f"{a} against {b} was not trained"
    if c["difference_pct"] is None:
        return f"{a} against {b}: {c['reason']}"
    change = c["difference_pct"]
    low, high = c["interval_pct"]
    side = "above" if change > 0 else "below"
    where = f"{a} ends {abs(change):.1f}% {side} {b} in perplexity"
    interval = f"(interval {low:+.1f}% to {high:+.1f}%)"
    verdict = c["verdict"]
    if kind == "tie":
        margin = f"±{f.percent(f.TIE_MARGIN):.0f}%"
        if verdict == f.HOLDS:
            return f"{where} {interval}, inside the {margin} margin: a tie"
        if verdict == f.DOES_NOT_HOLD:
            better = "better" if change < 0 else "worse"
            return (
                f"{where} {interval}, outside the {margin} margin: {c['first']} did {better} "
                f"than {c['second']}"
            )
        return (
            f"{where} {interval}; the interval reaches past the {margin} margin, so neither a "
            "tie nor a difference can be told"
        )
    if verdict == f.HOLDS:
        return f"{where} {interval}, as in the paper"
    if verdict == f.DOES_NOT_HOLD:
        return f"{where} {interval}, the opposite of the paper"
    return (
        f"{a} ends {abs(change):.1f}% {side} {b}, within the noise: the interval {low:+.1f}% "
        f"to {high:+.1f}% includes no change, and only a change of {c['detectable_pct']:.1f}% "
        "or more would have been found four times in five"
    )


def run_sentence(finding: Mapping, names: Mapping[str, str] = {}, note: str = "") -> str:
    """A finding at one budget: its verdict, the comparison that decides it first (for "bigger is
    better", which size: depth, width or feed-forward), and `note` (a reason the numbers alone do
    not give, such as whether dropout's rows had begun to overfit)."""
    comparisons = finding["comparisons"]
    rank = {f.DOES_NOT_HOLD: 0, f.HOLDS: 1, f.CANNOT_TELL: 2}
    ordered = sorted(comparisons, key=lambda c: (not c["trained"], rank[c["verdict"]]))
    clauses, against = [], []
    for c in ordered:
        clause = comparison_clause(finding["kind"], c, names)
        aspect = _aspect(c["first"], c["second"]) if len(comparisons) > 1 else None
        if aspect and c["verdict"] == f.DOES_NOT_HOLD and c["trained"]:
            against.append(aspect)
        elif aspect:
            verdict = f" {_VERDICT[c['verdict']]}" if c["trained"] else ""
            clause = f"{aspect}{verdict}: {clause}"
        clauses.append(clause)
    if not any(c["trained"] for c in comparisons):
        text = f"was not compared: {'; '.join(clauses)}."
    else:
        because = f" because of {' and '.join(against)}" if against else ""
        text = f"{_VERDICT[finding['verdict']]}{because}: {'; '.join(clauses)}."
    return f"{text} {note}" if note else text


def change_sentence(early: Mapping, late: Mapping, names: Mapping[str, str] = {}) -> str:
    """What the longer budget did to a finding: whether its verdict changed, and for every
    comparison both budgets read, whether the two rows swapped order or the gap narrowed or
    widened (and, while neither can tell, how the smallest detectable change moved)."""
    if not any(c["trained"] for c in early["comparisons"]):
        return "Only the longer run compares it."
    if early["verdict"] == late["verdict"]:
        head = (
            f"The longer budget left the verdict as it was ({_VERDICT[late['verdict']]})"
        )
    else:
        head = (
            f"The longer budget changed the verdict from {_VERDICT[early['verdict']]} to "
            f"{_VERDICT[late['verdict']]}"
        )
    moves = []
    for a, b in zip(early["comparisons"], late["comparisons"]):
        if a["difference_pct"] is None or b["difference_pct"] is None:
            continue
        first, second = a["first"], a["second"]
        x, y = a["difference_pct"], b["difference_pct"]
        if (x > 0) != (y > 0):
            moves.append(
                f"{first} went from {abs(x):.1f}% {'above' if x > 0 else 'below'} {second} to "
                f"{abs(y):.1f}% {'above' if y > 0 else 'below'} it"
            )
        else:
            way = "narrowed" if abs(y) < abs(x) else "widened"
            move = f"the gap between {first} and {second} {way} from {abs(x):.1f}% to {abs(y):.1f}%"
            if a["verdict"] == b["verdict"] == f.CANNOT_TELL and early["kind"] == "worse":
                move += (
                    f", and the smallest change the runs could find from "
                    f"{a['detectable_pct']:.1f}% to {b['detectable_pct']:.1f}%"
                )
            moves.append(move)
    return head + (": " + "; ".join(moves) if moves else "") + "."


def overfit_note(
    small_curves: Mapping[str, Sequence[float]], rows: Sequence[str] = ("base",)
) -> str:
    """Whether the mean curves of `rows` on the small corpus have passed their lowest point:
    dropout can only help a model that has begun to overfit."""
    parts, passed = [], []
    for row in rows:
        curve = small_curves.get(row, [])
        if not curve:
            continue
        lowest = min(range(len(curve)), key=curve.__getitem__) + 1
        if extended.small_minimum_passed(curve):
            rise = 100 * (curve[-1] / curve[lowest - 1] - 1)
            parts.append(
                f"{row} was lowest at epoch {lowest} of {len(curve)} and ended {rise:.1f}% above it"
            )
            passed.append(row)
        else:
            parts.append(f"{row} was still improving at its last epoch ({len(curve)})")
    if not parts:
        return ""
    if passed:
        who = "it had" if len(passed) == 1 else "they had"
        tail = f": {who} begun to overfit, where dropout can help."
    else:
        tail = ": no row had begun to overfit, so dropout had nothing to prevent yet."
    return "On the small corpus " + ", and ".join(parts) + tail


def flattening_note(curves: Mapping[str, Sequence[float]], row: str = "base") -> str:
    """How much `row`'s mean curve fell in its last epoch, and where it first fell by less than 1%
    (the extended run's rule for having trained long enough)."""
    curve = curves.get(row, [])
    if len(curve) < 2:
        return ""
    last = 100 * (1 - curve[-1] / curve[-2])
    flat = extended.flattened_at(curve)
    where = (
        f"it first fell by less than 1% in epoch {flat}"
        if flat
        else "it has not yet fallen by less than 1% in an epoch, so the rows are still learning"
    )
    return (
        f"{row}'s validation perplexity fell {last:.1f}% in epoch {len(curve)} "
        f"({curve[-2]:.2f} to {curve[-1]:.2f}); {where}."
    )


def overtake_note(
    curves: Mapping[str, Sequence[float]],
    first: str = "C1",
    second: str = "C3",
    epochs: Sequence[float] | None = None,
) -> str:
    """Whether `second`'s mean curve fell below `first`'s for good (the deeper stack overtaking
    the shallow one) and, while it is still behind, whether the gap is closing; `epochs`: the
    epoch of each curve point (default 1, 2, ...). Empty without both curves."""
    a, b = curves.get(first, []), curves.get(second, [])
    n = min(len(a), len(b))
    if n == 0:
        return ""
    at = list(epochs)[:n] if epochs is not None else list(range(1, n + 1))
    behind = [b[i] >= a[i] for i in range(n)]
    if not behind[-1]:
        since = n - next((i for i, x in enumerate(reversed(behind)) if x), n)
        return (
            f"{second} overtook {first} for good in epoch {at[since]:g} (perplexity "
            f"{b[-1]:.1f} against {a[-1]:.1f} after {epochs_words(at[-1])}): the deeper stack "
            "starts slower and ends ahead."
        )
    gap = [100 * (b[i] / a[i] - 1) for i in range(n)]
    text = (
        f"After {epochs_words(at[-1])} {second} was still behind {first} (perplexity "
        f"{b[-1]:.1f} against {a[-1]:.1f})"
    )
    if n >= 2 and gap[-1] < gap[0]:
        return (
            f"{text}, but closing: its gap fell from {gap[0]:.0f}% at epoch {at[0]:g} to "
            f"{gap[-1]:.0f}%, so the deeper stack was starting slower, not yet ending worse."
        )
    return text + "."


def _run_title(run: Mapping) -> str:
    return say("run.title", epochs=epochs_words(run["full_epoch"]), name=run["name"])


def conclusion(
    runs: Sequence[Mapping],
    names: Sequence[Mapping[str, str]] = (),
    notes: Sequence[Mapping[str, str]] = (),
) -> str:
    """The findings in words. `runs`: one or two budgets, each {"name": "this run", "label",
    "full_epoch", "findings"}; per run optional `names` (row -> "C1 (1 layer)") and `notes`
    (finding -> a reason). First each run's budget in words, then per finding a bullet with one
    sentence per run and, with two runs, what the longer budget changed."""
    lines = [
        " ".join(f"*{capitalized(r['name'])}*: {r['label']}." for r in runs),
        "",
    ]
    for i, first in enumerate(runs[0]["findings"]):
        parts = [f"**{finding_name(first['finding'])}.**"]
        for k, run in enumerate(runs):
            mine = names[k] if k < len(names) else {}
            note = (notes[k] if k < len(notes) else {}).get(first["finding"], "")
            parts.append(
                f"{_run_title(run)} it {run_sentence(run['findings'][i], mine, note)}"
            )
        if len(runs) > 1:
            parts.append(change_sentence(first, runs[-1]["findings"][i]))
        lines.append("- " + " ".join(parts))
    return "\n".join(lines).strip()
