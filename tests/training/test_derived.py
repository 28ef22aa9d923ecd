"""averaged.pt, results.json and the test translations describe the run's last snapshots, or are
moved aside; an averaged.pt the snapshots have moved on from is refused."""

import json
from pathlib import Path

import pytest

from annotated_transformer.training.checkpoint import (
    CHECKPOINT_FORMAT,
    atomic_torch_save,
    load_checkpoint,
)
from annotated_transformer.training.derived import (
    DEFAULT_AVERAGE_LAST,
    check_current,
    current_sources,
    run_average_last,
    set_aside_stale,
    sources_of,
    stale_files,
)
from annotated_transformer.training.run_folder import ASIDE_DIR


def snapshot(out_dir: Path, step: int, average_last: int | None = 2) -> str:
    name = f"step_{step:08d}.pt"
    profile = {"average_last": average_last} if average_last else None
    state = {"format": CHECKPOINT_FORMAT, "model": {}, "step": step, "profile": profile}
    atomic_torch_save(state, out_dir / "checkpoints" / name)
    return name


def averaged(out_dir: Path, sources: list[str] | None) -> Path:
    state = {"format": CHECKPOINT_FORMAT, "model": {}, "averaged_from": sources}
    return atomic_torch_save(state, out_dir / "averaged.pt")


def results(out_dir: Path, sources: list[str]) -> None:
    record = {"metrics": {"test": {"averaged_checkpoints": sources}}}
    (out_dir / "results.json").write_text(json.dumps(record))
    (out_dir / "test_translations.txt").write_text("ein Hund\n")


@pytest.fixture
def run(tmp_path) -> Path:
    """A run folder whose derived files average its last 2 of 3 snapshots."""
    names = [snapshot(tmp_path, step) for step in (2, 4, 6)]
    averaged(tmp_path, names[-2:])
    results(tmp_path, names[-2:])
    return tmp_path


def test_the_run_averages_as_many_snapshots_as_its_profile_says(tmp_path):
    assert run_average_last(tmp_path) == DEFAULT_AVERAGE_LAST  # no snapshots
    snapshot(tmp_path, 2, average_last=None)
    assert run_average_last(tmp_path) == DEFAULT_AVERAGE_LAST
    snapshot(tmp_path, 4, average_last=3)
    assert run_average_last(tmp_path) == 3  # the newest snapshot's profile


def test_current_sources_are_the_newest_snapshots(run):
    assert current_sources(run) == ["step_00000004.pt", "step_00000006.pt"]
    assert current_sources(run, last=1) == ["step_00000006.pt"]
    assert len(current_sources(run, last=10)) == 3


def test_each_derived_file_says_what_it_came_from(run):
    current = current_sources(run)
    for name in ("averaged.pt", "results.json", "test_translations.txt"):
        assert sources_of(run / name) == current


def test_a_file_that_does_not_say_has_no_sources(tmp_path):
    (tmp_path / "results.json").write_text("{not json")
    (tmp_path / "notes.txt").write_text("mine")
    averaged(tmp_path, None)
    for name in ("results.json", "notes.txt", "averaged.pt", "test_translations.txt"):
        assert sources_of(tmp_path / name) is None


def test_current_files_are_not_stale(run):
    assert stale_files(run) == []
    assert set_aside_stale(run) is None
    assert (run / "averaged.pt").is_file()


def test_a_newer_snapshot_makes_every_derived_file_stale_and_moves_them_aside(run):
    snapshot(run, 8)
    stale = [run / n for n in ("averaged.pt", "results.json", "test_translations.txt")]
    assert stale_files(run) == stale
    aside = set_aside_stale(run)
    assert aside.parent == run / ASIDE_DIR
    assert sorted(p.name for p in aside.iterdir()) == sorted(p.name for p in stale)
    assert not any(p.exists() for p in stale) and stale_files(run) == []


def test_a_folder_without_snapshots_keeps_its_averaged_model(tmp_path):
    averaged(tmp_path, ["step_00000002.pt"])
    assert stale_files(tmp_path) == []
    check_current(tmp_path / "averaged.pt", load_checkpoint(tmp_path / "averaged.pt"))


def test_the_current_average_is_accepted(run):
    check_current(run / "averaged.pt", load_checkpoint(run / "averaged.pt"))


@pytest.mark.parametrize(
    "made_from,named",
    [
        (["step_00000002.pt", "step_00000004.pt"], "step_00000002.pt"),
        (None, "does not name"),
    ],
)
def test_an_average_the_snapshots_moved_on_from_is_refused(run, made_from, named):
    checkpoint = {"averaged_from": made_from}
    with pytest.raises(ValueError, match=rf"{named}.*step_00000004.pt, step_00000006.pt"):
        check_current(run / "averaged.pt", checkpoint)


def test_only_a_run_folders_averaged_pt_is_checked(run):
    check_current(run / "checkpoints" / "step_00000002.pt", {"averaged_from": None})
    check_current(run / "copy.pt", {"averaged_from": ["elsewhere.pt"]})
