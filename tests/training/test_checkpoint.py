"""Checkpoints are written atomically, restore every RNG, and average as section 6.1 needs."""

import random

import numpy as np
import pytest
import torch

from annotated_transformer.training import checkpoint as ckpt


def fake_checkpoint(weight: torch.Tensor, step: int = 1) -> dict:
    return {
        "format": ckpt.CHECKPOINT_FORMAT,
        "kind": "snapshot",
        "step": step,
        "config": {"d_model": 2},
        "model": {"w": weight, "counter": torch.tensor(step)},
        "tokenizer": b"tok",
    }


def test_averaging_identical_checkpoints_returns_that_checkpoint(tmp_path):
    weight = torch.randn(3, 4)
    paths = [
        ckpt.atomic_torch_save(
            fake_checkpoint(weight.clone(), step), tmp_path / f"step_{step:08d}.pt"
        )
        for step in range(1, 6)
    ]
    averaged = ckpt.average_checkpoints(paths)
    assert torch.equal(
        averaged["model"]["w"], weight
    )  # float64 accumulation: no rounding drift
    assert averaged["step"] == 5 and averaged["tokenizer"] == b"tok"
    assert averaged["averaged_from"] == [p.name for p in paths]


def test_averaging_two_checkpoints_gives_their_mean_and_keeps_integer_buffers(tmp_path):
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    paths = [
        ckpt.atomic_torch_save(fake_checkpoint(a, 1), tmp_path / "a.pt"),
        ckpt.atomic_torch_save(fake_checkpoint(b, 2), tmp_path / "b.pt"),
    ]
    averaged = ckpt.average_checkpoints(paths)
    torch.testing.assert_close(averaged["model"]["w"], (a + b) / 2)
    assert (
        averaged["model"]["counter"].item() == 2
    )  # integers are not averaged: the newest wins


def test_averaging_takes_the_step_and_the_rest_from_the_highest_step_in_any_order(
    tmp_path,
):
    """`average s60 s40 s20` is the average at step 60, as `average s20 s40 s60` is."""
    paths = {}
    for step in (20, 40, 60):
        checkpoint = fake_checkpoint(torch.full((2,), float(step)), step)
        checkpoint["profile"] = {"written_at": step}
        paths[step] = ckpt.atomic_torch_save(checkpoint, tmp_path / f"s{step}.pt")
    for order in ((60, 40, 20), (20, 60, 40), (20, 40, 60)):
        averaged = ckpt.average_checkpoints([paths[s] for s in order])
        assert averaged["step"] == 60 and averaged["profile"] == {"written_at": 60}
        assert averaged["model"]["counter"].item() == 60  # integers: the newest's
        assert averaged["model"]["w"].tolist() == [40.0, 40.0]
        assert averaged["averaged_from"] == ["s20.pt", "s40.pt", "s60.pt"]


def test_average_last_takes_the_newest_snapshots(tmp_path):
    for step in (10, 20, 30, 40):
        ckpt.atomic_torch_save(
            fake_checkpoint(torch.full((2,), float(step)), step),
            ckpt.snapshot_path(tmp_path, step),
        )
    averaged, used = ckpt.average_last(tmp_path, 2)
    assert [p.name for p in used] == ["step_00000030.pt", "step_00000040.pt"]
    assert averaged["model"]["w"].tolist() == [35.0, 35.0]
    ckpt.prune_snapshots(tmp_path, keep=1)
    assert [p.name for p in ckpt.list_snapshots(tmp_path)] == ["step_00000040.pt"]


def test_averaging_refuses_different_models(tmp_path):
    a = fake_checkpoint(torch.zeros(2))
    b = fake_checkpoint(torch.zeros(2))
    b["config"] = {"d_model": 4}
    paths = [
        ckpt.atomic_torch_save(a, tmp_path / "a.pt"),
        ckpt.atomic_torch_save(b, tmp_path / "b.pt"),
    ]
    with pytest.raises(ValueError, match="another model configuration"):
        ckpt.average_checkpoints(paths)


def test_a_crash_mid_write_leaves_the_old_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    ckpt.atomic_torch_save(fake_checkpoint(torch.ones(2), step=1), path)

    def crash_halfway(obj, handle):
        handle.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(ckpt.torch, "save", crash_halfway)
    with pytest.raises(OSError, match="disk full"):
        ckpt.atomic_torch_save(fake_checkpoint(torch.zeros(2), step=2), path)
    monkeypatch.undo()
    survivor = ckpt.load_checkpoint(path)
    assert survivor["step"] == 1 and survivor["model"]["w"].tolist() == [1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == [
        "last.pt"
    ]  # no temporary file left behind


def test_rng_states_round_trip():
    state = ckpt.capture_rng_state()
    expected = (torch.rand(3), random.random(), np.random.rand(2))
    torch.rand(10), random.random(), np.random.rand(5)  # move every generator on
    ckpt.restore_rng_state(state)
    again = (torch.rand(3), random.random(), np.random.rand(2))
    assert (
        torch.equal(expected[0], again[0])
        and expected[1] == again[1]
        and np.array_equal(expected[2], again[2])
    )


def test_loading_a_missing_or_foreign_file_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="train one"):
        ckpt.load_checkpoint(tmp_path / "nothing.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="not a checkpoint of this package"):
        ckpt.load_checkpoint(tmp_path / "foreign.pt")


@pytest.mark.parametrize("bad, word", [(float("nan"), "NaN"), (float("inf"), "inf")])
def test_a_checkpoint_with_weights_that_are_not_finite_is_refused_naming_the_tensor(
    tmp_path, bad, word
):
    weight = torch.ones(3)
    weight[1] = bad
    path = tmp_path / "averaged.pt"
    torch.save(fake_checkpoint(weight), path)
    with pytest.raises(ValueError) as caught:
        ckpt.load_checkpoint(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: weight w holds {word}:") and "\n" not in message
    assert "average earlier snapshots" in message


def test_averaging_and_resuming_check_every_input_and_a_mapped_look_does_not(tmp_path):
    good, bad = torch.ones(2), torch.tensor([1.0, float("-inf")])
    folder = tmp_path / "run"
    (folder / ckpt.SNAPSHOT_DIR).mkdir(parents=True)
    torch.save(fake_checkpoint(good, 1), folder / ckpt.SNAPSHOT_DIR / "step_00000001.pt")
    torch.save(fake_checkpoint(bad, 2), folder / ckpt.SNAPSHOT_DIR / "step_00000002.pt")
    with pytest.raises(ValueError, match=r"step_00000002\.pt: weight w holds inf"):
        ckpt.average_last(folder, 2)
    resume = fake_checkpoint(bad, 2) | {"kind": "resume", "optimizer": {"state": {}}}
    torch.save(resume, folder / ckpt.RESUME_NAME)
    with pytest.raises(ValueError, match=r"last\.pt: weight w holds inf"):
        ckpt.load_checkpoint(folder)
    # A mapped look at the settings (mmap=True) reads no weights, so it does not judge them.
    assert ckpt.load_checkpoint(folder, mmap=True)["step"] == 2
    # Integer buffers are not weights: a checkpoint with finite floats loads.
    torch.save(fake_checkpoint(good, 1), tmp_path / "fine.pt")
    assert ckpt.load_checkpoint(tmp_path / "fine.pt")["step"] == 1
