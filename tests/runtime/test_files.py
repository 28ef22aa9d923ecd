"""Every name a file may have may also be written: the staging sibling of a staged write fits the
file system's limit on one name (255 bytes) however long the destination's name is."""

from __future__ import annotations

import os

import pytest

from annotated_transformer.runtime import files
from annotated_transformer.runtime.files import (
    atomic_write_text,
    remove_partial_writes,
    staged_tree,
    staging_prefix,
)

NAME_MAX = 255


def long_name(size: int, stem: str = "a") -> str:
    """A file name of `size` bytes ending in .txt."""
    return stem * (size - 4) + ".txt"


@pytest.mark.parametrize("size", [240, 241, 251, NAME_MAX])
def test_a_file_of_any_valid_name_length_is_written_and_leaves_no_staging_file(
    tmp_path, size
):
    target = tmp_path / long_name(size)
    atomic_write_text(target, "first")
    atomic_write_text(target, "second")  # replacing it stages the same way
    assert target.read_text() == "second"
    assert os.listdir(tmp_path) == [target.name]


def test_a_long_non_ascii_name_is_written_and_its_staging_name_is_cut_between_characters(
    tmp_path, monkeypatch
):
    name = "ä" * 125 + "x.txt"  # 255 bytes in UTF-8, 130 characters
    assert len(name.encode()) == NAME_MAX
    staged = []
    monkeypatch.setattr(
        files, "_before_publish", lambda tmp, target: staged.append(tmp.name)
    )
    atomic_write_text(tmp_path / name, "Grüße")
    assert (tmp_path / name).read_text() == "Grüße"
    assert len(staged[0].encode()) <= NAME_MAX and staged[0].encode().decode("utf-8")


def test_staging_names_of_long_names_differ_when_the_names_do_and_are_cleaned_up(
    tmp_path,
):
    first, second = long_name(NAME_MAX, "b"), long_name(NAME_MAX - 1, "b") + "x"
    prefixes = {staging_prefix(tmp_path, first), staging_prefix(tmp_path, second)}
    assert len(prefixes) == 2
    # A killed write's leftover, with the shortened name, is what remove_partial_writes removes.
    leftover = tmp_path / f"{staging_prefix(tmp_path, first)}abcdefgh.part"
    leftover.write_text("half")
    assert len(leftover.name.encode()) <= NAME_MAX
    assert remove_partial_writes(tmp_path) == [leftover] and not leftover.exists()


def test_short_names_keep_their_readable_staging_name(tmp_path):
    assert staging_prefix(tmp_path, "averaged.pt") == ".averaged.pt."
    name = long_name(NAME_MAX - 15)  # the longest name staged without shortening
    assert staging_prefix(tmp_path, name) == f".{name}."


def test_a_folder_of_a_255_byte_name_is_replaced_whole(tmp_path):
    folder = tmp_path / ("s" * NAME_MAX)
    for text in ("old", "new"):
        with staged_tree(folder) as stage:
            (stage / "index.html").write_text(text)
    assert (folder / "index.html").read_text() == "new"
    assert os.listdir(tmp_path) == [folder.name]


def test_a_publication_of_255_byte_names_moves_them_all_into_place(tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("chapter")
    out = tmp_path / "out"
    names = [long_name(NAME_MAX, "n"), long_name(251, "m")]
    with files.publication() as published:
        for name in names:
            published.add(out / name, source)
    assert sorted(os.listdir(out)) == sorted(names)
    assert all((out / name).read_text() == "chapter" for name in names)


def test_a_name_over_the_limit_is_still_named_as_the_users_in_the_error(tmp_path):
    target = tmp_path / long_name(NAME_MAX + 1)
    with pytest.raises(OSError) as raised:
        atomic_write_text(target, "x")
    assert raised.value.filename == str(target) and ".part" not in str(raised.value)
    assert os.listdir(tmp_path) == []


def test_a_publication_with_a_folder_where_a_file_goes_moves_nothing(tmp_path):
    (tmp_path / "a.json").write_text("old")
    (tmp_path / "b.json").mkdir()
    staged = tmp_path / "staged"
    staged.write_text("new")
    with pytest.raises(IsADirectoryError, match="a folder stands where a file"):
        with files.publication() as together:
            together.add(tmp_path / "a.json", staged)
            together.add(tmp_path / "b.json", staged)
    assert (tmp_path / "a.json").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json", "staged"]
