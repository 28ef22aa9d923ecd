"""Chapter 03's record, verdicts and closing: the record written from the chapter's objects reads
back as it was built; each verdict holds the numbers it rests on (Table 1's order is claimed only
when the measured exponents are in it); and the closing renders them as its golden text."""

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
import torch

from annotated_transformer.book import summary
from annotated_transformer.chapters.why_self_attention import (
    record,
    sentences,
    table1,
    verdicts,
)
from annotated_transformer.chapters.why_self_attention import (
    sizes as why_self_attention_sizes,
)
from annotated_transformer.evaluation import results
from tests.support.golden import assert_golden

HERE = Path(__file__).parent
SLOPES = {
    "self-attention": {"time_vs_n": 1.95, "time_vs_d": 1.05, "memory_vs_n": 1.6},
    "recurrent": {"time_vs_n": 1.02, "time_vs_d": 1.8, "memory_vs_n": 1.0},
    "convolutional": {"time_vs_n": 0.99, "time_vs_d": 1.9, "memory_vs_n": 1.0},
}
LENGTHS = [
    {"corpus": "multi30k test (en)", "sentences": 1000, "median": 16.0, "longest": 44,
     "share_below_d": 1.0},
    {"corpus": "wmt14 newstest2014 (de)", "sentences": 3003, "median": 38.0, "longest": 158,
     "share_below_d": 1.0},
]  # fmt: skip
SIZES = why_self_attention_sizes.of("smoke")


def _built(crossover=1400.0) -> record.WhySelfAttentionRecord:
    slopes = pd.DataFrame(
        [
            dict(kind=k, paper="O(n)", paper_n=1, paper_d=2, memory_vs_d=1.0, **v)
            for k, v in SLOPES.items()
        ]
    )
    paths = pd.DataFrame(
        [
            dict(kind=kind, n=n, max_path_length=table1.max_path_length(kind, n))
            for kind in table1.PATH_KINDS
            for n in (4, 8)
        ]
    )
    times = pd.DataFrame(
        [table1.Measurement("recurrent", 16, 64, 2, 0, 4096, 0.1, 2048).to_dict()]
    )
    return record.build(
        device=torch.device("cpu"), sizes=SIZES, kernel_size=3, slopes=slopes,
        paths=paths, by_n=times, by_d=times, crossover_times=times,
        measured_crossover=crossover, lstm_crossover=1024,
        sentence_lengths=pd.DataFrame(LENGTHS), d_model=512,
    )  # fmt: skip


def test_the_record_reads_back_as_written(tmp_path):
    built = _built()
    path = record.write(
        built, "smoke", 1.234, results_dir=tmp_path, device=torch.device("cpu")
    )
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    back = record.read("smoke", tmp_path)
    assert back == built  # int keys, nested records and tuples come back as such
    assert back.max_path_length["recurrent"] == {4: 4, 8: 8}
    stored = results.read_result(record.RESULTS_NAME, "smoke", tmp_path)
    assert stored["wall_time_s"] == 1.23
    assert stored["metrics"]["slopes"]["recurrent"]["time_vs_d"] == 1.8
    assert stored["metrics"]["timings"]["by_n"][0]["saved_bytes"] == 2048
    assert stored["metrics"]["sizes"]["crossover"]["ns"] == list(SIZES.crossover.ns)
    assert record.read("cpu", tmp_path) is None


def test_a_record_from_before_d_model_was_kept_reads_the_base_model_s():
    metrics = _built().metrics()
    del metrics["d_model"]
    assert record.WhySelfAttentionRecord.from_metrics(metrics).d_model == 512


def test_the_summary_reads_the_crossover_from_this_record():
    claim = next(c for c in summary.CLAIMS if c.chapter == "03_why_self_attention")
    built = _built()
    assert claim.record is record.WhySelfAttentionRecord
    assert claim.results[0] == record.RESULTS_NAME
    assert claim.value(built, {}) == built.crossover_n is not None


def test_a_crossover_beyond_the_longest_length_is_written_as_text():
    longest = max(SIZES.crossover.ns)
    assert _built(crossover=None).crossover_n == f"above {longest:,}"


def test_the_summary_writes_a_measured_crossover_with_thousands_separators():
    claim = next(c for c in summary.CLAIMS if c.chapter == "03_why_self_attention")
    assert claim.fmt.format(1467) == "1,467"  # it read "1467" beside "above 16384"


# ------------------------------------------------------------------------------ verdicts, by value
def _slopes(**time_vs_n) -> dict[str, record.Slopes]:
    slopes = _built().slopes
    return {
        k: dataclasses.replace(s, time_vs_n=time_vs_n.get(k.split("-")[0], s.time_vs_n))
        for k, s in slopes.items()
    }


def test_table_1_s_order_holds_only_when_the_exponents_are_in_it():
    assert verdicts.slope_order(_slopes()).holds
    found = verdicts.slope_order(_slopes(self=1.0))  # below the recurrent layer's 1.02
    assert found.slower_in_n == ("recurrent",) and found.faster_in_d == ()
    assert not found.holds


@pytest.mark.parametrize(
    "crossover, found, at",
    [(None, "never", None), ("above 2048", "never", None), (128.0, "already", 128.0),
     (100.0, "already", 100.0), (700.0, "at", 700.0)],
)  # fmt: skip
def test_the_crossover_verdict_follows_where_the_times_crossed(crossover, found, at):
    verdict = verdicts.crossover("a CPU", 1, 512, crossover, (128, 256, 2048))
    assert (verdict.found, verdict.crossover_n) == (found, at)
    assert (verdict.shortest, verdict.longest) == (128, 2048)


def test_the_lstm_verdict_is_2d_only_when_it_is():
    found = verdicts.lstm(1024, 512, 16 * 512**2)
    assert found.twice and found.per_position_d2 == 16
    assert not verdicts.lstm(1000, 512).twice


def test_a_test_set_with_too_many_long_sentences_is_not_counted_as_short():
    rows = _built().sentence_lengths
    found = verdicts.sentence_lengths(rows, 512)
    assert found.every_set and found.least == 1.0 and found.longest == 158
    failing = (rows[0], dataclasses.replace(rows[1], share_below_d=0.95))
    found = verdicts.sentence_lengths(failing, 512)
    assert not found.every_set and found.short == ("multi30k test (en)",)
    assert found.long == (("wmt14 newstest2014 (de)", 0.95),) and found.least == 0.95


def test_the_path_verdict_reads_the_longest_n_computed():
    found = verdicts.path_lengths(_built().max_path_length, 3)
    assert found.n == 8 and dict(found.lengths)["recurrent"] == 8
    assert dict(found.lengths)["self-attention"] == 1


# ------------------------------------------------------------------------------ the words
def test_the_closing_renders_its_golden_text():
    built = dataclasses.replace(_built(), device_name="a test CPU")
    assert_golden(sentences.closing(built), HERE / "closing.golden.md")


def test_closing_does_not_claim_table_1_s_order_for_exponents_out_of_it():
    built = dataclasses.replace(_built(), slopes=_slopes(self=1.0))
    text = sentences.closing(built)
    assert "As Table 1 says" not in text
    missed = text.split("does not show")[1].split(".")[0]
    assert "the recurrent layer" in missed and "the convolution" not in missed


def test_a_failing_test_set_is_named_with_its_share():
    rows = _built().sentence_lengths
    failing = (rows[0], dataclasses.replace(rows[1], share_below_d=0.95))
    text = sentences.describe_sentence_lengths(failing, 512)
    assert text.startswith("Not every test set satisfies n < d: in 1 of 2")
    assert (
        "wmt14 newstest2014 (de): 95%" in text
        and "in multi30k test (en) more are" in text
    )


def test_closing_reads_the_committed_cpu_record():
    committed = record.read("book_cpu")
    if committed is None:
        pytest.skip("no committed results/book_cpu/why_self_attention.json")
    text = sentences.closing(committed)
    assert text.count("\n- ") == 5 and f"n = {committed.crossover_n:,.0f}" in text
