"""A command claims its output folder before it writes: a folder above it that another command
made, or a folder holding files the command did not make, is refused in one line, before anything
in it is moved or deleted; every input is checked before an old run is moved aside.

The runs are the tiny synthetic runs of test_misuse (seconds), trained once per module.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from annotated_transformer.cli import main
from annotated_transformer.runtime import ownership
from tests.commands.test_misuse import place_in, tiny_world
from tests.commands.test_nothing_lost import one_line, train_argv


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with tiny_world(tmp_path_factory.mktemp("claims")) as made:
        yield made


@pytest.fixture
def place(world, tmp_path, monkeypatch):
    return place_in(world, tmp_path, monkeypatch)


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under `folder`, hidden ones too: a file's bytes, None for a folder."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def refused(argv: list[str], capsys, folder: Path) -> str:
    """argv fails in one line, before any work, and leaves `folder` exactly as it was."""
    before = tree(folder)
    started = time.perf_counter()
    assert main(argv) == 1
    line = one_line(capsys)
    assert time.perf_counter() - started < 20
    assert tree(folder) == before
    return line


def users_folder(folder: Path) -> Path:
    """A folder of the user's own, with names a killed write would leave."""
    (folder / "photos.part").mkdir(parents=True)
    (folder / "photos.part" / "a.jpg").write_bytes(b"\xff\xd8 a photo")
    (folder / ".thesis.tex.k3j2.part").write_text("the only copy of chapter 3")
    (folder / ".backup.part").mkdir()
    (folder / ".backup.part" / "notes.txt").write_text("notes")
    (folder / "notes.part").write_text("mine")
    return folder


# ------------------------------------------------------------------------------------------ user's folders
def test_train_into_a_users_folder_is_refused_before_anything_goes(place, capsys):
    """`train --out` a folder of the user's deleted its `.*.part` files and folders (the
    claim's clean-up of a killed run's writes) and trained into it."""
    folder = users_folder(place["tmp"] / "mine")
    line = refused(train_argv(folder, place["data"]), capsys, folder)
    assert "--out mine holds files `train` did not make" in line, line
    assert "nothing in it was touched" in line and "new or empty folder" in line, line


def test_export_onnx_into_a_users_folder_is_refused(place, capsys):
    """`export-onnx --out` a folder holding the user's own tokenizer.json and model.json
    replaced them."""
    folder = place["tmp"] / "web"
    folder.mkdir()
    (folder / "tokenizer.json").write_text('{"my": "tokenizer"}')
    (folder / "model.json").write_text('{"my": "model"}')
    argv = ["export-onnx", "--checkpoint", str(place["run"] / "averaged.pt")]
    line = refused([*argv, "--out", str(folder)], capsys, folder)
    assert "--out web holds files `export-onnx` did not make" in line, line


def test_export_onnx_replaces_its_own_export_and_leaves_the_rest(place, capsys):
    pytest.importorskip("onnx")
    folder = place["tmp"] / "web"
    argv = ["export-onnx", "--checkpoint", str(place["run"] / "averaged.pt")]
    assert main([*argv, "--out", str(folder)]) == 0
    assert ownership.made_by(folder, "export-onnx")
    (folder / "README.txt").write_text("mine")  # a reader's file beside an export
    assert main([*argv, "--out", str(folder)]) == 0
    assert (folder / "README.txt").read_text() == "mine"


def test_a_new_or_empty_folder_is_claimed(tmp_path):
    ownership.check_own_folder("--out", tmp_path / "new", command="train")
    (tmp_path / "empty").mkdir()
    ownership.check_own_folder("--out", tmp_path / "empty", command="export-onnx")


# ------------------------------------------------------------------------------------------ inputs first
def test_overwrite_with_a_missing_resume_checkpoint_moves_nothing(place, capsys):
    """`train --overwrite --resume <missing>` moved the run aside before finding the
    checkpoint missing."""
    run = place["run"]
    # a write of the run that a killed process left: the claim would clear it
    (run / "checkpoints" / ".step_00000008.pt.x1y2z3.part").write_bytes(b"half")
    missing = place["tmp"] / "elsewhere" / "last.pt"
    argv = train_argv(run, place["data"], "--overwrite", "--resume", str(missing))
    line = refused(argv, capsys, run)
    assert str(missing) in line or "elsewhere" in line, line
    assert not (run / "replaced").exists()


# ------------------------------------------------------------------------------------------ nested folders
def table3_job(place) -> Path:
    """A Table 3 extended run whose job holds a run folder (a copy of the tiny run)."""
    table3 = place["tmp"] / "t3"
    table3.mkdir()
    (table3 / ownership.TABLE3_MARKER).write_text("{}")
    job = table3 / "A_h1_s0" / "train"
    shutil.copytree(place["run"], job)
    return job


@pytest.mark.parametrize("command", ["train", "average"])
def test_a_run_inside_a_table3_job_is_refused_naming_table3(command, place, capsys):
    job = table3_job(place)
    argv = {
        "train": train_argv(job, place["data"], "--resume", max_steps=8),
        "average": ["average", "--run", str(job)],
    }[command]
    line = refused(argv, capsys, job.parents[1])
    assert "t3 is the Table 3 extended run of `table3`" in line, line
    assert ownership.TABLE3_MARKER in line, line
    fix = {"train": "outside it, e.g. t3-", "average": "step_*.pt --output FILE"}[command]
    assert fix in line, line


@pytest.mark.parametrize("command", ["train", "average"])
def test_a_run_folder_inside_a_run_folder_is_refused(command, place, capsys):
    inner = place["run"] / "inner"
    shutil.copytree(place["run"], inner, ignore=shutil.ignore_patterns("replaced"))
    argv = {
        "train": train_argv(inner, place["data"], "--resume", max_steps=8),
        "average": ["average", "--run", str(inner)],
    }[command]
    line = refused(argv, capsys, place["run"])
    assert "run is the run folder of `train`" in line and "outside it" in line, line


def test_a_new_folder_inside_an_export_is_refused(place, capsys):
    export = place["tmp"] / "web"
    ownership.mark_made_by(export, "export-onnx")
    line = refused(train_argv(export / "run", place["data"]), capsys, export)
    assert "web is the ONNX export of `export-onnx`" in line, line


def test_a_claim_marks_the_folder_and_keeps_another_commands_mark(tmp_path):
    ownership.mark_made_by(tmp_path / "run", "train")
    assert ownership.made_by(tmp_path / "run", "train")
    # already train's: left as it is
    ownership.mark_made_by(tmp_path / "run", "export-onnx")
    assert ownership.made_by(tmp_path / "run", "train")
    with pytest.raises(ownership.OwnedFolderError, match="the run folder of `train`"):
        ownership.check_own_folder("--out", tmp_path / "run", command="export-onnx")


def test_the_export_marker_is_the_exports_own_name():
    from annotated_transformer.web import onnx_export

    assert ownership.EXPORT_MARKER == onnx_export.MODEL_FILE


@pytest.mark.parametrize("command", ["train", "table3", "parser-curve", "export-onnx"])
def test_the_empty_lock_a_killed_start_leaves_is_no_users_file(tmp_path, command):
    """A run killed as it took its folder leaves the empty lock file alone: the folder is
    still free; a `.lock` that holds something is a file of the user's."""
    from annotated_transformer.training import run_folder

    assert ownership.LOCK_NAME == run_folder.LOCK_NAME
    (tmp_path / ".lock").touch()
    ownership.check_own_folder("--out", tmp_path, command=command)
    (tmp_path / ".lock").write_text("my notes")
    with pytest.raises(ownership.OwnedFolderError, match=r"did not make \(\.lock;"):
        ownership.check_own_folder("--out", tmp_path, command=command)
