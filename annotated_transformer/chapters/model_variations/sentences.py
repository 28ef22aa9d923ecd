"""Chapter 06's sentences about its run: what it trains, how the training went, what the curves,
BLEU scores and FLOPs say. Every sentence that depends on a number is made here from that number
(the findings' own words are `verdicts`'), so that each can be tested with inputs that change
it. The arguments are plain numbers, mappings and data frames, never the chapter's globals;
`closing` makes the chapter's last section from its results record as read back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from ...evaluation.results import describe_provenance
from ...model.config import TABLE3_ALL_ROWS
from ..wording import capitalized, listed, plural, signed
from . import extended, findings
from . import statistics as f
from .phrases import say as phrase
from .record import ModelVariationsRecord
from .verdicts import (
    DEFAULT_EXTENDED_EPOCHS,
    epochs_words,
    finding_name,
    full_corpus_rows,
    reproducing_command,
    share_words,
    verdict_count,
    verdict_words,
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
    return (
        f"Under the `{profile}` profile this chapter trains {len(rows)} rows "
        f"({listed(rows)}), each with {plural(seeds, 'seed')} for {epochs_words(epochs)} of "
        f"the training split, and {listed(overfit_rows)} for {overfit_epochs} epochs of "
        f"{share_words(overfit_share)} of it. Every width of the paper's rows is divided by "
        f"{width}, every depth by {depth} and every head count by {heads}; it runs on {device}."
    )


def describe_rows_trained(
    rows: Sequence[str], all_rows: Sequence[str], finding_rows: Sequence[str]
) -> str:
    """Which of Table 3's rows this profile trains, and which comparisons that leaves out
    (empty when it trains them all)."""
    missing = [r for r in all_rows if r not in rows]
    if not missing:
        return ""
    unread = [r for r in missing if r in finding_rows]
    extra = [r for r in rows if r not in finding_rows]
    text = f"This profile trains {len(rows)} of the {len(all_rows)} rows"
    if unread:
        text += (
            f". Of the rows the findings compare it leaves out {listed(unread)}, so the "
            f"comparisons that need {'it' if len(unread) == 1 else 'them'} are skipped"
        )
    else:
        text += ", every row the six findings compare on the whole corpus"
    if extra:
        text += f"; it trains {listed(extra)} on the whole corpus for the table beside the paper's"
    others = [r for r in missing if r not in unread]
    if others:
        text += f". It {'also ' if unread else ''}leaves out {listed(others)}"
    return (
        text
        + "; the `gpu` profile trains every row (dropout's finding is read on a small "
        "corpus, section 6.3)."
    )


def describe_base(
    layers: int, width: int, d_ff: int, heads: int, d_k: int, params: int, vocab: int
) -> str:
    """Base at this scale in one sentence."""
    return (
        f"Base at this scale has {plural(layers, 'layer')} in each stack, width {width}, "
        f"feed-forward size {d_ff} and {plural(heads, 'head')} with keys of {d_k}: "
        f"{params / 1e6:.2f} million parameters with a {vocab:,}-piece vocabulary."
    )


def describe_calibration(
    record: Mapping, warmup: int, peak: float, batch_tokens: int
) -> str:
    """The committed calibration of warm-up and peak rate (its results record): what was tried,
    the rule, the choice, and what this profile trains with."""
    metrics, provenance = record["metrics"], describe_provenance(record)
    share = metrics["share_of_epoch"]
    # below 1: a share of one epoch; from 1 up, whole epochs (scripts/table3_calibration.py)
    trained = (
        f"{share:g} of an epoch"
        if share < 1
        else f"{share:g} epoch" + ("" if share == 1 else "s")
    )
    return (
        f"Validation perplexity after {trained} for each candidate (written "
        f"warm-up steps:peak rate). The calibration chose **{metrics['chosen']}** "
        f"({provenance}); how it chose: {metrics['rule']}. This profile trains every row with "
        f"{warmup} warm-up steps and a "
        f"peak rate of {peak:g}, on batches of {batch_tokens:,} tokens."
    )


def describe_no_calibration(warmup: int, peak: float) -> str:
    return (
        f"No calibration of this profile's warm-up ({warmup} steps) and peak rate ({peak:g}) is "
        "committed; the curves of C1 and C3 in section 6.3 show whether the deepest row trains."
    )


def describe_other_batches() -> str:
    return (
        "The committed whole-epoch grid was run at other batches than this profile's; it is "
        "not shown. Rerun `scripts/table3_calibration.py --epochs 1` for this profile."
    )


def describe_whole_epoch(
    by: pd.DataFrame, pre_at: Mapping[str, float], chosen: str, record: Mapping
) -> str:
    """The whole-epoch grid: base's best candidate, which candidates keep C3 no worse than C1,
    and what the pre-norm diagnostic says about depth (`by`: perplexity, candidates × rows;
    `record`: the grid's results record, for where it was measured)."""
    provenance = describe_provenance(record)
    deeper = by.index[by.C3 <= by.C1].tolist()
    text = (
        f"After a whole epoch with the norm after each sub-layer (the paper's post-norm) at "
        f"{chosen}, base ends at {by.base[chosen]:.1f}, C1 at {by.C1[chosen]:.1f} and C3 at "
        f"{by.C3[chosen]:.1f}; base is best at {by.base.idxmin()}. "
    )
    if deeper:
        text += (
            f"Only {listed(deeper)} {'ends' if len(deeper) == 1 else 'end'} C3 no worse than "
            f"C1, with base at {by.base[deeper].min():.1f} at best: that rule would buy depth's "
            "order with models that learned less, so the choice stays with base's best. "
        )
    else:
        text += "No candidate ends C3 no worse than C1. "
    text += (
        f"With the norm before each sub-layer (pre-norm) at {chosen}: base {pre_at['base']:.1f}, "
        f"C1 {pre_at['C1']:.1f}, C3 {pre_at['C3']:.1f}. "
    )
    if pre_at["C3"] < pre_at["C1"]:
        text += (
            "There the deepest stack ends below the one-layer one, so at this budget the "
            "post-norm depth rows measure how fast a post-norm stack gets going rather than "
            "what depth buys"
        )
    else:
        text += "Depth does not help there either at this budget"
    return text + f" ({provenance})."


def describe_data(
    train_pairs: int,
    target_tokens: int,
    valid_pairs: int,
    bleu_sentences: int,
    batch_tokens: int,
    overfit_pairs: int,
) -> str:
    return (
        f"The rows train on {train_pairs:,} pairs ({target_tokens:,} target subwords an epoch) "
        f"in batches of about {batch_tokens:,} tokens; perplexity is measured on "
        f"{valid_pairs:,} validation pairs and BLEU on {bleu_sentences:,} validation sentences. "
        f"Dropout's small corpus is the first {overfit_pairs:,} training pairs."
    )


def describe_training(measured: pd.DataFrame, seconds: float, workers: int) -> str:
    """How long the runs took (`measured`: one row per run, columns corpus, train_s, eval_s)."""
    full = measured[measured.corpus == "full"]
    at_once = (measured.train_s + measured.eval_s).sum() / seconds
    return (
        f"{len(measured)} runs in {seconds / 60:.1f} minutes on {plural(workers, 'process')}. "
        f"A run on the whole corpus trained for {full.train_s.min():.0f} to "
        f"{full.train_s.max():.0f} seconds and translated the validation split in "
        f"{full.eval_s.mean():.0f} seconds on average; the runs' times add up to "
        f"{at_once:.1f} times the wall time."
    )


def describe_overfitting(
    small_mean: pd.DataFrame, dropout_of: Mapping[str, float]
) -> str:
    """Per dropout row on the small corpus: its lowest point, where it ends, and whether it has
    begun to overfit (`small_mean`: columns row, point, epoch, ppl)."""
    parts, rising = [], []
    for row, rate in dropout_of.items():
        curve = small_mean[small_mean.row == row].sort_values("point")
        if curve.empty:
            continue
        low = curve.loc[curve.ppl.idxmin()]
        end = curve.iloc[-1]
        rise = 100 * (end.ppl / low.ppl - 1)
        if end.point == low.point:
            parts.append(
                f"{row} (dropout {rate:g}) is still falling at its last epoch ({end.ppl:.1f})"
            )
        else:
            rising.append(row)
            parts.append(
                f"{row} (dropout {rate:g}) is lowest at epoch {low.epoch:g} ({low.ppl:.1f}) "
                f"and ends {rise:.1f}% above that"
            )
    text = "; ".join(parts)
    text = capitalized(text) + ". "
    if rising:
        who = listed(rising)
        verb = "has" if len(rising) == 1 else "have"
        return text + f"{capitalized(who)} {verb} begun to overfit."
    return text + "No row has begun to overfit at this budget."


def describe_budgets(budgets: Sequence[Mapping], margin_pct: float) -> str:
    """The verdicts at the longest budget counted, and the findings whose verdict changes
    between the budgets."""
    final = budgets[-1]["findings"]
    counts = pd.Series([x["verdict"] for x in final]).value_counts()
    changed = [
        finding_name(x["finding"]).lower()
        for i, x in enumerate(final)
        if len({b["findings"][i]["verdict"] for b in budgets}) > 1
    ]
    counted = ", ".join(verdict_count(int(counts.get(v, 0)), v) for v in f.VERDICTS)
    return (
        f"The tie's margin is ±{margin_pct:.1f}% of perplexity. At the longest budget "
        f"({budgets[-1]['label']}): {counted}. "
        + (
            f"Verdicts that change between the budgets: {listed(changed)}."
            if changed
            else "No verdict changes between the budgets."
        )
    )


def describe_swaps(
    swaps: Sequence[tuple[str, str, Sequence[float]]], compared: int
) -> str:
    """The comparisons whose rows swap order along the curves, and what three looks cost."""
    swapped = [
        f"{a} and {b} in epoch {', '.join(f'{e:g}' for e in es)}"
        for a, b, es in swaps
        if es
    ]
    head = (
        "Rows that swap order during training: " + "; ".join(swapped) + "."
        if swapped
        else "No comparison's rows swap order along the curves."
    )
    return (
        head
        + f" Each budget is corrected for its own {compared} comparisons; reading three "
        "budgets is three looks at the same runs, so a verdict seen at one budget only deserves "
        "less weight than one seen at all three."
    )


def describe_extended_plan(
    live_rows: Sequence[str], live_epochs: float, document: Mapping | None, profile: str
) -> str:
    """What the committed extended run `document` adds to this page's live run (the rows the live
    run leaves out, the epochs it aims at) and the command that made it; with none committed, a
    command for `profile` that would make one, at four times the live run's epochs (at least the
    command's default)."""
    if document is None:  # the thirteen, and any other row the live run trains
        wanted = {*extended.extended_rows(), *live_rows}
        rows = [r for r in TABLE3_ALL_ROWS if r in wanted]
        epochs = max(DEFAULT_EXTENDED_EPOCHS, 4 * math.ceil(live_epochs))
    else:
        rows = full_corpus_rows(document)
        epochs = document["targets"]["full"]
    added = [r for r in rows if r not in live_rows]
    missing = [r for r in live_rows if r not in rows]
    text = (
        f"This page's live run trained its rows for {epochs_words(live_epochs)} of the whole "
        "corpus. The extended run trains the same rows"
        + (f" plus {listed(added)}, which the live run leaves out," if added else "")
        + (f" except {listed(missing)}," if missing else "")
        + f" with the same settings and batches, toward {epochs_words(epochs)} of the whole corpus"
    )
    if document is not None:
        text += (
            f" and {epochs_words(document['targets']['small'])} of dropout's small one"
        )
    text += (
        ". The command keeps every finished epoch of every row and seed in its run folder and "
        "continues from there when run again on the same machine, so a run can be stopped and "
        "resumed as often as it takes; "
    )
    if document is not None:
        text += (
            "the run's results are committed, and this page reads them as they are without "
            "retraining. The command that made it:"
        )
    else:
        text += (
            f"none is committed for the `{profile}` profile yet (once one is, this page reads "
            "it as it is). A command that would make it:"
        )
    command = reproducing_command(document, profile, rows, epochs)
    return f"{text}\n\n```bash\n{command}\n```"


def describe_extended_progress(
    finished: int, target: int, written: str, machine: str, flattening: str
) -> str:
    """How far the committed extended run has got, and whether base's curve has flattened."""
    text = f"Every row and seed has finished {finished} of the run's {target} epochs"
    if finished < target:
        text += " (short of its target: what follows is read at the epochs it reached)"
    return f"{text}; written {written[:10]} on {machine}. {flattening}".strip()


def describe_bleu(tests: pd.DataFrame, references: int) -> str:
    """BLEU's range over rows and seeds, its intervals, and how many differences from base
    exceed the resampling noise against how many chance alone would give."""
    compared = tests[tests.row != "base"]
    beyond = int(compared.exceeds_noise.sum())
    expected = 0.05 * len(compared)
    text = (
        f"Greedy sacreBLEU on all {references:,} validation sentences lies between "
        f"{tests.bleu.min():.2f} and {tests.bleu.max():.2f} over rows and seeds, each score "
        f"with a 95% interval of ±{tests.ci95.min():.2f} to ±{tests.ci95.max():.2f}. Of the "
        f"{len(compared)} differences from base (rows × seeds), {beyond} exceed the resampling "
        f"noise, where chance alone (p < 0.05) would give about {expected:.1f}"
    )
    if beyond <= expected:
        return text + ": at this budget BLEU does not separate the rows from base."
    return text + "."


def describe_flops(done: float, minutes: float, rate: float, gpu: Mapping | None) -> str:
    """What this run trained and how fast, and what the `gpu` profile's Table 3 would take at the
    rate measured on its GPU (`gpu`: that row of the FLOPs table, or None)."""
    text = (
        f"This run trained {done:.2e} FLOPs in {minutes:.1f} minutes of wall time, "
        f"{rate:.2e} FLOP/s per process."
    )
    if gpu:
        text += (
            f" At the rate measured on a GPU, the `gpu` profile's Table 3 ({gpu['rows']} rows × "
            f"{gpu['seeds']} seeds × {epochs_words(gpu['epochs'])}, and the overfitting runs) "
            f"comes to {gpu['flops']:.2e} FLOPs, about {gpu['minutes']:.0f} minutes."
        )
    return text


# ------------------------------------------------------------------------------ what this run shows
def lower_first(text: str) -> str:
    """`text` with its first letter in lower case ("Small keys hurt" inside a sentence); wording
    has the other way only (`capitalized`)."""
    return text[:1].lower() + text[1:]


def _finding(key: str) -> str:
    return lower_first(finding_name(key))


def tally(budget: Mapping, name: str) -> str:
    """One budget's verdicts counted in a sentence: "After 1 epoch (this run), of the 6 findings
    1 holds (small keys hurt), 1 does not hold (bigger is better) and 4 cannot be told (...)."""
    return _say_tally(findings.tally(budget, name))


def _say_tally(found: findings.Tally) -> str:
    groups = [
        phrase(
            "tally.group",
            count=verdict_count(len(keys), verdict),
            names=listed([_finding(k) for k in keys]),
        )
        for verdict, keys in found.groups
    ]
    title = phrase("run.title", epochs=epochs_words(found.full_epoch), name=found.name)
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
    text = [_say_tally(t) for t in found.runs]
    if found.moved is not None:
        moved = [
            phrase(
                "moved",
                finding=_finding(m.finding),
                before=verdict_words(m.before),
                after=verdict_words(m.after),
            )
            for m in found.moved
        ]
        text.append(
            phrase("changed", moved=listed(moved)) if moved else phrase("changed.none")
        )
    text += [_say_correlation(c) for c in found.correlations]
    return " ".join(text)
