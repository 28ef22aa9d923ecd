"""Chapter 08's record, verdicts and words: the record reads back as it was built, each verdict
holds the numbers it rests on, a sentence names a head only when the chapter's table marks it as
passing (`head_scores.passing_heads`), and the closing renders a fixed record as its golden text."""

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotated_transformer.chapters.attention_visualizations import (
    exports,
    record,
    sentences,
    verdicts,
)
from annotated_transformer.chapters.attention_visualizations import head_scores as fa
from tests.support.golden import assert_golden

HERE = Path(__file__).parent
RESULTS = Path(__file__).resolve().parents[3] / "results"

NAMED = re.compile(r"layer (\d+) head (\d+)")


def _scores(rows: list[tuple[int, int, float, float, float]]) -> pd.DataFrame:
    """Per-head rows (layer, head, ratio, low, over-every-word low) as `head_scores` returns
    them; a head passes when both lower ends lie above 1."""
    out = []
    for layer, head, ratio, low, control_low in rows:
        out.append(
            {
                "layer": layer,
                "head": head,
                "sentences": 475,
                "pairs": 529,
                "weight": 0.1 * ratio,
                "from every word": 0.08,
                "even spread": 0.1,
                "ratio": ratio,
                "low": low,
                "high": ratio + 0.3,
                "over every word": 1.2,
                "over every word low": control_low,
                "shows": low > 1 and control_low > 1,
            }
        )
    return pd.DataFrame(out)


# The best-scoring head, layer 3 head 4, fails against the caption's other words (0.92); layer 3
# head 1 passes with a lower ratio.
BEST_FAILS = _scores(
    [
        (2, 1, 1.10, 0.95, 0.80),
        (3, 1, 2.08, 1.70, 1.05),
        (3, 4, 2.82, 2.40, 0.92),
    ]
)
NONE_PASSES = _scores(
    [
        (2, 1, 1.10, 0.95, 0.80),
        (3, 1, 2.08, 1.70, 0.97),
        (3, 4, 2.82, 2.40, 0.92),
    ]
)


def _named(text: str) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in NAMED.findall(text)}


def _marked(scores: pd.DataFrame) -> set[tuple[int, int]]:
    table = fa.score_table(scores)
    return {(int(r.layer), int(r.head)) for r in table.itertuples() if r.above == "yes"}


def _record(
    dependency: pd.DataFrame, anaphora: pd.DataFrame, **changes
) -> record.AttentionFiguresRecord:
    """A chapter 08 record as `record.read` returns it, with these per-head tables."""
    heads5 = pd.DataFrame(
        {
            "layer": [1, 1],
            "head": [1, 2],
            "entropy (bits)": [3.0, 4.0],
            "entropy s.e.": [0.01, 0.01],
            "mean distance": [2.0, 3.0],
        }
    )
    found = {
        name: record.Finding(
            captions=1000, sentences=475, pairs=529, heads=tuple(s.to_dict("records"))
        )
        for name, s in (("dependency", dependency), ("anaphora", anaphora))
    }
    bleu = {
        "float32": {"bleu": 36.07, "mean": 36.05, "ci95": 1.6},
        "int8": {"bleu": 35.97, "mean": 35.95, "ci95": 1.6},
    }
    case = fa.Example(3, "A man walks his dog.", "walks", "dog", 0.3, 0.2)
    built = record.AttentionFiguresRecord(
        checkpoint="averaged.pt",
        figure3_share_on_more_difficult=record.ShareOnMoreDifficult(0.1, 0.2, 0.09),
        figure4_weight_its_to_law=(0.004, 0.0005),
        figure4_paper_heads=(1, 2),
        figure3_layer_heads=(3, [1]),
        figure4_layer_heads=(3, [1, 4]),
        figure5_heads=(4, 3),
        captions_with_pronoun=162,
        interval_level=0.99,
        findings=found,
        drawn_cases=record.DrawnCases(dependency=case, anaphora=case),
        encoder_heads_test=tuple(heads5.to_dict("records")),
        pieces_per_word={"Figure 3's sentence": 1.96},
        test_captions=64,
        per_head=({"kind": "encoder", "layer": 1, "head": 1, "mean distance": None},),
        explorer_spec_bytes=28_801,
        onnx_model_bytes=47_500_000,
        onnx_int8=record.OnnxInt8(
            bytes=12_700_000,
            captions=1000,
            same_translations=873,
            bleu=bleu,
            served="int8",
            split="multi30k/val",
        ),
    )
    return dataclasses.replace(built, **changes)


PATHS = exports.GreedyPaths(
    captions=1000,
    batched_sacrebleu=36.06,
    export_sacrebleu=36.07,
    same=996,
    differ=4,
    differ_unfinished=4,
)


def test_the_record_reads_back_as_written(tmp_path):
    built = _record(BEST_FAILS, NONE_PASSES, greedy_paths=PATHS)
    path = record.write(built, "smoke", 1.234, tmp_path, config={"d_model": 8})
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    assert record.read("smoke", tmp_path) == built
    stored = json.loads(path.read_text())
    assert stored["provenance"]["device"] == "cpu" and stored["config"] == {"d_model": 8}
    assert stored["metrics"]["figure3_layer_heads"] == [3, [1]]
    assert stored["metrics"]["drawn_cases"]["anaphora"]["query"] == "walks"
    assert stored["metrics"]["greedy_paths"]["differ_unfinished"] == 4
    assert record.read("cpu", tmp_path) is None


def test_the_committed_record_reads_back_into_the_same_metrics():
    path = RESULTS / "book_cpu" / f"{record.RESULTS_NAME}.json"
    if not path.is_file():
        pytest.skip("no committed results/book_cpu/attention_figures.json")
    stored = json.loads(path.read_text())["metrics"]
    found = record.read("book_cpu", RESULTS)
    assert json.loads(json.dumps(found.metrics())) == stored
    assert list(found.metrics()) == list(stored)
    assert isinstance(found.greedy_paths, exports.GreedyPaths)
    assert isinstance(found.drawn_cases.dependency, fa.Example)


def test_the_closing_renders_its_golden_text():
    text = sentences.closing(_record(BEST_FAILS, NONE_PASSES, greedy_paths=PATHS))
    assert_golden(text, HERE / "closing.golden.md")


def test_the_table_marks_exactly_the_heads_its_sentence_names():
    text = sentences.describe(BEST_FAILS, "the verb", "its complement")
    assert _named(text) == _marked(BEST_FAILS) == {(3, 1)}
    assert "2.82" not in text


def test_no_sentence_names_the_best_scoring_head_when_it_fails_the_test():
    text = sentences.closing(_record(BEST_FAILS, BEST_FAILS))
    assert (3, 4) not in _named(text) and "2.82" not in text
    assert "layer 3 head 1 at 2.08 times the even spread" in text
    assert "1 of 3 encoder heads puts more weight from a verb" in text


def test_with_no_head_passing_the_sentences_say_so_and_name_none():
    table = sentences.describe(NONE_PASSES, "the verb", "its complement")
    assert "no head of 3 puts more weight" in table
    assert "2 heads lie above an even spread, but none above what the caption's" in table
    assert not _named(table) and not _marked(NONE_PASSES)
    closing = sentences.closing(_record(NONE_PASSES, NONE_PASSES))
    assert closing.count("No encoder head of 3 puts more weight") == 2
    assert not _named(closing) and "2.82" not in closing


def test_without_a_passing_head_the_figure_draws_the_last_layer_and_names_no_head():
    drawn = fa.figure_heads(NONE_PASSES)
    assert (drawn.layer, drawn.heads, drawn.passing) == (3, [1, 4], [])
    two = fa.figure_heads(NONE_PASSES, count=1)
    assert two.heads == [1]
    case = fa.Example(0, "A man walks his dog.", "walks", "dog", 0.3, 0.2)
    text = sentences.describe_drawn(drawn, case)
    assert text.startswith("No head passes the test") and not _named(text)


def test_with_a_passing_head_the_figure_is_named_by_that_head_only():
    drawn = fa.figure_heads(BEST_FAILS, count=2)
    assert (drawn.layer, drawn.heads, drawn.passing) == (3, [1, 4], [1])
    case = fa.Example(0, "A man walks his dog.", "walks", "dog", 0.3, 0.2)
    text = sentences.describe_drawn(drawn, case)
    assert _named(text) == {(3, 1)}
    assert "1 head of the layer that the test does not name" in text


def test_gpu_book_sentence_reads_its_record_or_says_where_it_will_be():
    missing = sentences.describe_gpu_book(None, "cpu")
    assert "has not run this chapter yet" in missing
    assert "results/book_gpu/attention_figures.json" in missing
    there = sentences.describe_gpu_book(_record(BEST_FAILS, NONE_PASSES), "cpu")
    assert _named(there) == {(3, 1)}


def test_committed_gpu_record_is_read_from_the_gpu_book_folder(tmp_path):
    assert record.committed_gpu(tmp_path) is None
    built = _record(BEST_FAILS, NONE_PASSES)
    record.write(built, record.GPU_BOOK_FOLDER, 1.0, tmp_path)
    assert record.committed_gpu(tmp_path) == built


def test_greedy_paths_count_the_unfinished_and_the_near_ties():
    refs = ["ein Hund läuft", "eine Katze", "ein Mann"]
    batched = ["ein Hund läuft", "eine Katze Katze Katze", "ein Mann"]
    exported = ["ein Hund läuft", "eine Katze Katze", "ein Junge"]
    paths = exports.compare_greedy(batched, exported, [False, True, False], refs)
    assert (paths.captions, paths.same, paths.differ) == (3, 1, 2)
    assert paths.differ_unfinished == 1
    found = verdicts.greedy(paths)
    assert (found.unfinished, found.rest) == (1, 1)
    text = sentences.describe_greedy_paths(paths)
    assert (
        "2 of 3 translations differ: 1 of them stops at the export's length limit" in text
    )
    assert "the export ends the other one with `</s>`" in text
    same = sentences.describe_greedy_paths(dataclasses.replace(paths, differ=0, same=3))
    assert same.endswith("Every translation is the same, so the two scores are one.")


def test_closing_explains_the_greedy_scores_only_when_the_record_holds_them():
    text = sentences.closing(_record(BEST_FAILS, BEST_FAILS, greedy_paths=PATHS))
    assert "4 of them stop at the export's length limit" in text
    assert "Chapter 05 decodes" not in sentences.closing(_record(BEST_FAILS, BEST_FAILS))


def _heads(entropies: list[float], se: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "layer": [1] * len(entropies),
            "head": range(1, len(entropies) + 1),
            "entropy (bits)": entropies,
            "entropy s.e.": [se] * len(entropies),
            "mean distance": [1.0 + h for h in range(len(entropies))],
        }
    )


def test_layers_differ_only_beyond_four_standard_errors():
    apart = sentences.describe_layers(_heads([1.0, 2.0, 3.0], se=0.01), 3.5)
    assert "In every layer" in apart and "Figure 5's point." in apart
    close = sentences.describe_layers(_heads([1.0, 1.02, 1.03], se=0.01), 3.5)
    assert "In no layer" in close and "do not show" in close


def test_export_sentence_follows_the_choice():
    bleu = {
        "float32": {"bleu": 36.43, "mean": 36.41, "ci95": 1.6},
        "int8": {"bleu": 36.49, "mean": 36.47, "ci95": 1.58},
    }
    sizes = {"float32": 47.5e6, "int8": 12.7e6}
    kept = sentences.describe_exports(bleu, 854, 1000, sizes, "int8", "v")
    assert (
        "lies inside the interval" in kept and "serves the int8 export (12.7 MB" in kept
    )
    bleu["int8"]["bleu"] = 30.0
    dropped = sentences.describe_exports(bleu, 500, 1000, sizes, "float32", "v")
    assert "lies outside" in dropped and "serves the float32 export (47.5 MB" in dropped


def _samples(sentences_found: int, pairs: int) -> fa.PairSamples:
    empty = np.zeros((sentences_found, 1, 1))
    return fa.PairSamples(
        "x",
        empty,
        empty,
        np.zeros(sentences_found),
        list(range(sentences_found)),
        [(0, 0, 0)] * pairs,
        searched=sentences_found,
    )


@pytest.mark.parametrize("with_pronoun,verb", [(1, "holds"), (162, "hold")])
def test_sample_counts_read_as_numbers_and_agree_in_number(with_pronoun, verb):
    text = sentences.describe_samples(
        1000,
        with_pronoun,
        {"anaphora": _samples(1, 1), "dependency": _samples(1200, 1500)},
    )
    assert text.startswith(
        f"Of the 1,000 test captions, {with_pronoun} {verb} one of the pronouns"
    )
    assert "in 1,200 captions (1,500 pairs)" in text
