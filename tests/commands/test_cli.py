"""The commands a newcomer types: --help explains, translate round-trips through stdin, average writes."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.cli import main
from annotated_transformer.data import EncodedPairs, train_tokenizer
from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training.checkpoint import list_snapshots, load_checkpoint
from annotated_transformer.training.execution import choose_execution
from annotated_transformer.training.trainer import Trainer
from tests.support.training import tiny_profile

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "command,expected",
    [
        ("train", ["--profile", "--resume", "torchrun", "--minutes"]),
        ("translate", ["--checkpoint", "--beam", "--input"]),
        ("evaluate", ["--checkpoint", "sacreBLEU", "--profile"]),
        ("average", ["--last", "last 5"]),
        ("attention", ["--checkpoint", "--figure", "explorer", "--layer"]),
        ("export-onnx", ["--checkpoint", "--out", "--quantize"]),
    ],
)
def test_help_explains_each_command(command, expected, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for word in expected:
        assert word in text, f"`{command} --help` should mention {word}"


@pytest.mark.parametrize(
    "argv,named",
    [
        (["train", "--profile", "nosuch"], "invalid choice: 'nosuch'"),
        (["train", "--lr", "-1"], "--lr"),
        (["translate", "--beam", "4"], "--checkpoint"),
        (["nosuch"], "invalid choice: 'nosuch'"),
    ],
)
def test_a_bad_option_is_one_line_that_names_it(argv, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err and "--help` lists the options" in err
    assert not err.startswith("usage:")


def test_profile_picks_defaults_and_flags_override_them():
    import argparse

    from annotated_transformer.commands.train import add_arguments, profile_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--profile", "smoke", "--lr", "1e-3", "--layers", "1", "--minutes", "2"]
    )
    profile = profile_from_args(args)
    assert (
        profile.name == "smoke"
        and profile.peak_lr == 1e-3
        and profile.time_budget_minutes == 2
    )
    assert profile.model_config().n_layers == 1
    assert profile.vocab_size == 1000  # untouched: the smoke profile's own value
    assert (profile.train.compile_mode, profile.train.length_buckets) == (
        "default",
        False,
    )
    graphs = profile_from_args(
        parser.parse_args(
            ["--length-buckets", "--compile", "--compile-mode", "reduce-overhead"]
        )
    )
    assert graphs.train.length_buckets is True and graphs.train.compile is True
    assert graphs.train.compile_mode == "reduce-overhead"
    eager_graphs = profile_from_args(
        parser.parse_args(["--length-buckets", "--cuda-graphs"])
    )
    assert eager_graphs.train.cuda_graphs is True
    assert eager_graphs.train.length_buckets is True
    assert eager_graphs.train.compile is False
    assert profile.train.cuda_graphs is False


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run folder with a few snapshots of a tiny model trained for a few steps with a real tokenizer."""
    out = tmp_path_factory.mktemp("run")
    words = "a man dog cat runs sits in on the park house red blue small big".split()
    rng = np.random.default_rng(0)
    sentences = [
        " ".join(rng.choice(words, size=int(rng.integers(2, 8)))) for _ in range(200)
    ]
    tokenizer = train_tokenizer(sentences, vocab_size=40)
    ids = tokenizer.encode_batch(sentences)
    profile = tiny_profile(max_steps=6, save_every_steps=2, keep_snapshots=5)
    torch.manual_seed(0)
    model = Transformer(
        profile.model_config(), tokenizer.vocab_size, tokenizer.vocab_size
    )
    train, settings = EncodedPairs(ids, ids), profile.train_settings()
    Trainer(
        model,
        tokenizer,
        train,
        None,
        settings,
        out,
        execution=choose_execution(model, settings, train, DistributedContext()),
        show_progress=False,
    ).train()
    return out


def test_translate_round_trips_through_stdin(tiny_run):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotated_transformer",
            "translate",
            "--checkpoint",
            str(tiny_run / "last.pt"),
            "--beam",
            "2",
            "--max-len-b",
            "4",
            "--device",
            "cpu",
        ],
        input="a man runs in the park\n\nthe red dog sits\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert len(lines) == 4 and lines[3] == ""  # three answers, each ending in a newline
    assert lines[1] == ""  # an empty input line stays an empty output line


def test_translate_with_cuda_graphs_gives_the_same_lines_and_says_what_a_cpu_does(
    tiny_run,
):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "annotated_transformer", "translate"]
    argv += ["--checkpoint", str(tiny_run / "last.pt"), "--beam", "2", "--device", "cpu"]
    text = "a man runs in the park\n\nthe red dog sits\nsmall dog\n"
    runs = [
        subprocess.run(
            argv + extra, input=text, capture_output=True, text=True, env=env, timeout=120
        )
        for extra in ([], ["--cuda-graphs"])
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[1].stderr
    assert runs[1].stdout == runs[0].stdout and runs[0].stdout.count("\n") == 4
    assert "no CUDA graphs there" in runs[1].stderr
    assert "CUDA graphs" not in runs[0].stderr


def test_translate_keeps_one_output_line_per_input_line_whatever_the_characters(
    tiny_run, tmp_path
):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    lines = [
        "a man runs",
        "a dog\u2028sits in the park",
        "the cat\x85runs",
        "red\x0cblue house",
        "big dog",
    ]
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    (tmp_path / "in.txt").write_bytes(raw)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotated_transformer",
            "translate",
            "--checkpoint",
            str(tiny_run / "last.pt"),
            "--beam",
            "2",
            "--max-len-b",
            "4",
            "--device",
            "cpu",
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out.txt"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = (tmp_path / "out.txt").read_bytes().split(b"\n")
    assert len(out) == 5 + 1 and out[-1] == b""  # five input lines, five output lines


def test_translate_checks_its_output_path_before_decoding(tiny_run, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "annotated_transformer",
            "translate",
            "--checkpoint",
            str(tiny_run / "last.pt"),
            "--device",
            "cpu",
            "--output",
            str(tmp_path / "missing" / "out.txt"),
        ],
        input="a man runs\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (
        done.returncode == 1
        and "does not exist" in done.stderr
        and "Traceback" not in done.stderr
    )


def test_average_command_writes_the_mean_of_the_last_snapshots(
    tiny_run, capsys, tmp_path
):
    assert len(list_snapshots(tiny_run)) == 3
    out = tmp_path / "last2.pt"
    argv = ["average", "--run", str(tiny_run), "--last", "2"]
    assert main([*argv, "--output", str(out)]) == 0
    averaged = load_checkpoint(out)
    assert averaged["averaged_from"] == ["step_00000004.pt", "step_00000006.pt"]
    assert "averaged 2 checkpoints" in capsys.readouterr().out
    # The run's own averaged.pt is the run's model (its profile's average_last), nothing else.
    assert main(argv) == 1
    assert "--output" in capsys.readouterr().err
    assert not (tiny_run / "averaged.pt").exists()


def test_readme_profile_table_lists_every_profile():
    from annotated_transformer.profiles import PROFILE_NAMES

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("**Profiles.**") :]
    for name in PROFILE_NAMES:
        assert f"| `{name}` |" in table, f"README's profile table has no row for {name}"


@pytest.mark.parametrize(
    "command, extra, blocked",
    [
        (
            [
                "attention",
                "--checkpoint",
                "c.pt",
                "--sentence",
                "a",
                "--figure",
                "3",
                "--out",
                "f.html",
            ],
            "charts",
            "altair",
        ),
        (["book", "--no-build", "--chapters", "01"], "book", "papermill"),
        (["table3", "--profile", "smoke", "--out", "t"], "experiments", "statsmodels"),
        (["parser-curve", "--out", "p"], "experiments", "nltk"),
    ],
)
def test_a_command_without_its_extra_names_the_extra_in_one_line(
    tmp_path, command, extra, blocked
):
    # `sys.modules[name] = None` makes `import name` fail as a missing package does.
    code = (
        "import sys; sys.modules[%r] = None; from annotated_transformer.cli import main; "
        "sys.exit(main(%r))" % (blocked, command)
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert f"annotated-transformer[{extra}]" in lines[0] and blocked in lines[0]


def test_main_reads_its_argv_and_leaves_the_process_arguments_alone(monkeypatch, capsys):
    """A command's options load from the argv given, not from this process's: two commands in
    a row each parse their own, and sys.argv is what it was (a test that called main once used
    to leave it naming that command for every later parser)."""
    from annotated_transformer import cli

    monkeypatch.setattr(sys, "argv", ["pytest", "tests"])
    with pytest.raises(SystemExit) as first:
        main(["table3", "--minutes", "0"])
    # table3's own check of the value (unloaded options would say "unrecognized arguments")
    assert first.value.code == 2 and "must be a number > 0" in capsys.readouterr().err
    assert sys.argv == ["pytest", "tests"]
    table3 = cli.build_parser(["table3"]).parse_args(["table3", "--workers", "2"])
    assert table3.workers == 2
    beam = cli.build_parser(["translate"]).parse_args(
        ["translate", "--checkpoint", "x.pt", "--beam", "3"]
    )
    assert beam.beam == 3


def test_the_command_line_takes_sigint_back_when_started_ignoring_it():
    """A process started with SIGINT ignored (`command &` in a script, a CI runner) would pass the
    ignore on to Python, and `kill -INT` or `timeout --signal=INT` would not stop a chapter or a
    run; the command line takes the signal back, so each command saves as it documents."""
    import signal

    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal\n"
            "from annotated_transformer import cli\n"
            "cli.listen_to_interrupts()\n"
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n",
        ],
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdout.strip() == "True", proc.stderr
