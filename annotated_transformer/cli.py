"""`python -m annotated_transformer <command>`: one entry point for every job.

Each command's module (commands/, or the module of its idea for `copy` and `book`) exposes
`add_arguments(parser)` and `run(args) -> int`; this file only wires them together, importing a module when its command
is used so that `--help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .training.trainer import TrainingDiverged

# command -> (module, one-line help, the optional extra it needs or None)
COMMANDS = {
    "copy": (
        "annotated_transformer.chapters.training.copy_task",
        "train the copy task on synthetic data and report its accuracy",
        None,
    ),
    "train": (
        "annotated_transformer.commands.train",
        "train a translation model (resumable), then score it",
        None,
    ),
    "translate": (
        "annotated_transformer.commands.translate",
        "translate stdin or a file with a checkpoint",
        None,
    ),
    "evaluate": (
        "annotated_transformer.commands.evaluate",
        "BLEU and perplexity of a checkpoint on a test set",
        None,
    ),
    "average": (
        "annotated_transformer.commands.average",
        "average the last k checkpoints (paper section 6.1)",
        None,
    ),
    "attention": (
        "annotated_transformer.commands.attention",
        "draw a checkpoint's attention (paper Figures 3-5, or the explorer) as HTML, SVG or PNG",
        "charts",
    ),
    "export-onnx": (
        "annotated_transformer.commands.export_onnx",
        "export a checkpoint to ONNX plus its tokenizer, for translation in a web page",
        "web",
    ),
    "table3": (
        "annotated_transformer.commands.table3",
        "train Table 3's rows past the book's budget, resumably (chapter 06's extended run)",
        "experiments",
    ),
    "parser-curve": (
        "annotated_transformer.commands.parser_curve",
        "train chapter 07's parser until dev F1 stops rising, by share of the trees (resumable)",
        "experiments",
    ),
    "book": (
        "annotated_transformer.commands.book",
        "execute the chapters with papermill and build the site",
        "book",
    ),
}
# What each extra must bring before its command starts: a command that imports a module of its
# extra only late (table3 and parser-curve fit their statistics after hours of training) is
# refused before any work.
EXTRA_NEEDS = {
    "experiments": ("statsmodels", "scipy", "nltk", "pandas"),
    "charts": ("altair", "vl_convert", "pandas"),
    "web": ("onnx", "onnxruntime"),
    "book": ("papermill", "jupytext", "nbformat", "altair", "pandas"),
}
# Top-level modules that only the extras install (pyproject.toml's optional-dependencies).
EXTRA_MODULES = {m for needs in EXTRA_NEEDS.values() for m in needs} | {
    "jupyter_book",
    "ipykernel",
    "yaml",
    "onnxscript",
}


def _absent(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is None
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def extra_missing_before_start(command: str) -> str | None:
    """One line naming the extra `command` needs when one of its modules is not installed."""
    extra = COMMANDS[command][2]
    for module in EXTRA_NEEDS.get(extra, ()):
        if _absent(module):
            return missing_extra(command, ModuleNotFoundError(name=module))
    return None


def missing_extra(command: str, error: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install, when `error` is a module of an extra; else None."""
    module = (error.name or "").split(".")[0]
    extra = COMMANDS[command][2]
    if extra is None or module not in EXTRA_MODULES:
        return None
    return (
        f"the {command} command needs the '{extra}' extra ({module} is not installed): "
        f"pip install 'annotated-transformer[{extra}]' (or, in a clone, bash scripts/setup.sh)"
    )


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line that names it and where the options are listed,
    not the whole usage block first (a subcommand's usage runs to forty lines)."""

    def error(self, message: str):
        self.exit(
            2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n"
        )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with the options of the command `argv` names (default: this
    process's arguments) loaded: only that command's module is imported."""
    parser = OneLineParser(
        prog="python -m annotated_transformer",
        description="The Transformer of 'Attention Is All You Need', reproduced.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an error"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    argv = sys.argv[1:] if argv is None else argv
    requested = next((a for a in argv if not a.startswith("-")), None)
    for name, (module_name, help_text, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == requested:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as error:
                if missing_extra(name, error) is None:
                    raise
                # its options are the module's, unknown without it
                p.set_defaults(_run=_raiser(error), _options_unknown=True)
                continue
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def _raiser(error: BaseException):
    def run(args):
        raise error

    return run


# Errors a user can act on (a missing corpus, a damaged checkpoint, a busy run folder, a diverged run,
# an invalid setting): their message names the problem and the fix, so the traceback is noise.
KNOWN_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, TrainingDiverged)


def listen_to_interrupts() -> None:
    """Let SIGINT raise KeyboardInterrupt, which every long command answers by saving where it
    stands, also in a process started with SIGINT ignored: a shell's `command &` and some CI
    runners start it so, Python then leaves the signal ignored, and `kill -INT`, or `timeout
    --signal=INT` as the GPU scripts stop a chapter, would do nothing."""
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    listen_to_interrupts()
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "_options_unknown", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.print_help()
        return 2
    line = extra_missing_before_start(args.command)
    if line is not None:
        print(f"error: {line}", file=sys.stderr)
        return 1
    try:
        return int(args._run(args) or 0)
    except ModuleNotFoundError as error:
        line = missing_extra(args.command, error)
        if line is None or args.debug:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 1
    except KNOWN_ERRORS as error:
        if args.debug or os.environ.get("AT_DEBUG", "").strip().lower() in (
            "1",
            "true",
            "yes",
        ):
            raise
        print(f"error: {error}", file=sys.stderr)
        print("(run with --debug, or AT_DEBUG=1, for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
