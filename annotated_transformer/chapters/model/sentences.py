"""Chapter 02's sentences: what one run counted and checked of the model's parts, in words.

Each function reads plain numbers (the chapter passes what it just computed; `closing` passes
the results record read back), so the page's sentences and its closing section say the same
thing. A row of Table 3 is named above or below the paper's count by the sign of its own gap,
as the chapter's table shows it, never by a rule about which row it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import record as _record

# The chapter checks PE(pos + k) = M_k PE(pos) to this absolute tolerance: float32's rounding
# of the package's table, not an error of the rotation.
SHIFT_TOLERANCE = 1e-6
# The width at which the chapter states how far rounding the paper's counts moves a gap.
ROUNDING_WIDTH = 512


def _row_name(row: str) -> str:
    return f"the {row} model" if row in ("base", "big") else f"row {row}"


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _joined(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def describe_ffn_share(share: Mapping) -> str:
    """The feed-forward network's share of an encoder layer's parameters and FLOPs at
    d_ff = 4 d_model, at the shortest and longest sentence length measured. `share`:
    {"parameters", "flops_by_n": {n: share}}, the record's `ffn_share_at_4x`."""
    flops = {int(n): v for n, v in share["flops_by_n"].items()}
    shortest, longest = min(flops), max(flops)
    trend = (
        "where attention's n-squared term grows"
        if flops[longest] < flops[shortest]
        else "attention's n-squared term not lowering it"
    )
    return (
        f"At the paper's ratio the feed-forward network holds {share['parameters']:.0%} of "
        f"an encoder layer's parameters and does {flops[shortest]:.0%} of its FLOPs on a "
        f"{shortest}-token sentence ({flops[longest]:.0%} at {longest} tokens, {trend})."
    )


def describe_tying(saved_m: float, tied_m: float, vocab_size: int) -> str:
    """What one shared embedding matrix saves in the base model against three: `saved_m`
    and `tied_m` (the tied model's count) in millions."""
    untied_m = tied_m + saved_m
    return (
        f"In the base model with a {vocab_size:,}-token vocabulary, one shared matrix "
        f"instead of three saves {saved_m:.1f}M parameters: {untied_m:.1f}M with three "
        f"separate matrices, {tied_m:.1f}M shared. That is {saved_m / untied_m:.0%} of the "
        "untied model."
    )


def describe_parameter_gaps(
    gaps: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> str:
    """How our counts stand against the paper's, in rows of width d_model (`gaps`: {row: the
    paper's count minus ours}), with the vocabulary the typical shortfall suggests, and each
    row whose count is above the paper's named."""
    short = {r: g for r, g in gaps.items() if g > 0}
    above = {r: g for r, g in gaps.items() if g < 0}
    median = _record.median_shortfall(gaps)
    rounding = f"{0.5e6 / ROUNDING_WIDTH:,.0f} rows at d_model = {ROUNDING_WIDTH}"
    if median is None:
        text = (
            f"None of our counts falls short of the paper's in the {len(gaps)} rows that "
            "list one."
        )
    else:
        text = (
            f"Our counts fall short of the paper's in {len(short)} of the {len(gaps)} rows "
            f"that list one, by a median of {median:,.0f} rows of width d_model (from "
            f"{min(short.values()):,.0f} to {max(short.values()):,.0f}; rounding the "
            f"paper's counts to millions alone moves a row by up to {rounding}). The "
            f"suggested vocabulary is {round(vocab_size + median, -3):,.0f} tokens."
        )
    for row, gap in above.items():
        text += (
            f" {_capitalized(_row_name(row))} is {-gap:,.0f} rows above the paper's "
            f"{paper_params_m[row]:g}M."
        )
    return text


def describe_counts(
    params_m: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> str:
    """The base and big models' counts beside the paper's."""
    rows = [r for r in ("base", "big") if r in params_m and r in paper_params_m]
    models = [
        f"{_row_name(row)} {'has ' if i == 0 else ''}{params_m[row]:.1f}M"
        f"{' parameters' if i == 0 else ''} (the paper: {paper_params_m[row]:g}M)"
        for i, row in enumerate(rows)
    ]
    return (
        f"With a shared {vocab_size:,}-token vocabulary, {_joined(models)}, counted on the "
        "built models with the tied embedding matrix once."
    )


def describe_shifts(max_error: float, shifts: Sequence[int], positions: int) -> str:
    """Whether PE(pos + k) = M_k PE(pos) held within the chapter's tolerance."""
    checked = f"for k in {_joined([str(k) for k in shifts])} over {positions:,} positions"
    if max_error <= SHIFT_TOLERANCE:
        return (
            f"PE(pos + k) = M_k PE(pos) held {checked}, to {max_error:.1e} at most: "
            "float32's rounding of the table, so a shift of position is a fixed rotation "
            "of the encoding."
        )
    return (
        f"PE(pos + k) = M_k PE(pos) missed by up to {max_error:.1e} {checked}, more than "
        f"float32's rounding ({SHIFT_TOLERANCE:.0e})."
    )


def closing(record: Mapping) -> str:
    """The chapter's closing section, "What this run shows", from its results record as
    `record.read` returns it: the base and big counts beside the paper's, the gaps in
    vocabulary rows, the feed-forward share, what tying saves and the shift check."""
    m = record["metrics"]
    lines = [
        describe_counts(m["params_m"], m["paper_params_m"], m["vocab_size"]),
        describe_parameter_gaps(
            m["gap_in_vocabulary_rows"], m["paper_params_m"], m["vocab_size"]
        ),
        describe_ffn_share(m["ffn_share_at_4x"]),
        describe_tying(m["tying_saves_m"], m["params_m"]["base"], m["vocab_size"]),
    ]
    sizes = m.get("sizes")
    if sizes:
        lines.append(
            describe_shifts(
                m["positional_shift_max_abs_error"], sizes["shifts"], sizes["positions"]
            )
        )
    return "\n".join(f"- {line}" for line in lines)
