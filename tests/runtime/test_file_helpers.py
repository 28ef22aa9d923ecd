"""The writer's helpers for libraries that write by name, for copies and for moves: a failed
write leaves the previous file and nothing else, and each helper gives what the call it replaces
(shutil.copy2, shutil.copytree, os.replace, mkdir) gave."""

from __future__ import annotations

import os
import shutil

import pytest

from annotated_transformer.runtime.files import (
    copy_file_as_is,
    copy_tree,
    new_folder,
    rename,
    staged_path,
)


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_a_file_written_by_name_is_moved_into_place_with_the_replaced_files_mode(
    tmp_path,
):
    target = tmp_path / "chart.svg"
    target.write_text("old")
    target.chmod(0o640)
    with staged_path(target) as staged:
        assert staged != target and staged.parent == tmp_path
        assert target.read_text() == "old"  # nothing changes until the block ends
        with open(staged, "w") as handle:  # how a library opens a name: mode "w"
            handle.write("new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert leftovers(tmp_path) == []


def test_a_new_file_written_by_name_gets_the_umask_mode(tmp_path):
    target = tmp_path / "new" / "chart.png"
    with staged_path(target) as staged:
        staged.write_bytes(b"png")
    mask = os.umask(0o022)
    os.umask(mask)
    assert target.read_bytes() == b"png"
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_library_that_fails_half_way_leaves_the_previous_file_and_no_temporary(
    tmp_path,
):
    target = tmp_path / "chart.html"
    target.write_text("complete")
    with pytest.raises(RuntimeError, match="renderer crashed"):
        with staged_path(target) as staged:
            staged.write_text("<html><bo")
            raise RuntimeError("renderer crashed")
    assert target.read_text() == "complete"
    assert leftovers(tmp_path) == []


def test_a_link_is_written_through_and_stays_a_link(tmp_path):
    real = tmp_path / "real.svg"
    real.write_text("old")
    link = tmp_path / "link.svg"
    link.symlink_to(real)
    with staged_path(link) as staged:
        staged.write_text("new")
    assert link.is_symlink() and real.read_text() == "new"


def test_a_character_device_is_handed_to_the_library_itself():
    with staged_path("/dev/null") as staged:
        assert str(staged) == "/dev/null"


def test_a_copy_as_is_matches_copy2(tmp_path):
    source = tmp_path / "page.md"
    source.write_text("text")
    source.chmod(0o600)
    os.utime(source, (1_000_000_000, 1_000_000_000))
    shutil.copy2(source, tmp_path / "by_copy2.md")
    copy_file_as_is(source, tmp_path / "by_helper.md")
    expected, got = (tmp_path / "by_copy2.md").stat(), (tmp_path / "by_helper.md").stat()
    assert (tmp_path / "by_helper.md").read_text() == "text"
    assert got.st_mode == expected.st_mode and got.st_mtime == expected.st_mtime
    assert leftovers(tmp_path) == []


def test_a_tree_copy_merges_and_keeps_times_unless_told(tmp_path):
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.onnx").write_bytes(b"a")
    os.utime(source / "sub" / "a.onnx", (1_000_000_000, 1_000_000_000))
    into = tmp_path / "into"
    (into / "sub").mkdir(parents=True)
    (into / "kept.txt").write_text("kept")
    copy_tree(source, into)
    assert (into / "kept.txt").read_text() == "kept"
    assert (into / "sub" / "a.onnx").stat().st_mtime == 1_000_000_000
    fresh = tmp_path / "fresh"
    copy_tree(source, fresh, fresh_times=True)
    assert (fresh / "sub" / "a.onnx").read_bytes() == b"a"
    assert (fresh / "sub" / "a.onnx").stat().st_mtime > 1_000_000_000


def test_a_tree_copy_keeps_links_and_leaves_out_what_it_is_told(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "file").write_text("x")
    (source / "link").symlink_to("file")
    (source / ".lock").write_text("")
    copy_tree(
        source, tmp_path / "copy", symlinks=True, ignore=shutil.ignore_patterns(".lock")
    )
    assert (tmp_path / "copy" / "link").is_symlink()
    assert not (tmp_path / "copy" / ".lock").exists()


def test_a_new_folder_refuses_one_that_is_there(tmp_path):
    new_folder(tmp_path / "a" / "staging")
    with pytest.raises(FileExistsError):
        new_folder(tmp_path / "a" / "staging")


def test_rename_moves_a_folder_over_an_empty_one_and_refuses_a_full_one(tmp_path):
    source, target = tmp_path / "run", tmp_path / "run.partial"
    source.mkdir()
    (source / "ckpt").write_text("x")
    target.mkdir()
    assert rename(source, target) == target
    assert (target / "ckpt").read_text() == "x" and not source.exists()
    source.mkdir()
    with pytest.raises(OSError):
        rename(source, target)
    assert (target / "ckpt").read_text() == "x"
