"""The writer's helpers for checkpoints, copies, logs and removals: each gives what the call it
replaces gave, and a failed write leaves the previous file and no temporary one."""

from __future__ import annotations

import os

import pytest
import torch

from annotated_transformer.runtime import files
from annotated_transformer.runtime.files import (
    append_line,
    copy_file,
    ensure_folder,
    remove_file,
    remove_folder,
    save_torch,
)


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_a_saved_object_loads_back_and_leaves_no_staging_file(tmp_path):
    path = tmp_path / "run" / "averaged.pt"
    save_torch(path, {"weight": torch.arange(6.0).reshape(2, 3), "step": 7})
    loaded = torch.load(path, weights_only=True)
    assert torch.equal(loaded["weight"], torch.arange(6.0).reshape(2, 3))
    assert loaded["step"] == 7
    assert leftovers(path.parent) == []


def test_a_save_that_fails_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "last.pt"
    save_torch(path, {"step": 1})
    before = path.read_bytes()
    with pytest.raises(Exception):
        save_torch(path, {"step": 2, "unpicklable": lambda: None})
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_a_checkpoint_is_written_once_and_renamed_not_copied(tmp_path, monkeypatch):
    moves = []
    real_replace = os.replace
    monkeypatch.setattr(
        files.os, "replace", lambda a, b: moves.append((a, b)) or real_replace(a, b)
    )
    for name in ("copyfile", "copy", "copy2", "copyfileobj", "move"):
        monkeypatch.setattr(files.shutil, name, lambda *a, **k: pytest.fail("copied"))
    path = tmp_path / "big.pt"
    save_torch(path, {"weight": torch.zeros(1 << 20)})  # 4 MiB
    assert [target for _, target in moves] == [path]  # the staging file, renamed
    assert path.stat().st_size >= 4 << 20


def test_a_copy_has_the_bytes_and_a_missing_source_keeps_the_old_copy(tmp_path):
    source, target = tmp_path / "step_9.pt", tmp_path / "best.pt"
    source.write_bytes(b"new weights")
    target.write_bytes(b"old weights")
    copy_file(source, target)
    assert target.read_bytes() == b"new weights"
    source.unlink()
    target.write_bytes(b"old weights")
    with pytest.raises(FileNotFoundError, match="step_9.pt"):
        copy_file(source, target)
    assert target.read_bytes() == b"old weights"
    assert leftovers(tmp_path) == []


def test_lines_are_appended_to_the_log_in_place(tmp_path):
    log = tmp_path / "run" / "metrics.jsonl"
    append_line(log, '{"kind": "start"}')
    inode = log.stat().st_ino
    append_line(log, '{"kind": "train", "note": "é"}')
    assert log.read_text(encoding="utf-8") == (
        '{"kind": "start"}\n{"kind": "train", "note": "é"}\n'
    )
    assert log.stat().st_ino == inode  # appended, not replaced by a rewritten copy


@pytest.mark.parametrize("line", ['{"a": 1}\n{"b": 2}', "half\r", "trailing\n"])
def test_a_line_with_a_line_break_is_refused_and_the_log_left_as_it_was(tmp_path, line):
    log = tmp_path / "metrics.jsonl"
    append_line(log, '{"kind": "start"}')
    with pytest.raises(ValueError, match="holds a line break"):
        append_line(log, line)
    assert log.read_text(encoding="utf-8") == '{"kind": "start"}\n'


def test_removing_a_file_says_whether_it_was_there(tmp_path):
    path = tmp_path / "step_1.pt"
    path.write_bytes(b"x")
    assert remove_file(path) is True
    assert not path.exists()
    assert remove_file(path) is False
    (tmp_path / "folder").mkdir()
    with pytest.raises(OSError):
        remove_file(tmp_path / "folder")  # a folder is not removed as a file


def test_removing_a_folder_takes_all_it_holds_and_a_missing_one_is_fine(tmp_path):
    folder = tmp_path / "demo"
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "last.pt").write_bytes(b"x")
    remove_folder(folder)
    assert not folder.exists()
    remove_folder(folder)


def test_a_folder_is_made_with_its_parents_and_a_file_on_the_way_raises(tmp_path):
    assert ensure_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()
    ensure_folder(tmp_path / "a" / "b")  # already there
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        ensure_folder(tmp_path / "file")
    with pytest.raises(NotADirectoryError):
        ensure_folder(tmp_path / "file" / "inner")
