"""No silent wrong results: a run folder holds one run, a diverging run stops, bad input gets one clear line."""

from pathlib import Path

import pytest
import torch

from annotated_transformer.cli import main
from annotated_transformer.training.checkpoint import (
    CheckpointError,
    list_snapshots,
    load_checkpoint,
)
from annotated_transformer.training.trainer import TrainingDiverged
from tests.support.training import make_trainer, tiny_profile


def fake_run(folder: Path) -> None:
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "step_00000010.pt").write_bytes(b"x")
    (folder / "last.pt").write_bytes(b"x")
    (folder / "metrics.jsonl").write_text("{}\n")


# ------------------------------------------------------------------------------------------ commands
def test_train_command_refuses_an_existing_run_in_one_line(tmp_path, capsys):
    fake_run(tmp_path)
    assert main(["train", "--profile", "smoke", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("error: ")
        and "already holds a run" in err
        and "Traceback" not in err
    )
    assert (
        tmp_path / "last.pt"
    ).read_bytes() == b"x"  # nothing of the old run was touched


# ------------------------------------------------------------------------------------------ divergence
def test_a_diverging_run_stops_at_the_first_bad_loss_and_keeps_the_last_good_checkpoint(
    tmp_path,
):
    trainer = make_trainer(tiny_profile(max_steps=12, save_every_steps=2), tmp_path)
    healthy = trainer.loss_fn

    def loss_that_blows_up_at_step_5(logits, target, smoothing, pad_id):
        parts = healthy(logits, target, smoothing, pad_id)
        return (
            parts._replace(loss=parts.loss * float("nan"))
            if trainer.progress.step >= 4
            else parts
        )

    trainer.loss_fn = loss_that_blows_up_at_step_5
    with pytest.raises(
        TrainingDiverged, match=r"diverged at step 5: the loss is nan .*--lr"
    ):
        trainer.train()
    assert [p.name for p in list_snapshots(tmp_path)] == [
        "step_00000002.pt",
        "step_00000004.pt",
    ]
    last = load_checkpoint(tmp_path / "last.pt")
    assert last["step"] == 4
    assert all(
        torch.isfinite(t).all() for t in last["model"].values() if t.is_floating_point()
    )


def test_a_loss_checked_as_on_a_gpu_is_checked_again_before_it_is_logged(
    tmp_path, monkeypatch
):
    """On a GPU the loss is read every few steps; a log step reads it too, so the metrics log
    never holds a loss that is not finite."""
    from annotated_transformer.training import divergence
    from annotated_transformer.training.training_log import read_metrics

    as_on_a_cpu = divergence.loss_diverged

    def as_on_a_gpu(stats, step, device, *args, **kwargs):
        return as_on_a_cpu(stats, step, torch.device("meta"), *args, **kwargs)

    monkeypatch.setattr(divergence, "loss_diverged", as_on_a_gpu)
    profile = tiny_profile(max_steps=12, log_every=3, save_every_steps=None, eval_every=0)
    trainer = make_trainer(profile, tmp_path)
    healthy = trainer.loss_fn

    def nan_from_step_5(logits, target, smoothing, pad_id):
        parts = healthy(logits, target, smoothing, pad_id)
        bad = trainer.progress.step >= 4
        return parts._replace(loss=parts.loss * float("nan")) if bad else parts

    trainer.loss_fn = nan_from_step_5
    assert divergence.STOP_CHECK_EVERY > 6  # the check alone would log step 6's NaN
    with pytest.raises(TrainingDiverged, match=r"diverged at step 6: the loss is nan"):
        trainer.train()
    logged = [r for r in read_metrics(tmp_path) if r["kind"] == "train"]
    assert [r["step"] for r in logged] == [3]
    assert all(isinstance(r["loss"], float) for r in logged)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_run_at_an_absurd_learning_rate_stops_before_it_saves_anything(
    tmp_path, precision
):
    """At --lr 1e4 the loss leaves any sane range at once, finite or not: the run ends with
    TrainingDiverged (the CLI's exit 1) before a snapshot, a validation or results are written."""
    profile = tiny_profile(
        peak_lr=1e4, max_steps=12, save_every_steps=2, eval_every=2, precision=precision
    )
    trainer = make_trainer(profile, tmp_path)
    with pytest.raises(TrainingDiverged, match=r"diverged at step [12]: .*--lr"):
        trainer.train()
    assert list_snapshots(tmp_path) == [] and not (tmp_path / "last.pt").exists()
    assert trainer.progress.last_valid == {}


def test_a_learning_run_stays_below_the_loss_limit(tmp_path):
    """The tiny profile's own rate trains to its end: the limit leaves healthy runs alone."""
    result = make_trainer(tiny_profile(max_steps=6, eval_every=0), tmp_path).train()
    assert result.progress.step == 6


# ------------------------------------------------------------------------------------------ arguments
@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--minutes", "-1"],
        ["train", "--beam", "0"],
        ["train", "--lr", "nan"],
        ["train", "--dropout", "1.5"],
        ["translate", "--checkpoint", "x.pt", "--beam", "-1"],
        ["average", "--run", "r", "--last", "0"],
    ],
)
def test_nonsense_numbers_are_refused_at_parse_time(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument" in err and ("must" in err or "not a number" in err)


# ------------------------------------------------------------------------------------------ checkpoints
@pytest.mark.parametrize(
    "content", [b"", b"not a checkpoint at all", b"PK\x03\x04broken zip"]
)
def test_a_damaged_checkpoint_is_named_and_no_unsafe_load_is_suggested(tmp_path, content):
    path = tmp_path / "averaged.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    assert str(path) in str(caught.value) and "weights_only=False" not in str(
        caught.value
    )


def test_known_errors_print_one_line_without_a_traceback(tmp_path, capsys):
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    assert (
        main(["translate", "--checkpoint", str(tmp_path / "bad.pt"), "--device", "cpu"])
        == 1
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 2 and "bad.pt" in err
