"""Chapter 07's verdicts by value: a margin is a gain or a loss only beyond the resampling noise and
counts the points between the scores as printed, the extended run projects a rate per doubling
only once every share has stopped, what dev chose is read from the score file, and the closing
rests on the search chosen on dev and on the largest share of the extended run."""

from __future__ import annotations

import dataclasses

import pytest
from nltk import Tree

from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing import curve, record, verdicts

from .test_record import RIGHT, this_run
from .test_report import (
    comparison,
    extended_document,
    extended_test_document,
    reads,
    share_run,
)


def test_a_margin_is_a_gain_only_where_its_interval_excludes_zero():
    assert verdicts.margin(comparison(difference=6.0, ci=(1.9, 12.3))) == verdicts.Margin(
        points=6.0, above=True, base=10.0, low=1.9, high=12.3, beyond_noise=True
    )
    within = verdicts.margin(comparison(difference=6.0, ci=(-3.1, 14.1)))
    assert (within.beyond_noise, within.above, within.level) == (False, True, False)
    below = verdicts.margin(comparison(difference=-7.8, ci=(-15.3, -1.4)))
    assert (below.points, below.above, below.beyond_noise) == (7.8, False, True)
    assert verdicts.margin(comparison(difference=0.01, ci=(-1, 1))).level


def test_a_margin_counts_the_points_between_the_scores_as_printed():
    # 50.64 against 9.56: the page prints 50.6 and 9.6, so the margin is 41.0, not 41.1
    found = verdicts.margin(comparison(first=9.56, difference=41.08, ci=(37.2, 44.9)))
    assert (found.points, found.base) == (41.0, 9.56)


def test_the_margin_reads_a_comparison_as_the_bootstrap_or_the_record_holds_it():
    plain = comparison(difference=-2.0, ci=(-6.0, 1.0))
    typed = record.Comparison.of(plain)
    assert typed.second == record.Scored(8.0, (4.0, 12.0))
    assert verdicts.margin(typed) == verdicts.margin(plain)
    assert not verdicts.beyond_noise(typed)


def test_the_p_value_bound_is_one_over_the_resamples_where_none_reversed_it():
    assert not verdicts.p_value(comparison(p=0.004)).none_reversed
    none = verdicts.p_value(comparison(p=0.0, samples=2000))
    assert none.none_reversed and none.bound == 1 / 2000


def test_the_model_writes_every_tree_only_where_no_split_misses_one():
    assert verdicts.model_size(200_000, {"dev": 0, "test": 0}, 62.4, 24.2).writes_all
    some = verdicts.model_size(212_345, {"dev": 1, "test": 2}, 62, 24)
    assert not some.writes_all and some.parameters_m == pytest.approx(0.212345)


def test_training_reads_the_run_on_all_the_files_and_the_variant():
    found = verdicts.training(
        [share_run(0.5, f1s=(3, 4)), share_run(1.0, f1s=(5.0, 9.0, 8.0))],
        share_run(1.0, tags=False, f1s=(2.0, 7.5)),
        seconds=54,
        workers=2,
    )
    assert (found.runs, found.epochs, found.steps, found.precision) == (
        3,
        3.0,
        30,
        "fp32",
    )
    assert (found.best, found.at, found.xx_best, found.xx_at) == (9.0, 2, 7.5, 2)


def test_how_much_the_parser_reads_its_sentence():
    little = verdicts.reading(reads(1.869, 1.885))
    assert little.little and little.share == pytest.approx(100 * 0.016 / 1.885)
    much = verdicts.reading(reads(1.0, 2.0))
    assert (much.little, much.share, much.worth) == (False, 50.0, 1.0)
    assert verdicts.reads_little(reads(1.0, 1.2)) and not verdicts.reads_little(
        reads(1, 2)
    )


def test_the_extended_run_projects_a_rate_only_once_every_share_stopped():
    running = verdicts.extended(extended_document(), 91.3, 40_000)
    assert running.running == (0.25, 0.5, 1.0) and running.all_running
    assert not running.projects and running.paper_above == 67.3
    done = verdicts.extended(extended_document(stopped=(True,) * 3), 91.3, 40_000)
    assert done.running == () and done.projects
    assert done.rate == pytest.approx(10 / 2.603, abs=0.01)  # 14 to 24 over 559 to 3,396
    assert done.doublings == pytest.approx(3.56, abs=0.01)
    some = verdicts.extended(extended_document(stopped=(True, False, True)), 91.3, 40_000)
    assert some.running == (0.5,) and not some.all_running
    flat = verdicts.extended(
        extended_document(best=(20, 18, 16), stopped=(True,) * 3), 91.3, 40_000
    )
    assert flat.rate < 0 and not flat.projects
    one = curve.extended_summary(extended_document())[:1]
    assert verdicts.points_per_doubling(one) is None


def test_what_dev_chose_on_the_extended_run_is_read_from_the_score_file():
    (job,) = extended_test_document()["jobs"]
    assert verdicts.chosen_model(job) == verdicts.ChosenModel((58, 59, 60), 21)
    (greedy,) = extended_test_document(snapshot="best.pt", beam=1)["jobs"]
    chosen = verdicts.chosen_model(greedy)
    assert chosen == verdicts.ChosenModel((60,), 1) and not chosen.averaged


def test_the_extended_test_scores_largest_share_first_and_names_the_missing():
    found = verdicts.extended_test(
        extended_test_document((0.5, 1.0)), 91.3, 40_000, [1.0, 0.5, 0.25]
    )
    assert [s.share for s in found.shares] == [1.0, 0.5] and found.missing == (0.25,)
    top = found.shares[0]
    assert (top.dev_f1, top.others_low, top.others_high, top.others) == (
        52.3,
        40.0,
        48.0,
        3,
    )
    assert (top.f1, top.low, top.high) == (50.3, pytest.approx(47.0), pytest.approx(53.6))
    assert top.over_floor.beyond_noise and top.over_floor.points == 37.7
    assert found.times_the_trees == pytest.approx(40_000 / 3396)
    assert found.paper_above == 41.0
    assert verdicts.extended_test(None, 91.3, 40_000, [1.0]).shares == ()
    assert verdicts.extended_test({"jobs": []}, 91.3, 40_000).shares == ()


def test_a_beam_writes_the_short_trees_only_where_shorter_than_gold():
    gold = {"symbols": 73, "brackets": 22.2, "root": "S", "root_share": 100}
    beam = dict(name="beam 21, constrained", beam_size=21, symbols=60, brackets=19.3,
                root="S", root_share=100.0)  # fmt: skip
    greedy = dict(beam, name="greedy, constrained", beam_size=1, symbols=157)
    assert verdicts.searches([greedy, beam], gold).short_beam == "beam 21, constrained"
    assert verdicts.searches([greedy, dict(beam, symbols=80)], gold).short_beam is None
    short_greedy = dict(greedy, symbols=50)
    assert verdicts.searches([short_greedy, beam], gold).short_beam is None


def test_search_profile_counts_what_a_run_writes():
    tree = Tree.fromstring("(S (NP (DT the) (NN dog)) (VP (VBZ barks)))")
    lines = [parsing.linearize(tree, tags=True)] * 2
    run = parsing.ParseRun(
        "greedy, constrained", 1, True, lines,
        [parsing.Delinearized(tree)] * 2, parsing.corpus_score([tree] * 2, [tree] * 2), 0.1,
    )  # fmt: skip
    profile = verdicts.search_profile(run)
    assert profile["symbols"] == len(lines[0].split()) and profile["root"] == "S"
    assert profile["brackets"] == run.score.test / 2 and profile["root_share"] == 100
    gold = verdicts.gold_profile([tree], [len(lines[0].split())], run.score.gold / 2)
    assert gold["symbols"] == profile["symbols"]


def test_the_variant_is_worse_only_beyond_the_noise_and_reads_by_its_share():
    worse = verdicts.variant(
        comparison(17.2, -7.8, (-15.3, -1.4)), reads(1.0, 2.0), reads(1.0, 1.1)
    )
    assert worse.measurably_worse and worse.tags_read_more
    assert (worse.f1, worse.tags_share) == (pytest.approx(9.4), 50.0)
    noisy = verdicts.variant(
        comparison(17.2, -2.0, (-6.0, 1.0)), reads(1, 2), reads(1, 1.1)
    )
    assert not noisy.measurably_worse and noisy.tags_read_more
    same = verdicts.variant(comparison(), reads(1.0, 1.02), reads(1.0, 1.02))
    assert not same.tags_read_more


def test_the_closing_rests_on_the_search_chosen_on_dev():
    found = verdicts.closing(record.build(this_run()))
    # the unconstrained beam scored 40.0 on test; the record's F1 is the chosen search's
    assert (found.headline.f1, found.headline.low, found.headline.high) == (
        17.2,
        13.2,
        21.2,
    )
    assert not found.headline.over_right.beyond_noise
    assert (
        found.headline.over_flat.beyond_noise and found.headline.over_flat.points == 6.6
    )
    assert (found.paper.below, found.paper.top_below, found.paper.reads_little) == (
        74.1,
        True,
        True,
    )
    assert (found.paper.epochs, found.paper.trees) == (
        3.0,
        3396,
    )  # the run on all the files
    assert found.variant_f1 == pytest.approx(9.4) and found.variant_margin.beyond_noise


def test_the_closing_names_the_largest_share_even_where_a_smaller_one_tests_higher():
    run = this_run()
    run.keep(extended_test=extended_test_document((1.0, 0.5)))
    built = record.build(run)
    rows = [
        dataclasses.replace(r, test_f1=70.0) if r.share == 0.5 else r
        for r in built.extended_run
    ]
    found = verdicts.closing(dataclasses.replace(built, extended_run=rows))
    assert found.extended.row.share == 1.0 and found.extended.row.test_f1 == 50.3
    assert found.extended.paper_above == 41.0


def test_the_closing_has_no_extended_run_where_the_record_holds_none():
    assert verdicts.closing(record.build(this_run(extended=False))).extended is None
    run = this_run()
    run.keep(extended_test=None)
    unscored = verdicts.closing(record.build(run)).extended
    assert not unscored.row.scored and unscored.paper_above is None
    assert record.build(run).right_floor == RIGHT
