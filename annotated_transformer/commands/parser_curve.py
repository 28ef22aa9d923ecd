"""`python -m annotated_transformer parser-curve`: the parser trained until dev F1 stops rising.

One job per share of the training trees, an epoch a round, dev F1 after every epoch
(`chapters.constituency_parsing.extended`); run it again to continue. Chapter 07 shows the committed curve.
`--score-test` trains nothing: it scores each stopped job on the test trees once, at the snapshot
and search chosen on dev (`parsing_extended.score_test`), for chapter 07 to show beside the curve.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..runtime.ownership import check_export, check_own_folder
from .arguments import positive_float, positive_int, probability

TEST_RESULTS = "results/parser_extended_cpu/test.json"  # what chapter 07 reads


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Train the parser of chapter 07 on a quarter, a half and all of the training trees until\n"
        "each one's dev F1 has not risen for a fifth of its epochs; resumable.\n\n"
        "  python -m annotated_transformer parser-curve --out runs/parser-extended --tags\n\n"
        "Once the jobs have stopped, score them on the test trees once (trains nothing):\n\n"
        "  python -m annotated_transformer parser-curve --out runs/parser-extended --score-test"
    )
    parser.add_argument("--out", default="runs/parser-extended", help="the run folder")
    parser.add_argument(
        "--shares", type=positive_float, nargs="+", default=[1.0, 0.5, 0.25]
    )
    parser.add_argument(
        "--tags",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="part-of-speech tags in the word slots, as the authors' code writes them "
        "(--no-tags: XX, the variant of Vinyals et al.)",
    )
    parser.add_argument("--layers", type=positive_int, default=2)
    parser.add_argument("--d-model", type=positive_int, default=128)
    parser.add_argument("--heads", type=positive_int, default=4)
    parser.add_argument("--dropout", type=probability, default=0.1)
    parser.add_argument("--label-smoothing", type=probability, default=0.1)
    parser.add_argument("--warmup", type=positive_int, default=800)
    parser.add_argument("--batch-tokens", type=positive_int, default=1024)
    parser.add_argument("--average", type=positive_int, default=3)
    parser.add_argument("--min-epochs", type=positive_int, default=20)
    parser.add_argument("--max-epochs", type=positive_int, default=300)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--device",
        default="auto",
        help="where every job trains and --score-test parses: auto (a GPU when visible), cpu, "
        "cuda, cuda:1 ...; a folder is continued only on the kind of device it was trained on",
    )
    parser.add_argument(
        "--export",
        default=None,
        help="then write every share's curve to this results file (chapter 07 reads "
        "results/parser_extended_cpu/curves.json); never replaces a file holding more",
    )
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="write --export from what the run folder holds, training nothing (for a run "
        "another process is still training)",
    )
    parser.add_argument(
        "--score-test",
        nargs="?",
        const=TEST_RESULTS,
        default=None,
        metavar="RESULTS",
        help="train nothing: for each share whose job has stopped (by the stopping rule the run "
        "folder records), choose on the dev trees between best.pt and "
        "best_average.pt and between greedy and beam 21, parse the test trees once with the "
        f"choice and add it to RESULTS (default {TEST_RESULTS}); a share RESULTS already "
        "holds is not scored again. The recipe is the run folder's own; the recipe's flags are not read",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..chapters.constituency_parsing import extended as parsing_extended
    from ..chapters.constituency_parsing.curve import ParserRecipe
    from ..runtime.devices import resolve_device

    if any(s > 1 for s in args.shares):
        raise ValueError("parser-curve: a share of the training files is at most 1")
    shares = sorted(set(args.shares), reverse=True)
    device = str(resolve_device(args.device))
    if args.score_test is not None:
        if args.export or args.export_only:
            raise ValueError(
                "parser-curve: --score-test trains and exports nothing; run it without "
                "--export and --export-only"
            )
        from tqdm import tqdm

        started = time.perf_counter()
        try:
            summary = parsing_extended.score_test(
                parsing_extended.open_run(args.out, device=device),
                shares,
                args.score_test,
                data_dir=args.data_dir,
                say=lambda line: tqdm.write(f"parser-curve: {line}"),
            )
        except KeyboardInterrupt:
            print(
                f"parser-curve: interrupted; every share already scored stays in "
                f"{args.score_test}, the share cut short was not written: score it with the "
                "same command",
                file=sys.stderr,
            )
            return 130
        scored = ", ".join(f"{s:g}" for s in summary["scored"]) or "none"
        print(
            f"parser-curve: shares scored on test: {scored}, in "
            f"{time.perf_counter() - started:,.0f} s; "
            + (f"in {args.score_test}" if summary["scored"] else "nothing written")
        )
        return 0
    check_export(args.export, command="parser-curve", run_dir=args.out)
    if args.export_only:
        if not args.export:
            raise ValueError("parser-curve: --export-only needs --export PATH")
        # the folder's own recipe and stopping rule, as --score-test reads them
        folder_run = parsing_extended.open_run(args.out)
        print(
            f"parser-curve: wrote {parsing_extended.export(folder_run, shares, args.export)}"
        )
        return 0
    check_own_folder("--out", args.out, command="parser-curve")
    recipe = ParserRecipe(
        n_layers=args.layers,
        d_model=args.d_model,
        d_ff=4 * args.d_model,
        n_heads=args.heads,
        dropout=args.dropout,
        label_smoothing=args.label_smoothing,
        batch_tokens=args.batch_tokens,
        warmup_steps=args.warmup,
        epochs=args.max_epochs,
        snapshot_epochs=1,
        average_last=args.average,
        tags=args.tags,
    )
    curve_run = parsing_extended.ParserCurveRun(
        recipe, Path(args.out), args.min_epochs, args.max_epochs, device
    )
    started = time.perf_counter()
    try:
        summary = parsing_extended.train_all(curve_run, shares, data_dir=args.data_dir)
    except KeyboardInterrupt:
        print(
            f"parser-curve: interrupted; every finished epoch stays in {args.out} (a job cut "
            "short resumes from its checkpoint): continue with the same command",
            file=sys.stderr,
        )
        return 130
    if args.export:
        written = parsing_extended.export(curve_run, shares, args.export)
        print(f"parser-curve: wrote {written}")
    epochs = ", ".join(f"{s:g}: {e}" for s, e in summary["epochs"].items())
    print(
        f"parser-curve: {summary['trained']} epoch(s) trained in "
        f"{time.perf_counter() - started:,.0f} s; epochs by share {epochs}; in {args.out}"
    )
    return 0
