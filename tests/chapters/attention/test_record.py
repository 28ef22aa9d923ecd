"""Chapter 01's record and closing: the record written from the chapter's objects reads back
whole with the medians the page shows, and each closing sentence says only what the numbers
it reads hold (a timing difference is a difference only beyond the spread of the runs)."""

import copy

import pandas as pd
import pytest
import torch

from annotated_transformer.book import summary
from annotated_transformer.chapters.attention import record, sentences
from annotated_transformer.chapters.attention import sizes as attention_sizes

SIZES = attention_sizes.of("smoke")
THREE, ONE = record.THREE_PROJECTIONS, record.ONE_PROJECTION
FUSED, EXPLICIT = record.FUSED_PATH, record.EXPLICIT_PATH


def _saturation() -> pd.DataFrame:
    rows = []
    for d_k, unscaled_peak, unscaled_grad in ((4, 0.33, 0.24), (512, 0.94, 0.0015)):
        rows.append(
            dict(d_k=d_k, scores="scaled", largest_weight=0.16, gradient_norm=0.21)
        )
        rows.append(
            dict(
                d_k=d_k,
                scores="unscaled",
                largest_weight=unscaled_peak,
                gradient_norm=unscaled_grad,
            )
        )
    return pd.DataFrame(rows)


def _built(projection_runs=None) -> dict:
    additive = pd.DataFrame(
        [
            {"d_k": 16, "additive (ms)": 1.5, "dot product (ms)": 0.02,
             "largest weight, additive": 0.08, "largest weight, unscaled dot product": 0.6,
             "additive runs (ms)": [1.4, 1.5, 1.9], "dot product runs (ms)": [0.02, 0.02, 0.03]},
            {"d_k": 256, "additive (ms)": 12.0, "dot product (ms)": 0.04,
             "largest weight, additive": 0.09, "largest weight, unscaled dot product": 0.9,
             "additive runs (ms)": [11.0, 12.0, 13.5], "dot product runs (ms)": [0.05, 0.04, 0.03]},
        ]
    )  # fmt: skip
    heads = pd.DataFrame(
        [
            dict(heads=h, d_k=512 // h, parameters=1_050_624, flops=142_606_336,
                 score_entries=h * 4096)
            for h in (1, 8, 32)
        ]
    )  # fmt: skip
    return record.build(
        sizes=SIZES,
        variance=pd.DataFrame(
            [dict(d_k=4, unscaled=4.1, scaled=1.03), dict(d_k=512, unscaled=492.0, scaled=0.96)]
        ),
        saturation=_saturation(),
        additive=additive,
        head_costs=heads,
        projection_runs=projection_runs or {THREE: [21.0, 21.19, 23.0], ONE: [22.0, 22.11, 24.0]},
        path_runs={FUSED: [3.3, 3.4, 3.5], EXPLICIT: [3.6, 3.8, 3.7]},
        explicit_weights_mb=0.5,
    )  # fmt: skip


def test_the_record_reads_back_as_written(tmp_path):
    path = record.write(
        _built(), "smoke", torch.device("cpu"), 1.234, results_dir=tmp_path
    )
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    back = record.read("smoke", tmp_path)
    metrics = back["metrics"]
    assert back["wall_time_s"] == 1.23
    assert metrics["softmax_saturation"]["512"]["largest_weight_unscaled"] == 0.94
    assert metrics["gradient_ratio_at_widest_d_k"] == {
        "d_k": 512,
        "scaled_over_unscaled": pytest.approx(0.21 / 0.0015),
    }
    assert metrics["additive_attention"][1]["largest_weight_additive"] == 0.09
    assert metrics["projection_runs_ms"][ONE] == [22.0, 22.11, 24.0]
    assert metrics["sizes"]["d_ks"] == list(SIZES.d_ks)
    assert record.read("cpu", tmp_path) is None


def test_the_recorded_median_is_the_middle_run_the_table_shows():
    runs = {THREE: [5.0, 1.0, 3.0, 4.0], ONE: [2.0, 9.0, 1.0]}
    metrics = _built(projection_runs=runs)
    table = record.timing_table(runs, "projection").set_index("projection")
    assert metrics["projection_ms"] == {THREE: 4.0, ONE: 2.0}
    assert table.ms.to_dict() == metrics["projection_ms"]
    assert table.loc[THREE, "fastest_ms"] == 1.0 and table.loc[THREE, "slowest_ms"] == 5.0


def test_the_record_is_the_one_the_summary_knows_as_random_tensors():
    assert summary.DATASET_OF[record.RESULTS_NAME] == _built()["dataset"]


def _record(**changes) -> dict:
    metrics = copy.deepcopy(_built())
    metrics["sizes"] = {"n_keys": 32, "repeats": 3}
    # as read back: JSON's string keys
    for key in ("dot_product_variance", "softmax_saturation"):
        metrics[key] = {str(d): row for d, row in metrics[key].items()}
    metrics.update(changes)
    return {"metrics": metrics, "provenance": {"device_name": "a test CPU"}}


def _projection_line(text: str) -> str:
    return next(line for line in text.splitlines() if "fused projection" in line)


def test_closing_calls_no_projection_faster_when_the_runs_overlap():
    # the fused product's median is the slower (22.11 against 21.19), within the runs' spread
    line = _projection_line(sentences.closing(_record()))
    assert "Not measurably" in line and "within the timing noise" in line
    assert "21.19 ms" in line and "22.11 ms" in line and "a test CPU" in line
    assert "slower by" not in line and "faster by" not in line


def test_closing_calls_the_fused_projection_slower_when_every_run_is_slower():
    runs = {THREE: [21.0, 21.19, 21.5], ONE: [22.0, 22.11, 24.0]}
    line = _projection_line(sentences.closing(_record(projection_runs_ms=runs)))
    assert "No: on this run it is slower" in line
    assert f"`{ONE}` is slower by 0.92 ms (4%)" in line


def test_closing_calls_the_fused_projection_faster_only_beyond_the_noise():
    runs = {THREE: [30.0, 31.0, 32.0], ONE: [20.0, 21.0, 29.0]}
    line = _projection_line(sentences.closing(_record(projection_runs_ms=runs)))
    assert "Yes, on this run" in line and f"`{ONE}` is faster by 10.00 ms" in line
    runs[ONE][-1] = 30.5  # one run inside the other's range: no longer beyond the noise
    line = _projection_line(sentences.closing(_record(projection_runs_ms=runs)))
    assert "Not measurably" in line and "faster by" not in line


def test_closing_does_not_judge_a_difference_from_too_few_runs():
    runs = {THREE: [30.0, 31.0], ONE: [20.0, 21.0]}
    line = _projection_line(sentences.closing(_record(projection_runs_ms=runs)))
    assert "This run cannot tell" in line and "faster by" not in line


def test_closing_of_a_record_with_only_medians_says_it_cannot_judge_the_noise():
    metrics = _record()["metrics"]
    del metrics["projection_runs_ms"], metrics["attention_path_runs_ms"]
    for row in metrics["additive_attention"]:
        del row["additive_runs_ms"], row["dot_product_runs_ms"]
    text = sentences.closing({"metrics": metrics})
    line = _projection_line(text)
    assert "This record cannot tell" in line and "keeps no single runs" in line
    assert "faster by" not in text and "slower by" not in text


def test_a_path_many_times_slower_is_said_as_a_factor():
    runs = {FUSED: [3.0, 3.1, 3.2], EXPLICIT: [140.0, 141.0, 150.0]}
    text = sentences.describe_paths(runs, 0.5)
    assert "is slower by 137.90 ms (45.5 times as long)" in text
    assert "keeps 0.5 MB of weights" in text


def test_closing_has_one_line_per_measurement():
    text = sentences.closing(_record())
    assert text.count("\n- ") == 5 and text.startswith("- ")
    assert "from 4.1 at d_k = 4 to 492.0 at d_k = 512, within 4.0% of d_k" in text
    assert "the largest weight stays at 0.160 at every width" in text
    assert "94.0% of its weight to a single key out of 32" in text
    assert "140 times smaller than with the scale" in text
    assert "the parameters stay at 1,050,624" in text
    assert "the softmax entries go from 4,096 to 131,072 (32 times as many)" in text


def test_a_gradient_larger_without_the_scale_is_not_called_smaller():
    saturation = _record()["metrics"]["softmax_saturation"]
    saturation["512"]["gradient_norm_unscaled"] = 0.42  # twice the scaled 0.21
    text = sentences.describe_saturation(saturation, 32)
    assert "2.0 times larger than with the scale" in text and "smaller" not in text


def test_additive_scores_are_named_at_the_widest_d_k_and_only_as_spread_when_they_are():
    rows = _record()["metrics"]["additive_attention"]
    text = sentences.describe_additive(rows, 3)
    assert text.startswith("At d_k = 256") and "stays more spread" in text
    rows[1]["largest_weight_additive"] = 0.95  # above the unscaled dot product's 0.9
    text = sentences.describe_additive(rows, 3)
    assert "is no more spread than" in text and "stays more spread" not in text


def test_additive_timings_are_compared_by_their_runs_not_their_means():
    rows = _record()["metrics"]["additive_attention"]
    assert rows[1]["additive_runs_ms"] == [11.0, 12.0, 13.5]
    text = sentences.describe_additive(rows, 3)
    # medians with their ranges, and slower only because every run was
    assert "`dot product` took a median of 0.04 ms (0.03 to 0.05 ms over 3 runs)" in text
    assert "`additive` is slower by 11.96 ms" in text and "every one of its runs" in text
    rows[1]["additive_runs_ms"] = [0.01, 0.04, 0.06]  # overlapping the dot product's runs
    text = sentences.describe_additive(rows, 3)
    assert "within the timing noise" in text and "slower by" not in text
    # a record from before the runs were kept says its means carry no spread
    old = [{k: v for k, v in row.items() if not k.endswith("_runs_ms")} for row in rows]
    assert "means of 3 calls, without their spread" in sentences.describe_additive(old, 3)


def test_the_additive_table_shows_each_median_with_its_fastest_and_slowest_run():
    table = record.additive_table(
        pd.DataFrame(
            [{"d_k": 256, "largest weight, additive": 0.09,
              "largest weight, unscaled dot product": 0.9,
              "additive runs (ms)": [11.0, 13.5, 12.0], "dot product runs (ms)": [0.05, 0.04, 0.03]}]
        )
    )  # fmt: skip
    row = table.iloc[0]
    assert row["additive, ms: median (fastest to slowest)"] == "12.00 (11.00 to 13.50)"
    assert row["dot product, ms: median (fastest to slowest)"] == "0.040 (0.030 to 0.050)"


def test_head_costs_that_change_are_not_said_to_stay():
    rows = _record()["metrics"]["multi_head_cost"]
    rows[-1]["flops"] += 1
    text = sentences.describe_head_costs(rows)
    assert "FLOPs go from 142,606,336 to 142,606,337" in text
    assert "the parameters stay at" in text
