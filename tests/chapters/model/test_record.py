"""Chapter 02's record and closing: the record written from the chapter's objects reads back
with the fields the introduction's summary reads, and each closing sentence names a row above
or below the paper's count by the sign of that row's own gap."""

import copy

import pandas as pd

from annotated_transformer.book import summary
from annotated_transformer.chapters.model import record, sentences
from annotated_transformer.chapters.model import sizes as model_sizes

SIZES = model_sizes.of("smoke")
# ours and the paper's, in millions, at d_model 512 (base, C1) and 1024 (big)
COUNTS = {"base": (63.082496, 65.0), "C1": (33.656832, 36.0), "A1": (63.082496, None),
          "big": (214.245376, 213.0)}  # fmt: skip
D_MODEL = {"base": 512, "C1": 512, "A1": 512, "big": 1024}


def _counts() -> pd.DataFrame:
    counts = pd.DataFrame(
        [
            dict(row=row, d_model=D_MODEL[row], ours_m=ours, paper_m=paper)
            for row, (ours, paper) in COUNTS.items()
        ]
    )
    counts["gap_m"] = counts.paper_m - counts.ours_m
    counts["gap_in_vocabulary_rows"] = counts.gap_m * 1e6 / counts.d_model
    return counts


def _built() -> dict:
    split = pd.DataFrame(
        [
            dict(d_ff_over_d_model=r, n=n, ffn_parameter_share=2 * r / (2 * r + 4),
                 ffn_flop_share=share)
            for r in (1, 4)
            for n, share in ((32, 0.66), (512, 0.57))
        ]
    )  # fmt: skip
    return record.build(
        sizes=SIZES,
        vocab_size=37_000,
        counts=_counts(),
        split=split,
        shift_errors=[dict(k=1, max_abs_error=2e-8), dict(k=5, max_abs_error=6.7e-8)],
        tying_saves=37_888_000,
    )


def test_the_record_reads_back_as_written(tmp_path):
    path = record.write(_built(), "smoke", 1.234, results_dir=tmp_path)
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    back = record.read("smoke", tmp_path)
    metrics = back["metrics"]
    assert back["wall_time_s"] == 1.23 and back["provenance"]["device"] == "cpu"
    assert (
        metrics["params_m"]["A1"] == 63.082496 and "A1" not in metrics["paper_params_m"]
    )
    assert metrics["gap_in_vocabulary_rows"]["big"] < 0
    assert metrics["ffn_share_at_4x"] == {
        "parameters": 8 / 12,
        "flops_by_n": {"32": 0.66, "512": 0.57},
    }
    assert metrics["positional_shift_max_abs_error"] == 6.7e-8
    assert metrics["tying_saves_m"] == 37.888
    assert metrics["sizes"] == {
        "positions": SIZES.positions,
        "shifts": list(SIZES.shifts),
    }
    assert record.read("cpu", tmp_path) is None


def test_the_median_gap_is_over_the_rows_that_fall_short_only():
    metrics = _built()
    shortfalls = sorted(g for g in metrics["gap_in_vocabulary_rows"].values() if g > 0)
    assert metrics["median_gap_in_vocabulary_rows"] == sum(shortfalls) / 2
    assert record.median_shortfall({"big": -5.0}) is None


def test_the_summary_reads_the_base_and_big_counts_from_this_record():
    claims = [c for c in summary.CLAIMS if c.chapter == "02_model"]
    assert {c.key for c in claims} == {"params_m.base", "params_m.big"}
    assert all(c.result == record.RESULTS_NAME for c in claims)
    assert summary.DATASET_OF[record.RESULTS_NAME] == _built()["dataset"]


def _record(**changes) -> dict:
    metrics = copy.deepcopy(_built())
    metrics["sizes"] = {"positions": 256, "shifts": [1, 2, 5]}
    metrics["ffn_share_at_4x"]["flops_by_n"] = {"32": 0.66, "512": 0.57}  # JSON's keys
    metrics.update(changes)
    return {"metrics": metrics}


def test_closing_names_the_row_above_the_paper_by_its_gap():
    text = sentences.closing(_record())
    assert text.count("\n- ") == 4 and text.startswith("- ")
    assert "the base model has 63.1M parameters (the paper: 65M)" in text
    assert "the big model 214.2M (the paper: 213M)" in text
    assert "fall short of the paper's in 2 of the 3 rows" in text
    assert "The big model is 1,216 rows above the paper's 213M." in text


def test_a_row_other_than_big_above_the_paper_is_the_one_named_and_big_is_not():
    gaps = {"base": 3745.1, "C1": -200.0, "big": 1000.0}
    paper = {"base": 65.0, "C1": 36.0, "big": 213.0}
    text = sentences.describe_parameter_gaps(gaps, paper, 37_000)
    assert "Row C1 is 200 rows above the paper's 36M." in text
    assert "big model is" not in text and "in 2 of the 3 rows" in text


def test_no_shortfall_suggests_no_vocabulary():
    text = sentences.describe_parameter_gaps({"big": -10.0}, {"big": 213.0}, 37_000)
    assert "suggested vocabulary" not in text and "median" not in text
    assert text.startswith("None of our counts falls short")


def test_a_shift_error_beyond_float32_rounding_is_not_called_a_rotation():
    text = sentences.closing(_record(positional_shift_max_abs_error=3e-4))
    assert "missed by up to 3.0e-04 for k in 1, 2 and 5 over 256 positions" in text
    assert "fixed rotation" not in text
    held = sentences.describe_shifts(6.7e-8, [1, 2, 5], 256)
    assert held.startswith("PE(pos + k) = M_k PE(pos) held") and "6.7e-08" in held


def test_a_feed_forward_share_that_does_not_fall_with_n_is_not_said_to():
    text = sentences.describe_ffn_share(
        {"parameters": 0.67, "flops_by_n": {"32": 0.5, "512": 0.6}}
    )
    assert "(60% at 512 tokens, attention's n-squared term not lowering it)" in text
    assert "where attention's n-squared term grows" not in text


def test_tying_is_said_as_a_share_of_the_untied_model():
    text = sentences.describe_tying(37.888, 63.082496, 37_000)
    assert (
        "saves 37.9M parameters: 101.0M with three separate matrices, 63.1M shared"
        in text
    )
    assert "That is 38% of the untied model." in text
