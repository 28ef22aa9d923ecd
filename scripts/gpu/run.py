"""Run the book's chapters, the tests that need CUDA, or one of the GPU experiments whose results
are committed, on a GPU machine, with everything they produce in one folder to bring back.

Run it on the GPU machine, from a clone set up there (scripts/gpu/README.md: with or without a
network):

    python scripts/gpu/run.py --out gpu-run chapters 04 05 08   # chapters of the `gpu` book
    python scripts/gpu/run.py --out gpu-tests tests             # the tests marked `gpu`
    python scripts/gpu/run.py --out gpu-speed experiment speed  # an experiment (--help lists them)

Each run writes into a folder of its own (a new or empty --out): its log, `run.json` (the command,
the commit and whether the tree had local changes, the host, its GPUs, torch, start, end and exit
status) and what the command produced. `chapters` leaves the folder as `book --import-run` reads
it: copy it back and import it into `results/book_<profile>/`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# name: (script beside this file, what it measures and where its committed results are). Each
# script takes the output folder as its first argument.
EXPERIMENTS = {
    "speed": (
        "speed.sh",
        "the base training step and decoding, part by part: results/gpu/speed_*.json, "
        "results/gpu/profile_step_*",
    ),
    "benchmark": (
        "benchmark.sh",
        "bf16 eager against torch.compile, training and decoding: "
        "results/benchmarks/gpu_*.json",
    ),
    "calibration": (
        "calibrate_book.sh",
        "what sizes the gpu book's chapters 06 and 07: results/gpu/book_calibration/, "
        "results/tuning_table3_gpu/",
    ),
    "table3_extended": (
        "table3_extended.sh",
        "Table 3 at the gpu scale, 20 rows x 3 seeds: results/table3_extended_gpu/",
    ),
    "parser_sweep": (
        "parser_sweep.sh",
        "candidates for the gpu profile's parser recipe, chosen on the dev trees",
    ),
    "recipe_seeds": (
        "recipe_seeds.sh",
        "the gpu recipe over seeds 1-3: results/gpu/recipe/, results/gpu/recipe_*.json",
    ),
    "sweep": (
        "sweep.sh",
        "train --profile gpu variants sharing one GPU: results/gpu/sweep_*.json",
    ),
    "compile_shapes": (
        "compile_shapes.py",
        "seconds to compile the gpu step over varying batch shapes (results/gpu/README.md)",
    ),
}

# The pip download that fills a wheel folder for a GPU machine without a network (README.md).
WHEELS = (
    "python3 -m pip download -r requirements.lock -d wheels --only-binary=:all: "
    "--python-version 3.12 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64"
)


def output_folder(path: str) -> Path:
    """--out: a new or empty folder, so that what it holds is this run's alone."""
    out = Path(path).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(
            f"run.py: --out {path} is not a new or empty folder; give each run a folder of its own"
        )
    out.mkdir(parents=True, exist_ok=True)
    return out


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return proc.stdout.strip()


def _gpus() -> list[str]:
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_logged(command: list[str], log: Path, env: dict | None = None) -> int:
    """`command` from the repository root, its output shown and kept in `log`; its exit status.
    Ctrl-C reaches the command too (it stops as it would alone), and the run still ends here."""
    print(f"run.py: {' '.join(command)}", flush=True)
    with open(log, "w", encoding="utf-8") as kept:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        while True:
            try:
                for line in proc.stdout:
                    sys.stdout.write(line)
                    kept.write(line)
                return proc.wait()
            except KeyboardInterrupt:
                continue  # the command had the same Ctrl-C: let it finish what it saves


def record(out: Path, argv: list[str], started: dt.datetime, status: int) -> None:
    """out/run.json: what ran, where and when, with what exit status."""
    finished = dt.datetime.now(dt.timezone.utc)
    facts = {
        "command": ["python", "scripts/gpu/run.py", *argv],
        "commit": _git("rev-parse", "HEAD"),
        "local_changes": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "host": platform.node(),
        "gpus": _gpus(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "seconds": round((finished - started).total_seconds(), 1),
        "exit_status": status,
    }
    (out / "run.json").write_text(json.dumps(facts, indent=1) + "\n", encoding="utf-8")


def chapters(args, out: Path) -> int:
    """The chapters as a reader runs them (`book --no-build`), then what they wrote, into out."""
    profile = args.profile
    results, committed = ROOT / "results" / profile, ROOT / "results" / f"book_{profile}"
    # The committed run's records first, where missing, so that a chapter reading another's
    # results (the introduction; 05 and 08 after 04) sees the whole book, not only this run.
    results.mkdir(parents=True, exist_ok=True)
    for path in sorted(committed.glob("*.json")):
        if not (results / path.name).exists():
            shutil.copy2(path, results / path.name)
    status = run_logged(
        [sys.executable, "-m", "annotated_transformer", "book", "--profile", profile]
        + ["--device", args.device, "--no-build", "--chapters", *args.chapters],
        out / "book.log",
    )
    collect(ROOT, out, profile)
    print(
        f"run.py: to import it, bring {out.name}/ back and run there: python -m "
        f"annotated_transformer book --import-run {out.name} --profile {profile}"
    )
    return status


def collect(root: Path, out: Path, profile: str) -> None:
    """What a book run of `profile` left in `root`, into `out` at the same relative paths, as
    `book --import-run` reads it: the executed notebooks, those of chapters that failed or were
    cut short (their cells carry their durations), the results folder; never a checkpoint, nor
    the lock of the book run that held the folder."""
    for rel in (
        f"_build/executed/{profile}",
        f"_build/failed/{profile}",
        f"results/{profile}",
    ):
        if (root / rel).is_dir():
            shutil.copytree(
                root / rel, out / rel, ignore=shutil.ignore_patterns("*.pt", ".*.lock")
            )


def gpu_test_files(root: Path) -> list[str]:
    """The test files that use the `gpu` mark (tests/support/gpu.py). Only they are collected, so
    a test module needing what the GPU machine lacks (the site's builder, a browser) is never
    imported there."""
    return sorted(
        path.relative_to(root).as_posix()
        for path in (root / "tests").rglob("test_*.py")
        if "from tests.support.gpu import" in path.read_text(encoding="utf-8")
    )


def tests(args, out: Path) -> int:
    """Every test marked `gpu`: CUDA-graph capture and replay of the decoders, translate with
    graphs, the loss's softmax kernels against the CPU's row blocks, the KV caches kept in bf16."""
    files = gpu_test_files(ROOT)
    if not files:
        print("run.py: no test file uses tests/support/gpu.py", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "pytest", *files, "-m", "gpu", "-q", "-rs"]
    command += ["-p", "no:cacheprovider", "--junitxml", str(out / "gpu_tests.xml")]
    status = run_logged(command, out / "gpu_tests.log")
    if status == 5:  # pytest: every test deselected
        print(
            "run.py: the files name the mark but no test is marked gpu", file=sys.stderr
        )
    return status


def experiment(args, out: Path) -> int:
    script = HERE / EXPERIMENTS[args.name][0]
    runner = [sys.executable] if script.suffix == ".py" else ["bash"]
    return run_logged(
        [*runner, str(script), str(out), *args.args],
        out / f"{args.name}.log",
        env={"PYTHON": sys.executable},
    )


def parser() -> argparse.ArgumentParser:
    experiments = "\n".join(
        f"  {name:16s}{what}" for name, (_, what) in EXPERIMENTS.items()
    )
    top = argparse.ArgumentParser(
        prog="scripts/gpu/run.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"experiments:\n{experiments}\n\n"
        "a wheel folder for a GPU machine without a network (run where pip reaches PyPI; "
        "there: pip install --no-index --find-links wheels -r requirements.lock):\n"
        f"  {WHEELS}",
    )
    top.add_argument(
        "--out", required=True, help="the run's folder, new or empty (before the command)"
    )
    commands = top.add_subparsers(dest="command", required=True)
    book = commands.add_parser("chapters", help="run chapters of the book (NN ...)")
    book.add_argument("chapters", nargs="+", metavar="NN")
    book.add_argument("--profile", default="gpu")
    book.add_argument("--device", default="auto")
    book.set_defaults(run=chapters)
    marked = commands.add_parser("tests", help="run the tests marked `gpu`")
    marked.set_defaults(run=tests)
    named = commands.add_parser(
        "experiment",
        help="run one experiment (its arguments after the name)",
        description=f"experiments:\n{experiments}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    named.add_argument("name", choices=sorted(EXPERIMENTS))
    named.add_argument("args", nargs=argparse.REMAINDER)
    named.set_defaults(run=experiment)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    out = output_folder(args.out)
    started = dt.datetime.now(dt.timezone.utc)
    status = args.run(args, out)
    record(out, argv, started, status)
    print(f"run.py: exit {status}; everything is in {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
