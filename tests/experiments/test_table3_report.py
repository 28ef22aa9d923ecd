"""Chapter 06's words and the extended run's results file: budgets in words, one sentence per
finding that states direction, size and interval, and an export that never loses epochs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from annotated_transformer.experiments import findings as f
from annotated_transformer.experiments import table3_extended as extended
from annotated_transformer.experiments import table3_report as report


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


def test_each_finding_gets_a_sentence_with_its_direction_and_interval():
    runs = _runs({"A1": 0.2, "C1": -0.3})
    found = f.assess(f.FINDINGS, {"full": runs, "small": {}})
    text = report.conclusion([("Live run", "1 epoch", found)])
    assert text.startswith("*Live run* (1 epoch):")
    one_head = next(line for line in text.splitlines() if "One head" in line)
    assert re.search(
        r"holds: A1's perplexity is 2\d\.\d% higher than base's \(\[\+", one_head
    )
    bigger = next(line for line in text.splitlines() if "Bigger is better" in line)
    assert "does not hold" in bigger and re.search(
        r"C1's perplexity is 2\d\.\d% lower than C3's", bigger
    )
    assert "C6 against C7 was not trained in this run" in bigger
    heads = next(line for line in text.splitlines() if "Too many heads" in line)
    assert (
        "cannot be told" in heads and "would have been found four times in five" in heads
    )
    tie = next(line for line in text.splitlines() if "positions tie" in line)
    assert "margin" in tie


def test_the_conclusion_names_the_findings_whose_verdict_moved():
    early = f.assess(f.FINDINGS, {"full": _runs({})})
    late = f.assess(f.FINDINGS, {"full": _runs({"A1": 0.2})})
    text = report.conclusion([("1 epoch", "a", early), ("8 epochs", "b", late)])
    assert text.endswith(
        "the verdicts of one head is worse (cannot tell at this budget → holds) changed."
    )


def test_overfitting_note_reads_the_small_corpus_curve():
    assert "still improving" in report.overfit_note({"base": [9.0, 8.0, 7.0]})
    assert "lowest perplexity at epoch 2 of 3" in report.overfit_note(
        {"base": [9.0, 8.0, 8.4]}
    )


def _job(folder, row, seed, ppls, corpus="full"):
    path = folder / f"{corpus}-{row}-seed{seed}"
    path.mkdir(parents=True)
    curve = [{"epoch": i + 1, "ppl": p} for i, p in enumerate(ppls)]
    record = {"row": row, "seed": seed, "corpus": corpus, "curve": curve}
    (path / extended.CURVE_NAME).write_text(json.dumps(record))


def test_export_reads_budgets_and_never_replaces_a_longer_file(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / extended.PLAN_NAME).write_text(json.dumps({"identity": {"overfit_share": 20}}))
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
    short.mkdir()
    (short / extended.PLAN_NAME).write_text(
        json.dumps({"identity": {"overfit_share": 20}})
    )
    _job(short, "base", 1, [30.0])
    before = out.read_text()
    with pytest.raises(ValueError, match="holds what .* lacks"):
        report.export(short, out, {"full": 2, "small": 4})
    assert out.read_text() == before


def test_overtaking_is_read_from_the_mean_curves():
    assert "By epoch 3 C3 had overtaken C1 for good" in report.overtake_note(
        {"C1": [30.0, 20.0, 16.0, 14.0], "C3": [40.0, 22.0, 15.9, 13.0]}
    )
    assert "After 2 epochs C3 was still behind C1" in report.overtake_note(
        {"C1": [30.0, 20.0], "C3": [40.0, 22.0]}
    )
    assert report.overtake_note({"C1": [30.0]}) == ""


def test_flattening_says_whether_base_still_learns():
    assert "has not yet fallen by less than 1%" in report.flattening_note(
        {"base": [30.0, 20.0]}
    )
    note = report.flattening_note({"base": [30.0, 20.0, 19.9, 19.8]})
    assert (
        "fell 0.5% in epoch 4" in note and "first fell by less than 1% in epoch 3" in note
    )


def test_an_export_into_the_run_folder_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    _job(run, "base", 1, [30.0])
    target = run / "full-base-seed1" / extended.CURVE_NAME
    before = target.read_text()
    with pytest.raises(ValueError, match="inside the run folder"):
        report.export(run, target, {"full": 1, "small": 1})
    assert target.read_text() == before
