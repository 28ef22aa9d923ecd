"""How chapter 01 says what it found: one template a verdict (`verdicts`), and the words around
them."""

from __future__ import annotations

from ..wording import Phrases

say = Phrases(
    {
        "variance": """The variance of q·k went from {at_smallest:.1f} at d_k = {smallest} to
            {at_widest:,.1f} at d_k = {widest}, within {off_d_k:.1%} of d_k at every width;
            divided by √d_k, it stayed between {scaled_low:.3f} and {scaled_high:.3f}.""",
        "saturation": """With the scale, the largest weight stays {stays} at every width.
            Without it, at d_k = {widest} the softmax gives on average {peak_unscaled:.1%} of its
            weight to a single key out of {n_keys}, and the gradient reaching the scores of a
            typical row is {gradient} (at d_k = {smallest} the scaled gradient is
            {small_ratio:.1f} times the unscaled one). The paper's heads have d_k = 64; its
            single-head variant in Table 3 has d_k = 512.""",
        "saturation.at": "at {scaled_low:.3f}",
        "saturation.between": "between {scaled_low:.3f} and {scaled_high:.3f}",
        "saturation.vanishes": "{gradient_factor:,.0f} times smaller than with the scale",
        "saturation.grows": "{gradient_factor:,.1f} times larger than with the scale",
        "additive.timed": "At d_k = {d_k}, {timing}",
        "additive": "{timing} At that width, {weights}",
        "additive.means": """At d_k = {d_k}, additive scores took {additive_ms:.2f} ms against
            {dot_product_ms:.3f} ms for the dot product (means of {repeats} calls, without their
            spread), and {weights}""",
        "additive.weights": """additive scores' softmax {peaked} the unscaled dot product's:
            largest weight {additive_weight:.3f} against {dot_weight:.3f}.""",
        "additive.spread": "stays more spread than",
        "additive.peaked": "is no more spread than",
        "heads": """From {fewest} to {most} heads, {parameters} and {flops}, while
            {score_entries} ({entries_factor:,.0f} times as many).""",
        "heads.stay": "{what} stay at {first:,}",
        "heads.change": "{what} go from {first:,} to {last:,}",
        "heads.parameters": "the parameters",
        "heads.flops": "the matrix-product FLOPs",
        "heads.score_entries": "the softmax entries",
        "timing.spread": """`{name_a}` took a median of {a:.2f} ms ({a_fastest:.2f} to
            {a_slowest:.2f} ms over {a_runs} runs), `{name_b}` {b:.2f} ms ({b_fastest:.2f} to
            {b_slowest:.2f} ms over {b_runs} runs)""",
        "timing.too few runs": """{spread}; with fewer than {min_runs} runs each, the run cannot
            tell a difference from the timing noise.""",
        "timing.beyond": """{spread}: `{name_b}` is {verdict} by {difference} ms ({relative}),
            more than the timing noise, since every one of its runs was {verdict} than every run
            of `{name_a}`.""",
        "timing.within noise": """{spread}: the runs' ranges overlap, so the difference of the
            medians ({difference} ms) is within the timing noise and this run shows neither as
            faster.""",
        "timing.as_long": "{factor:,.1f} times as long",
        "timing.as_fast": "{factor:,.1f} times as fast",
        "timing.share": "{share:.0%}",
        "timing.medians_only": """`{name_a}` took a median of {a:.2f} ms, `{name_b}` {b:.2f} ms;
            the record keeps no single runs, so it cannot say whether the difference exceeds the
            timing noise.""",
        "projections": """Does one fused projection save time against three? {answer}. Timed,
            {text}""",
        "projections.where": """Does one fused projection save time against three? {answer}.
            Timed on {where}, {text}""",
        "answer.faster": "Yes, on this run",
        "answer.slower": "No: on this run it is slower",
        "answer.within noise": "Not measurably",
        "answer.too few runs": "This run cannot tell",
        "answer.no runs": "This record cannot tell",
        "paths": "Of the module's two code paths, {text}",
        "paths.weights": """The explicit path keeps {weights_mb:.1f} MB of weights for one layer;
            they grow with the square of the length, which is why training never records
            them.""",
    }
)
