"""`python -m annotated_transformer translate`: sentences in (stdin or a file), translations out, one a line."""
from __future__ import annotations

import argparse
import sys

from ..devices import resolve_device
from ..evaluation import translate
from ..precision import resolve_precision
from ..training.checkpoint import model_from_checkpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate text with a trained checkpoint: one sentence per input line, one translation per output\n"
        "line, in the same order (beam search with the paper's length penalty, section 6.1).\n\n"
        "  echo 'Two dogs play in the snow.' | python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer translate --checkpoint runs/cpu/averaged.pt --input en.txt --output de.txt"
    )
    parser.add_argument("--checkpoint", required=True,
                        help="a .pt file from `train` (averaged.pt, last.pt or checkpoints/step_*.pt) or a run folder")
    parser.add_argument("--input", default=None, help="file of source sentences (default: standard input)")
    parser.add_argument("--output", default=None, help="file to write (default: standard output)")
    parser.add_argument("--beam", type=int, default=4, help="beam width; 1 is greedy decoding (default: %(default)s)")
    parser.add_argument("--alpha", type=float, default=0.6, help="length penalty alpha (default: %(default)s)")
    parser.add_argument("--max-len-b", type=int, default=50,
                        help="outputs may be source length + this many subwords long (default: %(default)s)")
    parser.add_argument("--batch-tokens", type=int, default=4000, help="source tokens x beam per decoding batch")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ...")


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    model, tokenizer = model_from_checkpoint(args.checkpoint, device)
    if args.input:
        with open(args.input, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    else:
        lines = sys.stdin.read().splitlines()
    # Empty lines stay empty, so output line i always answers input line i.
    wanted = [i for i, line in enumerate(lines) if line.strip()]
    translated = translate(model, tokenizer, [lines[i].strip() for i in wanted], beam_size=args.beam,
                           alpha=args.alpha, max_len_b=args.max_len_b, batch_tokens=args.batch_tokens,
                           precision=resolve_precision("auto", device))
    outputs = [""] * len(lines)
    for i, text in zip(wanted, translated):
        outputs[i] = text
    text = "".join(line + "\n" for line in outputs)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0
