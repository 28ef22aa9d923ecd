"""No silent wrong results: a run folder holds one run, a diverging run stops, bad input gets one clear line."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from annotated_transformer.cli import main
from annotated_transformer.training.checkpoint import (
    CheckpointError,
    list_snapshots,
    load_checkpoint,
)
from annotated_transformer.training.run_folder import RunFolderError, claim_run_folder
from annotated_transformer.training.trainer import TrainingDiverged
from tests.support.training import make_trainer, tiny_profile

REPO = Path(__file__).resolve().parents[2]


def fake_run(folder: Path) -> None:
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "step_00000010.pt").write_bytes(b"x")
    (folder / "last.pt").write_bytes(b"x")
    (folder / "metrics.jsonl").write_text("{}\n")


# ------------------------------------------------------------------------------------------ run folders
def test_a_fresh_run_refuses_a_folder_that_holds_another_run(tmp_path):
    fake_run(tmp_path)
    with pytest.raises(
        RunFolderError, match=r"already holds a run .*--resume.*--overwrite"
    ):
        with claim_run_folder(tmp_path, resume=False):
            pass


def test_overwrite_leaves_no_file_of_the_old_run(tmp_path):
    fake_run(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")  # not a run file: kept
    with claim_run_folder(tmp_path, resume=False, overwrite=True) as folder:
        assert (tmp_path / "last.pt").exists()  # nothing goes before the caller's checks
        folder.clear_old_run()
        assert (
            not (tmp_path / "last.pt").exists()
            and not (tmp_path / "metrics.jsonl").exists()
        )
        assert list_snapshots(tmp_path) == []
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_resume_refuses_a_folder_with_nothing_to_resume(tmp_path):
    with pytest.raises(RunFolderError, match="nothing to resume"):
        with claim_run_folder(tmp_path / "typo", resume=True):
            pass
    with pytest.raises(RunFolderError, match="pass one of them"):
        with claim_run_folder(tmp_path, resume=True, overwrite=True):
            pass


def test_unfinished_writes_of_a_dead_process_are_removed(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    leftover = tmp_path / "checkpoints" / ".step_00000020.pt.abc123.part"
    leftover.write_bytes(b"half a checkpoint")
    with claim_run_folder(tmp_path, resume=False):
        assert not leftover.exists()


def test_a_second_process_cannot_train_into_the_same_folder(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import time
            from annotated_transformer.training.run_folder import claim_run_folder
            with claim_run_folder({str(tmp_path)!r}, resume=False):
                print("holding", flush=True)
                time.sleep(60)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(RunFolderError, match="another process is training into"):
            with claim_run_folder(tmp_path, resume=False):
                pass
    finally:
        holder.kill()
        holder.wait()
    # The lock dies with its process: a killed run never leaves the folder locked.
    deadline = time.monotonic() + 10
    while True:
        try:
            with claim_run_folder(tmp_path, resume=False):
                break
        except RunFolderError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


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
