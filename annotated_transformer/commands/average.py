"""`python -m annotated_transformer average`: the mean of the last k snapshots (paper section 6.1)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..runtime.collisions import check_outputs
from ..runtime.ownership import check_output, check_own_folder
from ..training import derived
from ..training.checkpoint import atomic_torch_save, average_checkpoints, list_snapshots
from ..training.run_folder import AVERAGED_NAME
from .arguments import setting
from .translate import check_writable


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
        default=None,
        help="how many of the newest snapshots (default: the run's profile's average_last, "
        "what the run's averaged.pt holds; another number needs --output)",
    )
    parser.add_argument(
        "--output",
        default=None,
        help="where to write (default: <run>/averaged.pt; any other file goes outside the run "
        "folder, e.g. <run>-averages/last3.pt)",
    )


def run(args: argparse.Namespace) -> int:
    if bool(args.checkpoints) == bool(args.run):
        raise SystemExit(
            "average: give either checkpoint files or --run FOLDER (one of the two)"
        )
    if args.run:
        run_dir = Path(args.run)
        # a run folder of `train`'s, inside no folder another command made (a Table 3 job's)
        check_own_folder(
            "--run",
            run_dir,
            command="average",
            maker="train",
            fix=f"average its snapshots into a file outside it: average "
            f"{run_dir / 'checkpoints'}/step_*.pt --output FILE",
        )
        own = derived.run_average_last(run_dir)
        last = own if args.last is None else args.last
        output = Path(args.output or run_dir / AVERAGED_NAME)
        if last != own and output.resolve() == (run_dir / AVERAGED_NAME).resolve():
            raise ValueError(
                f"{run_dir / AVERAGED_NAME} is the run's model, the average of its last {own} "
                f"snapshots (its profile's average_last), as every command reads the folder: "
                f"write the average of {last} elsewhere with --output, or leave out --last"
            )
        used = list_snapshots(run_dir)[-last:]
        if not used:
            raise FileNotFoundError(
                f"no snapshots (checkpoints/step_*.pt) under {run_dir}: is it a `train --out` folder?"
            )
    else:
        used = [Path(p) for p in args.checkpoints]
        if not args.output:
            raise SystemExit(
                "average: --output is required when checkpoint files are given"
            )
        output = Path(args.output)
    check_writable(output, "--output")
    check_outputs([("--output", output)], [("a checkpoint averaged", p) for p in used])
    # Inside a run folder `average` writes only that run's documented model, <run>/averaged.pt;
    # any other average (other snapshots, another --last) goes beside the run, not into it.
    mine = [Path(args.run) / AVERAGED_NAME] if args.run else []
    check_output("--output", output, command="average", mine=mine)
    averaged = average_checkpoints(used)
    atomic_torch_save(averaged, output)
    if args.run:
        derived.set_aside_stale(args.run)
    print(
        f"averaged {len(used)} checkpoints ({', '.join(p.name for p in used)}) -> {output}"
    )
    return 0
