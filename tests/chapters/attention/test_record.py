"""Chapter 01's record, verdicts and closing: the record written from the chapter's objects reads
back as it was built, with the medians the page shows; each verdict holds the numbers it rests on
(a timing difference is a difference only beyond the spread of the runs); and the closing renders
them as its golden text."""

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
import torch

from annotated_transformer.book import summary
from annotated_transformer.chapters.attention import record, sentences, verdicts
from annotated_transformer.chapters.attention import sizes as attention_sizes
from annotated_transformer.chapters.attention.phrases import say
from annotated_transformer.evaluation import results
from tests.support.golden import assert_golden

HERE = Path(__file__).parent
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


def _built(projection_runs=None) -> record.AttentionRecord:
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
    built = _built()
    path = record.write(
        built, "smoke", 1.234, results_dir=tmp_path, device=torch.device("cpu")
    )
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    back = record.read("smoke", tmp_path)
    assert back == built  # int keys, nested records and tuples come back as such
    assert (
        back.timed_on
        and back.timed_on
        == results.read_result(record.RESULTS_NAME, "smoke", tmp_path)["provenance"][
            "device_name"
        ]
    )
    stored = results.read_result(record.RESULTS_NAME, "smoke", tmp_path)
    assert stored["wall_time_s"] == 1.23 and "timed_on" not in stored["metrics"]
    assert (
        stored["metrics"]["softmax_saturation"]["512"]["largest_weight_unscaled"] == 0.94
    )
    assert stored["metrics"]["projection_runs_ms"][ONE] == [22.0, 22.11, 24.0]
    assert stored["metrics"]["sizes"]["d_ks"] == list(SIZES.d_ks)
    assert record.read("cpu", tmp_path) is None


def test_a_record_from_before_the_runs_were_kept_reads_with_none_for_them(tmp_path):
    metrics = _built().metrics()
    for key in ("additive_attention", "projection_runs_ms", "attention_path_runs_ms",
                "explicit_weights_kept_mb"):  # fmt: skip
        del metrics[key]
    old = record.AttentionRecord.from_metrics(metrics)
    assert old.additive_attention is None and old.projection_runs_ms is None
    assert old.projection_ms == {THREE: 21.19, ONE: 22.11}


def test_the_recorded_median_is_the_middle_run_the_table_shows():
    runs = {THREE: [5.0, 1.0, 3.0, 4.0], ONE: [2.0, 9.0, 1.0]}
    built = _built(projection_runs=runs)
    table = record.timing_table(runs, "projection").set_index("projection")
    assert built.projection_ms == {THREE: 4.0, ONE: 2.0}
    assert table.ms.to_dict() == built.projection_ms
    assert table.loc[THREE, "fastest_ms"] == 1.0 and table.loc[THREE, "slowest_ms"] == 5.0


def test_the_record_is_the_one_the_summary_knows_as_random_tensors():
    assert summary.DATASET_OF[record.RESULTS_NAME] == _built().dataset


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


# ------------------------------------------------------------------------------ verdicts, by value
def test_a_timing_difference_is_one_only_when_every_run_is_beyond_the_other_s():
    assert verdicts.timing_verdict([30.0, 31.0, 32.0], [20.0, 21.0, 29.0]) == "faster"
    assert (
        verdicts.timing_verdict([30.0, 31.0, 32.0], [20.0, 21.0, 30.5]) == "within noise"
    )
    assert verdicts.timing_verdict([21.0, 21.19, 21.5], [22.0, 22.11, 24.0]) == "slower"
    assert verdicts.timing_verdict([30.0, 31.0], [20.0, 21.0]) == "too few runs"


def test_the_timing_verdict_gives_a_factor_only_from_twice_as_long():
    found = verdicts.timing("a", [3.0, 3.1, 3.2], "b", [140.0, 141.0, 150.0])
    assert (found.a, found.b, found.b_runs, found.verdict) == (3.1, 141.0, 3, "slower")
    assert found.factor == 141.0 / 3.1
    close = verdicts.timing("a", [21.0, 21.19, 21.5], "b", [22.0, 22.11, 24.0])
    assert close.factor is None and close.share == pytest.approx(0.92 / 21.19)


def test_the_variance_verdict_rounds_its_distance_from_d_k_up():
    found = verdicts.variance(_built().dot_product_variance)
    assert (found.smallest, found.widest, found.at_widest) == (4, 512, 492.0)
    assert found.off_d_k == 0.04  # |492/512 - 1| = 0.0391 rounds up to 0.040
    assert (found.scaled_low, found.scaled_high) == (0.96, 1.03)


def test_the_saturation_verdict_says_which_way_the_gradient_went():
    rows = _built().softmax_saturation
    found = verdicts.saturation(rows, 32)
    assert found.vanishes and found.one_value and found.peak_unscaled == 0.94
    assert found.gradient_factor == pytest.approx(0.21 / 0.0015)
    grows = dict(rows)
    grows[512] = dataclasses.replace(rows[512], gradient_norm_unscaled=0.42)
    found = verdicts.saturation(grows, 32)
    assert not found.vanishes and found.gradient_factor == pytest.approx(2.0)


def test_the_additive_verdict_is_at_the_widest_d_k_and_spread_only_below_the_dot_product():
    rows = _built().additive_attention
    found = verdicts.additive(rows)
    assert (found.d_k, found.spread, found.timing.verdict) == (256, True, "slower")
    peaked = (rows[0], dataclasses.replace(rows[1], largest_weight_additive=0.95))
    assert not verdicts.additive(peaked).spread
    means = tuple(
        dataclasses.replace(r, additive_runs_ms=None, dot_product_runs_ms=None)
        for r in rows
    )
    assert verdicts.additive(means).timing is None


def test_the_head_costs_verdict_tells_a_cost_that_stays_from_one_that_changes():
    rows = _built().multi_head_cost
    found = verdicts.head_costs(rows)
    assert found.parameters.stays and not found.score_entries.stays
    assert (found.fewest, found.most, found.entries_factor) == (1, 32, 32.0)
    changed = rows[:-1] + (dataclasses.replace(rows[-1], flops=rows[-1].flops + 1),)
    flops = verdicts.head_costs(changed).flops
    assert not flops.stays and flops.last == 142_606_337


# ------------------------------------------------------------------------------ the words
def _as_read(**changes) -> record.AttentionRecord:
    return dataclasses.replace(_built(), timed_on="a test CPU", **changes)


def _projection_line(text: str) -> str:
    return next(line for line in text.splitlines() if "fused projection" in line)


def test_the_closing_renders_its_golden_text():
    assert_golden(sentences.closing(_as_read()), HERE / "closing.golden.md")


def test_closing_answers_the_projection_question_by_the_timing_verdict():
    line = _projection_line(sentences.closing(_as_read()))
    assert "Not measurably" in line and "a test CPU" in line
    runs = {THREE: [30.0, 31.0, 32.0], ONE: [20.0, 21.0, 29.0]}
    line = _projection_line(sentences.closing(_as_read(projection_runs_ms=runs)))
    assert "Yes, on this run" in line and f"`{ONE}` is faster by 10.00 ms" in line
    runs = {THREE: [30.0, 31.0], ONE: [20.0, 21.0]}
    line = _projection_line(sentences.closing(_as_read(projection_runs_ms=runs)))
    assert "This run cannot tell" in line and "faster by" not in line


def test_closing_of_a_record_with_only_medians_says_it_cannot_judge_the_noise():
    old = _as_read(
        projection_runs_ms=None, attention_path_runs_ms=None, additive_attention=None
    )
    text = sentences.closing(old)
    assert "This record cannot tell" in _projection_line(text)
    assert "faster by" not in text and "slower by" not in text
    means = tuple(
        dataclasses.replace(r, additive_runs_ms=None, dot_product_runs_ms=None)
        for r in _built().additive_attention
    )
    assert "means of 3 calls, without their spread" in sentences.describe_additive(
        means, 3
    )


def test_a_path_many_times_slower_is_said_as_a_factor():
    runs = {FUSED: [3.0, 3.1, 3.2], EXPLICIT: [140.0, 141.0, 150.0]}
    text = sentences.describe_paths(runs, 0.5)
    assert "is slower by 137.90 ms (45.5 times as long)" in text


def test_each_phrase_renders_from_what_its_verdict_gives():
    """Every key the sentences pick exists: a phrase naming a field no verdict has fails here."""
    assert {
        f"answer.{v}" for v in ("faster", "slower", "within noise", "too few runs")
    } <= set(say.table)
    assert {f"timing.{v}" for v in ("too few runs", "within noise", "beyond")} <= set(
        say.table
    )
