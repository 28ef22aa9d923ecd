"""Chapter 08's sentences: every sentence whose words depend on a number, and `closing`, the
chapter's "What this run shows", read from its results record (`record.read`).

A sentence that names a head takes it from `head_scores.passing_heads`, the rows the chapter's
per-head tables mark "yes": no sentence names a head that fails the test, however high its
ratio, and when no head passes, the sentence says so and names none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .head_scores import (
    APART_SE,
    DrawnHeads,
    Example,
    layers_apart,
    passing_heads,
)

# The phenomena as the closing names them: (query word, key word).
PHENOMENON_WORDS = {
    "dependency": ("a verb", "its distant complement"),
    "anaphora": ("a pronoun", "its antecedent"),
}


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def _head_numbers(r) -> str:
    return (
        f"layer {int(r['layer'])} head {int(r['head'])} ({r['weight']:.3f} against "
        f"{r['even spread']:.3f}, ratio {r['ratio']:.2f}, interval "
        f"{r['low']:.2f}-{r['high']:.2f})"
    )


def _none_passes(scores: pd.DataFrame, query: str, key: str) -> str:
    """No head passes: how many fail which half of the test, with no head named."""
    even = int((scores["low"] > 1).sum())
    other = int((scores["over every word low"] > 1).sum())
    text = (
        f"no head of {len(scores)} puts more weight from {query} on {key} than both an even "
        f"spread and the caption's other words give {key}, with its intervals clear of them"
    )
    if not even and not other:
        return text + "; none lies clearly above either."
    if even and other:
        return text + (
            f": {_lie(even)} above an even spread and {other:,} above what the caption's "
            f"other words give {key}, but none above both."
        )
    if even:
        return text + (
            f": {_lie(even)} above an even spread, but none above what the caption's other "
            f"words give {key}."
        )
    return text + (
        f": {_lie(other)} above what the caption's other words give {key}, but none above an "
        "even spread."
    )


def _lie(n: int) -> str:
    return f"{n:,} head lies" if n == 1 else f"{n:,} heads lie"


def describe(scores: pd.DataFrame, query: str, key: str) -> str:
    """What the per-head table shows: the heads that pass (`passing_heads`) with their numbers,
    or that none does; how many heads put clearly less than an even spread; and, for the first
    head that passes, what the same key words draw from the average query."""
    n = int(scores["sentences"].iloc[0])
    pairs = int(scores["pairs"].iloc[0])
    passing = passing_heads(scores)
    opening = f"Over {n} sentences ({pairs} pairs), "
    if len(passing):
        listed = "; ".join(_head_numbers(r) for _, r in passing.iterrows())
        verdict = (
            f"{len(passing)} of {len(scores)} heads "
            f"{'puts' if len(passing) == 1 else 'put'} more weight from {query} on {key} "
            f"than an even spread would and than the caption's other words give {key}, "
            f"with both intervals above 1: {listed}."
        )
    else:
        verdict = _none_passes(scores, query, key)
    below = int((scores["high"] < 1).sum())
    tail = (
        f" {below} head{'s' if below != 1 else ''} put{'s' if below == 1 else ''} "
        "clearly less than an even spread there."
        if below
        else ""
    )
    if passing.empty:
        return opening + verdict + tail
    first = passing.iloc[0]
    control = (
        f" In layer {int(first['layer'])} head {int(first['head'])} the same key words draw "
        f"{first['from every word']:.3f} from the average query piece, so the weight from "
        f"{query} is {first['weight'] / first['from every word']:.2f} times what any word "
        "gives them."
    )
    return opening + verdict + tail + control


def describe_drawn(drawn: DrawnHeads, case: Example) -> str:
    """The line under Figure 3 or 4: the drawn case, named by a head only when that head passes
    the test; with none passing, the figure's heads are the last layer's, and the weight is
    their mean."""
    if drawn.passing:
        head = drawn.passing[0]
        others = [h for h in drawn.heads if h not in drawn.passing]
        beside = (
            f"; the figure draws beside it {_plural(len(others), 'head')} of the layer that "
            "the test does not name"
            if others
            else ""
        )
        return (
            f"'{case.text}': layer {drawn.layer} head {head}, which passes the test, puts "
            f"{case.weight:.3f} of '{case.query}' on '{case.key}' (even spread "
            f"{case.baseline:.3f}){beside}."
        )
    which = (
        "every head"
        if len(drawn.heads) > 2
        else "heads " + " and ".join(map(str, drawn.heads))
    )
    return (
        f"No head passes the test, so the figure singles none out: it draws {which} of the "
        f"last layer, {drawn.layer}. On '{case.text}' they put {case.weight:.3f} of "
        f"'{case.query}' on '{case.key}' on average (even spread {case.baseline:.3f})."
    )


def describe_samples(captions: int, with_pronoun: int, samples: dict) -> str:
    """How many captions the two heuristics find pairs in."""
    anaphora, dependency = samples["anaphora"], samples["dependency"]
    return (
        f"Of the {captions:,} test captions, {with_pronoun:,} "
        f"{'holds' if with_pronoun == 1 else 'hold'} one of the pronouns, and the "
        f"heuristic finds an antecedent in {len(anaphora.sentences):,} of them "
        f"({len(anaphora.pairs):,} pronouns). It finds a verb with a complement three or more "
        f"words away in {len(dependency.sentences):,} captions ({len(dependency.pairs):,} pairs)."
    )


def _layer_sentence(rows: pd.DataFrame) -> str:
    sharp = rows.loc[rows["entropy (bits)"].idxmin()]
    broad = rows.loc[rows["entropy (bits)"].idxmax()]
    near = rows.loc[rows["mean distance"].idxmin()]
    far = rows.loc[rows["mean distance"].idxmax()]
    gap = broad["entropy (bits)"] - sharp["entropy (bits)"]
    return (
        f"In layer {int(sharp['layer'])} the entropy runs from "
        f"{sharp['entropy (bits)']:.2f} bits (head {int(sharp['head'])}) to "
        f"{broad['entropy (bits)']:.2f} (head {int(broad['head'])}), a gap "
        f"{gap / rows['entropy s.e.'].max():.0f} times the largest standard error, and the "
        f"mean distance from {near['mean distance']:.2f} pieces (head {int(near['head'])}) "
        f"to {far['mean distance']:.2f} (head {int(far['head'])})."
    )


def describe_layers(heads: pd.DataFrame, even_bits: float) -> str:
    """Figure 5's point, read off the per-head table: do a layer's heads spread differently?"""
    apart = layers_apart(heads)
    layers = heads["layer"].nunique()
    text = f"An even spread over a caption is {even_bits:.2f} bits on average. "
    text += " ".join(_layer_sentence(rows) for _, rows in heads.groupby("layer"))
    if not apart:
        return text + (
            f" In no layer do the sharpest and the broadest head differ by more than "
            f"{APART_SE} standard errors of a mean: these numbers do not show Figure 5's point."
        )
    where = (
        "In every layer"
        if len(apart) == layers
        else f"In layer{'s' if len(apart) > 1 else ''} {', '.join(map(str, apart))}"
    )
    return text + (
        f" {where} the sharpest and the broadest head differ by more than {APART_SE} "
        "standard errors of a mean: the heads of one layer spread their weight differently, "
        "Figure 5's point."
    )


def describe_exports(
    bleu: dict, same: int, captions: int, sizes: dict, served: str, split: str
) -> str:
    """The int8 export against the float32 one on `captions` captions of `split` (validation:
    the comparison chooses what the page serves): BLEU with the interval, and which one the page
    serves (int8 only when its BLEU lies inside float32's interval)."""
    full, small = bleu["float32"], bleu["int8"]
    low, high = full["mean"] - full["ci95"], full["mean"] + full["ci95"]
    inside = "inside" if served == "int8" else "outside"
    size = sizes[served] / 1e6
    return (
        f"On {captions:,} captions of `{split}` the int8 export scores {small['bleu']:.2f} sacreBLEU "
        f"against float32's {full['bleu']:.2f} (95% interval {low:.2f}-{high:.2f}); {same:,} of "
        f"{captions:,} translations are the same words. The int8 BLEU lies {inside} the "
        f"interval, so the page serves the {served} export ({size:.1f} MB of model, against "
        f"{sizes['float32'] / 1e6:.1f} MB for float32)."
    )


def describe_greedy_paths(paths: Mapping) -> str:
    """The float32 export's greedy score beside chapter 05's greedy decoding of the same model
    and captions (`exports.compare_greedy`), and why they differ, from the counts."""
    n, differ = paths["captions"], paths["differ"]
    text = (
        f"Chapter 05 decodes the same model greedily on the same {n:,} captions through "
        f"`evaluation.translate` and scores {paths['batched_sacrebleu']:.2f} sacreBLEU; the "
        f"float32 export scores {paths['export_sacrebleu']:.2f}."
    )
    if not differ:
        return text + " Every translation is the same, so the two scores are one."
    unfinished = paths["differ_unfinished"]
    why = []
    if unfinished:
        why.append(
            f"{unfinished:,} of them {'stops' if unfinished == 1 else 'stop'} at the "
            "export's length limit without `</s>`: chapter 05 decodes in batches of similar "
            "length and gives every sentence of a batch the allowance of its longest source "
            "(plus 50), the export each sentence its own, so a translation that never writes "
            "`</s>` runs on there for as many pieces more as the batch's longest source is "
            "longer"
        )
    rest = differ - unfinished
    if rest:
        if unfinished:
            subject = "the other one" if rest == 1 else f"the other {rest:,}"
        else:
            subject = "it" if rest == 1 else "all of them"
        why.append(
            f"the export ends {subject} with `</s>` within its allowance, so "
            f"{'it parts' if rest == 1 else 'they part'} from chapter 05's at a near-tie "
            "between two pieces, which floating-point sums in another order can flip (padded "
            "batches through PyTorch's attention with a cache there, one sentence at a time "
            "through onnxruntime here)"
        )
    return text + (
        f" {differ:,} of {n:,} translations {'differs' if differ == 1 else 'differ'}: "
        + "; ".join(why)
        + "."
    )


def describe_gpu_book(record: Mapping | None, profile_name: str) -> str:
    """The `gpu` model's heads (end of section 8.7): the committed `gpu` book's chapter 08
    (`record.committed_gpu`), or where it will appear."""
    if profile_name == "gpu":
        return "This is the `gpu` book: its heads are the ones measured above."
    if record is None:
        return (
            "The `gpu` book has not run this chapter yet. When it has, its pages appear on "
            "this site as the book on one GPU, its record in "
            "`results/book_gpu/attention_figures.json`, and this paragraph sets its heads "
            "beside these."
        )
    lines = [_findings_line(record["metrics"], name) for name in PHENOMENON_WORDS]
    return "In the committed `gpu` book's run of this chapter: " + " ".join(lines)


def _findings_line(metrics: Mapping, name: str) -> str:
    """One phenomenon over the test captions, the heads named from `passing_heads` only."""
    query, key = PHENOMENON_WORDS[name]
    found = metrics["findings"][name]
    heads = pd.DataFrame(found["heads"])
    passing = passing_heads(heads)
    over = f"over {found['sentences']} captions"
    if passing.empty:
        return (
            f"No encoder head of {len(heads)} puts more weight from {query} on {key} than "
            f"both an even spread and the caption's other words would, {over}."
        )
    named = "; ".join(
        f"layer {int(r['layer'])} head {int(r['head'])} at {r['ratio']:.2f} times the even "
        f"spread (interval {r['low']:.2f}-{r['high']:.2f})"
        for _, r in passing.iterrows()
    )
    return (
        f"{len(passing)} of {len(heads)} encoder heads "
        f"{'puts' if len(passing) == 1 else 'put'} more weight from {query} on {key} than "
        f"an even spread and the caption's other words would, {over}: {named}."
    )


def closing(record: Mapping) -> str:
    """Chapter 08's "What this run shows", from its results record as `record.read` returns
    it: one line per finding, every head named from `passing_heads`."""
    metrics = record["metrics"]
    lines = [_findings_line(metrics, name) for name in PHENOMENON_WORDS]
    heads5 = pd.DataFrame(metrics["encoder_heads_test"])
    apart = layers_apart(heads5)
    lines.append(
        f"In {len(apart)} of {heads5['layer'].nunique()} encoder layers the heads spread their "
        f"weight differently (entropies more than {APART_SE} standard errors apart): "
        + (
            "Figure 5's point holds here."
            if apart
            else "Figure 5's point does not show here."
        )
    )
    share = metrics["figure3_share_on_more_difficult"]
    lines.append(
        f"On the paper's own Figure 3 sentence, news text foreign to this caption model, the "
        f'heads of the drawn layer put {share["mean"]:.3f} of the weight of "making" on '
        f'"more difficult" on average (at most {share["max"]:.3f}), against '
        f"{share['even_spread']:.3f} for an even spread."
    )
    live = metrics["onnx_int8"]
    sizes = {"float32": metrics["onnx_model_bytes"], "int8": live["bytes"]}
    lines.append(
        describe_exports(
            live["bleu"],
            live["same_translations"],
            live["captions"],
            sizes,
            live["served"],
            live["split"],
        )
    )
    if metrics.get("greedy_paths"):
        lines.append(describe_greedy_paths(metrics["greedy_paths"]))
    return "\n".join(f"- {line}" for line in lines)
