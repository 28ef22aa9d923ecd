"""A run folder holds one run: a fresh run refuses another's folder, a resume needs a last.pt, one
process at a time, and an overwrite moves exactly the run's files aside."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from annotated_transformer.training.checkpoint import list_snapshots
from annotated_transformer.training.run_folder import (
    ASIDE_DIR,
    RUN_FILES,
    RunFolder,
    RunFolderError,
    claim_run_folder,
    clear_run,
    holds_a_run,
    set_aside,
)

REPO = Path(__file__).resolve().parents[2]


def fake_run(folder: Path) -> None:
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "step_00000010.pt").write_bytes(b"x")
    (folder / "last.pt").write_bytes(b"x")
    (folder / "metrics.jsonl").write_text("{}\n")


def results_record(path: Path) -> None:
    path.write_text(json.dumps({"metrics": {}, "provenance": {}}))


# ------------------------------------------------------------------------------------------ claims
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
    # a run killed before its first log line: its claim marks the folder as `train`'s
    with claim_run_folder(tmp_path, resume=False):
        pass
    (tmp_path / "checkpoints").mkdir()
    leftover = tmp_path / "checkpoints" / ".step_00000020.pt.abc123.part"
    leftover.write_bytes(b"half a checkpoint")
    with claim_run_folder(tmp_path, resume=False):
        assert not leftover.exists()


def test_part_files_of_a_folder_not_marked_as_a_run_are_kept(tmp_path):
    """Leftovers are removed only where the folder is marked as `train`'s: a user's own
    `.*.part` files and folders stay, byte for byte."""
    (tmp_path / ".draft.part").write_bytes(b"the user's")
    (tmp_path / ".album.part").mkdir()
    (tmp_path / ".album.part" / "photo").write_bytes(b"also the user's")
    with claim_run_folder(tmp_path, resume=False):
        pass
    assert (tmp_path / ".draft.part").read_bytes() == b"the user's"
    assert (tmp_path / ".album.part" / "photo").read_bytes() == b"also the user's"


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


def test_a_claim_makes_the_folder_and_has_nothing_to_clear(tmp_path):
    with claim_run_folder(tmp_path / "a" / "b", resume=False, overwrite=True) as folder:
        assert folder.path.is_dir() and not folder.overwrite
        assert folder.clear_old_run() == []


def test_a_resume_claims_the_folder_as_it_is(tmp_path):
    fake_run(tmp_path)
    with claim_run_folder(tmp_path, resume=True) as folder:
        assert folder == RunFolder(tmp_path, overwrite=False)
    assert (tmp_path / "last.pt").is_file() and len(list_snapshots(tmp_path)) == 1


def test_the_old_run_is_cleared_once_and_only_when_asked(tmp_path):
    fake_run(tmp_path)
    assert RunFolder(tmp_path).clear_old_run() == []
    assert holds_a_run(tmp_path)
    folder = RunFolder(tmp_path, overwrite=True)
    assert len(folder.clear_old_run()) == 3
    (tmp_path / "last.pt").write_bytes(b"the new run's")
    assert folder.clear_old_run() == []
    assert (tmp_path / "last.pt").read_bytes() == b"the new run's"


# ------------------------------------------------------------------------------------------ what a run is
def test_an_empty_folder_or_a_users_files_hold_no_run(tmp_path):
    assert not holds_a_run(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "checkpoints").mkdir()
    assert not holds_a_run(tmp_path)


@pytest.mark.parametrize("name", RUN_FILES)
def test_any_one_run_file_holds_a_run(tmp_path, name):
    (tmp_path / name).write_bytes(b"x")
    assert holds_a_run(tmp_path)


def test_a_snapshot_alone_holds_a_run(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "step_00000002.pt").write_bytes(b"x")
    assert holds_a_run(tmp_path)


# ------------------------------------------------------------------------------------------ setting aside
def test_set_aside_keeps_each_files_place_under_one_dated_folder(tmp_path):
    fake_run(tmp_path)
    paths = [tmp_path / "last.pt", tmp_path / "checkpoints" / "step_00000010.pt"]
    aside = set_aside(tmp_path, paths + [tmp_path / "missing.pt"])
    assert aside.parent == tmp_path / ASIDE_DIR
    assert (aside / "last.pt").read_bytes() == b"x"
    assert (aside / "checkpoints" / "step_00000010.pt").read_bytes() == b"x"
    assert not any(p.exists() for p in paths)


def test_set_aside_with_nothing_to_move_makes_nothing(tmp_path):
    assert set_aside(tmp_path, [tmp_path / "missing.pt"]) is None
    assert set_aside(tmp_path, []) is None
    assert not (tmp_path / ASIDE_DIR).exists()


def test_clear_run_moves_the_runs_files_and_evaluations_and_nothing_of_the_users(
    tmp_path,
):
    fake_run(tmp_path)
    for name in RUN_FILES:
        (tmp_path / name).write_bytes(b"x")
    results_record(tmp_path / "evaluation_test.json")
    (tmp_path / "evaluation_notes.json").write_text('{"mine": true}')
    (tmp_path / "notes.txt").write_text("mine")
    moved = clear_run(tmp_path)
    assert sorted(p.name for p in moved) == sorted(
        [*RUN_FILES, "step_00000010.pt", "evaluation_test.json"]
    )
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != ASIDE_DIR)
    assert left == [
        "evaluation_notes.json",
        "notes.txt",
    ]  # checkpoints/ was emptied and removed
    (aside,) = (tmp_path / ASIDE_DIR).iterdir()
    assert (aside / "evaluation_test.json").is_file()


def test_clear_run_keeps_the_snapshot_folder_when_it_holds_a_users_file(tmp_path):
    fake_run(tmp_path)
    (tmp_path / "checkpoints" / "README").write_text("mine")
    clear_run(tmp_path)
    assert list_snapshots(tmp_path) == []
    assert (tmp_path / "checkpoints" / "README").read_text() == "mine"


def test_clear_run_of_an_empty_folder_moves_nothing(tmp_path):
    assert clear_run(tmp_path) == []
    assert not (tmp_path / ASIDE_DIR).exists()
