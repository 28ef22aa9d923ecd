"""`python -m annotated_transformer translate`: sentences in (stdin or a file), translations out, one a line.

`--checkpoint` means what it means in every command (`pipeline.load_for_evaluation`): a .pt file as
it is, a run folder the run's averaged model; the command says on stderr which it used.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import pipeline
from ..data.textfiles import text_lines
from ..evaluation.scoring import translate, translations_text
from ..model.decoding import DecodeSettings
from ..runtime.collisions import check_outputs
from ..runtime.devices import resolve_device
from ..runtime.files import atomic_write_text, written_through
from ..runtime.ownership import check_output
from ..training.checkpoint import model_from_checkpoint
from .arguments import add_decoding_arguments, decoding_overrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate text with a trained checkpoint: one sentence per input line, one translation per output\n"
        "line, in the same order (beam search with the paper's length penalty, section 6.1), decoded\n"
        "as `evaluate` decodes: with the beam, length penalty and batches of the checkpoint's profile.\n\n"
        "  echo 'Two dogs play in the snow.' | python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt --input en.txt --output de.txt"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file from `train` (averaged.pt, last.pt or checkpoints/step_*.pt), or a run "
        "folder: the average of its last snapshots, as `evaluate` reads it",
    )
    parser.add_argument(
        "--input",
        default=None,
        help="source sentences, one a line: a file (plain or gzipped), /dev/stdin, a FIFO or "
        "<(...), read once (default: standard input)",
    )
    parser.add_argument(
        "--output", default=None, help="file to write (default: standard output)"
    )
    add_decoding_arguments(parser)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ...")


def check_writable(path: Path, flag: str = "--output") -> None:
    """Fail before any decoding, not after it, when the output cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{flag} {path} is a folder: name a file")
    if written_through(path):  # a FIFO, a device, /dev/stdout: opened, not replaced
        if not os.access(path, os.W_OK):
            raise PermissionError(
                f"{flag} {path}: not writable; name a file you may write"
            )
        return
    folder = Path(os.path.realpath(path)).parent if path.is_symlink() else path.parent
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{flag} {path}: the folder {folder} does not exist; create it or name another"
        )
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise PermissionError(f"{flag} {path}: not writable; name a file you may write")


def decode_settings(checkpoint: dict, args: argparse.Namespace, device) -> DecodeSettings:
    """The checkpoint's profile's decoding (as `evaluate` decodes), with the flags given applied."""
    profile, _ = pipeline.checkpoint_profile(checkpoint)
    return profile.replace(**decoding_overrides(args)).decode_settings(str(device))


def run(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else None
    if output is not None:
        check_writable(output)
        check_outputs(
            [("--output", output)],
            [("--input", args.input), *pipeline.checkpoint_inputs(args.checkpoint)],
        )
        check_output("--output", output, command="translate")
    # The one reader (data.textfiles.text_lines) reads the input once, so --input may be a pipe,
    # /dev/stdin or <(...); lines end at "\n" or "\r\n" alone (str.splitlines would also break
    # one at U+2028, NEL or a form feed, shifting every later output line against its input
    # line); text that is not UTF-8, or a lone "\r", is refused whole, naming the line and byte,
    # rather than translated as something else. A file is read before the model loads; standard
    # input after, as a user typing it expects.
    lines = list(text_lines(args.input)) if args.input else None
    device = resolve_device(args.device)
    checkpoint, source = pipeline.load_for_evaluation(args.checkpoint, args.average_last)
    model, tokenizer = model_from_checkpoint(checkpoint, device, name=source)
    print(
        f"translating with {source} ({pipeline.what_it_translates(checkpoint)})",
        file=sys.stderr,
    )
    if lines is None:
        lines = list(text_lines(sys.stdin.buffer, "standard input"))
    decoding = decode_settings(checkpoint, args, device)
    translated = translate(
        model, tokenizer, lines, decoding, cuda_graphs=args.cuda_graphs
    )
    text = translations_text(translated)
    if output is not None:
        atomic_write_text(output, text)
    else:
        sys.stdout.write(text)
    return 0
