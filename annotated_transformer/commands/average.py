"""`python -m annotated_transformer average`: the mean of the last k snapshots (paper section 6.1)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..training.checkpoint import atomic_torch_save, average_checkpoints, average_last
from .arguments import setting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Average the weights of the last k checkpoints of a training run. The paper reports the average of\n"
        "the last 5 checkpoints (written every 10 minutes) for the base model and of the last 20 for big.\n\n"
        "  python -m annotated_transformer average --run runs/cpu --last 5        # -> runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer average a.pt b.pt c.pt --output avg.pt"
    )
    parser.add_argument(
        "checkpoints", nargs="*", help="checkpoint files to average (instead of --run)"
    )
    parser.add_argument(
        "--run", default=None, help="a `train --out` folder: average its newest snapshots"
    )
    parser.add_argument(
        "--last",
        type=setting("average_last"),
        default=5,
        help="how many of the newest snapshots (default: %(default)s)",
    )
    parser.add_argument(
        "--output", default=None, help="where to write (default: <run>/averaged.pt)"
    )


def run(args: argparse.Namespace) -> int:
    if bool(args.checkpoints) == bool(args.run):
        raise SystemExit(
            "average: give either checkpoint files or --run FOLDER (one of the two)"
        )
    if args.run:
        averaged, used = average_last(args.run, args.last)
        output = Path(args.output or Path(args.run) / "averaged.pt")
    else:
        used = [Path(p) for p in args.checkpoints]
        averaged = average_checkpoints(used)
        if not args.output:
            raise SystemExit(
                "average: --output is required when checkpoint files are given"
            )
        output = Path(args.output)
    atomic_torch_save(averaged, output)
    print(
        f"averaged {len(used)} checkpoints ({', '.join(p.name for p in used)}) -> {output}"
    )
    return 0
