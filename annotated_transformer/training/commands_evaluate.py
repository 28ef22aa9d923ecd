"""`python -m annotated_transformer evaluate`: BLEU and perplexity of a checkpoint on a test set."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from .commands_train import add_recipe_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Translate a test set with beam search and report sacreBLEU (with its signature), the paper's\n"
        "tokenized BLEU (compound-split for German) and per-subword perplexity. The profile picks the corpus,\n"
        "test split and beam settings; the result goes to results/<profile>/<name>.json with provenance.\n\n"
        "  python -m annotated_transformer evaluate --profile cpu --checkpoint runs/cpu/averaged.pt\n"
        "  python -m annotated_transformer evaluate --profile cpu --checkpoint runs/cpu --average-last 5"
    )
    parser.add_argument("--checkpoint", required=True,
                        help="a .pt file, or a run folder (its snapshots are averaged, see --average-last)")
    add_recipe_arguments(parser)
    parser.add_argument("--split", default=None, help="test split (default: the profile's, e.g. test_2016_flickr)")
    parser.add_argument("--beam", type=int, default=None, help="beam width (default: the profile's, 4)")
    parser.add_argument("--alpha", type=float, default=None, help="length penalty (default: the profile's, 0.6)")
    parser.add_argument("--average-last", type=int, default=None, help="with a run folder: snapshots to average")
    parser.add_argument("--max-sentences", type=int, default=None, help="score only the first N sentences")
    parser.add_argument("--name", default=None, help="results file stem (default: evaluation_<corpus>_<split>)")
    parser.add_argument("--hypotheses", default=None, help="also write the translations to this file")


def run(args: argparse.Namespace) -> int:
    from ..data import load_parallel
    from ..evaluation import evaluate_translation
    from .checkpoint import average_last, load_checkpoint, model_from_checkpoint
    from .distributed import _pick_device
    from .recipes import recipe_for
    from .trainer import resolve_precision

    recipe = recipe_for(args.profile, beam_size=args.beam, length_penalty=args.alpha, average_last=args.average_last)
    device = torch.device(_pick_device(args.device, 0))
    started = time.perf_counter()
    path = Path(args.checkpoint)
    if path.is_dir():
        checkpoint, used = average_last(path, recipe.average_last)
        source = f"average of {', '.join(p.name for p in used)}"
    else:
        checkpoint, source = load_checkpoint(path), str(path)
    model, tokenizer = model_from_checkpoint(checkpoint, device)
    split = args.split or recipe.test_split
    test = load_parallel(recipe.corpus, split, recipe.src_lang, recipe.tgt_lang, args.data_dir)
    n = args.max_sentences
    sources, references = (test.src[:n], test.tgt[:n]) if n else (test.src, test.tgt)
    scores = evaluate_translation(
        model, tokenizer, sources, references, beam_size=recipe.beam_size, length_penalty=recipe.length_penalty,
        max_len_a=recipe.max_len_a, max_len_b=recipe.max_len_b, batch_tokens=recipe.eval_batch_tokens,
        precision=resolve_precision(recipe.precision, device), target_language=recipe.tgt_lang, progress=True,
    )
    hypotheses = scores.pop("hypotheses")
    if args.hypotheses:
        Path(args.hypotheses).write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    scores.update(test_set=test.name, checkpoint=source, step=checkpoint.get("step"))
    try:
        from ..results import write_result

        name = args.name or f"evaluation_{recipe.corpus}_{split}"
        out = write_result(name, scores, profile=recipe.profile.split("-")[0], config=checkpoint.get("config"),
                           wall_time_s=round(time.perf_counter() - started, 1), device=device)
        print(f"results -> {out}")
    except ImportError:
        pass
    print(json.dumps(scores, indent=2))
    return 0
