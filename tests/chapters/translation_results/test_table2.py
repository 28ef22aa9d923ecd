"""The bookkeeping of chapter 05: which snapshots an averaging sweep merges, when a run folder counts
as finished, and the cost arithmetic of Table 2."""

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch

from annotated_transformer.chapters.translation_results import (
    table2 as translation_report,
)
from annotated_transformer.chapters.translation_results.table2 import (
    averaging_sizes,
    averaging_sweep,
    counted_training_flops,
    device_hours,
    finished_run,
    measured_matmul_flops,
    paper_way_flops,
    six_n_flops,
)
from annotated_transformer.evaluation import paper
from annotated_transformer.evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from annotated_transformer.model import flops
from annotated_transformer.model.config import preset
from annotated_transformer.profiles import get_profile
from annotated_transformer.training.checkpoint import (
    CHECKPOINT_FORMAT,
    atomic_torch_save,
    snapshot_path,
)


def _snapshot(folder, step: int) -> None:
    """A weights-only checkpoint whose single weight equals its step, so averages are easy to predict."""
    atomic_torch_save(
        {
            "format": CHECKPOINT_FORMAT,
            "model": {"w": torch.tensor([float(step)])},
            "config": {"d_model": 8},
            "step": step,
        },
        snapshot_path(folder, step),
    )


def test_averaging_sizes_are_one_two_the_profiles_and_all_kept():
    assert averaging_sizes(5, 10) == [1, 2, 5, 10]
    assert averaging_sizes(5, 5) == [1, 2, 5]
    assert averaging_sizes(2, 3) == [
        1,
        2,
        3,
    ]  # the smoke profile: average_last 2, 3 snapshots kept
    assert averaging_sizes(5, 3) == [1, 2, 3]  # never more than there are
    assert averaging_sizes(5, 1) == [1]
    with pytest.raises(ValueError, match="no snapshots"):
        averaging_sizes(5, 0)


def test_averaging_sweep_merges_the_newest_k_snapshots(tmp_path):
    steps = [100, 200, 300, 400, 500]
    for step in steps:
        _snapshot(tmp_path, step)
    for k, checkpoint, names in averaging_sweep(tmp_path, [1, 2, 5]):
        newest = steps[-k:]
        assert names == [f"step_{s:08d}.pt" for s in newest]
        assert checkpoint["model"]["w"].item() == pytest.approx(sum(newest) / k)
        assert checkpoint["step"] == 500  # the newest snapshot's bookkeeping


def _write_run(folder, profile, *, stopped_by="max_steps", averaged=True):
    records = [
        {
            "kind": "start",
            "step": 0,
            "device": "cpu",
            "precision": "fp32",
            "profile": profile.to_dict(),
        },
        {"kind": "train", "step": 10, "target_tokens": 1000},
        {"kind": "train", "step": 20, "target_tokens": 2100},
        {"kind": "stop", "step": 20, "stopped_by": stopped_by, "train_time_s": 3.5},
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _snapshot(folder, 20)
    if averaged:
        (folder / "averaged.pt").write_bytes(b"x")
        (folder / "test_translations.txt").write_text("eins\n")


def test_a_finished_run_of_the_profile_is_found(tmp_path):
    profile = get_profile("smoke")
    _write_run(tmp_path, profile)
    run = finished_run(tmp_path, profile)
    assert run is not None
    assert (run.steps, run.train_time_s, run.target_tokens, run.device) == (
        20,
        3.5,
        2100,
        "cpu",
    )
    assert run.snapshots == ("step_00000020.pt",)


def test_the_book_scales_of_other_chapters_do_not_make_a_run_stale(tmp_path):
    profile = get_profile("smoke")
    _write_run(
        tmp_path,
        profile.replace(
            book=dataclasses.replace(
                profile.book,
                table3=dataclasses.replace(profile.book.table3, epochs=9),
            ),
            description="another description",
        ),
    )
    assert finished_run(tmp_path, profile) is not None


def test_a_run_logged_before_a_setting_existed_is_still_the_profiles_run(tmp_path):
    # compile_mode and length_buckets came after runs were logged without them; such a run
    # trained with their defaults and is the same profile's run
    profile = get_profile("smoke")
    _write_run(tmp_path, profile)
    metrics = tmp_path / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    for key in ("compile_mode", "length_buckets"):
        del records[0]["profile"][key]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert finished_run(tmp_path, profile) is not None
    assert finished_run(tmp_path, profile.replace(length_buckets=True)) is None


@pytest.mark.parametrize(
    "case", ["other profile", "interrupted", "not averaged", "empty"]
)
def test_runs_that_do_not_count_as_finished(tmp_path, case):
    profile = get_profile("smoke")
    if case == "other profile":
        _write_run(tmp_path, get_profile("smoke", max_steps=7))
    elif case == "interrupted":
        _write_run(tmp_path, profile, stopped_by="interrupted")
    elif case == "not averaged":
        _write_run(tmp_path, profile, averaged=False)
    assert finished_run(tmp_path, profile) is None


def test_paper_way_reproduces_table2_for_the_base_model():
    """12 hours on 8 P100 at 9.5 TFLOP/s sustained is the 3.3e18 of Table 2 (section 5.2, 6.1)."""
    base = paper.TRAINING["base"]
    estimate = paper_way_flops(
        base.wall_time_h * 3600, 8, paper.TABLE2_SUSTAINED_FLOPS["P100"]
    )
    assert estimate == pytest.approx(3.2832e18)
    assert round(estimate, -17) == paper.table2_row("Transformer (base)").flops_en_de


def test_counted_flops_are_per_token_flops_times_tokens():
    config = preset("tiny")
    per_token = flops.training_flops_per_target_token(config, 1000, 12.0, 13.0)
    assert counted_training_flops(config, 1000, 12.0, 13.0, 2_000) == pytest.approx(
        2_000 * per_token
    )


def test_six_n_and_device_hours_by_hand():
    assert six_n_flops(65_000_000, 1e9) == pytest.approx(3.9e17)
    # 100k steps of 25k tokens at 6 x 65M FLOPs per token: 9.75e17 FLOPs; on a 1e15 FLOP/s device at 25%
    # that is 3,900 s = 1.083 hours.
    total = six_n_flops(65_000_000, 100_000 * PAPER_TARGET_TOKENS_PER_STEP)
    assert total == pytest.approx(9.75e17)
    assert device_hours(total, 1e15, 0.25) == pytest.approx(3900 / 3600)
    with pytest.raises(ValueError, match="fraction_of_peak"):
        device_hours(total, 1e15, 0.0)


def test_measured_matmul_rate_is_the_counted_flops_over_the_timed_seconds(monkeypatch):
    """On a simulated device whose clock advances one second per 1e9 FLOPs that torch's own flop
    counter sees, the measurement must read 1e9 FLOP/s: it counts 2 n^3 per product as torch does,
    and times the products it counts (not the warm-up). No real timing is asserted."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    clock = SimpleNamespace(perf_counter=lambda: counter.get_total_flops() / 1e9)
    monkeypatch.setattr(translation_report, "time", clock)
    with counter:
        rate = measured_matmul_flops(size=64, seconds=0.01)
    assert rate == pytest.approx(1e9, rel=1e-9)
    assert counter.get_total_flops() > 0.01 * 1e9  # it ran for the simulated 0.01 s
