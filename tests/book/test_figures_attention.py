"""Chapter 01's softmax-saturation chart: every swept head width is a labelled tick on both
panels, the widest included, however many widths a profile sweeps."""

import re

import pandas as pd
import pytest

from annotated_transformer import viz
from annotated_transformer.chapters.attention import figures as attention_figures
from annotated_transformer.chapters.attention import sizes as attention_sizes


def _saturation(d_ks) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(d_k=d, scores=s, largest_weight=0.5, gradient_norm=0.1 / d)
            for d in d_ks
            for s in ("scaled", "unscaled")
        ]
    )


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_swept_d_k_is_a_tick_never_dropped_for_crowding(profile):
    d_ks = attention_sizes.of(profile).d_ks
    spec = viz.chart_spec(attention_figures.softmax_saturation_chart(_saturation(d_ks)))
    for panel in spec["hconcat"]:
        axis = panel["encoding"]["x"]["axis"]
        assert axis["values"] == [float(d) for d in d_ks]
        assert axis["labelOverlap"] is False


def test_the_widest_d_k_is_drawn_on_both_panels():
    vl_convert = pytest.importorskip("vl_convert")
    d_ks = attention_sizes.of("cpu").d_ks
    assert max(d_ks) == 1024
    chart = attention_figures.softmax_saturation_chart(_saturation(d_ks))
    svg = vl_convert.vegalite_to_svg(chart.to_dict())
    labels = re.findall(r">([0-9,]+)</text>", svg)
    for d in d_ks:
        assert labels.count(str(d)) >= 2, (d, labels)
