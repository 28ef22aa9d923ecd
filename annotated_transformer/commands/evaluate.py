"""`python -m annotated_transformer evaluate`: BLEU and perplexity of a checkpoint on a test set."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .. import pipeline
from ..evaluation.results import write_result
from ..profiles import get_profile
from ..runtime.devices import resolve_device
from .arguments import non_negative_float, positive_int
from .train import add_profile_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate a test set with beam search and report sacreBLEU (with its signature), the paper's\n"
        "tokenized BLEU (compound-split for German) and per-subword perplexity. The profile picks the corpus,\n"
        "test split and beam settings; the result goes to results/<profile>/<name>.json with provenance.\n\n"
        "  python -m annotated_transformer evaluate --profile cpu --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer evaluate --profile cpu --checkpoint runs/cpu --average-last 5"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file, or a run folder (its snapshots are averaged, see --average-last)",
    )
    add_profile_arguments(parser)
    parser.add_argument(
        "--split",
        default=None,
        help="test split (default: the profile's, e.g. test_2016_flickr)",
    )
    parser.add_argument(
        "--beam",
        type=positive_int,
        default=None,
        help="beam width (default: the profile's, 4)",
    )
    parser.add_argument(
        "--alpha",
        type=non_negative_float,
        default=None,
        help="length penalty (default: the profile's, 0.6)",
    )
    parser.add_argument(
        "--average-last",
        type=positive_int,
        default=None,
        help="with a run folder: snapshots to average",
    )
    parser.add_argument(
        "--max-sentences",
        type=positive_int,
        default=None,
        help="score only the first N sentences",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="results file stem (default: evaluation_<corpus>_<split>)",
    )
    parser.add_argument(
        "--hypotheses", default=None, help="also write the translations to this file"
    )


def run(args: argparse.Namespace) -> int:
    profile = get_profile(
        args.profile,
        beam_size=args.beam,
        length_penalty_alpha=args.alpha,
        average_last=args.average_last,
    )
    device = resolve_device(args.device)
    started = time.perf_counter()
    checkpoint, source = pipeline.load_for_evaluation(
        args.checkpoint, profile.average_last
    )
    split = args.split or profile.test_split
    scores = pipeline.evaluate(
        checkpoint,
        profile,
        data_dir=args.data_dir,
        device=device,
        split=split,
        max_sentences=args.max_sentences,
        progress=True,
    )
    hypotheses = scores.pop("hypotheses")
    if args.hypotheses:
        Path(args.hypotheses).write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    scores["checkpoint"] = source
    name = args.name or f"evaluation_{profile.corpus}_{split}"
    out = write_result(
        name,
        scores,
        profile=profile.results_folder,
        config=checkpoint.get("config"),
        wall_time_s=round(time.perf_counter() - started, 1),
        device=device,
    )
    print(json.dumps(scores, indent=2))
    print(f"results -> {out}")
    return 0
