"""Chapter 03's figures: Table 1's costs by length and width, maximum path lengths, and where self-attention overtakes recurrence."""

from __future__ import annotations

from typing import Mapping

import altair as alt
import pandas as pd

from ..charts import (
    line_chart,
    loglog_with_reference,
    loglog_with_rules,
    side_by_side,
    tighten,
)


def scaling_charts(
    by_n: pd.DataFrame,
    by_d: pd.DataFrame,
    y: str,
    exponents_n: Mapping[str, float],
    exponents_d: Mapping[str, float],
    *,
    what: str,
    y_title: str,
) -> alt.HConcatChart:
    """`y` against the length n (at by_n's one width d) and against the width d (at by_d's
    one length n), each with `loglog_with_reference` lines of the given exponents."""
    d, n = by_n["d"].iloc[0], by_d["n"].iloc[0]
    return side_by_side(
        loglog_with_reference(
            by_n,
            "n",
            y,
            exponents_n,
            title=f"{what} against n (d = {d})",
            y_title=y_title,
        ),
        loglog_with_reference(
            by_d,
            "d",
            y,
            exponents_d,
            title=f"{what} against d (n = {n})",
            y_title=y_title,
        ),
        independent_y=True,
    )


def path_length_charts(
    paths: pd.DataFrame, to_last: pd.DataFrame, *, kernel_size: int
) -> alt.HConcatChart:
    """Maximum path length against n (`paths`: kind, n, max_path_length; log-log) beside
    the path length from each input position to the last output (`to_last`: kind,
    input_position, path_length) at one n."""
    panel = dict(points=True, width=270, height=260)
    longest = tighten(
        line_chart(
            paths,
            "n",
            "max_path_length",
            "kind",
            log_x=True,
            log_y=True,
            y_title="maximum path length",
            title=f"Maximum path length against n (k = r = {kernel_size})",
            **panel,
        )
    )
    n = to_last.groupby("kind").input_position.max().max() + 1
    each = line_chart(
        to_last,
        "input_position",
        "path_length",
        "kind",
        title=f"Path length from each input to the last output (n = {n})",
        x_title="input position",
        y_title="path length",
        **panel,
    )
    return side_by_side(longest, each, legend_columns=3)


def crossover_chart(
    flops: pd.DataFrame,
    times: pd.DataFrame,
    rules: Mapping[str, float],
    *,
    d: int,
    x: str = "n",
    color: str = "kind",
) -> alt.HConcatChart:
    """Two layers compared as the length grows: counted FLOPs (`flops`, column "flops") beside
    measured time (`times`, column "seconds"), both with the crossovers of `rules` marked
    (`loglog_with_rules`)."""
    return side_by_side(
        loglog_with_rules(
            flops, x, "flops", color, rules, title=f"FLOPs, d = {d}", y_title="FLOPs"
        ),
        loglog_with_rules(
            times,
            x,
            "seconds",
            color,
            rules,
            title=f"Measured time, d = {d}",
            y_title="seconds per forward pass",
        ),
    )
