"""Chapter 04's step-profile table reads a `bench_step.py --profiler` record as it is written."""

import pytest

from annotated_transformer.chapters.training import tables
from annotated_transformer.evaluation.results import committed_root
from annotated_transformer.runtime.records import read_json


def _record(steps: dict, peaks: dict) -> dict:
    """A profiler record with the given unprofiled step times (s) and matmul peaks (GFLOP/s)."""
    runs, training = {}, {}
    for (precision, variant), seconds in steps.items():
        runs[f"{precision} {variant}"] = {
            "by_kind_ms_per_step": {"matmul": 500 * seconds, "softmax": 0.0}
        }
        training.setdefault(precision, {"variants": {}})["variants"][variant] = {
            "per_step_s": seconds,
            "gflops_per_s": 40 / seconds,
        }
    matmul_peak = {p: {"peak_gflops_per_s": g} for p, g in peaks.items()}
    return {"profiler": {"runs": runs, "matmul_peak": matmul_peak}, "training": training}


def test_step_profile_table_columns_and_share_of_peak():
    record = _record(
        {
            ("fp32", "eager"): 0.2,
            ("fp32", "eager_half_attention"): 0.2,
            ("bf16", "eager"): 0.1,
            ("bf16", "eager_half_attention"): 0.16,
        },
        {"fp32": 400.0, "bf16": 1600.0},
    )
    table = tables.step_profile_table(record).set_index("per step")
    # fp32 has no half-precision attention: its second variant is not a column
    assert list(table.columns) == ["fp32", "bf16", "bf16, attention in bf16 too"]
    assert "softmax (ms)" not in table.index  # a kind that took no time is no row
    assert table.loc["matmul (ms)", "bf16"] == "50.0"
    assert table.loc["step's share of the peak", "fp32"] == "50%"  # 200 of 400 GFLOP/s
    assert table.loc["step's share of the peak", "bf16"] == "25%"  # 400 of 1,600
    speedups = tables.step_speedups(record)
    assert speedups["bf16 over fp32"] == pytest.approx(2.0)
    assert speedups["float32 attention"] == pytest.approx(1.6)


def test_the_committed_step_profile_reads():
    root = committed_root()
    if root is None:
        pytest.skip("no committed results beside the package")
    record = read_json(root / tables.STEP_PROFILE, "benchmark")
    table = tables.step_profile_table(record)
    assert len(table.columns) == 4  # the row names, fp32, bf16 and bf16 before
    assert set(tables.step_speedups(record)) == {"bf16 over fp32", "float32 attention"}


def test_dropout_mask_lines_name_each_precision_and_the_last_validation():
    timed = {
        "training": {
            "batch_tokens": 1024,  # a setting beside the precisions, not one of them
            "bf16": {
                "variants": {
                    "eager": {"per_step_s": 0.16},
                    "eager_float_dropout_mask": {"per_step_s": 0.18},
                }
            },
        }
    }
    run = lambda ppl: {"valid_ppl": {"300": 50.0, "1000": ppl}}
    curves = {
        "runs": {
            "lanes_seed0": run(15.5),
            "lanes_seed1": run(16.25),
            "float_seed0": run(15.75),
            "float_seed1": run(16.0),
        }
    }
    step, ppl = tables.dropout_mask_lines(timed, curves)
    assert step == "bf16 step: 160 ms with lanes, 180 ms with a float an element (1.12x)"
    assert ppl == (
        "validation perplexity after 1,000 steps, seeds 0, 1: lanes 15.50, 16.25; "
        "a float an element 15.75, 16.00"
    )


def test_the_committed_dropout_mask_records_read():
    root = committed_root()
    if root is None:
        pytest.skip("no committed results beside the package")
    lines = tables.dropout_mask_lines(
        read_json(root / tables.DROPOUT_MASK, "benchmark"),
        read_json(root / tables.DROPOUT_MASK_CURVES, "benchmark"),
    )
    assert [line.split(" ", 1)[0] for line in lines] == ["bf16", "fp32", "validation"]
