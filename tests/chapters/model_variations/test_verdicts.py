"""Chapter 06's words and the extended run's results file: budgets in words, one sentence per
finding that states direction, size and interval, and an export that never loses epochs."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from annotated_transformer.chapters.model_variations import extended, findings
from annotated_transformer.chapters.model_variations import sentences as say
from annotated_transformer.chapters.model_variations import statistics as f
from annotated_transformer.chapters.model_variations import verdicts as report
from annotated_transformer.training.long_run import CURVE_NAME, JobRecord, RunPlan


def test_budgets_are_said_in_words():
    assert report.budget_label(1, 10, 20) == (
        "1 epoch; dropout rows: 10 epochs on a twentieth of the pairs"
    )
    assert report.budget_label(8, 40, 7).endswith("40 epochs on 1/7 of the pairs")


def _runs(effects, seeds=(1, 2, 3), seed=0):
    rng = np.random.default_rng(seed)
    blocks = rng.normal(0, 0.1, len(seeds))
    rows = ["base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E"]
    return {
        r: {
            s: float(40 * np.exp(effects.get(r, 0) + b + rng.normal(0, 0.01)))
            for s, b in zip(seeds, blocks)
        }
        for r in rows
    }


def _live(found, epochs=1, name="this run"):
    return {
        "name": name,
        "label": f"{epochs} epoch",
        "full_epoch": epochs,
        "findings": found,
    }


def _line(text, name):
    return next(line for line in text.splitlines() if name in line)


def test_each_finding_gets_a_sentence_with_its_direction_and_interval():
    runs = _runs({"A1": 0.2, "C1": -0.3})
    found = f.assess(f.FINDINGS, {"full": runs, "small": {}})
    bigger_read = findings.reading(found[3])
    assert bigger_read.compared and bigger_read.against == ("depth",)
    assert [a for _, a in bigger_read.comparisons] == [
        "depth",
        "width",
        "feed-forward size",
    ]
    assert [c["trained"] for c, _ in bigger_read.comparisons] == [True, True, False]
    assert (
        findings.reading(found[0]).comparisons[0][1] is None
    )  # one comparison: no aspect
    text = say.conclusion([_live(found)], [{"C1": "C1 (1 layer)"}])
    assert text.startswith("*This run*: 1 epoch.")
    one_head = _line(text, "One head")
    assert re.search(
        r"it holds: A1 ends 2\d\.\d% above base in perplexity \(interval \+", one_head
    )
    bigger = _line(text, "Bigger is better")
    # the "does not hold" is depth's; width cannot tell; feed-forward was not trained
    assert "does not hold because of depth: C1 (1 layer) ends 2" in bigger
    assert "the opposite of the paper" in bigger
    assert "feed-forward size: C6 against C7 was not trained" in bigger
    tie = _line(text, "positions tie")
    assert "margin" in tie
    untrained = f.assess(
        f.FINDINGS, {"full": {r: v for r, v in runs.items() if r != "A4"}}
    )
    text = say.conclusion([_live(untrained), _live(found, 6, "the extended run")])
    heads = _line(text, "Too many heads")
    assert "(this run) it was not compared: A4 against base was not trained" in heads
    assert heads.endswith("Only the longer run compares it.")


def test_a_difference_inside_its_interval_is_not_called_a_difference():
    found = f.assess(f.FINDINGS, {"full": _runs({"A4": 0.01})})
    heads = _line(say.conclusion([_live(found)]), "Too many heads")
    assert "cannot be told" in heads and "within the noise" in heads
    assert "includes no change" in heads and "four times in five" in heads
    assert "as in the paper" not in heads and "opposite" not in heads
    clearly = f.assess(f.FINDINGS, {"full": _runs({"A4": 0.3})})
    heads = _line(say.conclusion([_live(clearly)]), "Too many heads")
    assert "within the noise" not in heads and "as in the paper" in heads


def test_which_way_learned_positions_went():
    better = f.assess(f.FINDINGS, {"full": _runs({"E": -0.2})})
    assert "E did better than base" in _line(say.conclusion([_live(better)]), "tie")
    worse = f.assess(f.FINDINGS, {"full": _runs({"E": 0.2})})
    assert "E did worse than base" in _line(say.conclusion([_live(worse)]), "tie")
    tie = f.assess(f.FINDINGS, {"full": _runs({"E": 0.0})})
    assert "a tie" in _line(say.conclusion([_live(tie)]), "tie")


def test_the_longer_budget_says_what_it_changed_and_why():
    early = f.assess(f.FINDINGS, {"full": _runs({"C1": -0.3, "A4": 0.01})})
    late = f.assess(f.FINDINGS, {"full": _runs({"C1": 0.1, "A4": 0.005}, seed=1)})
    runs = [_live(early), _live(late, 6, "the extended run")]
    notes = [{}, {"bigger is better": "C3 overtook C1 for good in epoch 5."}]
    moved = findings.change(early[3], late[3])
    assert moved.compared and (moved.before, moved.after) == (f.DOES_NOT_HOLD, f.HOLDS)
    depth = moved.moves[0]
    assert (depth.first, depth.second, depth.swapped) == ("C1", "C3", True)
    assert depth.before_pct < 0 < depth.after_pct and depth.detectable is None
    heads_moved = findings.change(early[1], late[1]).moves[0]
    assert not heads_moved.swapped and heads_moved.detectable is not None
    text = say.conclusion(runs, [], notes)
    bigger = _line(text, "Bigger is better")
    assert "After 6 epochs (the extended run) it holds" in bigger
    assert "C3 overtook C1 for good in epoch 5." in bigger
    assert "changed the verdict from does not hold to holds: C1 went from" in bigger
    assert re.search(r"C1 went from 2\d\.\d% below C3 to \d+\.\d% above it", bigger)
    heads = _line(text, "Too many heads")
    assert "left the verdict as it was (cannot be told)" in heads
    assert "the smallest change the runs could find from" in heads
    moved = findings.moved(early, late)
    assert findings.Moved("bigger is better", f.DOES_NOT_HOLD, f.HOLDS) in moved
    assert all(m.before != m.after for m in moved)


def test_the_rank_correlation_is_read_from_its_interval():
    base = {"rho": 0.5, "samples": 10_000, "dropped": 0, "rows": 11}

    def reading(**c):
        return findings.correlation(base | c, "this run").reading

    assert reading(low=0.1, high=0.9) == "excludes_zero"
    assert reading(low=-0.2, high=0.9) == "includes_zero"
    assert reading(rho=-0.6, low=-0.9, high=-0.1) == "below_zero"
    found = findings.correlation(base | {"low": 0.1, "high": 0.9, "dropped": 3}, "x")
    assert (found.who, found.rows, found.dropped, found.samples) == ("x", 11, 3, 10_000)
    zero = say.describe_correlation(
        base | {"rho": -0.001, "low": -0.7, "high": 0.7}, "this run"
    )
    assert "rows is 0.00, 95% bootstrap interval -0.70" in zero  # no "-0.00"
    assert "dropped" not in zero  # nothing dropped, nothing said


def test_too_few_rows_get_the_correlation_without_a_reading():
    """Over 2 to 4 rows even a perfect ordering comes by chance more than 1 time in 20, so a
    bootstrap interval that excludes zero is not read as agreement."""
    perfect = {"rho": 1.0, "low": 1.0, "high": 1.0, "samples": 5_000, "dropped": 0}
    two, four, five = (
        findings.correlation(perfect | {"rows": n}, "the extended run") for n in (2, 4, 5)
    )
    assert (two.reading, two.orderings) == ("too_few", None)
    assert (four.reading, four.orderings) == ("too_few", 12)
    assert five.reading == "excludes_zero"
    text = say.describe_correlation(perfect | {"rows": 4}, "the extended run")
    assert "perfectly one time in 12; a reading needs 5 or more" in text
    # the rule's arithmetic: the chance of a perfect ordering first falls below 1 in 20 at 5 rows
    chance = [2 / math.factorial(n) for n in range(2, 7)]
    assert [c < 0.05 for c in chance] == [False, False, False, True, True]
    assert f.MIN_ORDER_ROWS == 5


def test_the_tally_counts_findings_under_their_verdicts():
    found = f.assess(f.FINDINGS, {"full": _runs({"B1": 0.3, "C1": -0.3})})
    counted = findings.tally(_live(found), "this run")
    groups = dict(counted.groups)
    assert groups[f.HOLDS] == ("small d_k hurts",)
    assert groups[f.DOES_NOT_HOLD] == ("bigger is better",)
    assert (counted.findings, counted.full_epoch, counted.name) == (6, 1, "this run")
    assert sum(len(g) for g in groups.values()) == 6
    text = say.say_tally(counted)
    assert "1 holds (small keys hurt), 1 does not hold (bigger is better)" in text


def test_a_small_corpus_curve_has_turned_once_it_rose_above_its_lowest():
    turns = findings.small_turns(
        {"base": [9.0, 8.0, 7.0], "D1": [9.0, 7.0, 9.8]}, ("D1", "base", "D2")
    )
    assert [(t.row, t.epochs, t.lowest) for t in turns] == [("D1", 3, 2), ("base", 3, 3)]
    assert turns[0].rise_pct == pytest.approx(40.0) and turns[1].rise_pct is None
    assert say.overfit_note({}, ("D1",)) == ""


def test_overfitting_note_reads_the_small_corpus_curve():
    assert "no row had begun to overfit" in say.overfit_note({"base": [9.0, 8.0, 7.0]})
    note = say.overfit_note(
        {"base": [9.0, 8.0, 8.4], "D1": [9.0, 7.0, 9.8]}, ("D1", "base")
    )
    assert "D1 was lowest at epoch 2 of 3 and ended 40.0% above it" in note
    assert "base was lowest at epoch 2 of 3 and ended 5.0% above it" in note
    assert note.endswith("they had begun to overfit, where dropout can help.")


def _job(folder, row, seed, ppls, corpus="full"):
    curve = tuple({"epoch": i + 1, "ppl": p} for i, p in enumerate(ppls))
    job = {"corpus": corpus, "row": row, "seed": seed}
    name = extended.Job(row, seed, corpus).name
    record = JobRecord(extended.KIND, name, job, "fp32", "AMD EPYC", {}, curve)
    extended.long_run(folder).write_job(record)


def _plan(folder):
    identity = {"overfit_share": 20, "precision": "fp32"}
    extended.long_run(folder).write_plan(RunPlan(extended.KIND, identity))


def test_dropout_rows_reach_their_whole_target_at_the_last_budget(tmp_path):
    run = tmp_path / "run"
    _plan(run)
    _job(run, "base", 1, [30.0, 20.0, 15.0])
    _job(run, "base", 1, [900.0 - 10 * e for e in range(8)], corpus="small")
    out = tmp_path / "results" / report.EXTENDED_NAME
    report.export(run, out, {"full": 3, "small": 8})
    budgets = report.extended_budgets(report.read_extended(out))
    # 8/3 of a small epoch per full one, rounded down: not 2 per full epoch, which ends at 6
    assert [b["small_epoch"] for b in budgets] == [2, 5, 8]
    assert budgets[-1]["ppl"]["small"]["base"] == {1: 830.0}
    # a small target below the full one: never a budget without the dropout rows
    report.export(run, tmp_path / "fewer.json", {"full": 3, "small": 2})
    budgets = report.extended_budgets(report.read_extended(tmp_path / "fewer.json"))
    assert [b["small_epoch"] for b in budgets] == [1, 1, 2]


def test_export_reads_budgets_and_never_replaces_a_longer_file(tmp_path):
    run = tmp_path / "run"
    _plan(run)
    for seed in (1, 2):
        _job(run, "base", seed, [30.0, 20.0 + seed])
        _job(run, "A1", seed, [31.0, 25.0 + seed])
        _job(run, "base", seed, [900.0, 300.0, 200.0, 210.0], corpus="small")
    out = tmp_path / "results" / report.EXTENDED_NAME
    report.export(run, out, {"full": 2, "small": 4})
    document = report.read_extended(out)
    budgets = report.extended_budgets(document)
    assert [b["full_epoch"] for b in budgets] == [1, 2]
    assert [b["small_epoch"] for b in budgets] == [2, 4]
    assert budgets[1]["ppl"]["full"]["A1"] == {1: 26.0, 2: 27.0}
    assert budgets[1]["label"].startswith(
        "2 epochs; dropout rows: 4 epochs on a twentieth"
    )
    assert report.mean_curves(document, "small")["base"][-1] == pytest.approx(210.0)
    # A shorter run folder must not replace the file.
    short = tmp_path / "short"
    _plan(short)
    _job(short, "base", 1, [30.0])
    before = out.read_text()
    with pytest.raises(ValueError, match="holds what .* lacks"):
        report.export(short, out, {"full": 2, "small": 4})
    assert out.read_text() == before


def test_overtaking_and_flattening_by_value():
    ahead = findings.overtake(
        {"C1": [30.0, 20.0, 16.0, 14.0], "C3": [40.0, 22.0, 15.9, 13.0]}
    )
    assert ahead.overtook and ahead.since == 3 and ahead.last_epoch == 4
    behind = findings.overtake({"C1": [30.0, 20.0], "C3": [45.0, 22.0]}, epochs=[0.5, 1])
    assert not behind.overtook and behind.since is None and behind.closing
    assert (behind.gap_first, behind.gap_last) == pytest.approx((50.0, 10.0))
    assert findings.overtake({"C1": [30.0]}) is None
    flat = findings.flattening({"base": [30.0, 20.0, 19.9, 19.8]})
    assert (flat.epoch, flat.flat_at, flat.before, flat.after) == (4, 3, 19.9, 19.8)
    assert flat.fell_pct == pytest.approx(100 * (1 - 19.8 / 19.9))
    assert findings.flattening({"base": [30.0, 20.0]}).flat_at is None
    assert findings.flattening({"base": [30.0]}) is None


def test_overtaking_is_read_from_the_mean_curves():
    assert "C3 overtook C1 for good in epoch 3" in say.overtake_note(
        {"C1": [30.0, 20.0, 16.0, 14.0], "C3": [40.0, 22.0, 15.9, 13.0]}
    )
    closing = say.overtake_note({"C1": [30.0, 20.0], "C3": [45.0, 22.0]}, epochs=[0.5, 1])
    assert "After 1 epoch C3 was still behind C1" in closing
    assert "but closing: its gap fell from 50% at epoch 0.5 to 10%" in closing
    opening = say.overtake_note({"C1": [30.0, 20.0], "C3": [33.0, 30.0]})
    assert "still behind" in opening and "closing" not in opening
    assert say.overtake_note({"C1": [30.0]}) == ""


def test_flattening_says_whether_base_still_learns():
    assert "has not yet fallen by less than 1%" in say.flattening_note(
        {"base": [30.0, 20.0]}
    )
    note = say.flattening_note({"base": [30.0, 20.0, 19.9, 19.8]})
    assert (
        "fell 0.5% in epoch 4" in note and "first fell by less than 1% in epoch 3" in note
    )


def test_an_export_into_the_run_folder_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    _job(run, "base", 1, [30.0])
    target = run / "full-base-seed1" / CURVE_NAME
    before = target.read_text()
    with pytest.raises(ValueError, match="inside the run folder"):
        report.export(run, target, {"full": 1, "small": 1})
    assert target.read_text() == before
