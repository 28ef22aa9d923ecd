"""Chapter 02's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`).

Each function reads plain numbers (the chapter passes what it just computed; `closing` passes
the results record read back), so the page's sentences and its closing section say the same
thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..wording import capitalized, listed
from . import verdicts
from .phrases import say
from .record import FfnShare, ModelRecord


def describe_counts(
    params_m: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> str:
    """The base and big models' counts beside the paper's."""
    found = verdicts.counts(params_m, paper_params_m, vocab_size)
    models = [
        say(
            "counts.first" if i == 0 else "counts.other",
            name=verdicts.row_name(row),
            ours=ours,
            paper=paper,
        )
        for i, (row, ours, paper) in enumerate(found.models)
    ]
    return say("counts", found, models=listed(models))


def describe_parameter_gaps(
    gaps: Mapping[str, float], paper_params_m: Mapping[str, float], vocab_size: int
) -> str:
    """How our counts stand against the paper's, in rows of width d_model."""
    found = verdicts.parameter_gaps(gaps, paper_params_m, vocab_size)
    text = say(
        "gaps.none_short" if found.median is None else "gaps.short",
        found,
        width=verdicts.ROUNDING_WIDTH,
    )
    for row, rows_above, paper in found.above:
        name = capitalized(verdicts.row_name(row))
        text += " " + say("gaps.above", name=name, rows_above=rows_above, paper=paper)
    return text


def describe_ffn_share(share: FfnShare) -> str:
    """The feed-forward network's share of an encoder layer at d_ff = 4 d_model."""
    found = verdicts.ffn_share(share)
    trend = say("ffn.falls" if found.falls_with_length else "ffn.holds")
    return say("ffn", found, trend=trend)


def describe_tying(saved_m: float, tied_m: float, vocab_size: int) -> str:
    """What one shared embedding matrix saves in the base model against three."""
    return say("tying", verdicts.tying(saved_m, tied_m, vocab_size))


def describe_shifts(max_error: float, shifts: Sequence[int], positions: int) -> str:
    """Whether PE(pos + k) = M_k PE(pos) held within the chapter's tolerance."""
    found = verdicts.shift_check(max_error, shifts, positions)
    checked = say(
        "shifts.checked", shifts=listed([str(k) for k in shifts]), positions=positions
    )
    return say("shifts.held" if found.held else "shifts.missed", found, checked=checked)


def closing(record: ModelRecord) -> str:
    """The chapter's closing section, "What this run shows", from its record as `record.read`
    returns it."""
    r = record
    lines = [
        describe_counts(r.params_m, r.paper_params_m, r.vocab_size),
        describe_parameter_gaps(r.gap_in_vocabulary_rows, r.paper_params_m, r.vocab_size),
        describe_ffn_share(r.ffn_share_at_4x),
        describe_tying(r.tying_saves_m, r.params_m["base"], r.vocab_size),
    ]
    if r.sizes is not None:
        lines.append(
            describe_shifts(
                r.positional_shift_max_abs_error, r.sizes.shifts, r.sizes.positions
            )
        )
    return "\n".join(f"- {line}" for line in lines)
