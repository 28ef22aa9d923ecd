"""Chapter 06's results record and its closing section: the record is built from what the chapter
kept, written and read back with the fields the introduction's summary reads; the committed
calibration is found and read as the chapter shows it; the closing names each finding under the
verdict its test gave."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotated_transformer.chapters.model_variations import record, tables
from annotated_transformer.chapters.model_variations import rows as variations
from annotated_transformer.chapters.model_variations import sentences as say
from annotated_transformer.chapters.model_variations import statistics as f
from annotated_transformer.profiles import get_profile
from tests.support.golden import assert_golden

HERE = Path(__file__).parent

SEEDS = [1, 2]
ROWS = ["base", "A1", "C1"]
OVERFIT = ["base", "D1"]


def _run(row, seed, corpus="full", ppl=30.0):
    curve = [{"step": 10 * i, "epoch": i / 2, "ppl": ppl * (3 - i)} for i in (1, 2)]
    return variations.RowRun(
        row=row, seed=seed, corpus=corpus, train_pairs=100, epochs=1.0, ppl=ppl,
        curve=curve, bleu=1.0 if corpus == "full" else None, params=1000, steps=20,
        train_s=2.0, train_cpu_s=2.0, eval_s=1.0, peak_lr=1e-3, warmup_steps=20,
    )  # fmt: skip


def _budget(found, epoch=1.0):
    return dict(label=f"{epoch:g} epoch", full_epoch=epoch, small_epoch=2, findings=found)


def _effects(effects, seed=0):
    rng = np.random.default_rng(seed)
    blocks = rng.normal(0, 0.1, 3)
    rows = ["base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E"]
    return {
        r: {
            s: float(40 * np.exp(effects.get(r, 0) + b + rng.normal(0, 0.01)))
            for s, b in zip((1, 2, 3), blocks)
        }
        for r in rows
    }


def this_run() -> record.ThisRun:
    profile = get_profile("smoke")
    run = record.ThisRun(profile, variations.scale_of(profile), ROWS, 1, SEEDS, OVERFIT)
    runs = [_run(r, s, ppl=30.0 + i) for i, r in enumerate(ROWS) for s in SEEDS]
    runs += [_run(r, s, "small", 50.0) for r in OVERFIT for s in SEEDS]
    final = {r: {s: 30.0 + i for s in SEEDS} for i, r in enumerate(ROWS)}
    tests = pd.DataFrame(
        [
            dict(row=r, seed=s, bleu=1.0 + i, ci95=0.5, exceeds_noise=False)
            for i, r in enumerate(ROWS)
            for s in SEEDS
        ]
    )
    small_mean = pd.DataFrame(
        [
            dict(row=r, point=i, epoch=i + 1.0, ppl=p)
            for r in OVERFIT
            for i, p in enumerate([60.0, 40.0, 45.0])
        ]
    )
    found = f.assess(f.FINDINGS, {"full": _effects({"A1": 0.2})})
    run.keep(
        valid_pairs=200, bleu_sentences=200, overfit_pairs=100, runs=runs,
        train_seconds=12.34, workers=2, small_mean=small_mean,
        budgets=[_budget(found, 0.5), _budget(found)],
        table=tables.beside_table3(ROWS, final, tests, {r: 1000 for r in ROWS}),
        final_ppl=final, correlation={"rho": 0.5, "low": -0.2, "high": 0.9,
                                      "samples": 100, "dropped": 0, "rows": 3},
        flops=pd.DataFrame([dict(profile="smoke", rows=3, seeds=2, epochs=1,
                                 overfit_epochs=2, flops=1e9, flops_per_s=1e8,
                                 where="this run, 2 process(es)", minutes=0.2)]),
    )  # fmt: skip
    return run


def _write(run, tmp_path, **kw):
    return record.write(
        record.build(run), run.profile.name, 3.21, tmp_path,
        device="cpu", config=record.config(run), **kw,
    )  # fmt: skip


def test_the_record_reads_back_as_it_was_built(tmp_path):
    run = this_run()
    path = _write(run, tmp_path)
    assert path == tmp_path / "smoke" / f"{record.RESULTS_NAME}.json"
    built = record.build(run)
    back = record.read("smoke", tmp_path)
    assert back == built and isinstance(back, record.ModelVariationsRecord)
    assert isinstance(back.rows["A1"], record.RowRecord)
    assert back.rows["base"].trained_with.warmup_steps == 20
    assert set(back.rows) == set(ROWS) and back.overfit["D1"].lowest_epoch == 2.0
    assert len(back.verdicts) == 2 and back.train_seconds == 12.3
    assert back.extended == record.ExtendedRecord(0, [], None)
    assert record.read("smoke", tmp_path, name="other") is None


def test_the_file_holds_what_the_summary_reads_and_the_settings(tmp_path):
    from annotated_transformer.evaluation import results

    _write(this_run(), tmp_path)
    stored = results.read_result(record.RESULTS_NAME, "smoke", tmp_path)
    metrics = stored["metrics"]
    assert list(metrics)[:5] == [
        "rows",
        "overfit",
        "verdicts",
        "spearman_ppl",
        "extended",
    ]
    assert "bleu_minus_base" in metrics["rows"]["A1"] and "ppl" in metrics["rows"]["base"]
    assert metrics["extended"] == {"epochs": 0, "verdicts": [], "spearman_ppl": None}
    trained = stored["config"]["rows"]["base"]
    assert trained["model"]["warmup_steps"] == trained["train"]["warmup_steps"]
    assert "seed" not in trained["train"]
    assert stored["wall_time_s"] == 3.2 and stored["provenance"]["device"] == "cpu"


def test_a_record_without_an_extended_run_reads_back_with_none(tmp_path):
    from annotated_transformer.evaluation import results

    metrics = record.build(this_run()).metrics()
    del metrics["extended"]  # as the runs before the extended run wrote it
    results.write_result(record.RESULTS_NAME, metrics, profile="smoke", root=tmp_path)
    assert record.read("smoke", tmp_path).extended is None


def test_a_results_name_writes_beside_the_default(tmp_path):
    _write(this_run(), tmp_path, name="model_variations_seeds4")
    assert record.read("smoke", tmp_path) is None
    back = record.read("smoke", tmp_path, name="model_variations_seeds4")
    assert type(back) is record.ModelVariationsRecord


def test_keep_refuses_a_name_the_record_has_no_field_for():
    with pytest.raises(TypeError, match="no field bugdets"):
        this_run().keep(bugdets=[])


def _record(live, extended=None, correlations=(None, None)):
    """A record of this_run's whose last budgets' verdicts are `live` (and `extended`'s)."""
    ext = None
    if extended is not None:
        ext = record.ExtendedRecord(8, [_budget(extended, 8)], correlations[1])
    return dataclasses.replace(
        record.build(this_run()),
        verdicts=[_budget(live)],
        spearman_ppl=correlations[0],
        extended=ext,
    )


def test_closing_names_a_large_difference_the_test_cannot_tell_under_cannot_tell():
    # A1's difference from base is planted as the largest of the run while its test cannot tell;
    # B1's smaller difference holds. The closing counts A1 with what cannot be told.
    found = f.assess(f.FINDINGS, {"full": _effects({"B1": 0.1})})
    one_head = next(x for x in found if x["finding"] == "one head is worse")
    one_head["comparisons"][0]["difference_pct"] = 80.0
    verdicts = {x["finding"]: x["verdict"] for x in found}
    assert verdicts["one head is worse"] == f.CANNOT_TELL
    assert verdicts["small d_k hurts"] == f.HOLDS
    text = say.closing(_record(found))
    held = re.search(r"(?:holds|hold) \(([^)]*)\)", text).group(1)
    untold = re.search(r"cannot be told \(([^)]*)\)", text).group(1)
    assert "small keys hurt" in held and "one head is worse" not in held
    assert "one head is worse" in untold
    assert "The longer budget" not in text


def test_the_closing_of_two_runs_is_its_golden_text():
    """Both runs counted, what the longer budget changed and both correlations, word for word."""
    early = f.assess(f.FINDINGS, {"full": _effects({"C1": -0.3})})
    late = f.assess(f.FINDINGS, {"full": _effects({"C1": 0.1, "A1": 0.1}, seed=1)})
    corr = {"rho": 0.5, "low": 0.1, "high": 0.9, "samples": 10, "dropped": 0, "rows": 11}
    few = {"rho": -0.5, "low": -1.0, "high": 0.5, "samples": 90, "dropped": 10, "rows": 4}
    text = say.closing(_record(early, late, (corr, few)))
    assert "bigger is better (does not hold → holds)." in text
    assert_golden(text, HERE / "closing.golden.md")


def test_the_closing_of_one_run_says_nothing_of_a_longer_budget():
    found = f.assess(f.FINDINGS, {"full": _effects({})})
    text = say.closing(_record(found, None, (None, None)))
    assert text.startswith("After 1 epoch (this run), of the 6 findings")
    assert "longer budget" not in text and "Spearman" not in text


def test_the_committed_calibration_agrees_with_the_profile_it_calibrated():
    table3 = get_profile("cpu").book.table3
    calibration = record.committed_calibration("cpu", table3)
    if calibration.chosen is None:
        pytest.skip("no committed cpu calibration")
    assert calibration.agrees(table3.warmup_steps, table3.peak_lr)
    assert not calibration.agrees(table3.warmup_steps + 1, table3.peak_lr)
    assert list(calibration.tried().columns) == ["candidate", "base", "C1", "C3"]
    assert calibration.shows_grid and not calibration.other_batches
    grid = calibration.grid()
    assert set(grid.norm) == {"post (the paper's)", "pre (diagnostic)"}
    assert calibration.post_norm().base.idxmin() == calibration.choice
    assert set(calibration.pre_norm_at_choice().index) == {"base", "C1", "C3"}


def test_a_calibration_at_other_batches_is_not_shown_as_this_profiles():
    table3 = get_profile("cpu").book.table3
    other = dataclasses.replace(table3, batch_tokens=table3.batch_tokens + 1)
    calibration = record.committed_calibration("cpu", other)
    if calibration.whole_epoch is None:
        pytest.skip("no committed cpu calibration")
    assert calibration.other_batches and not calibration.shows_grid
    assert calibration.agrees(1, 1.0)  # other batches: the choice cannot be checked


def test_no_committed_calibration_is_an_empty_one(tmp_path):
    calibration = record.committed_calibration(
        "cpu", get_profile("cpu").book.table3, tmp_path
    )
    assert calibration.chosen is calibration.whole_epoch is calibration.pre_norm is None
    assert not calibration.shows_grid and not calibration.other_batches
    assert record.committed_extended("cpu", tmp_path) == (None, [])


@pytest.mark.parametrize(
    "provenance, said",
    [
        ({"git_dirty": True}, "plus local changes that the record does not list"),
        (
            {"git_dirty": True, "git_changed_files": ["a.py", "b.py"],
             "git_changed_count": 2},
            "plus local changes to 2 files (a.py, b.py)",
        ),
        ({"git_dirty": False}, "at commit a52ae65"),
    ],
)  # fmt: skip
def test_the_gpu_rows_provenance_says_plainly_how_its_tree_differed(provenance, said):
    gpu = {
        "metrics": {"target_tokens": 2e6, "epochs": 2, "training_flops": 1e15,
                    "train_time_s": 100.0},
        "provenance": {"device_name": "an H100", "date": "2026-11-23",
                       "git_commit": "a52ae65deadbeef", **provenance},
    }  # fmt: skip
    budget = tables.flops_budget("smoke", 1e5, (12.0, 13.0), ["base"], 1e9, 2, 1000, gpu)
    where = budget["where"].tolist()
    assert where[0] == "this run, 2 processes"
    assert said in where[1] and "local edits" not in where[1]
    assert budget.minutes.tolist() == pytest.approx(
        (budget.flops / budget.flops_per_s / 60).tolist()
    )
    alone = tables.flops_budget("gpu", 1e5, (12.0, 13.0), ["base"], 1e9, 2, 1000, gpu)
    assert len(alone) == 1  # the gpu profile has no other gpu row beside it


def test_the_findings_said_carry_a_note_per_run():
    found = f.assess(f.FINDINGS, {"full": _effects({})})
    small = pd.DataFrame(
        [
            dict(row=r, point=i, epoch=i + 1.0, ppl=p)
            for r in ("base", "D1")
            for i, p in enumerate([60.0, 40.0, 45.0])
        ]
    )
    full = pd.DataFrame(
        [
            dict(row=r, point=i, epoch=(i + 1) / 4, ppl=p)
            for r, ps in {"C1": [50, 40, 30, 25], "C3": [70, 50, 35, 24]}.items()
            for i, p in enumerate(ps)
        ]
    )
    said, notes = tables.findings_said([_budget(found)], small, full)
    assert [s["name"] for s in said] == ["this run"] and len(notes) == 1
    assert "begun to overfit" in notes[0]["dropout helps"]
    assert "C3 overtook C1 for good" in notes[0]["bigger is better"]
