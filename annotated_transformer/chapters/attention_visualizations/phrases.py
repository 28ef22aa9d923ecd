"""How chapter 08 says what it found: one template a verdict (`verdicts`), and the words around
them."""

from __future__ import annotations

from ..wording import Phrases

# The phenomena as the closing names them: (query word, key word).
PHENOMENON_WORDS = {
    "dependency": ("a verb", "its distant complement"),
    "anaphora": ("a pronoun", "its antecedent"),
}

# A verb's form after one thing, and after several: `agree("puts", n)`.
_MANY = {
    "puts": "put",
    "holds": "hold",
    "stops": "stop",
    "differs": "differ",
    "lies": "lie",
}


def agree(verb: str, n: int) -> str:
    """`verb` as it agrees with `n` things: "puts" after 1, "put" after 0 or 2."""
    return verb if n == 1 else _MANY[verb]


say = Phrases(
    {
        "table": "Over {sentences} sentences ({pairs} pairs), {finding}{after}",
        "table.passing": """{count} of {heads} heads {puts} more weight from {query} on {keyword}
            than an even spread would and than the caption's other words give {keyword}, with both
            intervals above 1: {named}.""",
        "table.head": """layer {layer} head {head} ({weight:.3f} against {even_spread:.3f},
            ratio {ratio:.2f}, interval {low:.2f}-{high:.2f})""",
        "table.none": """no head of {heads} puts more weight from {query} on {keyword} than both an
            even spread and the caption's other words give {keyword}, with its intervals clear of
            them""",
        "table.none.neither": "; none lies clearly above either.",
        "table.none.both": """: {even} above an even spread and {above_other:,} above what the
            caption's other words give {keyword}, but none above both.""",
        "table.none.even": """: {even} above an even spread, but none above what the caption's
            other words give {keyword}.""",
        "table.none.other": """: {other} above what the caption's other words give {keyword}, but
            none above an even spread.""",
        "table.lie": "{heads} {lies}",
        "table.below": "{heads} {puts} clearly less than an even spread there.",
        "table.control": """In layer {layer} head {head} the same key words draw
            {from_every_word:.3f} from the average query piece, so the weight from {query} is
            {times_any_word:.2f} times what any word gives them.""",
        "drawn.passing": """'{text}': layer {layer} head {head}, which passes the test, puts
            {weight:.3f} of '{query}' on '{key}' (even spread {baseline:.3f}){beside}.""",
        "drawn.beside": """; the figure draws beside it {others} of the layer that the test
            does not name""",
        "drawn.none": """No head passes the test, so the figure singles none out: it draws
            {which} of the last layer, {layer}. On '{text}' they put {weight:.3f} of '{query}'
            on '{key}' on average (even spread {baseline:.3f}).""",
        "drawn.every_head": "every head",
        "drawn.heads": "heads {heads}",
        "samples": """Of the {captions:,} test captions, {with_pronoun:,} {holds} one of the
            pronouns, and the heuristic finds an antecedent in {anaphora_sentences:,} of them
            ({anaphora_pairs:,} pronouns). It finds a verb with a complement three or more words
            away in {dependency_sentences:,} captions ({dependency_pairs:,} pairs).""",
        "layers": "An even spread over a caption is {even_bits:.2f} bits on average. {spreads}",
        "layers.one": """In layer {layer} the entropy runs from {sharp_bits:.2f} bits (head
            {sharp_head}) to {broad_bits:.2f} (head {broad_head}), a gap {gap_in_se:.0f} times
            the largest standard error, and the mean distance from {near_distance:.2f} pieces
            (head {near_head}) to {far_distance:.2f} (head {far_head}).""",
        "layers.none_apart": """In no layer do the sharpest and the broadest head differ by more
            than {apart_se} standard errors of a mean: these numbers do not show Figure 5's
            point.""",
        "layers.apart": """{where} the sharpest and the broadest head differ by more than
            {apart_se} standard errors of a mean: the heads of one layer spread their weight
            differently, Figure 5's point.""",
        "layers.every": "In every layer",
        "layers.some.one": "In layer {apart}",
        "layers.some.many": "In layers {apart}",
        "exports": """On {captions:,} captions of `{split}` the int8 export scores
            {int8_bleu:.2f} sacreBLEU against float32's {float32_bleu:.2f} (95% interval
            {low:.2f}-{high:.2f}); {same:,} of {captions:,} translations are the same words. The
            int8 BLEU lies {where} the interval, so the page serves the {served} export
            ({served_mb:.1f} MB of model, against {float32_mb:.1f} MB for float32).""",
        "exports.inside": "inside",
        "exports.outside": "outside",
        "greedy": """Chapter 05 decodes the same model greedily on the same {captions:,}
            captions through `evaluation.translate` and scores {batched_sacrebleu:.2f}
            sacreBLEU; the float32 export scores {export_sacrebleu:.2f}.""",
        "greedy.same": "Every translation is the same, so the two scores are one.",
        "greedy.differ": "{differ:,} of {captions:,} translations {differs}: {reasons}.",
        "greedy.unfinished": """{unfinished:,} of them {stops} at the export's length limit
            without `</s>`: chapter 05 decodes in batches of similar length and gives every
            sentence of a batch the allowance of its longest source (plus 50), the export each
            sentence its own, so a translation that never writes `</s>` runs on there for as
            many pieces more as the batch's longest source is longer""",
        "greedy.near_tie": """the export ends {subject} with `</s>` within its allowance, so
            {they_part} from chapter 05's at a near-tie between two pieces, which floating-point
            sums in another order can flip (padded batches through PyTorch's attention with a
            cache there, one sentence at a time through onnxruntime here)""",
        "greedy.the_other_one": "the other one",
        "greedy.the_other": "the other {rest:,}",
        "greedy.it": "it",
        "greedy.all": "all of them",
        "greedy.it_parts": "it parts",
        "greedy.they_part": "they part",
        "gpu.this": "This is the `gpu` book: its heads are the ones measured above.",
        "gpu.missing": """The `gpu` book has not run this chapter yet. When it has, its pages
            appear on this site as the book on one GPU, its record in
            `results/book_gpu/attention_figures.json`, and this paragraph sets its heads beside
            these.""",
        "gpu.found": "In the committed `gpu` book's run of this chapter: {lines}",
        "finding.none": """No encoder head of {heads} puts more weight from {query} on {keyword}
            than both an even spread and the caption's other words would, over {sentences}
            captions.""",
        "finding.passing": """{count} of {heads} encoder heads {puts} more weight from {query}
            on {keyword} than an even spread and the caption's other words would, over {sentences}
            captions: {named}.""",
        "finding.head": """layer {layer} head {head} at {ratio:.2f} times the even spread
            (interval {low:.2f}-{high:.2f})""",
        "spread": """In {apart} of {layers} encoder layers the heads spread their weight
            differently (entropies more than {apart_se} standard errors apart): {point}""",
        "spread.holds": "Figure 5's point holds here.",
        "spread.missing": "Figure 5's point does not show here.",
        "share": """On the paper's own Figure 3 sentence, news text foreign to this caption
            model, the heads of the drawn layer put {mean:.3f} of the weight of "making" on
            "more difficult" on average (at most {max:.3f}), against {even_spread:.3f} for an
            even spread.""",
    }
)
