"""Chapter 07's sentences and bookkeeping (annotated_transformer.chapters.constituency_parsing.sentences and
.report): each sentence takes the wording its verdict calls for (the verdicts' values:
`test_verdicts`), a margin whose interval includes zero is never called a gain, and the tables have
reader-facing headers."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing import phrases, report, verdicts
from annotated_transformer.chapters.constituency_parsing import sentences as describe
from annotated_transformer.chapters.constituency_parsing.curve import ShareRun
from annotated_transformer.evaluation.paper import TABLE4, WSJ_ONLY


def comparison(first=10.0, difference=6.0, ci=(2.0, 10.0), p=0.01, samples=2000):
    return {
        "first": {"f1": first, "ci95": [first - 3, first + 3]},
        "second": {"f1": first + difference, "ci95": [first + difference - 4, first + difference + 4]},
        "difference": difference,
        "difference_ci95": list(ci),
        "p_value": p,
        "samples": samples,
        "sentences": 8,
    }  # fmt: skip


def reads(own=1.0, other=1.5):
    return {
        "nll_own_sentence": own,
        "nll_other_sentence": other,
        "trees": 16,
        "trees_with_another_sentence": 7,
    }


def share_run(share=1.0, tags=True, f1s=(5.0, 9.0, 8.0), trees=100):
    return ShareRun(
        share=share,
        train_trees=trees,
        steps=30,
        epochs=float(len(f1s)),
        seconds=12.0,
        precision="fp32",
        dev_loss=[{"step": 10 * i, "epochs": i, "nll": 2.0 / i} for i in (1, 2, 3)],
        dev_f1=[{"step": 10 * i, "epochs": i, "f1": f} for i, f in enumerate(f1s, 1)],
        run_dir="unused",
        tags=tags,
    )


def extended_document(stopped=(False, False, False), best=(14.0, 17.0, 24.0)):
    jobs = []
    for share, trees, top, halt in zip(
        (1.0, 0.5, 0.25), (3396, 1405, 559), best[::-1], stopped
    ):
        curve = [{"epoch": e, "f1": top - 4 + e} for e in range(1, 5)] + [
            {"epoch": 5, "f1": top - 0.5}
        ]
        jobs.append({"share": share, "train_trees": trees, "curve": curve})
    return {
        "recipe": {"d_model": 128},
        "patience": 0.2,
        "stopped": {str(j["share"]): s for j, s in zip(jobs, stopped)},
        "jobs": jobs,
    }  # fmt: skip


def extended_test_document(shares=(1.0,), f1=50.3, snapshot="best_average.pt", beam=21):
    """What `parsing_extended.score_test` writes, for the shares given (its numbers made up)."""
    jobs = []
    for share in shares:
        trees = {1.0: 3396, 0.5: 1405, 0.25: 559}[share]
        search = "greedy, constrained" if beam == 1 else f"beam {beam}, constrained"
        dev = {
            name: {
                "greedy, constrained": {"f1": 40.0},
                "beam 21, constrained": {"f1": 48.0},
            }
            for name in ("best.pt", "best_average.pt")
        }
        dev[snapshot][search] = {"f1": 52.3}
        jobs.append(
            {
                "share": share,
                "train_trees": trees,
                "epochs_trained": 75,
                "chosen_on_dev": {
                    "snapshot": snapshot,
                    "search": search,
                    "beam_size": beam,
                    "epoch": 60,
                    "dev_f1": 52.3,
                },
                "snapshots": {
                    "best.pt": {"epochs": [60]},
                    "best_average.pt": {"epochs": [58, 59, 60]},
                },
                "dev": dev,
                "test": {
                    "sentences": 245,
                    "f1": f1,
                    "f1_ci95": [f1 - 3.3, f1 + 3.3],
                    "f1_le40": f1 + 2,
                    "sentences_le40": 230,
                },
                "right_branching_floor": "right-branching (S over NPs)",
                "against_floors": {
                    "right-branching (S over NPs)": comparison(
                        12.6, f1 - 12.6, (34.0, 41.5)
                    )
                },
            }
        )
    return {"recipe": {"d_model": 128}, "jobs": jobs}  # fmt: skip


# ------------------------------------------------------------------------------------- describe
def test_extended_test_sentence_names_what_dev_chose_and_what_is_not_scored():
    text = describe.describe_extended_test(
        extended_test_document(), 91.3, 40_000, [1.0, 0.5, 0.25]
    )
    assert text.startswith("Scored once on the test sentences. With all of the files")
    assert (
        "dev chose the average of its snapshots of epochs 58 to 60 with beam 21" in text
    )
    assert (
        "The jobs on half and a quarter of the files are not scored on test yet" in text
    )
    greedy = describe.describe_extended_test(
        extended_test_document((1.0, 0.5), snapshot="best.pt", beam=1), 91.3, 40_000,
        [1.0, 0.5],
    )  # fmt: skip
    assert "dev chose its model of epoch 60 with greedy decoding" in greedy
    assert "not scored on test yet" not in greedy
    one = describe.describe_extended_test(
        extended_test_document(), 91.3, 40_000, [1.0, 0.5]
    )
    assert "The job on half of the files is not scored on test yet" in one
    for none in (None, {"jobs": []}):
        plain = describe.describe_extended_test(none, 91.3, 40_000, [1.0])
        assert plain.startswith("The extended run has not been scored on the test")
        assert "parser-curve --out runs/parser-extended --score-test" in plain


def test_a_margin_beyond_the_noise_is_a_gain_and_one_within_it_is_not():
    beyond = describe.say_margin(
        verdicts.margin(comparison(difference=6.0, ci=(1.9, 12.3))), "the flat floor"
    )
    assert beyond.startswith(
        "6.0 points above the flat floor (10.0), beyond the resampling"
    )
    assert "[+1.9, +12.3]" in beyond and "excludes zero" in beyond
    within = describe.say_margin(
        verdicts.margin(comparison(difference=6.0, ci=(-3.1, 14.1))), "the floor"
    )
    assert within.startswith("not distinguishable from the floor (10.0)")
    assert "6.0 points above on these sentences" in within and "beyond" not in within
    below = describe.say_margin(
        verdicts.margin(comparison(difference=-7.8, ci=(-15.3, -1.4))), "the tags parser"
    )
    assert below.startswith("7.8 points below the tags parser")
    level = describe.say_margin(
        verdicts.margin(comparison(difference=0.01, ci=(-1, 1))), "x"
    )
    assert "level on these sentences" in level


def test_p_value_says_when_no_resample_reversed_the_margin():
    assert describe.say_p_value(verdicts.p_value(comparison(p=0.004))) == "p = 0.004"
    assert (
        describe.say_p_value(verdicts.p_value(comparison(p=0.0)))
        == "p < 0.0005: no resample of 2,000 reversed it"
    )


def test_plan_names_the_shares_in_words():
    one = describe.describe_plan("cpu", 10, "cpu", (1.0,))
    assert "on all of the training files (one run)" in one and "XX variant" in one
    three = describe.describe_plan("gpu", 100, "cuda", (1.0, 0.25, 0.5), variant=False)
    assert three.endswith("on a quarter, half and all of the training files (3 runs).")
    assert phrases.share_words(0.3) == "0.3"


def test_model_sentence_says_what_the_vocabulary_cannot_write():
    none = describe.describe_model(200_000, {"dev": 0, "test": 0}, 62.4, 24.2)
    assert "0.20M parameters" in none and "every dev and test tree too" in none
    some = describe.describe_model(200_000, {"dev": 1, "test": 2}, 62, 24)
    assert "all but 1 dev and 2 test trees" in some


def test_training_sentence_counts_processes_and_epochs_in_words():
    text = describe.describe_training(
        [share_run(0.5, f1s=(3, 4)), share_run(1.0, f1s=(5.0, 9.0, 8.0))],
        share_run(1.0, tags=False, f1s=(2.0, 7.5)),
        seconds=54,
        workers=2,
    )
    assert text.startswith("3 runs of 3 epochs took 54 s on 2 processes (fp32)")
    assert "after 2 epochs, against 7.5 for the XX variant" in text
    one = describe.describe_training([share_run(f1s=(9, 8))], share_run(), 1, 1)
    assert "1 process " in one and "is 9.0, after 1 epoch," in one


def test_source_dependence_verdict_follows_the_share_of_the_loss():
    little = describe.describe_source_dependence(reads(1.869, 1.885))
    assert "1% of the loss" in little and "needs more trees" in little
    much = describe.describe_source_dependence(reads(1.0, 2.0))
    assert "50% of the loss: the parser reads its sentence." in much


def test_extended_sentence_says_whether_each_share_stopped():
    text = describe.describe_extended(extended_document(), 91.3, 40_000)
    assert "Best dev F1 of the extended run: with a quarter" in text
    assert "No share has stopped rising yet" in text
    # no rate per doubling from bests that are still rising: it would read as a forecast
    assert "doubling" not in text and "a best that is still rising" in text
    done = describe.describe_extended(
        extended_document(stopped=(True,) * 3), 91.3, 40_000
    )
    assert "Every share has stopped rising" in done
    assert "each doubling of the trees added about 3.8 points" in done
    some = describe.describe_extended(
        extended_document(stopped=(True, False, True)), 91.3, 40_000
    )
    assert "The jobs on half of the files have not stopped rising yet" in some
    flat = describe.describe_extended(
        extended_document(best=(20, 18, 16), stopped=(True,) * 3), 91.3, 40_000
    )
    assert "More trees did not raise the best dev F1 here" in flat


def test_search_sentence_explains_a_beam_that_writes_short_trees():
    gold = {"symbols": 73, "brackets": 22.2, "root": "S", "root_share": 100}
    beam = dict(name="beam 21, constrained", beam_size=21, symbols=60, brackets=19.3, root="S",
                root_share=100.0)  # fmt: skip
    greedy = dict(beam, name="greedy, constrained", beam_size=1, symbols=157)
    short = describe.describe_searches([greedy, beam], gold)
    assert "Beam 21, constrained writes the shortest trees" in short
    long = describe.describe_searches([greedy, dict(beam, symbols=80)], gold)
    assert "shortest" not in long and "The gold trees have 73 symbols" in long


def test_test_sentence_states_the_margin_over_the_better_floor():
    headline = {"f1": 17.2, "f1_le40": 17.2, "sentences_le40": 8}
    unconstrained = {"invalid": 8, "f1": 17.4, "symbols_per_output": 45}
    text = describe.describe_test(
        headline, "beam 21, constrained", 8, comparison(11.2, 6.0, (-3.1, 14.1)),
        "the better floor", unconstrained, 59,
    )  # fmt: skip
    assert "**17.2 F1** (beam 21, constrained)" in text
    assert "not distinguishable from the better floor (11.2)" in text
    assert "leaves 8 of 8 outputs that are no tree" in text


def test_variant_sentence_follows_the_paired_bootstrap_and_the_reading():
    worse = comparison(17.2, -7.8, (-15.3, -1.4), p=0.004)
    text = describe.describe_variant(worse, "beam 21", reads(1.0, 2.0), reads(1.0, 1.1))
    assert "p = 0.004" in text and "the brackets follow" in text
    noisy = comparison(17.2, -2.0, (-6.0, 1.0), p=0.3)
    text = describe.describe_variant(noisy, "beam 21", reads(1.0, 2.0), reads(1.0, 1.1))
    assert "not measurably better" in text and "not distinguishable" in text
    same = describe.describe_variant(worse, "beam 21", reads(1.0, 1.02), reads(1.0, 1.02))
    assert "do not make the parser read its sentence much more" in same


# --------------------------------------------------------------------------------------- report
def reader_facing(frame: pd.DataFrame) -> bool:
    return not any(re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", str(c)) for c in frame.columns)


def test_tables_have_reader_facing_headers_and_no_bare_booleans():
    runs = {0.5: share_run(0.5, trees=50), 1.0: share_run()}
    xx = share_run(tags=False)
    document = extended_document(stopped=(True, False, False))
    tables = [
        report.live_table(runs, xx),
        report.extended_table(document),
        report.score_table(parsing.BracketScore(5, 6, 6, 0, 1, 0, 0)),
    ]
    for frame in tables:
        assert reader_facing(frame)
        assert not frame.isin([True, False]).to_numpy().any() or frame is tables[2]
    assert list(tables[1]["stopped rising"]) == ["not yet", "not yet", "yes"]
    assert set(tables[1]["test F1 [95% interval]"]) == {"not scored yet"}
    tested = report.extended_table(document, extended_test_document())
    assert reader_facing(tested)
    assert list(tested["test F1 [95% interval]"]) == [
        "not scored yet", "not scored yet", "50.3 [47.0, 53.6]",
    ]  # fmt: skip
    assert list(tested["chosen on dev"])[-1] == "average (epoch 60), beam 21"
    assert list(tables[0]["run"]) == [
        "half of the files (50 trees)", "all of the files (100 trees)",
        "the XX variant, all the files",
    ]  # fmt: skip


def test_curve_charts_draw_live_and_extended_side_by_side():
    runs = {1.0: share_run()}
    live_f1, live_loss = report.live_points(runs, share_run(tags=False))
    document = extended_document()
    trees = report.by_trees(runs, document, 192)
    assert set(trees.run) == {"this run (d_model 192)", "extended run (d_model 128)"}
    chart = report.curve_charts(
        live_f1, live_loss, report.extended_points(document), trees, {"flat (S)": 10.0}
    )
    spec = chart.to_dict()
    assert (
        len(spec["vconcat"][0]["hconcat"]) == 2
        and len(spec["vconcat"][1]["hconcat"]) == 2
    )
    without = report.curve_charts(live_f1, live_loss, None, trees, {"flat (S)": 10.0})
    assert len(without.to_dict()["vconcat"][0]["hconcat"]) == 1
    tested = report.by_trees(runs, document, 192, extended_test_document())
    test_rows = tested[tested.run.str.contains("test F1")]
    assert list(zip(test_rows.trees, test_rows.f1)) == [(3396, 50.3)]
    chart = report.curve_charts(live_f1, live_loss, None, tested, {"flat (S)": 10.0})
    assert "test where named" in json.dumps(chart.to_dict())


def _panels(spec):
    for row in spec["vconcat"]:
        for panel in row["hconcat"]:
            yield from panel.get("layer", [panel])


def test_no_curve_or_point_of_the_curve_charts_lies_on_a_frame():
    runs = {0.5: share_run(0.5, trees=50), 1.0: share_run(f1s=(5.0, 9.0, 11.9))}
    live_f1, live_loss = report.live_points(runs, share_run(tags=False))
    document = extended_document()
    trees = report.by_trees(runs, document, 192, extended_test_document())
    floors = {"flat (S)": 10.0, "right-branching (S over NPs)": 12.0}
    spec = report.curve_charts(
        live_f1, live_loss, report.extended_points(document), trees, floors
    ).to_dict()
    checked = 0
    for layer in _panels(spec):
        data = spec["datasets"][layer["data"]["name"]]
        for channel in ("x", "y"):
            encoding = layer["encoding"].get(channel)
            if not encoding or "scale" not in encoding:
                continue
            low, high = encoding["scale"]["domain"]
            assert all(low < d[encoding["field"]] < high for d in data), (channel, layer)
            checked += 1
    assert checked >= 9  # x and y of every panel, and the floors' rules


def test_scores_table_and_table4_frame():
    record = {"f1": 17.2, "f1_le40": 17.2, "precision": 18.5, "recall": 16.1, "exact": 0,
              "invalid": 0, "symbols_per_output": 56.0, "seconds": 0.2}  # fmt: skip
    floor = {
        k: v for k, v in record.items() if k not in ("symbols_per_output", "seconds")
    }
    table = report.scores_table({"beam 21, constrained": record}, {"flat (S)": floor})
    assert reader_facing(table) and list(table["symbols a tree"]) == ["56", ""]
    frame = report.table4_frame(TABLE4, [("tags parser", "Treebank sample", record)])
    assert frame.iloc[-1]["F1"] == "17.2" and len(frame) == len(TABLE4) + 1
    chart = report.table4_chart(frame, [WSJ_ONLY, "Treebank sample"], ["tags parser"])
    whos = {row["who"] for row in chart.to_dict()["datasets"].popitem()[1]}
    assert whos == {"ours", "the paper", "other parsers"}


def test_wrapped_lines_fit_the_column():
    text = report.wrapped("gold:     ", " ".join(["(NP DT NN )NP"] * 30))
    lines = text.splitlines()
    assert len(lines) > 1 and all(len(line) <= report.WIDTH for line in lines)
    assert all(line.startswith(" " * 10) for line in lines[1:])


@pytest.mark.parametrize("share", [0.25, 0.5, 1.0])
def test_share_words_round_trip_the_profiles_shares(share):
    assert phrases.share_words(share) in ("a quarter", "half", "all")
