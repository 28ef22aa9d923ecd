"""`python -m annotated_transformer <command>`: one entry point for every job.

Each command's module (commands/, or the module of its idea for `copy` and `book`) exposes
`add_arguments(parser)` and `run(args) -> int`; this file only wires them together, importing a module when its command
is used so that `--help` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module, one-line help)
COMMANDS = {
    "copy": ("annotated_transformer.copy_task", "train the copy task on synthetic data and report its accuracy"),
    "train": ("annotated_transformer.commands.train", "train a translation model (resumable), then score it"),
    "translate": ("annotated_transformer.commands.translate", "translate stdin or a file with a checkpoint"),
    "evaluate": ("annotated_transformer.commands.evaluate", "BLEU and perplexity of a checkpoint on a test set"),
    "average": ("annotated_transformer.commands.average", "average the last k checkpoints (paper section 6.1)"),
    "book": ("annotated_transformer.book", "execute the chapters with papermill and build the site"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m annotated_transformer",
        description="The Transformer of 'Attention Is All You Need', reproduced.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    requested = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == requested:
            module = importlib.import_module(module_name)
            module.add_arguments(p)
            p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    parser = build_parser()
    args = parser.parse_args()
    if args.command is None:
        parser.print_help()
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
