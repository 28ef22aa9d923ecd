"""Chapter 02's record, verdicts and closing: the record written from the chapter's objects reads
back as it was built, each verdict holds the numbers it rests on (a row above or below the paper's
count by the sign of its own gap), and the closing renders them as its golden text."""

import dataclasses
from pathlib import Path

import pandas as pd

from annotated_transformer.book import summary
from annotated_transformer.chapters.model import record, sentences, verdicts
from annotated_transformer.chapters.model import sizes as model_sizes
from tests.support.golden import assert_golden

HERE = Path(__file__).parent

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
    built = _built()
    path = record.write(built, "smoke", 1.234, results_dir=tmp_path)
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    assert (
        record.read("smoke", tmp_path) == built
    )  # int keys and tuples come back as such
    from annotated_transformer.evaluation import results

    stored = results.read_result(record.RESULTS_NAME, "smoke", tmp_path)
    assert stored["wall_time_s"] == 1.23 and stored["provenance"]["device"] == "cpu"
    assert stored["metrics"]["ffn_share_at_4x"] == {
        "parameters": 8 / 12,
        "flops_by_n": {"32": 0.66, "512": 0.57},
    }
    assert stored["metrics"]["sizes"] == {
        "positions": SIZES.positions,
        "shifts": list(SIZES.shifts),
    }
    assert record.read("cpu", tmp_path) is None


def test_the_median_gap_is_over_the_rows_that_fall_short_only():
    built = _built()
    shortfalls = sorted(g for g in built.gap_in_vocabulary_rows.values() if g > 0)
    assert record.median_shortfall(built.gap_in_vocabulary_rows) == sum(shortfalls) / 2
    assert record.median_shortfall({"big": -5.0}) is None


def test_the_summary_reads_the_base_and_big_counts_from_this_record():
    claims = [c for c in summary.CLAIMS if c.chapter == "02_model"]
    built = _built()
    assert all(c.record is record.ModelRecord for c in claims)
    assert all(c.results[0] == record.RESULTS_NAME for c in claims)
    assert [c.value(built, {}) for c in claims] == [
        built.params_m["base"],
        built.params_m["big"],
    ]
    assert summary.DATASET_OF[record.RESULTS_NAME] == built.dataset


# ------------------------------------------------------------------------------ verdicts, by value
def test_the_gaps_verdict_counts_the_short_rows_and_names_the_one_above():
    gaps = {"base": 3745.1, "C1": -200.0, "big": 1000.0}
    paper = {"base": 65.0, "C1": 36.0, "big": 213.0}
    found = verdicts.parameter_gaps(gaps, paper, 37_000)
    assert (found.rows, found.short, found.low, found.high) == (3, 2, 1000.0, 3745.1)
    assert found.median == (1000.0 + 3745.1) / 2
    assert found.suggested_vocab == 39_000 and found.above == (("C1", 200.0, 36.0),)
    none_short = verdicts.parameter_gaps({"big": -10.0}, {"big": 213.0}, 37_000)
    assert none_short.median is None and none_short.suggested_vocab is None


def test_the_shift_verdict_holds_within_float32_rounding_only():
    assert verdicts.shift_check(6.7e-8, [1, 2], 256).held
    missed = verdicts.shift_check(3e-4, [1, 2, 5], 256)
    assert not missed.held and missed.shifts == (1, 2, 5)


def test_the_feed_forward_verdict_says_whether_its_share_falls_with_length():
    falls = verdicts.ffn_share(record.FfnShare(0.67, {32: 0.66, 512: 0.57}))
    assert falls.falls_with_length and (falls.shortest, falls.longest) == (32, 512)
    holds = verdicts.ffn_share(record.FfnShare(0.67, {32: 0.5, 512: 0.6}))
    assert not holds.falls_with_length and holds.at_longest == 0.6


def test_tying_is_a_share_of_the_untied_model():
    found = verdicts.tying(37.888, 63.082496, 37_000)
    assert found.untied_m == 37.888 + 63.082496
    assert found.share == 37.888 / (37.888 + 63.082496)


# ------------------------------------------------------------------------------ the words
def test_the_closing_renders_its_golden_text():
    assert_golden(sentences.closing(_built()), HERE / "closing.golden.md")
    missed = dataclasses.replace(_built(), positional_shift_max_abs_error=3e-4)
    text = sentences.closing(missed)
    assert "missed by up to 3.0e-04" in text and "fixed rotation" not in text


def test_each_phrase_names_only_fields_its_verdict_gives():
    """Every template renders: a phrase naming a field no verdict has fails here, not on a page."""
    from annotated_transformer.chapters.model.phrases import say

    text = sentences.describe_parameter_gaps({"big": -10.0}, {"big": 213.0}, 37_000)
    assert text.startswith("None of our counts falls short")
    assert set(say.table) >= {"gaps.short", "gaps.none_short", "shifts.held"}
