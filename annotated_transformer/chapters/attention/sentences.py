"""Chapter 01's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`).

Each function reads plain values (the chapter passes what it just computed, in the record's
types; `closing` passes the results record read back), so the page's sentences and its closing
section say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..wording import gap
from . import record as _record
from . import verdicts
from .phrases import say
from .record import AdditiveRow, AttentionRecord, HeadCost, Saturation


def describe_saturation(saturation: Mapping[int, Saturation], n_keys: int | str) -> str:
    """What the softmax does with and without the scale at the widest d_k, and the gradient
    ratio there and at the smallest."""
    found = verdicts.saturation(saturation, n_keys)
    stays = say("saturation.at" if found.one_value else "saturation.between", found)
    gradient = say("saturation.vanishes" if found.vanishes else "saturation.grows", found)
    return say("saturation", found, stays=stays, gradient=gradient)


def _said(found: verdicts.Timing) -> str:
    spread = say("timing.spread", found)
    if found.verdict in ("faster", "slower"):
        if found.factor is None:
            relative = say("timing.share", found)
        else:
            relative = say(
                "timing.as_long" if found.b > found.a else "timing.as_fast", found
            )
        return say(
            "timing.beyond",
            found,
            spread=spread,
            difference=gap(found.a, found.b, 2),
            relative=relative,
        )
    return say(
        f"timing.{found.verdict}",
        found,
        spread=spread,
        difference=gap(found.b, found.a, 2),
    )


def describe_additive_timing(rows: Sequence[AdditiveRow]) -> str:
    """Additive against dot-product scores at the widest d_k, by their timed runs (the record's
    `additive_attention`): the medians, the spread, and whether the difference exceeds it."""
    d_k = verdicts.widest_additive(rows).d_k
    return say("additive.timed", d_k=d_k, timing=_said(verdicts.additive_timing(rows)))


def describe_additive(rows: Sequence[AdditiveRow], repeats: int | str) -> str:
    """Additive against dot-product scores at the widest d_k of the comparison: their times
    (with the runs' spread where the record keeps the runs) and whether additive scores'
    softmax is less peaked than the unscaled dot product's."""
    found = verdicts.additive(rows)
    peaked = say("additive.spread" if found.spread else "additive.peaked")
    weights = say("additive.weights", found, peaked=peaked)
    if found.timing is not None:
        return say("additive", timing=describe_additive_timing(rows), weights=weights)
    return say("additive.means", found, repeats=repeats, weights=weights)


def describe_head_costs(rows: Sequence[HeadCost]) -> str:
    """How parameters, matrix-product FLOPs and softmax entries change from the fewest heads
    to the most."""
    found = verdicts.head_costs(rows)

    def change(column: str) -> str:
        cost = getattr(found, column)
        what = say(f"heads.{column}")
        return say("heads.stay" if cost.stays else "heads.change", cost, what=what)

    return say(
        "heads",
        found,
        parameters=change("parameters"),
        flops=change("flops"),
        score_entries=change("score_entries"),
    )


def _compared(
    name_a: str,
    name_b: str,
    runs: Mapping[str, Sequence[float]] | None,
    medians: Mapping[str, float] | None,
) -> tuple[str, str]:
    """(the answer's key, the comparison in words) of b against a: by the runs, or by the medians
    alone for a record without its runs."""
    if runs:
        found = verdicts.timing(name_a, runs[name_a], name_b, runs[name_b])
        return f"answer.{found.verdict}", _said(found)
    text = say(
        "timing.medians_only",
        name_a=name_a,
        a=medians[name_a],
        name_b=name_b,
        b=medians[name_b],
    )
    return "answer.no runs", text


def describe_projections(
    runs: Mapping[str, Sequence[float]] | None,
    medians: Mapping[str, float] | None = None,
    where: str = "",
) -> str:
    """Section 1.6's question, whether one fused projection saves time against three, answered
    from the timed runs ({name: milliseconds}, `record.THREE_PROJECTIONS` and
    `record.ONE_PROJECTION`), or from the medians alone for a record without its runs."""
    answer, text = _compared(
        _record.THREE_PROJECTIONS, _record.ONE_PROJECTION, runs, medians
    )
    return say(
        "projections.where" if where else "projections",
        answer=say(answer),
        where=where,
        text=text,
    )


def describe_paths(
    runs: Mapping[str, Sequence[float]] | None,
    weights_mb: float | None,
    medians: Mapping[str, float] | None = None,
) -> str:
    """The fused and the explicit code path's timed runs ({name: milliseconds},
    `record.FUSED_PATH` and `record.EXPLICIT_PATH`) and the memory of the weights the explicit
    path keeps."""
    _, text = _compared(_record.FUSED_PATH, _record.EXPLICIT_PATH, runs, medians)
    text = say("paths", text=text)
    if weights_mb is None:
        return text
    return f"{text} {say('paths.weights', weights_mb=weights_mb)}"


def closing(record: AttentionRecord) -> str:
    """The chapter's closing section, "What this run shows", from its record as `record.read`
    returns it: the variance and the saturation that the scale prevents, additive scores, the
    cost of h heads, and whether the fused projection and the fused path are faster than the
    alternatives by more than the timing noise."""
    r = record
    n_keys, repeats = ("?", "?") if r.sizes is None else (r.sizes.n_keys, r.sizes.repeats)
    lines = [
        say("variance", verdicts.variance(r.dot_product_variance)),
        describe_saturation(r.softmax_saturation, n_keys),
    ]
    if r.additive_attention:
        lines.append(describe_additive(r.additive_attention, repeats))
    lines += [
        describe_head_costs(r.multi_head_cost),
        describe_projections(r.projection_runs_ms, r.projection_ms, r.timed_on),
        describe_paths(
            r.attention_path_runs_ms, r.explicit_weights_kept_mb, r.attention_path_ms
        ),
    ]
    return "\n".join(f"- {line}" for line in lines)
