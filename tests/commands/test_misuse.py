"""Nothing lost, nothing misfiled: results stay with their run, --overwrite deletes only
a run's files and only after its checks, a resumed run is the run it claims to be, and every
misuse gets one line naming the flag or file, before any training or decoding.

The runs here train a tiny model on a tiny synthetic corpus laid out as Multi30k (no data
needed); the tests that share that run are marked slow, as a busy machine takes tens of
seconds over it.
"""

import contextlib
import dataclasses
import json
import math
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import torch

from annotated_transformer import pipeline
from annotated_transformer.cli import main
from annotated_transformer.commands.train import FLAGS, add_arguments, profile_from_args
from annotated_transformer.evaluation import results
from annotated_transformer.model.config import preset
from annotated_transformer.model.decoding import (
    DecodeSettings,
    beam_search,
    greedy_decode,
)
from annotated_transformer.model.transformer import Transformer
from annotated_transformer.profiles import (
    BOOK_BOUNDS,
    PROFILE_BOUNDS,
    PROFILES,
    TABLE3_BOUNDS,
    BookScales,
    Profile,
    Table3Scale,
    flat_fields,
    get_profile,
)
from annotated_transformer.runtime.checks import LARGEST_INT
from annotated_transformer.runtime.files import atomic_write_text
from annotated_transformer.training import checkpoint as ckpt
from annotated_transformer.training.run_folder import RESULTS_NAME, claim_run_folder
from tests.support.tiny_checkpoint import write_tiny_checkpoint
from tests.support.training import TINY_RUN, FakeTokenizer, make_trainer, tiny_profile

REPO = Path(__file__).resolve().parents[2]
WORDS = "a man dog cat runs sits in on the park house red blue small big".split()
GERMAN = dict(
    zip(
        WORDS,
        "ein mann hund katze rennt sitzt im auf der park haus rot blau klein gross".split(),
    )
)


# ------------------------------------------------------------------------------------------ fixtures
def write_corpus(root: Path, lines: dict[str, int], step: int = 7) -> Path:
    """A Multi30k-shaped folder of synthetic English -> German pairs: split -> number of pairs
    (`step` picks another text of the same words)."""
    folder = root / "multi30k"
    folder.mkdir(parents=True, exist_ok=True)
    stems = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
    for split, n in lines.items():
        sentences = [
            [WORDS[(step * i + 3 * j) % len(WORDS)] for j in range(2 + i % 5)]
            for i in range(n)
        ]
        (folder / f"{stems[split]}.en").write_text(
            "".join(" ".join(s) + "\n" for s in sentences)
        )
        (folder / f"{stems[split]}.de").write_text(
            "".join(" ".join(GERMAN[w] for w in s) + "\n" for s in sentences)
        )
    return root


def tiny_run_profile(**overrides) -> Profile:
    """The smoke profile at a scale of seconds: 6 steps, snapshots every 2, the last 2 averaged."""
    values = dict(TINY_RUN, max_steps=6)
    return get_profile("smoke", **{**values, **overrides})


@contextlib.contextmanager
def tiny_world(root: Path):
    """Under `root`: a tiny corpus (`data/`), a cache and a results root of their own (set in the
    environment while the context is open, downloads off) and one finished run (`run/`). Yields
    {"root", "data", "run", "summary", "patch"}: the commands' test modules share it."""
    data = write_corpus(root / "data", {"train": 300, "valid": 20, "test": 20})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AT_CACHE_DIR", str(root / "cache"))
        patch.setenv("AT_RESULTS_DIR", str(root / "results"))
        patch.setenv("AT_OFFLINE", "1")
        patch.delenv("AT_DATA_DIR", raising=False)
        run = root / "run"
        summary = pipeline.run(
            tiny_run_profile(), run, data_dir=data, device="cpu", show_progress=False
        )
        yield dict(root=root, data=data, run=run, summary=summary, patch=patch)


def place_in(world: dict, tmp_path: Path, monkeypatch, *runs: str) -> dict:
    """For one test: the world's cache, a results root and the working folder of its own (downloads
    off), and a copy of the world's run (and of each of `runs`) under `tmp_path`."""
    monkeypatch.setenv("AT_CACHE_DIR", str(world["root"] / "cache"))
    monkeypatch.setenv("AT_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AT_OFFLINE", "1")
    monkeypatch.delenv("AT_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    for name in ("run", *runs):
        shutil.copytree(world[name], tmp_path / name)
    return dict(tmp=tmp_path, run=tmp_path / "run", data=world["data"])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny corpus, caches and results root of its own, and one finished run of it."""
    with tiny_world(tmp_path_factory.mktemp("misuse")) as made:
        yield made


def error_line(capsys) -> str:
    """The one line a command printed for a user's mistake (argparse's, or the CLI's `error:`)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [
        line for line in err.splitlines() if line.startswith(("error:", "python -m"))
    ]
    assert lines, err
    line = [line for line in err.splitlines() if "error:" in line][-1]
    return line


def fake_run(folder: Path) -> None:
    (folder / "checkpoints").mkdir(parents=True)
    for name in ("checkpoints/step_00000010.pt", "last.pt", "averaged.pt"):
        (folder / name).write_bytes(b"x")
    (folder / "metrics.jsonl").write_text("{}\n")


# --------------------------------------------------------------------------- nothing lost
@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_a_run_files_its_results_with_the_run_and_not_in_results(world):
    """The record in the run folder (--out) names that folder, the profile, the model and
    the commit, and nothing is written under results/ unless --publish asks."""
    run, summary = world["run"], world["summary"]
    assert (
        summary["results_path"] == str(run / RESULTS_NAME) == summary["run_results_path"]
    )
    record = json.loads((run / RESULTS_NAME).read_text())
    assert record["run_folder"] == str(run.resolve())
    assert record["config"]["profile"]["name"] == "smoke" and record["config"]["model"]
    assert "git_commit" in record["provenance"]
    assert record["metrics"]["sacrebleu"] == summary["test"]["sacrebleu"]
    assert not (world["root"] / "results").exists()  # nothing published without asking


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_publish_files_a_copy_that_records_its_run(world, tmp_path, monkeypatch):
    monkeypatch.setenv("AT_RESULTS_DIR", str(tmp_path / "results"))
    summary = pipeline.run(
        tiny_run_profile(max_steps=2),
        tmp_path / "run",
        data_dir=world["data"],
        device="cpu",
        show_progress=False,
        publish=True,
        results_name="published",
    )
    published = tmp_path / "results" / "smoke" / "published.json"
    assert summary["results_path"] == str(published)
    assert json.loads(published.read_text())["run_folder"] == str(
        (tmp_path / "run").resolve()
    )
    assert (tmp_path / "run" / RESULTS_NAME).is_file()


def test_a_run_never_replaces_a_committed_result_of_another_run(tmp_path, monkeypatch):
    """The README's H100 result (results/gpu/, committed) survives `train --profile gpu --publish`
    under its name: refused before the folder is even made."""
    monkeypatch.delenv("AT_RESULTS_DIR", raising=False)
    committed = results.results_path("earlier_recipe_d128x4", "gpu")
    assert results.is_committed(committed)
    before = committed.read_bytes()
    with pytest.raises(
        ValueError, match="committed result of another run.*--results-name"
    ):
        pipeline.run(
            get_profile("gpu", max_steps=1),
            tmp_path / "run",
            publish=True,
            results_name=committed.stem,
        )
    assert committed.read_bytes() == before and not (tmp_path / "run").exists()
    # The same file may be replaced by the run that made it, and by nothing else.
    results.check_replaceable(tmp_path / "not_committed.json", tmp_path)


def test_the_gpu_profile_publishes_in_a_fresh_clone(monkeypatch):
    """The committed H100 runs live under names of their own (results/gpu/recipe_*), so that a
    reader's `train --profile gpu --publish` and `book --profile gpu` (chapters 04 and 05) are not
    refused over them."""
    monkeypatch.delenv("AT_RESULTS_DIR", raising=False)
    profile = get_profile("gpu")
    for name in (pipeline.default_results_name(profile), "translation", "training"):
        path = results.results_path(name, "gpu")
        assert not results.is_committed(path), path


def test_overwrite_deletes_nothing_when_a_check_fails(tmp_path, capsys):
    """Every check (here a missing --data-dir) comes before `--overwrite` touches the run:
    last.pt, averaged.pt, the snapshots and metrics.jsonl are all there after the
    refusal."""
    run = tmp_path / "R"
    fake_run(run)
    argv = ["train", "--profile", "smoke", "--out", str(run), "--overwrite"]
    assert main([*argv, "--data-dir", str(tmp_path / "missing_dir")]) == 1
    assert "missing_dir" in error_line(capsys)
    for name in (
        "last.pt",
        "averaged.pt",
        "checkpoints/step_00000010.pt",
        "metrics.jsonl",
    ):
        assert (run / name).read_bytes() in (b"x", b"{}\n"), name


def test_overwrite_deletes_only_the_runs_own_files(tmp_path):
    """Only the files a run writes are cleared; a user's notes and models beside them, in
    the run folder or anywhere under checkpoints/, stay."""
    fake_run(tmp_path)
    mine = [
        tmp_path / "notes.txt",
        tmp_path / "checkpoints" / "notes.txt",
        tmp_path / "checkpoints" / "best" / "my_model.pt",
    ]
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("mine")
    with claim_run_folder(tmp_path, resume=False, overwrite=True) as folder:
        removed = folder.clear_old_run()
    assert sorted(p.name for p in removed) == [
        "averaged.pt",
        "last.pt",
        "metrics.jsonl",
        "step_00000010.pt",
    ]
    assert all(path.read_text() == "mine" for path in mine)


# -------------------------------------------- nothing misfiled, no run mixed with another
@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_resume_with_another_learning_rate_is_refused_not_ignored(world, tmp_path):
    """A resume is refused when --lr differs from the run's: the saved schedule would
    train at its own rate while the start record in metrics.jsonl named the new one."""
    with pytest.raises(ValueError, match=r"peak_lr 0\.002.*1e-05"):
        pipeline.run(
            tiny_run_profile(peak_lr=1e-5, max_steps=8),
            world["run"],
            data_dir=world["data"],
            resume=True,
            device="cpu",
            show_progress=False,
        )
    starts = [
        r
        for r in map(
            json.loads, (world["run"] / "metrics.jsonl").read_text().splitlines()
        )
        if r["kind"] == "start"
    ]
    assert len(starts) == 1  # nothing was claimed for the refused resume


def test_the_trainer_itself_refuses_another_learning_rate(tmp_path):
    """For callers of `fit` and `Trainer`, who pass no profile."""
    profile = tiny_profile(max_steps=4, save_every_steps=2)
    make_trainer(profile, tmp_path).train()
    resumed = make_trainer(profile.replace(peak_lr=1e-5, max_steps=6), tmp_path)
    with pytest.raises(ValueError, match="peak_lr 0.003, this run asks for 1e-05"):
        resumed.resume_from(tmp_path / "last.pt")


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_resume_with_another_tokenizer_is_refused(world, tmp_path):
    """A resume is refused when --data-dir holds other training text, even of the same
    vocabulary size: the trained embeddings belong to the run's own tokenizer."""
    other = _other_split(tmp_path, "train")  # its validation and test splits the run's
    _resume_refused(world, other, tmp_path, "another tokenizer")


def test_the_trainer_refuses_other_validation_pairs(tmp_path):
    """A resume on validation pairs other than the run's is refused, so that one curve
    never mixes two validation sets; the run's own pairs are accepted."""
    from tests.support.training import copy_pairs

    profile = tiny_profile(max_steps=4, save_every_steps=2)
    make_trainer(profile, tmp_path).train()
    same = make_trainer(profile.replace(max_steps=6), tmp_path)
    same.resume_from(tmp_path / "last.pt")  # the same pairs: accepted
    resumed = make_trainer(profile.replace(max_steps=6), tmp_path)
    resumed.valid_data = copy_pairs(20, 2)
    with pytest.raises(ValueError, match="validated on other valid data"):
        resumed.resume_from(tmp_path / "last.pt")


def _resume_refused(world, data_dir: Path, tmp_path, message: str) -> None:
    """`--resume` of the world's run on the corpus in `data_dir` is refused with `message`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
        with pytest.raises(ValueError, match=message):
            pipeline.run(
                tiny_run_profile(max_steps=8),
                world["run"],
                data_dir=data_dir,
                resume=True,
                device="cpu",
                show_progress=False,
            )


def _other_split(tmp_path, split: str) -> Path:
    """The world's corpus with `split` replaced by other sentences of the same words."""
    import shutil

    other = write_corpus(tmp_path / "other", {"train": 300, "valid": 20, "test": 20})
    changed = write_corpus(tmp_path / "changed", {split: 20}, step=4)
    for path in (changed / "multi30k").iterdir():
        shutil.copyfile(path, other / "multi30k" / path.name)
    return other


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
@pytest.mark.parametrize(
    "split,message", [("valid", "validated on other valid data"), ("test", "test")]
)
def test_resume_with_another_validation_or_test_split_is_refused(
    world, tmp_path, split, message
):
    """A resume on the run's training text but another validation split is refused (one
    curve would mix two validation sets), and so is another test split (the run would be
    scored on a test set it was not started for); metrics.jsonl gains no start record."""
    other = _other_split(tmp_path, split)
    metrics = (world["run"] / "metrics.jsonl").read_text()
    _resume_refused(world, other, tmp_path, message)
    assert (world["run"] / "metrics.jsonl").read_text().count('"start"') == metrics.count(
        '"start"'
    )


class OtherTokenizer(FakeTokenizer):
    def to_bytes(self) -> bytes:
        return b"another"


def test_average_refuses_snapshots_of_two_tokenizers(tmp_path):
    profile = tiny_profile(max_steps=4, save_every_steps=2)
    make_trainer(profile, tmp_path / "a").train()
    trainer = make_trainer(profile, tmp_path / "b")
    trainer.tokenizer = OtherTokenizer()
    trainer.train()
    paths = [tmp_path / "a" / "checkpoints" / "step_00000004.pt"]
    paths.append(tmp_path / "b" / "checkpoints" / "step_00000004.pt")
    with pytest.raises(ValueError, match="another tokenizer.*one run only"):
        ckpt.average_checkpoints(paths)


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_evaluate_refuses_a_profile_of_another_corpus(world, capsys):
    """`evaluate --profile gpu-iwslt14` on an EN->DE Multi30k model is one line naming
    both corpora and --profile, and nothing is filed under results/gpu-iwslt14/."""
    argv = ["evaluate", "--checkpoint", str(world["run"]), "--device", "cpu"]
    assert main([*argv, "--profile", "gpu-iwslt14", "--publish"]) == 1
    line = error_line(capsys)
    assert "iwslt14 de->en" in line and "multi30k en->de" in line and "--profile" in line
    assert not (world["root"] / "results" / "gpu-iwslt14").exists()


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_evaluate_files_under_the_checkpoints_own_profile(world, capsys):
    """`evaluate --profile cpu --publish` with a smoke checkpoint says so and files the
    score under smoke/, scored as the smoke profile scores, never under cpu/."""
    argv = ["evaluate", "--checkpoint", str(world["run"]), "--device", "cpu"]
    argv += ["--data-dir", str(world["data"]), "--profile", "cpu", "--publish"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "trained under profile smoke, not cpu" in err
    published = world["root"] / "results"
    assert not (published / "cpu").exists()
    record = json.loads(
        (published / "smoke" / "evaluation_multi30k_test.json").read_text()
    )
    assert record["run_folder"] == str(world["run"].resolve())
    assert record["metrics"]["sentences"] == 6  # the checkpoint's profile: 6 sentences


def test_decoding_lengths_are_checked_and_never_overflow():
    """A max_len_b past LARGEST_INT is refused rather than wrapped around to a one-token
    limit, a negative max_new_tokens is refused rather than yielding a token, and
    LARGEST_INT itself decodes as far as the positions allow, never overflowing."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny", max_len=16), 20, 20).eval()
    src = torch.tensor([[5, 6, 7, 2]])
    with pytest.raises(ValueError, match="max_len_b"):
        beam_search(model, src, beam_size=2, max_len_b=2**63 - 1)
    with pytest.raises(ValueError, match="max_len_b"):
        DecodeSettings(max_len_b=2**63 - 1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_decode(model, src, max_new_tokens=-5)
    # The largest allowed b is clamped to the positions, as a merely large one is.
    assert torch.equal(
        beam_search(model, src, beam_size=2, max_len_b=LARGEST_INT),
        beam_search(model, src, beam_size=2, max_len_b=15),
    )
    assert DecodeSettings(max_len_a=1e9, max_len_b=LARGEST_INT).max_new_tokens(10**6) == (
        LARGEST_INT
    )


def test_translate_refuses_an_overflowing_length_at_parse_time(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["translate", "--checkpoint", "x.pt", "--max-len-b", str(2**63 - 1)])
    assert caught.value.code == 2 and "argument --max-len-b" in error_line(capsys)


@pytest.mark.parametrize(
    "field,value",
    [
        ("max_steps", 0),
        ("time_budget_minutes", -1),
        ("peak_lr", -1),
        ("average_last", 0),
        ("beam_size", 0),
        ("corpus", "bogus"),
    ],
)
def test_python_refuses_what_the_command_line_refuses(field, value):
    """get_profile refuses the values the command line refuses (max_steps=0 and the rest),
    so a run started from Python cannot train zero steps and record BLEU 0.0."""
    with pytest.raises(
        ValueError, match=field if field != "corpus" else "unknown corpus"
    ):
        get_profile("smoke", **{field: value})


def test_a_trainer_without_tokenizer_writes_a_checkpoint_it_can_resume(tmp_path):
    """A checkpoint saved without a tokenizer records None, loads under weights_only
    loading and resumes; only building a translating model from it is refused, naming the
    lack."""
    profile = tiny_profile(max_steps=4, save_every_steps=2)
    trainer = make_trainer(profile, tmp_path)
    trainer.tokenizer = None
    trainer.train()
    state = ckpt.load_checkpoint(tmp_path / "last.pt")
    assert state["tokenizer"] is None
    resumed = make_trainer(profile.replace(max_steps=6), tmp_path)
    resumed.tokenizer = None
    resumed.resume_from(tmp_path / "last.pt")
    assert resumed.train().progress.step == 6
    with pytest.raises(ckpt.CheckpointError, match="holds no tokenizer"):
        ckpt.model_from_checkpoint(state, name="last.pt")


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_a_run_folder_is_the_same_model_in_every_command(world, capsys):
    """A run folder given as --checkpoint is its averaged.pt (the average of its last
    snapshots) to every command, and each command says on stderr which model it read."""
    run = world["run"]
    by_folder, said = pipeline.load_for_evaluation(run)
    averaged = ckpt.load_checkpoint(run / pipeline.AVERAGED_NAME)
    assert by_folder["averaged_from"] == averaged["averaged_from"]
    for name, tensor in averaged["model"].items():
        assert torch.equal(by_folder["model"][name], tensor), name
    assert "average of its last 2 snapshots" in said
    outputs = {}
    for checkpoint in (run, run / pipeline.AVERAGED_NAME):
        out = run.parent / f"out_{checkpoint.name}.txt"
        (run.parent / "in.txt").write_text("a man runs in the park\nthe red dog sits\n")
        argv = ["translate", "--checkpoint", str(checkpoint), "--device", "cpu"]
        argv += [
            "--beam",
            "2",
            "--max-len-b",
            "5",
            "--input",
            str(run.parent / "in.txt"),
            "--output",
            str(out),
        ]
        assert main(argv) == 0
        outputs[checkpoint] = out.read_text()
        assert str(checkpoint) in capsys.readouterr().err  # which model, said on stderr
    assert outputs[run] == outputs[run / pipeline.AVERAGED_NAME]


def test_atomic_writes_keep_the_mode_and_write_through_a_symlink(tmp_path):
    """An atomic write keeps a file's mode, gives a new file the umask's, and writes
    through a symlink to its target instead of replacing the link."""
    shared = tmp_path / "shared.txt"
    shared.write_text("old")
    shared.chmod(0o644)
    atomic_write_text(shared, "new")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644 and shared.read_text() == "new"
    mask = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "fresh.txt", "x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "fresh.txt").stat().st_mode) == 0o640
    link = tmp_path / "link.txt"
    link.symlink_to(shared)
    atomic_write_text(link, "through")
    assert link.is_symlink() and shared.read_text() == "through"


def test_a_plain_file_beside_its_gz_is_named_not_ignored(tmp_path):
    data = write_corpus(tmp_path, {"train": 10})
    subprocess.run(["gzip", "-k", str(data / "multi30k" / "train.en")], check=True)
    from annotated_transformer.data import load_parallel

    with pytest.raises(ValueError, match=r"train\.en and .*train\.en\.gz are both there"):
        load_parallel("multi30k", "train", data_dir=data)


# ------------------------------------------------------------------------------------------ bounds
NUMERIC = sorted(
    f.name
    for f in flat_fields().values()
    if any(kind in str(f.type) for kind in ("int", "float"))
    and "tuple" not in str(f.type)
)
BOUNDARY = {"0": 0, "negative": -1, "inf": math.inf, "nan": math.nan, "2**63": 2**63}
ACCEPTS_ZERO = {
    *("seed", "eval_every", "dropout_from_epoch"),
    *("length_penalty_alpha", "max_len_a", "max_len_b"),
}


def test_every_numeric_setting_has_bounds_and_a_flag():
    assert NUMERIC and set(NUMERIC) == set(PROFILE_BOUNDS)
    assert all(name in FLAGS for name in NUMERIC)


@pytest.mark.parametrize("value", BOUNDARY.values(), ids=BOUNDARY.keys())
@pytest.mark.parametrize("field", NUMERIC)
def test_boundary_values_from_python(field, value):
    if value == 0 and field in ACCEPTS_ZERO:
        assert getattr(get_profile("smoke", **{field: value}), field) == 0
        return
    with pytest.raises(ValueError, match=f"^{field} must be"):
        get_profile("smoke", **{field: value})
    with pytest.raises(ValueError, match=f"^{field} must be"):
        Profile.flat(
            **{
                **PROFILES["smoke"].to_dict(),
                "book": PROFILES["smoke"].book,
                field: value,
            }
        )


@pytest.mark.parametrize("value", BOUNDARY.values(), ids=BOUNDARY.keys())
@pytest.mark.parametrize("field", NUMERIC)
def test_boundary_values_from_the_command_line(field, value, capsys):
    text = str(value)
    if value == 0 and field in ACCEPTS_ZERO:
        import argparse

        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args(["--profile", "smoke", FLAGS[field], text])
        assert getattr(profile_from_args(args), field) == 0
        return
    with pytest.raises(SystemExit) as caught:
        main(["train", "--profile", "smoke", FLAGS[field], text])
    assert caught.value.code == 2
    assert f"argument {FLAGS[field]}: " in error_line(capsys)


@pytest.mark.parametrize("value", BOUNDARY.values(), ids=BOUNDARY.keys())
def test_boundary_values_of_adam_betas_and_the_book_scales(value):
    if value == 0:
        assert get_profile("smoke", adam_betas=(0, 0.98)).adam_betas == (0, 0.98)
    else:
        with pytest.raises(ValueError, match="adam_betas"):
            get_profile("smoke", adam_betas=(value, 0.98))
    book = PROFILES["smoke"].book
    for name in BOOK_BOUNDS:
        with pytest.raises(ValueError, match=f"book.{name} must be"):
            dataclasses.replace(book, **{name: value})
    for name in TABLE3_BOUNDS:
        with pytest.raises(ValueError, match=f"book.table3.{name} must be"):
            dataclasses.replace(book.table3, **{name: value})
    with pytest.raises(ValueError, match="book.table3 must be a Table3Scale"):
        BookScales(minutes=1, table3=dataclasses.asdict(book.table3))
    assert isinstance(book.table3, Table3Scale)


# ------------------------------------------------------------------------------------------ messages
@pytest.mark.parametrize(
    "argv,names",
    [
        (["train", "--profile", "smoke", "--minutes", "inf"], "--minutes"),
        (["train", "--profile", "smoke", "--device", "tpu9"], "--device"),
        (["train", "--profile", "smoke", "--max-len-b", "1e20"], "--max-len-b"),
        (["copy", "--batch-size", "0"], "--batch-size"),
        (["copy", "--steps", "-5"], "--steps"),
        (
            ["train", "--profile", "smoke", "--results-name", "a/b", "--publish"],
            "--results-name",
        ),
        (["train", "--profile", "smoke", "--results-name", "x"], "--publish"),
    ],
)
def test_a_mistake_in_the_arguments_is_one_line_naming_the_flag(
    argv, names, capsys, tmp_path
):
    try:
        code = main(
            [*argv, *(["--out", str(tmp_path / "R")] if argv[0] == "train" else [])]
        )
    except SystemExit as caught:
        code = caught.code
    assert code in (1, 2)
    assert names in error_line(capsys)
    assert not (tmp_path / "R").exists()  # refused before the run folder was touched


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_cuda_without_a_gpu_is_one_line(capsys, tmp_path):
    argv = [
        "train",
        "--profile",
        "smoke",
        "--device",
        "cuda",
        "--out",
        str(tmp_path / "R"),
    ]
    assert main(argv) == 1
    assert "CUDA is not available" in error_line(capsys)


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_resume_with_another_vocabulary_size_is_refused_before_training(world):
    with pytest.raises(
        pipeline.ResumeConflict, match=r"vocab_size 60, this run asks for 50"
    ):
        pipeline.run(
            tiny_run_profile(vocab_size=50, max_steps=8),
            world["run"],
            data_dir=world["data"],
            resume=True,
            device="cpu",
            show_progress=False,
        )


def test_the_train_command_names_the_flag_of_a_setting_a_resume_refuses(
    monkeypatch, tmp_path, capsys
):
    def refuse(*args, **kwargs):
        raise pipeline.ResumeConflict(tmp_path / "last.pt", "vocab_size", 60, 50)

    monkeypatch.setattr(pipeline, "run", refuse)
    code = main(
        ["train", "--profile", "smoke", "--out", str(tmp_path / "run"), "--resume"]
    )
    assert code == 1
    assert "vocab_size (--vocab-size) 60, this run asks for 50" in error_line(capsys)


def test_average_across_vocabulary_sizes_is_one_line(tmp_path):
    def saved(vocab: int, name: str) -> Path:
        model = Transformer(preset("tiny"), vocab, vocab)
        return ckpt.atomic_torch_save(
            ckpt.snapshot_of(model, FakeTokenizer(), step=1), tmp_path / name
        )

    with pytest.raises(ValueError, match="another model configuration|vocabulary size"):
        ckpt.average_checkpoints([saved(20, "a.pt"), saved(30, "b.pt")])


@pytest.fixture(scope="module")
def usable_checkpoint(tmp_path_factory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("usable") / "tiny.pt")


@pytest.mark.parametrize("command", ["translate", "export-onnx"])
@pytest.mark.parametrize(
    "case", ["no tokenizer", "other tokenizer", "no config", "NaN weight", "inf weight"]
)
def test_a_checkpoint_a_command_cannot_use_is_named_in_one_line(
    command, case, usable_checkpoint, tmp_path, capsys
):
    state = ckpt.load_checkpoint(usable_checkpoint)
    if case == "no tokenizer":  # what the copy task or a synthetic run saves
        state["tokenizer"] = None
    elif case == "other tokenizer":
        from annotated_transformer.data import train_tokenizer

        state["tokenizer"] = train_tokenizer(
            [" ".join(WORDS[i:]) for i in range(12)] * 5, vocab_size=40
        ).to_bytes()
    elif case == "no config":
        del state["config"]
    else:  # a run that diverged before this snapshot: one weight not finite
        name = next(k for k, v in state["model"].items() if v.is_floating_point())
        state["model"][name] = state["model"][name].clone()
        state["model"][name].view(-1)[0] = float(case.split()[0].lower())
    path = ckpt.atomic_torch_save(state, tmp_path / "odd.pt")
    argv = [command, "--checkpoint", str(path)]
    argv += (
        ["--out", str(tmp_path / "web")]
        if command == "export-onnx"
        else ["--device", "cpu"]
    )
    (tmp_path / "in.txt").write_text("a man runs\n")
    if command == "translate":
        argv += ["--input", str(tmp_path / "in.txt")]
    assert main(argv) == 1
    assert "odd.pt" in error_line(capsys)


@pytest.mark.slow  # a tiny run: seconds alone, more on a busy machine
def test_bad_evaluate_outputs_are_named_before_decoding(world, capsys, tmp_path):
    argv = ["evaluate", "--checkpoint", str(world["run"]), "--device", "cpu"]
    assert main([*argv, "--name", "a/b", "--publish"]) == 1
    assert "--name" in error_line(capsys)
    assert main([*argv, "--hypotheses", str(tmp_path / "missing" / "h.txt")]) == 1
    assert "--hypotheses" in error_line(capsys)


def test_an_empty_corpus_file_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    data = write_corpus(tmp_path / "data", {"train": 0, "valid": 5, "test": 5})
    with pytest.raises(ValueError, match=r"train\.en and .*train\.de hold no usable"):
        pipeline.run(tiny_run_profile(), tmp_path / "R", data_dir=data, device="cpu")


def test_an_empty_test_split_is_named_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    data = write_corpus(tmp_path / "data", {"train": 300, "valid": 5, "test": 0})
    with pytest.raises(ValueError, match=r"test split .*test_2016_flickr\.en.*--no-eval"):
        pipeline.run(tiny_run_profile(), tmp_path / "R", data_dir=data, device="cpu")
    assert not (tmp_path / "R" / "metrics.jsonl").exists()  # nothing trained


# ------------------------------------------------------------------------------------------ settings that contradict each other
def test_averaging_more_snapshots_than_are_kept_is_refused_naming_both_flags(
    capsys, tmp_path
):
    with pytest.raises(ValueError) as caught:
        get_profile("smoke", average_last=5, keep_snapshots=2)
    message = str(caught.value)
    assert "--average-last" in message and "--keep-snapshots" in message
    assert "\n" not in message
    assert get_profile("smoke", average_last=2, keep_snapshots=2).average_last == 2
    # Every shipped profile keeps at least the snapshots it averages.
    assert all(p.average_last <= p.keep_snapshots for p in PROFILES.values())
    out = tmp_path / "R"
    code = main(
        ["train", "--profile", "smoke", "--average-last", "5", "--keep-snapshots", "2"]
        + ["--out", str(out)]
    )
    line = error_line(capsys)
    assert code in (1, 2) and "--average-last" in line and "--keep-snapshots" in line
    assert not out.exists()


def test_more_side_by_side_workers_than_the_machine_runs_is_refused(
    monkeypatch, capsys, tmp_path
):
    from annotated_transformer.runtime import side_by_side

    monkeypatch.setattr(side_by_side, "usable_cores", lambda: 4)
    assert side_by_side.check_workers(4, "cpu") == 4
    assert side_by_side.check_workers(8, "cuda:0") == 8
    with pytest.raises(
        ValueError, match=r"^--workers 5 is more .*4 usable cores.*--workers 4 or fewer"
    ):
        side_by_side.check_workers(5, "cpu")
    with pytest.raises(ValueError, match="--workers 8 or fewer"):
        side_by_side.check_workers(9, "cuda")
    out = tmp_path / "T"
    code = main(
        ["table3", "--profile", "smoke", "--epochs", "1", "--workers", "1000"]
        + ["--device", "cpu", "--out", str(out)]
    )
    line = error_line(capsys)
    assert code == 1 and "--workers 1000" in line and "--workers 4 or fewer" in line
    assert not out.exists()


@pytest.mark.parametrize("command", ["table3", "parser-curve", "table3 --merge"])
def test_an_export_inside_a_folder_it_may_not_write_is_refused_before_training(
    command, capsys, tmp_path
):
    """An extended run's --export is checked before any training: not inside the run folder it
    reads (found only after hours of training otherwise), nor inside another command's folder;
    and a merge writes into no folder another command made."""
    out = tmp_path / "R"
    if command == "table3 --merge":
        part = tmp_path / "part.json"
        part.write_text("{}")
        trained = tmp_path / "trained"
        trained.mkdir()
        (trained / "metrics.jsonl").write_text("")  # a training run folder: `train`'s
        argv = ["table3", "--merge", str(part), "--export", str(trained / "runs.json")]
        code = main(argv)
        assert code != 0 and "`train`" in error_line(capsys)
        assert not (trained / "runs.json").exists()
        return
    argv = [*command.split(), "--device", "cpu", "--out", str(out)]
    argv += ["--export", str(out / "runs.json")]
    if command == "table3":
        argv += ["--profile", "smoke", "--epochs", "1"]
    code = main(argv)
    line = error_line(capsys)
    assert code != 0 and "inside the run folder" in line and "--export" in line
    assert not out.exists()  # nothing trained, no folder made
