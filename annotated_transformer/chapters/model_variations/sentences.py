"""Chapter 06's sentences: its verdicts (`findings`) said with its phrase table (`phrases`).

What the chapter trains, how the training went, what the curves, the six findings, BLEU scores
and FLOPs say: each function computes its verdict from plain numbers, mappings and data frames
(never the chapter's globals) and renders it, so that each can be tested by value and by the
inputs that change its words. `closing` makes the chapter's last section from its results record
as read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ...evaluation.results import describe_provenance
from ..wording import capitalized, listed, plural, signed
from . import findings
from . import statistics as f
from .phrases import VERDICT_ONE
from .phrases import say as phrase
from .record import ModelVariationsRecord
from .verdicts import (
    epochs_words,
    finding_name,
    reproducing_command,
    share_words,
    verdict_count,
)


def describe_plan(
    profile: str,
    rows: Sequence[str],
    seeds: int,
    epochs: float,
    overfit_rows: Sequence[str],
    overfit_epochs: int,
    overfit_share: int,
    scale: tuple[int, int, int],
    device: str,
) -> str:
    """What this profile trains: rows × seeds × epochs, dropout's runs, and the scale."""
    width, depth, heads = scale
    return phrase(
        "plan",
        profile=profile,
        trained=len(rows),
        rows=listed(rows),
        seeds=plural(seeds, "seed"),
        epochs=epochs_words(epochs),
        overfit_rows=listed(overfit_rows),
        overfit_epochs=overfit_epochs,
        share=share_words(overfit_share),
        width=width,
        depth=depth,
        heads=heads,
        device=device,
    )


def describe_rows_trained(
    rows: Sequence[str], all_rows: Sequence[str], finding_rows: Sequence[str]
) -> str:
    """Which of Table 3's rows this profile trains, and which comparisons that leaves out
    (empty when it trains them all)."""
    found = findings.rows_trained(rows, all_rows, finding_rows)
    if found is None:
        return ""
    text = phrase("rows.trained", found)
    if found.unread:
        many = "one" if len(found.unread) == 1 else "many"
        text += phrase(f"rows.unread.{many}", rows=listed(found.unread))
    else:
        text += phrase("rows.all_compared")
    if found.extra:
        text += phrase("rows.extra", rows=listed(found.extra))
    if found.others:
        also = ".also" if found.unread else ""
        text += phrase(f"rows.others{also}", rows=listed(found.others))
    return text + phrase("rows.gpu")


def describe_base(
    layers: int, width: int, d_ff: int, heads: int, d_k: int, params: int, vocab: int
) -> str:
    """Base at this scale in one sentence."""
    return phrase(
        "base",
        layers=plural(layers, "layer"),
        width=width,
        d_ff=d_ff,
        heads=plural(heads, "head"),
        d_k=d_k,
        params_m=params / 1e6,
        vocab=vocab,
    )


def describe_calibration(
    record: Mapping, warmup: int, peak: float, batch_tokens: int
) -> str:
    """The committed calibration of warm-up and peak rate (its results record): what was tried,
    the rule, the choice, and what this profile trains with."""
    metrics = record["metrics"]
    share = metrics["share_of_epoch"]
    # below 1: a share of one epoch; from 1 up, whole epochs (scripts/table3_calibration.py)
    kind = "share" if share < 1 else "epoch" if share == 1 else "epochs"
    return phrase(
        "calibration",
        trained=phrase(f"calibration.{kind}", share=share),
        chosen=metrics["chosen"],
        provenance=describe_provenance(record),
        rule=metrics["rule"],
        warmup=warmup,
        peak=peak,
        batch_tokens=batch_tokens,
    )


def describe_whole_epoch(
    by: pd.DataFrame, pre_at: Mapping[str, float], chosen: str, record: Mapping
) -> str:
    """The whole-epoch grid: base's best candidate, which candidates keep C3 no worse than C1,
    and what the pre-norm diagnostic says about depth (`by`: perplexity, candidates × rows;
    `record`: the grid's results record, for where it was measured)."""
    found = findings.whole_epoch(by, pre_at, chosen)
    if found.deeper:
        many = "one" if len(found.deeper) == 1 else "many"
        deeper = phrase(f"whole_epoch.deeper.{many}", found, deeper=listed(found.deeper))
    else:
        deeper = phrase("whole_epoch.deeper.none")
    reading = "deeper" if found.pre_norm_deeper_helps else "same"
    return " ".join(
        [
            phrase("whole_epoch", found),
            deeper,
            phrase("whole_epoch.pre_norm", found),
            phrase(
                f"whole_epoch.pre_norm.{reading}", provenance=describe_provenance(record)
            ),
        ]
    )


def describe_training(measured: pd.DataFrame, seconds: float, workers: int) -> str:
    """How long the runs took (`measured`: one row per run, columns corpus, train_s, eval_s)."""
    found = findings.training(measured, seconds, workers)
    return phrase("training", found, processes=plural(found.workers, "process"))


def describe_overfitting(
    small_mean: pd.DataFrame, dropout_of: Mapping[str, float]
) -> str:
    """Per dropout row on the small corpus: its lowest point, where it ends, and whether it has
    begun to overfit (`small_mean`: columns row, point, epoch, ppl)."""
    ends = findings.overfitting(small_mean, dropout_of)
    parts = [
        phrase("overfit.falling" if end.still_falling else "overfit.rose", end)
        for end in ends
    ]
    text = capitalized("; ".join(parts)) + ". "
    rising = [end.row for end in ends if not end.still_falling]
    if rising:
        many = "one" if len(rising) == 1 else "many"
        return text + phrase(f"overfit.begun.{many}", rows=capitalized(listed(rising)))
    return text + phrase("overfit.none")


def describe_budgets(budgets: Sequence[Mapping], margin_pct: float) -> str:
    """The verdicts at the longest budget counted, and the findings whose verdict changes
    between the budgets."""
    found = findings.budgets(budgets, margin_pct)
    counted = ", ".join(verdict_count(n, v) for v, n in found.counts)
    changed = [finding_name(x).lower() for x in found.changed]
    return (
        phrase("budgets", found, counted=counted)
        + " "
        + (
            phrase("budgets.changed", changed=listed(changed))
            if changed
            else phrase("budgets.unchanged")
        )
    )


def describe_swaps(
    swaps: Sequence[tuple[str, str, Sequence[float]]], compared: int
) -> str:
    """The comparisons whose rows swap order along the curves, and what three looks cost."""
    pairs = [
        phrase(
            "swaps.pair",
            first=a,
            second=b,
            epochs=", ".join(f"{e:g}" for e in es),
        )
        for a, b, es in findings.swapped(swaps)
    ]
    head = phrase("swaps", swapped="; ".join(pairs)) if pairs else phrase("swaps.none")
    return head + " " + phrase("swaps.looks", compared=compared)


def describe_extended_plan(
    live_rows: Sequence[str], live_epochs: float, document: Mapping | None, profile: str
) -> str:
    """What the committed extended run `document` adds to this page's live run (the rows the live
    run leaves out, the epochs it aims at) and the command that made it; with none committed, a
    command for `profile` that would make one, at four times the live run's epochs (at least the
    command's default)."""
    found = findings.extended_plan(live_rows, live_epochs, document)

    def clause(key: str, **fields) -> str:  # an optional clause, after a word
        return " " + phrase(key, **fields)

    text = phrase(
        "extended.plan",
        live=epochs_words(found.live_epochs),
        added=clause("extended.added", rows=listed(found.added)) if found.added else "",
        missing=(
            clause("extended.missing", rows=listed(found.missing))
            if found.missing
            else ""
        ),
        epochs=epochs_words(found.epochs),
        small=(
            clause("extended.small", epochs=epochs_words(found.small_epochs))
            if found.committed
            else ""
        ),
        source=(
            phrase("extended.committed")
            if found.committed
            else phrase("extended.none", profile=profile)
        ),
    )
    command = reproducing_command(document, profile, list(found.rows), found.epochs)
    return f"{text}\n\n```bash\n{command}\n```"


def describe_extended_progress(
    finished: int, target: int, written: str, machine: str, flattening: str
) -> str:
    """How far the committed extended run has got, and whether base's curve has flattened."""
    short = " " + phrase("extended.short") if finished < target else ""
    return phrase(
        "extended.progress",
        finished=finished,
        target=target,
        short=short,
        written=written[:10],
        machine=machine,
        flattening=flattening,
    ).strip()


def describe_bleu(tests: pd.DataFrame, references: int) -> str:
    """BLEU's range over rows and seeds, its intervals, and how many differences from base
    exceed the resampling noise against how many chance alone would give."""
    found = findings.bleu(tests, references)
    reading = "bleu.separates" if found.separates else "bleu.does_not_separate"
    return phrase("bleu", found, reading=phrase(reading))


def describe_flops(done: float, minutes: float, rate: float, gpu: Mapping | None) -> str:
    """What this run trained and how fast, and what the `gpu` profile's Table 3 would take at the
    rate measured on its GPU (`gpu`: that row of the FLOPs table, or None)."""
    text = phrase("flops", done=done, minutes=minutes, rate=rate)
    if gpu:
        text += " " + phrase("flops.gpu", gpu, epochs=epochs_words(gpu["epochs"]))
    return text


# ------------------------------------------------------------------------------ the findings read
_KEY = {f.HOLDS: "holds", f.DOES_NOT_HOLD: "does_not_hold", f.CANNOT_TELL: "cannot_tell"}


def comparison_clause(kind: str, c: Mapping, names: Mapping[str, str] = {}) -> str:
    """One comparison in words: which row ends where, by how much, the interval, and what that
    says. A difference whose interval includes no change is said to be within the noise, never
    called a difference; a tie is read against the margin."""
    a, b = names.get(c["first"], c["first"]), names.get(c["second"], c["second"])
    if not c["trained"]:
        return phrase("clause.untrained", a=a, b=b)
    if c["difference_pct"] is None:
        return phrase("clause.reason", a=a, b=b, reason=c["reason"])
    change = c["difference_pct"]
    low, high = c["interval_pct"]
    side = phrase("above" if change > 0 else "below")
    words = dict(a=a, b=b, change=abs(change), side=side, low=low, high=high)
    kind = "tie" if kind == "tie" else "worse"
    return phrase(
        f"clause.{kind}.{_KEY[c['verdict']]}",
        c,
        **words,
        where=phrase("clause.where", **words),
        interval=phrase("clause.interval", low=low, high=high),
        margin=phrase("margin", margin_pct=f.percent(f.TIE_MARGIN)),
        better=phrase("better" if change < 0 else "worse"),
    )


def run_sentence(finding: Mapping, names: Mapping[str, str] = {}, note: str = "") -> str:
    """A finding at one budget: its verdict, the comparison that decides it first (for "bigger is
    better", which size: depth, width or feed-forward), and `note` (a reason the numbers alone do
    not give, such as whether dropout's rows had begun to overfit)."""
    found = findings.reading(finding)
    clauses = []
    for c, aspect in found.comparisons:
        clause = comparison_clause(found.kind, c, names)
        if aspect and not (c["verdict"] == f.DOES_NOT_HOLD and c["trained"]):
            if c["trained"]:
                words = VERDICT_ONE[c["verdict"]]
                clause = phrase(
                    "finding.aspect", aspect=aspect, verdict_words=words, clause=clause
                )
            else:
                clause = phrase("finding.aspect.untrained", aspect=aspect, clause=clause)
        clauses.append(clause)
    if not found.compared:
        text = phrase("finding.not_compared", clauses="; ".join(clauses))
    else:
        because = (
            " " + phrase("finding.because", aspects=" and ".join(found.against))
            if found.against
            else ""
        )
        text = phrase(
            "finding.read",
            verdict_words=VERDICT_ONE[found.verdict],
            because=because,
            clauses="; ".join(clauses),
        )
    return f"{text} {note}" if note else text


def change_sentence(early: Mapping, late: Mapping) -> str:
    """What the longer budget did to a finding: whether its verdict changed, and for every
    comparison both budgets read, whether the two rows swapped order or the gap narrowed or
    widened (and, while neither can tell, how the smallest detectable change moved)."""
    found = findings.change(early, late)
    if not found.compared:
        return phrase("change.only_longer")
    head = phrase(
        "change.kept" if found.before == found.after else "change.changed",
        before=VERDICT_ONE[found.before],
        after=VERDICT_ONE[found.after],
    )
    moves = []
    for m in found.moves:
        sizes = dict(before_pct=abs(m.before_pct), after_pct=abs(m.after_pct))
        if m.swapped:
            move = phrase(
                "change.swapped",
                m,
                **sizes,
                before_side=phrase("above" if m.before_pct > 0 else "below"),
                after_side=phrase("above" if m.after_pct > 0 else "below"),
            )
        else:
            move = phrase(
                "change.narrowed" if m.narrowed else "change.widened", m, **sizes
            )
            if m.detectable is not None:
                before, after = m.detectable
                move += phrase("change.detectable", before=before, after=after)
        moves.append(move)
    return head + (": " + "; ".join(moves) if moves else "") + "."


def overfit_note(
    small_curves: Mapping[str, Sequence[float]], rows: Sequence[str] = ("base",)
) -> str:
    """Whether the mean curves of `rows` on the small corpus have passed their lowest point:
    dropout can only help a model that has begun to overfit."""
    turns = findings.small_turns(small_curves, rows)
    if not turns:
        return ""
    parts = [
        phrase("small.improving" if t.rise_pct is None else "small.passed", t)
        for t in turns
    ]
    passed = sum(t.rise_pct is not None for t in turns)
    many = "none" if not passed else "one" if passed == 1 else "many"
    return phrase(f"small.note.{many}", turns=", and ".join(parts))


def flattening_note(curves: Mapping[str, Sequence[float]]) -> str:
    """How much base's mean curve fell in its last epoch, and where it first fell by less than 1%
    (the extended run's rule for having trained long enough)."""
    found = findings.flattening(curves)
    if found is None:
        return ""
    return phrase("flattening.flat" if found.flat_at else "flattening.learning", found)


def overtake_note(
    curves: Mapping[str, Sequence[float]],
    first: str = "C1",
    second: str = "C3",
    epochs: Sequence[float] | None = None,
) -> str:
    """Whether `second`'s mean curve fell below `first`'s for good (the deeper stack overtaking
    the shallow one) and, while it is still behind, whether the gap is closing; `epochs`: the
    epoch of each curve point (default 1, 2, ...). Empty without both curves."""
    found = findings.overtake(curves, first, second, epochs)
    if found is None:
        return ""
    last = epochs_words(found.last_epoch)
    if found.overtook:
        return phrase("overtake.for_good", found, epochs=last)
    behind = phrase("overtake.behind", found, epochs=last)
    return phrase(
        "overtake.closing" if found.closing else "overtake.still", found, behind=behind
    )


def _run_title(run: Mapping) -> str:
    return phrase("run.title", epochs=epochs_words(run["full_epoch"]), name=run["name"])


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
        " ".join(
            phrase("conclusion.budget", name=capitalized(r["name"]), label=r["label"])
            for r in runs
        ),
        "",
    ]
    for i, first in enumerate(runs[0]["findings"]):
        parts = [phrase("conclusion.finding", name=finding_name(first["finding"]))]
        for k, run in enumerate(runs):
            mine = names[k] if k < len(names) else {}
            note = (notes[k] if k < len(notes) else {}).get(first["finding"], "")
            sentence = run_sentence(run["findings"][i], mine, note)
            parts.append(
                phrase("conclusion.run", title=_run_title(run), sentence=sentence)
            )
        if len(runs) > 1:
            parts.append(change_sentence(first, runs[-1]["findings"][i]))
        lines.append("- " + " ".join(parts))
    return "\n".join(lines).strip()


# ------------------------------------------------------------------------------ what this run shows
def lower_first(text: str) -> str:
    """`text` with its first letter in lower case ("Small keys hurt" inside a sentence); wording
    has the other way only (`capitalized`)."""
    return text[:1].lower() + text[1:]


def _finding(key: str) -> str:
    return lower_first(finding_name(key))


def say_tally(found: findings.Tally) -> str:
    """One budget's verdicts counted in a sentence: "After 1 epoch (this run), of the 6 findings
    1 holds (small keys hurt), 1 does not hold (bigger is better) and 4 cannot be told (...)."""
    groups = [
        phrase(
            "tally.group",
            count=verdict_count(len(keys), verdict),
            names=listed([_finding(k) for k in keys]),
        )
        for verdict, keys in found.groups
    ]
    title = _run_title({"full_epoch": found.full_epoch, "name": found.name})
    return phrase("tally", found, title=title, groups=listed(groups))


def describe_correlation(correlation: Mapping, who: str) -> str:
    """Spearman's correlation with the paper's perplexities, its bootstrap interval, and what the
    interval allows (`who`: "this run", "the extended run after 6 epochs")."""
    return _say_correlation(findings.correlation(correlation, who))


def _say_correlation(found: findings.Correlation) -> str:
    if found.reading == "too_few":
        chance = phrase(
            "correlation.chance.two" if found.orderings is None else "correlation.chance",
            found,
        )
        reading = phrase("correlation.too_few", found, chance=chance)
    else:
        reading = phrase(f"correlation.{found.reading}")
    dropped = phrase("correlation.dropped", found) if found.dropped else ""
    return phrase(
        "correlation",
        found,
        rho=signed(found.rho),
        low=signed(found.low),
        high=signed(found.high),
        dropped_words=dropped,
        reading=reading,
    )


def closing(record: ModelVariationsRecord) -> str:
    """ "What this run shows", from the chapter's record as read back (`record.read`): this run's
    verdicts at its longest budget counted, and, where the record holds a committed extended run,
    its verdicts at its longest, the findings the longer budget changed, then each run's rank
    correlation with the paper's perplexities with its interval (`findings.closing`)."""
    found = findings.closing(record)
    text = [say_tally(t) for t in found.runs]
    if found.moved is not None:
        moved = [
            phrase(
                "moved",
                finding=_finding(m.finding),
                before=VERDICT_ONE[m.before],
                after=VERDICT_ONE[m.after],
            )
            for m in found.moved
        ]
        text.append(
            phrase("changed", moved=listed(moved)) if moved else phrase("changed.none")
        )
    text += [_say_correlation(c) for c in found.correlations]
    return " ".join(text)
