"""`python -m annotated_transformer table3`: Table 3's rows past the book's budget, resumable.

Trains every (row, seed) of the six findings under a profile's Table 3 settings, one epoch a round
(`chapters.model_variations.extended`), and keeps each finished epoch in the run folder; run it again, with
the same or more epochs and seeds, to continue. Ctrl-C saves where each job stands; `--minutes`
starts no epoch after a time, for a machine held for a fixed time, and keeps whole epochs only.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..profiles import PROFILES, get_profile
from ..runtime.ownership import check_export, check_own_folder
from .arguments import positive_float, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Train Table 3's rows for more epochs than chapter 06 affords, resumably; chapter 06 shows\n"
        "the committed result beside its live run.\n\n"
        "  python -m annotated_transformer table3 --profile cpu --epochs 8 --seeds 1 2 3\n"
        "  python -m annotated_transformer table3 --profile cpu --epochs 12   # continue to 12\n"
        "  python -m annotated_transformer table3 --profile gpu --minutes 8   # whole epochs in 8 min\n"
        "  python -m annotated_transformer table3 --merge part1.json part2.json --export runs.json"
    )
    parser.add_argument("--profile", default="cpu", choices=sorted(PROFILES))
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        help="epochs of the whole training split per row (default: 8); the run folder records "
        "the most it was trained to, and its export writes that",
    )
    parser.add_argument(
        "--small-epochs",
        type=positive_int,
        default=None,
        help="epochs of dropout's small corpus for base, D1 and D2 (default: the profile's "
        "table3.overfit_epochs x 2)",
    )
    parser.add_argument(
        "--seeds", type=positive_int, nargs="+", default=[1, 2, 3], help="seeds"
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        default=None,
        help="rows to train, on every corpus they are read on (base, D1 and D2 also on dropout's "
        "small corpus; default: every row the findings compare, C6 and C7 included)",
    )
    parser.add_argument(
        "--out", default=None, help="the run folder (default: runs/table3-<profile>)"
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="where every job trains: auto (a GPU when visible), cpu, cuda, cuda:1 ...; the "
        "precision is what auto means there (bf16 on a GPU with it, fp16 on one without, fp32 on a CPU)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="processes of one thread each, side by side; on a GPU they share it "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--minutes",
        type=positive_float,
        default=None,
        help="start no epoch after this many minutes (those running finish, and --export "
        "writes what is done); the same command continues (default: no limit)",
    )
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--export",
        default=None,
        help="then write every job's curve to this results file (chapter 06 reads "
        "results/table3_extended_<profile>/runs.json); never replaces a file holding more",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="EXPORT",
        help="write --export from these exports of parts of one run (groups of rows trained on "
        "machines of their own) and what --export already holds, training nothing; a job in two "
        "keeps the longer curve",
    )
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="write --export from what the run folder holds, training nothing (for a run "
        "another process is still training)",
    )


def run(args: argparse.Namespace) -> int:
    from ..chapters.model_variations import extended
    from ..chapters.model_variations import verdicts as table3_report
    from ..model.config import TABLE3_ALL_ROWS
    from ..runtime.devices import resolve_device
    from ..runtime.side_by_side import check_workers

    if args.merge:
        if not args.export:
            raise ValueError("table3: --merge needs --export PATH, the file to write")
        check_export(args.export, command="table3")
        written = table3_report.merge_exports(
            args.merge, args.export, say=lambda line: print(f"table3: {line}")
        )
        print(f"table3: wrote {written}")
        return 0
    profile = get_profile(args.profile)
    rows = args.rows or extended.extended_rows()
    unknown = [r for r in rows if r not in TABLE3_ALL_ROWS]
    if unknown:
        raise ValueError(
            f"table3: unknown row(s) {', '.join(unknown)}; choose from {', '.join(TABLE3_ALL_ROWS)}"
        )
    if len(set(args.seeds)) != len(args.seeds):
        raise ValueError("table3: --seeds lists a seed twice")
    out = args.out or f"runs/table3-{profile.name}"
    epochs = args.epochs or table3_report.DEFAULT_EXTENDED_EPOCHS
    small_epochs = args.small_epochs or 2 * profile.book.table3.overfit_epochs
    check_own_folder("--out", out, command="table3")
    check_export(args.export, command="table3", run_dir=out)
    device = str(resolve_device(args.device))
    if not args.export_only:
        check_workers(args.workers, device)
    job_run = extended.Table3Run(profile, out, device)
    job_run.check_folder(training=not args.export_only)
    jobs = extended.finding_jobs(rows, sorted(args.seeds))
    targets = {j: (small_epochs if j.corpus == "small" else epochs) for j in jobs}
    if args.export_only:
        if not args.export:
            raise ValueError("table3: --export-only needs --export PATH")
        # the targets are the folder's own; a flag given must agree with them
        asked = {
            k: v
            for k, v in (("full", args.epochs), ("small", args.small_epochs))
            if v is not None
        }
        written = table3_report.export(
            out, args.export, asked or None, say=lambda line: print(f"table3: {line}")
        )
        print(f"table3: wrote {written}")
        return 0
    started = time.perf_counter()
    try:
        summary = extended.train_all(
            job_run,
            targets,
            data_dir=args.data_dir,
            workers=args.workers,
            minutes=args.minutes,
        )
    except KeyboardInterrupt:
        print(
            f"table3: interrupted; every finished epoch stays in {out} (a job cut short resumes "
            "from its checkpoint): continue with the same command",
            file=sys.stderr,
        )
        return 130
    if args.export:
        written = table3_report.export(
            out, args.export, say=lambda line: print(f"table3: {line}")
        )
        print(f"table3: wrote {written}")
    left = (
        f", {summary['left']} left when the {args.minutes:g} minutes ended (continue with the "
        "same command)"
        if summary["left"]
        else ""
    )
    print(
        f"table3 {profile.name}: {summary['trained']} epoch(s) trained in "
        f"{time.perf_counter() - started:,.0f} s, {summary['skipped']} already done{left}; "
        f"{len(jobs)} jobs in {out}"
    )
    return 0
