"""Chapter 03's record and closing: the record written from the chapter's objects reads back
whole, and each closing sentence says only what the numbers it reads hold."""

import copy

import pandas as pd
import pytest
import torch

from annotated_transformer.book import summary
from annotated_transformer.chapters.why_self_attention import record, sentences, table1
from annotated_transformer.chapters.why_self_attention import (
    sizes as why_self_attention_sizes,
)
from annotated_transformer.evaluation import results

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


def _built(crossover=24.0) -> dict:
    slopes = pd.DataFrame(
        [
            dict(kind=k, paper_n=1, paper_d=2, memory_vs_d=1.0, **v)
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
    times = pd.DataFrame([{"kind": "recurrent", "n": 16, "seconds": 0.1}])
    return record.build(
        device=torch.device("cpu"), sizes=SIZES, kernel_size=3, slopes=slopes,
        paths=paths, by_n=times, by_d=times, crossover_times=times,
        measured_crossover=crossover, lstm_crossover=16,
        sentence_lengths=pd.DataFrame(LENGTHS), d_model=512, restricted=(8, 1.0, 2.0),
    )  # fmt: skip


def test_the_record_reads_back_as_written(tmp_path):
    metrics = _built()
    path = record.write(
        metrics, "smoke", torch.device("cpu"), 1.234, results_dir=tmp_path
    )
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    back = record.read("smoke", tmp_path)
    assert back["wall_time_s"] == 1.23
    assert back["metrics"]["slopes"]["recurrent"]["time_vs_d"] == 1.8
    assert back["metrics"]["max_path_length"]["recurrent"] == {"4": 4, "8": 8}
    assert back["metrics"]["crossover_n_flops"] == float(SIZES.crossover.d)
    assert back["metrics"]["sizes"]["crossover"]["ns"] == list(SIZES.crossover.ns)
    assert record.read("cpu", tmp_path) is None


def test_the_summary_reads_the_crossover_from_this_record():
    claim = next(c for c in summary.CLAIMS if c.chapter == "03_why_self_attention")
    assert claim.result == record.RESULTS_NAME and claim.key in _built()


def test_a_crossover_beyond_the_longest_length_is_written_as_text():
    longest = max(SIZES.crossover.ns)
    assert _built(crossover=None)["crossover_n"] == f"above {longest:,}"


def test_the_summary_writes_a_measured_crossover_with_thousands_separators():
    claim = next(c for c in summary.CLAIMS if c.key == "crossover_n")
    assert claim.fmt.format(1467) == "1,467"  # it read "1467" beside "above 16384"


def _record(**changes) -> dict:
    metrics = copy.deepcopy(
        {
            "device_name": "a test CPU",
            "slopes": SLOPES,
            "max_path_length": {"self-attention": {"4": 1}, "recurrent": {"4": 4}},
            "kernel_size": 3,
            "crossover_d": 512,
            "crossover_n": 1400.0,
            "lstm_crossover_n_flops_with_projections": 1024,
            "sizes": {"crossover": {"ns": [128, 256, 2048], "batch": 1}},
            "sentence_lengths": LENGTHS,
            "d_model": 512,
        }
    )
    metrics.update(changes)
    return {"metrics": metrics}


def test_closing_names_table_1_s_order_when_the_exponents_hold_it():
    text = sentences.closing(_record())
    assert text.count("\n- ") == 5
    assert "As Table 1 says" in text and "1.95 for self-attention (Table 1: 2)" in text
    assert "the mixing steps take the same time at n = 1,400" in text
    assert "Real sentences satisfy n < d" in text and "has 158" in text


def test_closing_does_not_claim_table_1_s_order_for_exponents_out_of_it():
    slopes = copy.deepcopy(SLOPES)
    slopes["self-attention"]["time_vs_n"] = 1.0  # below the recurrent layer's 1.02
    text = sentences.closing(_record(slopes=slopes))
    assert "As Table 1 says" not in text
    assert "does not show self-attention's time growing faster with the length" in text
    assert "the recurrent layer" in text.split("does not show")[1].split(".")[0]
    assert "the convolution" not in text.split("does not show")[1].split(".")[0]


def test_a_test_set_with_too_many_long_sentences_is_named_and_not_called_short():
    lengths = copy.deepcopy(LENGTHS)
    lengths[1]["share_below_d"] = 0.95  # the corpus with the longest sentence fails
    text = sentences.describe_sentence_lengths(lengths, 512)
    assert "Real sentences satisfy" not in text
    assert "Not every test set satisfies n < d: in 1 of 2" in text
    assert "wmt14 newstest2014 (de): 95%" in text
    assert "in multi30k test (en) more are" in text


@pytest.mark.parametrize(
    "crossover, says",
    [
        (None, "faster at every length measured, up to 2,048"),
        ("above 2048", "faster at every length measured, up to 2,048"),
        (128.0, "slower already at the shortest length measured, 128"),
        (700.0, "take the same time at n = 700"),
    ],
)
def test_the_crossover_sentence_follows_where_the_times_crossed(crossover, says):
    text = sentences.describe_crossover("a CPU", 1, 512, crossover, (128, 256, 2048))
    assert says in text and "$n = d = 512$" in text


def test_the_lstm_sentence_says_2d_only_when_it_is():
    assert "($2d$ at $d = 512$)" in sentences.describe_lstm(1024, 512, 16 * 512**2)
    assert "$2d$" not in sentences.describe_lstm(1000, 512)


def test_closing_reads_the_committed_cpu_record():
    committed = results.read_result(record.RESULTS_NAME, "book_cpu")
    if committed is None:
        pytest.skip("no committed results/book_cpu/why_self_attention.json")
    text = sentences.closing(committed)
    crossover = committed["metrics"]["crossover_n"]
    assert text.count("\n- ") == 5 and f"n = {crossover:,.0f}" in text
