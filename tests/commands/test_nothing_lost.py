"""Nothing lost by design: a section of tests per rule below, each test over every
command that writes (train, evaluate, translate, average, export-onnx, attention, book).

- Staged writes: a full disk or an interrupt at the moment an output is published leaves
  the previous version intact, and a full disk is one line.
- No output overwrites an input (after following symlinks): refused in one line, before
  work.
- The book is atomic per chapter and locked; --param cannot file a run under a profile.
- Nothing deletes what it did not create; a run folder's derived files are its model's.
- Every user error is one line, before work.

The runs train a tiny model on a tiny synthetic corpus laid out as Multi30k (no data needed), and
the book runs a one-chapter book of its own (a kernel start, seconds).
"""

from __future__ import annotations

import errno
import gc
import json
import logging
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import torch

from annotated_transformer.book import runner
from annotated_transformer.cli import main
from annotated_transformer.commands.train import FLAGS
from annotated_transformer.evaluation.scoring import translate
from annotated_transformer.model.decoding import beam_search, greedy_decode
from annotated_transformer.runtime import files, ownership
from annotated_transformer.training.checkpoint import (
    load_checkpoint,
    model_from_checkpoint,
)
from tests.commands.test_misuse import tiny_world
from tests.support.training import TINY_RUN

COMMANDS = [
    "train",
    "evaluate",
    "translate",
    "average",
    "export-onnx",
    "attention",
    "book",
]
TINY = TINY_RUN
CHAPTER = """# %% [markdown]
# # Demo

# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"
value = 1

# %%
from annotated_transformer.evaluation import results
results.write_result("demo", {"value": value}, profile=profile_name)
"""


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny corpus, caches and a results root of its own, one finished run, and a one-chapter
    book run once."""
    with tiny_world(tmp_path_factory.mktemp("nothing_lost")) as made:
        root, data, run = made["root"], made["data"], made["run"]
        book = root / "book_root"
        (book / "book").mkdir(parents=True)
        shutil.copy(Path(__file__).resolve().parents[2] / "_config.yml", book)
        (book / "book" / "01_demo.py").write_text(CHAPTER)
        runner.run_book(
            "smoke",
            root=book,
            output_dir=book / "_out",
            results_dir=book / "results",
            build=False,
            log=lambda line: None,
        )
        yield dict(root=root, data=data, run=run, book=book)


@pytest.fixture
def place(world, tmp_path, monkeypatch):
    """A copy of the world's run and book for one test to change."""
    monkeypatch.setenv("AT_CACHE_DIR", str(world["root"] / "cache"))
    monkeypatch.setenv("AT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AT_OFFLINE", "1")
    monkeypatch.delenv("AT_DATA_DIR", raising=False)
    shutil.copytree(world["run"], tmp_path / "run")
    shutil.copytree(world["book"], tmp_path / "book_root")
    book = tmp_path / "book_root"
    monkeypatch.setattr(runner, "book_root", lambda root=None: book)
    (tmp_path / "in.txt").write_text("a man runs in the park\nthe red dog sits\n")
    return dict(tmp=tmp_path, run=tmp_path / "run", data=world["data"], book=book)


def train_argv(out: Path, data: Path, *more: str, **overrides) -> list[str]:
    argv = ["train", "--profile", "smoke", "--out", str(out), "--data-dir", str(data)]
    argv += ["--device", "cpu"]
    for field, value in {**TINY, **overrides}.items():
        argv += [FLAGS[field], str(value)]
    return [*argv, *more]


def book_argv(p: dict, *more: str) -> list[str]:
    book = p["book"]
    return [
        "book",
        "--profile",
        "smoke",
        "--no-build",
        "--output-dir",
        str(book / "_out"),
        "--results-dir",
        str(book / "results"),
        *more,
    ]


def case(command: str, p: dict) -> tuple[list[str], list[Path]]:
    """(argv, the outputs it replaces, which exist before it runs) of a command in `p`."""
    run, tmp = p["run"], p["tmp"]
    averaged = str(run / "averaged.pt")
    if command == "train":
        argv = train_argv(run, p["data"], "--resume", max_steps=8)
        # (its averaged.pt and results.json stop describing the run once a newer snapshot
        # lands: they are set aside, see test_nothing_deletes_what_it_did_not_create)
        return argv, [run / "last.pt"]
    if command == "evaluate":
        (run / "evaluation_multi30k_test.json").write_text("{}")
        (tmp / "hyp.txt").write_text("old\n")
        argv = ["evaluate", "--checkpoint", str(run), "--device", "cpu"]
        argv += ["--data-dir", str(p["data"]), "--hypotheses", str(tmp / "hyp.txt")]
        return argv, [tmp / "hyp.txt", run / "evaluation_multi30k_test.json"]
    if command == "translate":
        (tmp / "out.txt").write_text("old\n")
        argv = ["translate", "--checkpoint", averaged, "--device", "cpu", "--beam", "1"]
        argv += ["--input", str(tmp / "in.txt"), "--output", str(tmp / "out.txt")]
        return argv, [tmp / "out.txt"]
    if command == "average":
        return ["average", "--run", str(run)], [run / "averaged.pt"]
    if command == "export-onnx":
        pytest.importorskip("onnx")
        ownership.mark_made_by(tmp / "web", "export-onnx")  # an earlier export's folder
        for name in ("encoder.onnx", "model.json"):
            (tmp / "web" / name).write_text("old")
        argv = ["export-onnx", "--checkpoint", averaged, "--out", str(tmp / "web")]
        return argv, [tmp / "web" / "encoder.onnx", tmp / "web" / "model.json"]
    if command == "attention":
        (tmp / "fig.html").write_text("old")
        argv = ["attention", "--checkpoint", averaged, "--sentence", "a man runs"]
        return [*argv, "--figure", "explorer", "--out", str(tmp / "fig.html")], [
            tmp / "fig.html"
        ]
    assert command == "book"
    book = p["book"]
    return book_argv(p), [
        book / "_out" / "executed" / "smoke" / "book" / "01_demo.ipynb",
        book / "results" / "smoke" / "demo.json",
        book / "results" / "smoke" / "book_run.json",
    ]


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    # a progress bar may leave its last refresh at the start of the line
    lines = [
        line[line.index("error: ") :] for line in err.splitlines() if "error: " in line
    ]
    assert len(lines) == 1, err
    return lines[0]


def snapshot(paths: list[Path]) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in paths}


def leftovers(paths: list[Path]) -> list[Path]:
    """Temporary files of staged writes left beside the outputs."""
    return [
        leftover
        for folder in {path.parent for path in paths}
        for leftover in folder.glob(".*.part")
    ]


# -------------------------------------------------------------------------- staged writes
@pytest.mark.parametrize("fault", ["disk full", "interrupt"])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_interrupted_write_leaves_the_previous_output(
    command, fault, place, monkeypatch, capsys
):
    """A full disk or a Ctrl-C while an output is published leaves the previous output
    byte for byte, with no staged file beside it; a full disk is one line, not torch's
    traceback (the book records the chapter as not published)."""
    argv, outputs = case(command, place)
    before = snapshot(outputs)

    def publish(staged, target):
        target = Path(target).resolve()
        if not any(path.resolve().is_relative_to(target) for path in outputs):
            return  # another file (a snapshot, the kernel's spec): the fault hits an output
        if fault == "disk full":
            # what torch's archive writer raises when the disk fills under it
            raise RuntimeError(
                "PytorchStreamWriter failed writing file data/0: file write failed"
            )
        raise KeyboardInterrupt

    monkeypatch.setattr(files, "_before_publish", publish)
    if fault == "disk full":
        assert main(argv) == 1
        if (
            command == "book"
        ):  # the chapter ran and is recorded as failed, the error logged
            assert "could not be published" in capsys.readouterr().out
        else:
            assert "no space left" in one_line(capsys)
    else:
        try:
            code = main(argv)
        except KeyboardInterrupt:
            code = 130
        assert code == 130
    assert snapshot(outputs) == before
    assert not leftovers(outputs)


# ---------------------------------------------------------- no output overwrites an input
def collision(command: str, p: dict) -> tuple[list[str], Path]:
    """(argv whose output is one of its inputs, that input)."""
    run, tmp, data = p["run"], p["tmp"], p["data"]
    test_de = data / "multi30k" / "test_2016_flickr.de"
    if command == "train":
        (run / "test_translations.txt").unlink()
        (run / "test_translations.txt").symlink_to(test_de)
        return train_argv(run, data, "--resume", max_steps=8), test_de
    if command == "evaluate":
        argv = ["evaluate", "--checkpoint", str(run), "--device", "cpu"]
        return [*argv, "--data-dir", str(data), "--hypotheses", str(test_de)], test_de
    if command == "translate":
        f = tmp / "in.txt"
        argv = ["translate", "--checkpoint", str(run / "averaged.pt"), "--device", "cpu"]
        return [*argv, "--input", str(f), "--output", str(f)], f
    if command == "average":
        snaps = sorted((run / "checkpoints").glob("step_*.pt"))
        return ["average", *map(str, snaps), "--output", str(snaps[-1])], snaps[-1]
    if command == "export-onnx":
        return [
            "export-onnx",
            "--checkpoint",
            str(run),
            "--out",
            str(run),
        ], run / "last.pt"
    if command == "attention":
        (tmp / "fig.html").symlink_to(run / "averaged.pt")
        argv = ["attention", "--checkpoint", str(run / "averaged.pt")]
        argv += [
            "--sentence",
            "a man",
            "--figure",
            "explorer",
            "--out",
            str(tmp / "fig.html"),
        ]
        return argv, run / "averaged.pt"
    source = p["book"] / "book" / "01_demo.py"
    out = tmp / "out"
    out.mkdir()
    (out / "html").symlink_to(p["book"] / "book")
    return ["book", "--profile", "smoke", "--output-dir", str(out)], source


@pytest.mark.parametrize("command", COMMANDS)
def test_no_output_overwrites_an_input(command, place, capsys):
    """An output that is one of the command's inputs, named directly or through a symlink,
    is refused in one line naming that input, before any training or decoding (else
    `translate --input f --output f` would replace the English with German)."""
    argv, victim = collision(command, place)
    before = victim.read_bytes()
    started = time.perf_counter()
    assert main(argv) in (1, 2)
    line = one_line(capsys)
    assert "reads" in line and (victim.name in line or str(victim.parent) in line)
    assert victim.read_bytes() == before
    assert time.perf_counter() - started < 20  # refused before any training or decoding


# --------------------------------------------------- the book: atomic per chapter, locked
INTERRUPTING = CHAPTER.replace(
    'results.write_result("demo"',
    "import os, signal, time\n"
    'results.write_result("demo", {"value": "partial"}, profile=profile_name)\n'
    "os.kill(os.getppid(), signal.SIGINT)\n"
    "time.sleep(30)\n"
    'results.write_result("never"',
)


def test_an_interrupted_chapter_keeps_the_last_good_one_and_says_so(place, capfd, caplog):
    """A Ctrl-C inside a chapter keeps its last good executed notebook and results, and
    the book's record says the chapter was interrupted while its published version is the
    "ok" one; the interrupted cell's error is not dumped on the terminal afterwards."""
    argv, outputs = case("book", place)
    before = snapshot(outputs)
    (place["book"] / "book" / "01_demo.py").write_text(INTERRUPTING)
    # Python leaves SIGINT ignored when it started ignored (a job started with & from a script):
    # give the test the handler an interactive Ctrl-C meets.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(argv)
    except KeyboardInterrupt:  # not caught: a traceback
        code = "KeyboardInterrupt"
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130
    gc.collect()  # the interrupted cell's task, were its error left unread, would log it here
    dumped = [
        r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR
    ]
    assert not dumped, dumped[0].getMessage()
    err = capfd.readouterr().err  # the kernel's own stderr included
    assert "Traceback" not in err and "ERROR" not in err, err
    assert "interrupted" in err
    # notebook and results: the last good ones
    assert snapshot(outputs[:2]) == {path: before[path] for path in outputs[:2]}
    entry = json.loads(outputs[2].read_text())["metrics"]["chapters"]["01_demo"]
    assert entry["status"] == "interrupted" and entry["published"]["status"] == "ok"
    assert json.loads(outputs[1].read_text())["metrics"]["value"] == 1


def test_a_cell_that_ignores_the_interrupt_is_given_up_on_after_the_grace(
    place, capfd, caplog, monkeypatch
):
    """A cell deaf to the kernel's interrupt (stuck in native code, or ignoring SIGINT) holds
    the book only for the grace, and its unfinished task is dropped without a dump."""
    from annotated_transformer.book.engine import ChapterClient

    monkeypatch.setattr(ChapterClient, "grace_s", 1.0)
    argv, outputs = case("book", place)
    before = snapshot(outputs)
    deaf = INTERRUPTING.replace(
        "os.kill(os.getppid(), signal.SIGINT)\n",
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\nos.kill(os.getppid(), signal.SIGINT)\n",
    ).replace("time.sleep(30)", "time.sleep(120)")
    (place["book"] / "book" / "01_demo.py").write_text(deaf)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.perf_counter()
    try:
        code = main(argv)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130
    assert time.perf_counter() - started < 60  # not the cell's 120 s of sleep
    gc.collect()
    dumped = [
        r for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR
    ]
    assert not dumped, dumped[0].getMessage()
    assert "interrupted" in capfd.readouterr().err
    assert snapshot(outputs[:2]) == {path: before[path] for path in outputs[:2]}


def test_two_book_runs_on_one_output_refuse_each_other(place, capsys):
    from filelock import FileLock

    argv, outputs = case("book", place)
    before = snapshot(outputs)
    with FileLock(str(place["book"] / "_out" / runner.LOCK_NAME)):
        assert main(argv) == 2
    assert "another book run" in one_line(capsys)
    assert snapshot(outputs) == before


@pytest.mark.parametrize("param", ["profile_name=cpu", "device=cuda", "max_steps=5"])
def test_parameters_cannot_file_a_run_under_a_profile(param, place, capsys):
    """A `--param` that would change which run a profile's results describe (its profile
    name, device or steps) is refused in one line before anything is built, so
    results/<profile>/ holds only that profile's own runs."""
    argv = ["book", "--profile", "smoke", "--no-build", "--param", param]
    assert main(argv) == 2
    assert "--param" in one_line(capsys)
    assert not (place["book"] / "_build").exists()


# ------------------------------------------------- nothing deletes what it did not create
@pytest.mark.parametrize("command", COMMANDS)
def test_nothing_deletes_what_it_did_not_create(command, place, capsys):
    """`--overwrite` sets the old run aside under replaced/; a resumed run left unscored
    keeps no averaged.pt or results.json of older snapshots; the site build leaves a
    reader's file in html/; `average` keeps the run's averaged.pt unless --output names a
    file; and a stale averaged.pt is refused as not the run's model."""
    run, tmp = place["run"], place["tmp"]
    old = snapshot([run / "averaged.pt", run / "results.json", run / "last.pt"])
    if command == "train":
        assert main(train_argv(run, place["data"], "--overwrite", max_steps=2)) == 0
        moved = list((run / "replaced").glob("*/last.pt"))
        assert len(moved) == 1 and moved[0].read_bytes() == old[run / "last.pt"]
        # A resumed run that is not scored: its derived files are no longer its model's.
        assert (
            main(train_argv(run, place["data"], "--resume", "--no-eval", max_steps=4))
            == 0
        )
        assert not (run / "averaged.pt").exists() and not (run / "results.json").exists()
        return
    if command == "book":
        mine = tmp / "out" / "html" / "notes.txt"
        mine.parent.mkdir(parents=True)
        mine.write_text("mine")
        assert main(["book", "--profile", "smoke", "--output-dir", str(tmp / "out")]) == 1
        assert "did not build" in one_line(capsys) and mine.read_text() == "mine"
        return
    if command == "average":
        assert main(["average", "--run", str(run), "--last", "1"]) == 1
        assert "--output" in one_line(capsys)
        assert (run / "averaged.pt").read_bytes() == old[run / "averaged.pt"]
        return
    # A snapshot newer than the averaged model: the run's averaged.pt is stale.
    newest = sorted((run / "checkpoints").glob("step_*.pt"))[-1]
    shutil.copy(newest, run / "checkpoints" / "step_00000099.pt")
    argv, _ = case(command, place)
    argv[argv.index("--checkpoint") + 1] = str(run / "averaged.pt")
    assert main(argv) == 1
    assert "not the run's model" in one_line(capsys)


# ---------------------------------------------- every user error is one line, before work
@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_that_cannot_be_written_is_one_line_before_work(command, place, capsys):
    """An output path that cannot be written (one under a plain file) is one line naming
    it, before any training, decoding or chapter, and every existing output is left as it
    was."""
    blocker = place["tmp"] / "a_file"
    blocker.write_text("x")
    argv, outputs = case(command, place)
    before = snapshot(outputs)
    flag = {
        "train": "--out",
        "evaluate": "--hypotheses",
        "translate": "--output",
        "average": "--output",
        "export-onnx": "--out",
        "attention": "--out",
        "book": "--results-dir",
    }[command]
    target = blocker / ("x.html" if command == "attention" else "x")
    if flag in argv:
        argv[argv.index(flag) + 1] = str(target)
    else:
        argv += [flag, str(target)]
    if command == "train":
        argv.remove("--resume")
    started = time.perf_counter()
    assert main(argv) in (1, 2)
    assert str(blocker) in one_line(capsys)
    assert time.perf_counter() - started < 20  # before training, decoding or a chapter
    assert snapshot(outputs) == before  # no chapter ran into the executed notebook


@pytest.mark.parametrize(
    "src, words",
    [
        (torch.tensor([5, 6, 2]), "2-D"),
        (torch.tensor([[5.0, 6.0]]), "integer"),
        (torch.tensor([[5, 10_000]]), "10000"),
        (torch.tensor([[-1, 5]]), "-1"),
        ([[5, 6]], "tensor"),
    ],
    ids=["1-D", "float", "id too big", "negative id", "list"],
)
@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_the_decoding_functions_name_a_bad_source(world, decode, src, words):
    """A source that is not a 2-D tensor of the vocabulary's ids is one ValueError line
    saying what is wrong, never an IndexError from the embedding or a shape error from
    attention."""
    model, _ = model_from_checkpoint(load_checkpoint(world["run"] / "averaged.pt"))
    with pytest.raises(ValueError, match=words) as caught:
        if decode == "greedy":
            greedy_decode(model, src, max_new_tokens=3)
        else:
            beam_search(model, src, beam_size=2)
    assert "\n" not in str(caught.value)


def test_a_string_where_sentences_are_expected_is_one_line(world):
    """A bare string is refused (it would be translated character by character), as is a
    list holding anything but strings."""
    model, tokenizer = model_from_checkpoint(
        load_checkpoint(world["run"] / "averaged.pt")
    )
    with pytest.raises(ValueError, match="list of sentences.*pass \\[text\\]"):
        translate(model, tokenizer, "a man runs")
    with pytest.raises(ValueError, match="list of strings"):
        translate(model, tokenizer, ["a man", 5])


def test_a_full_disk_under_torch_save_is_one_oserror(tmp_path):
    """The real failure, not the hook: torch's writer raising with the OSError as its context."""
    target = tmp_path / "x.pt"
    target.write_bytes(b"old")

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.handle, name)

    with pytest.raises(files.DiskFull, match="no space left.*previous version"):
        files.atomic_write(
            target, lambda handle: torch.save({"a": torch.zeros(1000)}, Full(handle))
        )
    assert target.read_bytes() == b"old" and not leftovers([target])
    assert os.listdir(tmp_path) == ["x.pt"]
