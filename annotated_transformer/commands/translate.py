"""`python -m annotated_transformer translate`: sentences in (stdin or a file), translations out, one a line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..evaluation.scoring import translate
from ..model.decoding import DecodeSettings
from ..runtime.devices import resolve_device
from ..runtime.files import atomic_write_text
from ..runtime.precision import resolve_precision
from ..training.checkpoint import model_from_checkpoint
from .arguments import non_negative_float, non_negative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate text with a trained checkpoint: one sentence per input line, one translation per output\n"
        "line, in the same order (beam search with the paper's length penalty, section 6.1).\n\n"
        "  echo 'Two dogs play in the snow.' | python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt --input en.txt --output de.txt"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file from `train` (averaged.pt, last.pt or checkpoints/step_*.pt) or a run folder",
    )
    parser.add_argument(
        "--input", default=None, help="file of source sentences (default: standard input)"
    )
    parser.add_argument(
        "--output", default=None, help="file to write (default: standard output)"
    )
    parser.add_argument(
        "--beam",
        type=positive_int,
        default=4,
        help="beam width; 1 is greedy decoding (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha",
        type=non_negative_float,
        default=0.6,
        help="length penalty alpha (default: %(default)s)",
    )
    parser.add_argument(
        "--max-len-b",
        type=non_negative_int,
        default=50,
        help="outputs may be source length + this many subwords long (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-tokens",
        type=positive_int,
        default=4000,
        help="source tokens x beam per decoding batch",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ...")


def read_lines(raw: bytes) -> tuple[list[str], list[int]]:
    """Lines split on "\\n" alone, and the 1-based numbers of lines that are not UTF-8 (read as "").

    str.splitlines would also break a line at U+2028, NEL or a form feed, shifting every later output
    line against its input line; one undecodable line must not cost the others their translations.
    """
    parts = raw.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()  # the newline that ends the last line
    lines, undecodable = [], []
    for number, part in enumerate(parts, start=1):
        try:
            lines.append(part.rstrip(b"\r").decode("utf-8"))
        except UnicodeDecodeError:
            lines.append("")
            undecodable.append(number)
    return lines, undecodable


def check_writable(path: Path) -> None:
    """Fail before any decoding, not after it, when the output cannot be written."""
    if path.is_dir():
        raise IsADirectoryError(f"--output {path} is a folder: name a file")
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"--output {path}: the folder {path.parent} does not exist"
        )
    if not os.access(path.parent, os.W_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        raise PermissionError(f"--output {path}: not writable")


def run(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else None
    if output is not None:
        check_writable(output)
    device = resolve_device(args.device)
    model, tokenizer = model_from_checkpoint(args.checkpoint, device)
    raw = Path(args.input).read_bytes() if args.input else sys.stdin.buffer.read()
    lines, undecodable = read_lines(raw)
    for number in undecodable:
        print(
            f"line {number}: not valid UTF-8; its output line is left empty",
            file=sys.stderr,
        )
    decoding = DecodeSettings(
        beam_size=args.beam,
        alpha=args.alpha,
        max_len_b=args.max_len_b,
        batch_tokens=args.batch_tokens,
        precision=resolve_precision("auto", device),
    )
    translated = translate(model, tokenizer, lines, decoding)
    # One output line per input line: a translation never carries a line break of its own.
    text = "".join(" ".join(line.splitlines()) + "\n" for line in translated)
    if output is not None:
        atomic_write_text(output, text)
    else:
        sys.stdout.write(text)
    return 0
