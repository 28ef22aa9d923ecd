"""A record says how the tree that made it differed from its commit: which tracked files, or that
this was not recorded; never a bare "local edits"."""

import subprocess

import pytest

from annotated_transformer.evaluation import results


def test_a_clean_tree_says_nothing_more_than_its_commit():
    prov = {
        "git_commit": "a" * 40,
        "git_dirty": False,
        "device_name": "CPU",
        "date": "2026",
    }
    assert results.describe_provenance({"provenance": prov}).endswith("at commit aaaaaaa")


def test_an_edited_tree_names_the_files_it_changed():
    prov = {
        "git_dirty": True,
        "git_changed_files": ["a.py", "b.py"],
        "git_changed_count": 2,
    }
    assert results.uncommitted_changes(prov) == (
        " plus local changes to 2 files (a.py, b.py)"
    )
    many = {
        "git_dirty": True,
        "git_changed_files": list("abcde"),
        "git_changed_count": 25,
    }
    assert results.uncommitted_changes(many) == (
        " plus local changes to 25 files (a, b, c and 22 more)"
    )


def test_an_older_record_without_the_files_says_they_were_not_recorded():
    assert "local changes that the record does not list" in results.uncommitted_changes(
        {"git_dirty": True}
    )


@pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
    reason="no git",
)
def test_provenance_lists_the_tracked_files_that_differ(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git(
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    (tmp_path / "kept.txt").write_text("one\n")
    git("add", "kept.txt")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "y")
    (tmp_path / "kept.txt").write_text("two\n")
    (tmp_path / "untracked.txt").write_text("not counted\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(results, "_git", _git_in(tmp_path))
    prov = results.provenance("cpu")
    assert prov["git_dirty"] is True
    assert prov["git_changed_files"] == ["kept.txt"] and prov["git_changed_count"] == 1


def _git_in(folder):
    def run(*args):
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    return run
