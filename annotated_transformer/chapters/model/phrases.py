"""How chapter 02 says what it found: one template a verdict (`verdicts`), and the words around
them."""

from __future__ import annotations

from ..wording import Phrases

say = Phrases(
    {
        "counts": """With a shared {vocab_size:,}-token vocabulary, {models}, counted on the built
            models with the tied embedding matrix once.""",
        "counts.first": "{name} has {ours:.1f}M parameters (the paper: {paper:g}M)",
        "counts.other": "{name} {ours:.1f}M (the paper: {paper:g}M)",
        "gaps.none_short": """None of our counts falls short of the paper's in the {rows} rows
            that list one.""",
        "gaps.short": """Our counts fall short of the paper's in {short} of the {rows} rows that
            list one, by a median of {median:,.0f} rows of width d_model (from {low:,.0f} to
            {high:,.0f}; rounding the paper's counts to millions alone moves a row by up to
            {rounding_rows:,.0f} rows at d_model = {width}). The suggested vocabulary is
            {suggested_vocab:,.0f} tokens.""",
        "gaps.above": "{name} is {rows_above:,.0f} rows above the paper's {paper:g}M.",
        "ffn": """At the paper's ratio the feed-forward network holds {parameters:.0%} of an
            encoder layer's parameters and does {at_shortest:.0%} of its FLOPs on a
            {shortest}-token sentence ({at_longest:.0%} at {longest} tokens, {trend}).""",
        "ffn.falls": "where attention's n-squared term grows",
        "ffn.holds": "attention's n-squared term not lowering it",
        "tying": """In the base model with a {vocab_size:,}-token vocabulary, one shared matrix
            instead of three saves {saved_m:.1f}M parameters: {untied_m:.1f}M with three separate
            matrices, {tied_m:.1f}M shared. That is {share:.0%} of the untied model.""",
        "shifts.held": """PE(pos + k) = M_k PE(pos) held {checked}, to {max_error:.1e} at most:
            float32's rounding of the table, so a shift of position is a fixed rotation of the
            encoding.""",
        "shifts.missed": """PE(pos + k) = M_k PE(pos) missed by up to {max_error:.1e} {checked},
            more than float32's rounding ({tolerance:.0e}).""",
        "shifts.checked": "for k in {shifts} over {positions:,} positions",
    }
)
