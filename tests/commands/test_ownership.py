"""Every folder has one owner: an output inside a folder another command made is refused
in one line that names the owner and where to write instead, before any work; the maker's own
documented writes still go through.

Unrefused, each case below would exit 0 having replaced a file of the run or of the
book. The runs are the tiny synthetic runs of test_misuse (seconds), trained once per
module.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch

from annotated_transformer import pipeline
from annotated_transformer.cli import main
from annotated_transformer.runtime import files, ownership
from annotated_transformer.training.checkpoint import list_snapshots
from tests.commands.test_misuse import place_in, tiny_run_profile, tiny_world
from tests.commands.test_nothing_lost import train_argv


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny corpus, caches of its own, one finished run and a second run with another seed."""
    with tiny_world(tmp_path_factory.mktemp("ownership")) as made:
        other = made["root"] / "other_seed"
        pipeline.run(
            tiny_run_profile(seed=2),
            other,
            data_dir=made["data"],
            device="cpu",
            show_progress=False,
            evaluate_test=False,
        )
        yield dict(root=made["root"], data=made["data"], run=made["run"], other=other)


@pytest.fixture
def place(world, tmp_path, monkeypatch):
    """A copy of the world's runs for one test, and a results root with the smoke book's record."""
    placed = place_in(world, tmp_path, monkeypatch)
    shutil.copytree(world["other"], tmp_path / "other_seed")
    (tmp_path / "in.txt").write_text("a man runs in the park\n")
    return dict(
        placed,
        other=tmp_path / "other_seed",
        book_results=book_results(tmp_path / "results" / "smoke"),
    )


BOOK_CHAPTERS = {
    "01_attention": ["attention.json"],
    "04_training": ["training.json", "translation_multi30k_en_de.json"],
    "08_attention_visualizations": ["attention_figures.json"],
}


def book_results(folder: Path) -> Path:
    """The smoke book's results folder as `book` leaves it: its record names each chapter's files."""
    folder.mkdir(parents=True)
    chapters = {
        chapter: {"status": "ok", "results": names}
        for chapter, names in BOOK_CHAPTERS.items()
    }
    record = {"name": "book_run", "metrics": {"chapters": chapters}}
    (folder / "book_run.json").write_text(json.dumps(record))
    for names in BOOK_CHAPTERS.values():
        for name in names:
            (folder / name).write_text('{"the book": 1}')
    return folder


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


def files_of(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(argv: list[str], capsys, *watched: Path) -> str:
    """Run argv; it must fail in one line before any work, leaving `watched` folders as they were."""
    before = [files_of(folder) for folder in watched]
    started = time.perf_counter()
    assert main(argv) == 1
    line = one_line(capsys)
    assert time.perf_counter() - started < 20
    assert [files_of(folder) for folder in watched] == before
    return line


def assert_names_run_owner(line: str, run: Path) -> None:
    assert "run folder of `train`" in line, line
    assert "outside it" in line and f"{run.name}-" in line, line


# ------------------------------------------------------------------------------------------ a run's own files
def test_translate_into_the_run_results_is_refused(place, capsys):
    run = place["run"]
    argv = ["translate", "--checkpoint", str(run / "averaged.pt"), "--device", "cpu"]
    argv += ["--input", "in.txt", "--output", str(run / "results.json")]
    line = refused(argv, capsys, run)
    assert_names_run_owner(line, run)
    assert "run-translations" in line


@pytest.mark.parametrize("victim", ["results.json", "test_translations.txt", "mine.txt"])
def test_evaluate_hypotheses_into_the_run_are_refused(victim, place, capsys):
    run = place["run"]
    argv = ["evaluate", "--checkpoint", str(run), "--device", "cpu"]
    argv += ["--data-dir", str(place["data"]), "--max-sentences", "8", "--beam", "1"]
    line = refused([*argv, "--hypotheses", str(run / victim)], capsys, run)
    assert_names_run_owner(line, run)
    assert line.startswith("error: --hypotheses")


def test_evaluate_still_files_its_record_with_the_run(place, capsys):
    run = place["run"]
    argv = ["evaluate", "--checkpoint", str(run), "--device", "cpu"]
    argv += ["--data-dir", str(place["data"]), "--max-sentences", "4", "--beam", "1"]
    hyps = place["tmp"] / "run-evaluations" / "hyps.txt"
    hyps.parent.mkdir()
    assert main([*argv, "--hypotheses", str(hyps)]) == 0
    assert list(run.glob("evaluation_*.json")) and hyps.is_file()


@pytest.mark.parametrize(
    "output", ["last.pt", "step_old", "checkpoints/step_00000099.pt", "avg3.pt"]
)
def test_average_writes_inside_the_run_only_its_averaged_pt(output, place, capsys):
    run = place["run"]
    if output == "step_old":  # a snapshot that is not among the averaged ones
        output = list_snapshots(run)[0].relative_to(run).as_posix()
    line = refused(
        ["average", "--run", str(run), "--last", "2", "--output", str(run / output)],
        capsys,
        run,
    )
    assert_names_run_owner(line, run)
    assert "run-averages" in line


def test_average_default_output_is_the_run_model(place, capsys):
    run = place["run"]
    assert main(["average", "--run", str(run)]) == 0
    outside = place["tmp"] / "run-averages" / "last1.pt"
    outside.parent.mkdir()
    assert (
        main(["average", "--run", str(run), "--last", "1", "--output", str(outside)]) == 0
    )
    assert torch.load(outside, weights_only=False)["averaged_from"]


def test_average_refuses_snapshots_of_two_runs(place, capsys):
    snaps = [list_snapshots(place["run"])[-1], list_snapshots(place["other"])[-1]]
    out = place["tmp"] / "mixed.pt"
    line = refused(
        ["average", *map(str, snaps), "--output", str(out)], capsys, place["run"]
    )
    assert "another run" in line and "seed" in line, line
    assert not out.exists()


# ------------------------------------------------------------------------------------------ other owners
def marked(folder: Path, marker: str) -> Path:
    folder.mkdir(parents=True)
    (folder / marker).write_text("{}")
    return folder


@pytest.mark.parametrize(
    "marker, owner",
    [
        ("table3_run.json", "`table3`"),
        ("parser_run.json", "`parser-curve`"),
        (files.SITE_MARKER, "the site of `book`"),
        ("book_run.json", "the book's results folder"),
    ],
)
@pytest.mark.parametrize("command", ["translate", "attention", "export-onnx"])
def test_outputs_into_other_commands_folders_are_refused(
    marker, owner, command, place, capsys
):
    folder = marked(place["tmp"] / "theirs", marker)
    (folder / "share").mkdir()
    checkpoint = str(place["run"] / "averaged.pt")
    argv = {
        "translate": [
            "translate",
            "--checkpoint",
            checkpoint,
            "--input",
            "in.txt",
            "--output",
            str(folder / "share" / "de.txt"),
        ],
        "attention": [
            "attention",
            "--checkpoint",
            checkpoint,
            "--sentence",
            "a man",
            "--figure",
            "explorer",
            "--out",
            str(folder / "fig.html"),
        ],
        "export-onnx": ["export-onnx", "--checkpoint", checkpoint, "--out", str(folder)],
    }[command]
    line = refused(argv, capsys, folder)
    assert owner in line and marker in line and "theirs-" in line, line


def test_export_onnx_into_another_run_is_refused(place, capsys):
    argv = ["export-onnx", "--checkpoint", str(place["run"] / "averaged.pt")]
    line = refused([*argv, "--out", str(place["other"])], capsys, place["other"])
    assert_names_run_owner(line, place["other"])


# ------------------------------------------------------------------------------------------ the book's names
@pytest.mark.parametrize(
    "name, chapter",
    [
        ("book_run", "the book's record"),
        ("training", "04_training"),
        ("translation_multi30k_en_de", "04_training"),
        ("attention_figures", "08_attention_visualizations"),
        ("attention", "01_attention"),
    ],
)
def test_publish_refuses_a_name_a_chapter_owns(name, chapter, place, capsys):
    run = place["run"]
    argv = ["evaluate", "--checkpoint", str(run), "--device", "cpu"]
    argv += ["--data-dir", str(place["data"]), "--max-sentences", "8", "--beam", "1"]
    line = refused([*argv, "--publish", "--name", name], capsys, place["book_results"])
    assert chapter in line and "another name (--name)" in line, line


@pytest.mark.parametrize("more", [[], ["--results-name", "training"]])
def test_train_publish_refuses_a_name_a_chapter_owns(more, place, capsys):
    """`train --publish` under a name chapter 04 owns is refused in one line naming the
    chapter and --results-name, before training, so the chapter's record is never
    replaced."""
    argv = train_argv(place["tmp"] / "new_run", place["data"], "--publish", *more)
    line = refused(argv, capsys, place["book_results"])
    assert "04_training" in line and "another name (--results-name)" in line, line
    assert not (place["tmp"] / "new_run").exists()


@pytest.mark.slow
def test_publish_under_a_free_name_still_works(place, capsys):
    argv = ["evaluate", "--checkpoint", str(place["run"]), "--device", "cpu"]
    argv += ["--data-dir", str(place["data"]), "--max-sentences", "4", "--beam", "1"]
    assert main([*argv, "--publish", "--name", "my_evaluation"]) == 0
    assert (place["book_results"] / "my_evaluation.json").is_file()


# ------------------------------------------------------------------------------------------ the rest
@pytest.mark.slow
def test_export_onnx_model_json_names_its_checkpoint(place, capsys):
    run, out = place["run"], place["tmp"] / "web"
    assert main(["export-onnx", "--checkpoint", str(run), "--out", str(out)]) == 0
    origin = json.loads((out / "model.json").read_text())["checkpoint"]
    assert origin["path"] == str(run.resolve())
    assert origin["averaged_from"] == [p.name for p in list_snapshots(run)[-2:]]
    assert isinstance(origin["step"], int)


def test_an_error_names_the_destination_not_the_staged_file(tmp_path):
    destination = tmp_path / "a_folder"
    destination.mkdir()
    (destination / "x").write_text("x")
    with pytest.raises(OSError) as raised:
        files.atomic_write_text(destination, "text")
    assert str(destination) in str(raised.value) and ".part" not in str(raised.value)
    assert not list(tmp_path.glob(".*.part"))


def test_the_markers_are_the_makers_own_names():
    from annotated_transformer.book import runner
    from annotated_transformer.chapters.constituency_parsing import (
        extended as parsing_extended,
    )
    from annotated_transformer.chapters.model_variations import (
        extended as table3_extended,
    )
    from annotated_transformer.training import checkpoint, run_folder

    assert ownership.TABLE3_MARKER == table3_extended.PLAN_NAME
    assert ownership.PARSER_MARKER == parsing_extended.PLAN_NAME
    assert ownership.BOOK_MARKER == f"{runner.RECORD}.json"
    assert set(ownership.RUN_MARKERS) == {run_folder.METRICS_NAME, checkpoint.RESUME_NAME}
    assert ownership.SNAPSHOT_GLOB.startswith(f"{checkpoint.SNAPSHOT_DIR}/")


@pytest.mark.parametrize(
    "command, argv",
    [
        ("train", ["train", "--profile", "smoke", "--max-steps", "1", "--out"]),
        ("table3", ["table3", "--profile", "smoke", "--epochs", "1", "--out"]),
        ("parser-curve", ["parser-curve", "--max-epochs", "1", "--out"]),
    ],
)
@pytest.mark.parametrize("other", ["train", "table3", "parser-curve", "book"])
def test_a_run_command_refuses_another_commands_folder(
    tmp_path, capsys, command, argv, other
):
    """train, table3 and parser-curve make and continue their own --out; another command's folder,
    or a folder inside one, is refused in one line before any work, and nothing in it changes."""
    marker = {
        "train": "metrics.jsonl",
        "table3": ownership.TABLE3_MARKER,
        "parser-curve": ownership.PARSER_MARKER,
        "book": ownership.BOOK_MARKER,
    }[other]
    folder = tmp_path / "theirs"
    folder.mkdir()
    (folder / marker).write_text("{}")
    if other == command:
        # its own kind: the check passes (the command then continues or refuses as before)
        ownership.check_own_folder("--out", folder, command=command)
        with pytest.raises(ownership.OwnedFolderError, match="is the|only"):
            ownership.check_own_folder("--out", folder / "inner", command=command)
        return
    for out in (folder, folder / "inner"):
        line = refused([*argv, str(out)], capsys, folder)
        assert "theirs" in line and f"`{other}`" in line, line
