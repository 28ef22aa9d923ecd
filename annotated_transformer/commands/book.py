"""`python -m annotated_transformer book`: execute the chapters and build the site, `--sync` the
notebooks from their sources, or `--import-run` a book run returned by a GPU machine."""

from __future__ import annotations

import sys

from ..book.chapters import _print, _shown, discover_chapters, select_chapters
from ..book.committed import import_run
from ..book.parameters import parse_params
from ..book.runner import run_book
from ..book.sync import sync_notebooks
from ..profiles import PROFILE_NAMES


def add_arguments(parser) -> None:
    """Options of the `book` command."""
    parser.add_argument(
        "--profile",
        default="cpu",
        choices=PROFILE_NAMES,
        help="scale of the run (default: cpu); smoke is for CI",
    )
    parser.add_argument(
        "--chapters",
        nargs="+",
        metavar="NN",
        help="run only these chapters, by number or name (default: all)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="device parameter for the chapters (default: auto)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a parameter of the selected chapters' parameters cells, e.g. --param "
        "max_steps=50 (repeatable, each name once): a name one of them has, a value of its "
        "default's type; "
        "the run is then not the profile's, so it needs --output-dir and --results-dir of its own",
    )
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="execute the chapters but do not build the site",
    )
    parser.add_argument(
        "--output-dir",
        help="executed notebooks and site (default: _build at the repo root)",
    )
    parser.add_argument(
        "--results-dir", help="results root (default: $AT_RESULTS_DIR, else results/)"
    )
    parser.add_argument(
        "--sync",
        action="store_true",
        help="only rewrite book/*.ipynb from book/*.py (no outputs) and exit",
    )
    parser.add_argument(
        "--import-run",
        metavar="RUN",
        help="only copy a returned run of --profile (the folder that scripts/gpu/run.py "
        "chapters wrote, or a tarball of it) into "
        "results/book_<profile>/ (under --results-dir when given): its notebooks, results "
        "files and book_run.json entries, chapter by chapter; a chapter whose committed entry "
        "is newer is refused, and nothing is deleted; a run holding links, chapters the book "
        "has not or results names no chapter writes is refused whole",
    )
    parser.add_argument(
        "--commit",
        metavar="SHA",
        help="with --import-run: the commit whose tree the machine ran, where its git metadata "
        "was older than the tree (the run then records a wrong commit with local edits); each "
        "chapter's source must match that commit's, and the records name it",
    )


def run(args) -> int:
    """Entry point of `python -m annotated_transformer book`; 0 when every chapter and the site succeed."""
    try:
        if args.sync:
            for path in sync_notebooks(
                args.chapters and select_chapters(discover_chapters(), args.chapters)
            ):
                _print(f"wrote {_shown(path)}")
            return 0
        if args.import_run:
            try:
                report = import_run(
                    args.import_run,
                    args.profile,
                    results_dir=args.results_dir,
                    commit=args.commit,
                )
            except KeyboardInterrupt:
                print(
                    "book --import-run: interrupted; the committed run holds all of the import "
                    "or none of it (`git status results/` shows which)",
                    file=sys.stderr,
                )
                return 130
            if not report.imported and not report.unchanged:
                _print(f"import: nothing taken into {_shown(report.target)}")
            return 0 if report.ok else 1
        parameters = parse_params(args.param)
        book = run_book(
            args.profile,
            chapters=args.chapters,
            output_dir=args.output_dir,
            device=args.device,
            parameters=parameters,
            build=not args.no_build,
            results_dir=args.results_dir,
        )
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "book: interrupted; every chapter published before it stays, and the record says "
            "which chapter was cut short",
            file=sys.stderr,
        )
        return 130
    return 0 if book.ok else 1
