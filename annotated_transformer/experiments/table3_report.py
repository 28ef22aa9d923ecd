"""Chapter 06's findings in words, and the extended run's results as the chapter reads them.

The chapter's live run and the committed extended run (`table3_extended`) are read the same way: a
budget is a number of epochs of the whole corpus and of dropout's small one, and the six findings
are assessed there (`findings.assess`). This module turns those verdicts into the sentences a
student reads first (`conclusion`), with each finding's direction, size, interval and the smallest
change the runs could have seen, and exports and reads the extended run's committed file.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from . import findings as f
from . import table3_extended as extended

EXTENDED_NAME = "runs.json"

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
def export(
    run_dir: str | os.PathLike, path: str | os.PathLike, targets: Mapping[str, int]
) -> Path:
    """Write every job's curve of an extended run folder to `path` (the committed results file),
    with the epochs the run aims at per corpus (`targets`: {"full": 8, "small": 40}).

    Refuses to replace a file that holds a job or an epoch the run folder lacks: a results file is
    only ever replaced by a longer run of the same jobs.
    """
    from ..runtime.files import atomic_write_text

    run_dir, path = Path(run_dir), Path(path)
    if path.resolve().is_relative_to(run_dir.resolve()):
        raise ValueError(
            f"--export {path} lies inside the run folder {run_dir}, whose files it reads; "
            "export to a path outside it (results/table3_extended_<profile>/runs.json)"
        )
    records = extended.collect(run_dir)
    if not records:
        raise ValueError(f"{run_dir} holds no finished epoch: nothing to export")
    identity = json.loads((run_dir / extended.PLAN_NAME).read_text())["identity"]
    if path.is_file():
        old = read_extended(path)
        mine = {_key(r): len(r["curve"]) for r in records}
        lost = [
            f"{'-'.join(map(str, _key(r)))} ({len(r['curve'])} epochs)"
            for r in old["jobs"]
            if mine.get(_key(r), 0) < len(r["curve"])
        ]
        if lost or old["identity"] != identity:
            what = ", ".join(lost[:4]) if lost else "other Table 3 settings"
            raise ValueError(
                f"{path} holds what {run_dir} lacks ({what}); export to another path, or "
                "continue the run that wrote it"
            )
    document = {
        "identity": identity,
        "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": _cpu_name(),
        "targets": dict(targets),
        "jobs": records,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(document, indent=1))


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _key(record: Mapping) -> tuple:
    return (record["corpus"], record["row"], record["seed"])


def read_extended(path: str | os.PathLike) -> dict:
    """The committed extended run: {"identity", "jobs": [job records with curves], ...}."""
    return json.loads(Path(path).read_text())


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
    # dropout's small corpus at the same share of its target as the full corpus
    targets = document["targets"]
    per_full = max(1, targets["small"] // targets["full"])
    out = []
    for epoch in range(1, full_done + 1):
        small_epoch = min(small_done, epoch * per_full)
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
    import math

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
def _pct(x: float) -> str:
    return f"{x:+.1f}%"


def _interval(c: Mapping) -> str:
    low, high = c["interval_pct"]
    return f"[{low:+.1f}, {high:+.1f}] at {100 * (1 - c['level']):.1f}% confidence"


def comparison_sentence(finding: Mapping, c: Mapping) -> str:
    """One comparison: which row, which way, how much, and what the interval allows."""
    a, b = c["first"], c["second"]
    if not c["trained"]:
        return f"{a} against {b} was not trained in this run"
    if c["difference_pct"] is None:
        return f"{a} against {b} has {c['reason']}"
    change = c["difference_pct"]
    way = "higher" if change > 0 else "lower"
    size = f"{a}'s perplexity is {abs(change):.1f}% {way} than {b}'s ({_interval(c)})"
    if finding["kind"] == "tie":
        margin = f.percent(f.TIE_MARGIN)
        if c["verdict"] == f.HOLDS:
            return f"{size}: inside the ±{margin:.0f}% margin"
        if c["verdict"] == f.DOES_NOT_HOLD:
            return f"{size}: outside the ±{margin:.0f}% margin"
        return f"{size}: the interval reaches past the ±{margin:.0f}% margin"
    if c["verdict"] == f.CANNOT_TELL:
        return (
            f"{size}; a true change of {c['detectable_pct']:.1f}% or more would have been found "
            "four times in five"
        )
    if c["verdict"] == f.HOLDS:
        return f"{size}, as the paper found"
    return f"{size}, the opposite of the paper's finding"


def finding_sentence(finding: Mapping, note: str = "") -> str:
    """A finding's verdict and the reason, in one sentence (`note`: a reason the numbers alone do
    not give, such as whether dropout's rows had begun to overfit)."""
    name = finding["finding"]
    verdict = {
        f.HOLDS: "holds",
        f.DOES_NOT_HOLD: "does not hold",
        f.CANNOT_TELL: "cannot be told",
    }[finding["verdict"]]
    parts = [comparison_sentence(finding, c) for c in finding["comparisons"]]
    text = f"**{name[0].upper() + name[1:]}** {verdict}: " + "; ".join(parts) + "."
    return f"{text} {note}" if note else text


def overfit_note(small_curves: Mapping[str, Sequence[float]], row: str = "base") -> str:
    """Whether `row`'s mean curve on the small corpus has passed its lowest point: dropout can
    only help a model that has begun to overfit."""
    curve = small_curves.get(row, [])
    if not curve:
        return ""
    lowest = min(range(len(curve)), key=curve.__getitem__) + 1
    if extended.small_minimum_passed(curve):
        rise = 100 * (curve[-1] / curve[lowest - 1] - 1)
        return (
            f"{row} on the small corpus reached its lowest perplexity at epoch {lowest} of "
            f"{len(curve)} and ended {rise:.1f}% above it: it had begun to overfit."
        )
    return (
        f"{row} on the small corpus was still improving at its last epoch ({len(curve)}): no "
        "row had begun to overfit, so dropout had nothing to prevent yet."
    )


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
    curves: Mapping[str, Sequence[float]], first: str = "C1", second: str = "C3"
) -> str:
    """When `second`'s mean curve falls below `first`'s for good (the deeper stack overtaking the
    shallow one), from per-epoch mean curves; empty without both curves."""
    a, b = curves.get(first, []), curves.get(second, [])
    n = min(len(a), len(b))
    if n == 0:
        return ""
    behind = [b[i] >= a[i] for i in range(n)]
    if not behind[-1]:
        since = n - next(i for i, x in enumerate(reversed(behind)) if x)
        return (
            f"By epoch {since + 1} {second} had overtaken {first} for good (perplexity "
            f"{b[-1]:.1f} against {a[-1]:.1f} after epoch {n}): depth starts slower and ends ahead."
        )
    return (
        f"After {n} epoch{'s' if n > 1 else ''} {second} was still behind {first} (perplexity "
        f"{b[-1]:.1f} against {a[-1]:.1f})."
    )


def conclusion(
    budgets: Sequence[tuple[str, str, Sequence[Mapping]]],
    notes: Sequence[Mapping[str, str]] = (),
) -> str:
    """The chapter's closing paragraph: per budget (name, label, findings), a sentence per finding
    (with `notes[i][finding name]` where given), then the findings whose verdict differs between
    the first budget and the last."""
    lines = []
    for i, (name, label, found) in enumerate(budgets):
        extra = notes[i] if i < len(notes) else {}
        lines.append(f"*{name}* ({label}):")
        lines += [f"- {finding_sentence(x, extra.get(x['finding'], ''))}" for x in found]
        lines.append("")
    if len(budgets) > 1:
        first, last = budgets[0][2], budgets[-1][2]
        moved = [
            f"{a['finding']} ({a['verdict']} → {b['verdict']})"
            for a, b in zip(first, last)
            if a["verdict"] != b["verdict"]
        ]
        lines.append(
            f"Between *{budgets[0][0]}* and *{budgets[-1][0]}* the verdicts of "
            + (", ".join(moved) if moved else "no finding")
            + " changed."
        )
    return "\n".join(lines).strip()
