"""`python -m annotated_transformer train`: train a translation model, then average and evaluate it.

The profile picks every default (profiles.py); flags override single fields. The work is
`pipeline.run`: a run writes into `--out` (default `runs/<profile>`) `metrics.jsonl`, `last.pt`
(resume), `checkpoints/step_*.pt` (snapshots), `averaged.pt`, `test_translations.txt`, and the
results file `results/<profile>/<name>.json`.
"""

from __future__ import annotations

import argparse
import logging

from .. import pipeline
from ..profiles import PROFILE_NAMES, Profile, get_profile
from ..runtime.precision import PRECISIONS
from .arguments import non_negative_int, positive_float, positive_int, probability


# ------------------------------------------------------------------------------------------ CLI
def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    """--profile, --data-dir and --device (shared by train and evaluate)."""
    parser.add_argument(
        "--profile",
        default="cpu",
        choices=PROFILE_NAMES,
        help="picks every default: smoke (seconds, tests), cpu (Multi30k in 15 min on a laptop CPU), "
        "gpu (Multi30k on one GPU), gpu-iwslt14, paper (WMT14 base on 8 GPUs), paper-big "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="folder holding the corpus folders (multi30k/, wmt14/, ...); default: $AT_DATA_DIR, then a download",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="auto (a GPU when visible), cpu, cuda, cuda:1 ...",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Train a Transformer translation model (paper section 5), then average the last checkpoints and\n"
        "report sacreBLEU and tokenized BLEU on the test set (section 6.1).\n\n"
        "  python -m annotated_transformer train --profile cpu              # Multi30k EN->DE, 15 minutes\n"
        "  python -m annotated_transformer train --profile cpu --resume     # continue after Ctrl-C\n"
        "  torchrun --nproc_per_node=8 -m annotated_transformer train --profile paper   # WMT14, 8 GPUs\n\n"
        "Ctrl-C (or SIGTERM) saves a checkpoint and exits; --resume continues bit for bit."
    )
    add_profile_arguments(parser)
    parser.add_argument(
        "--out",
        default=None,
        help="run folder for checkpoints and logs (default: runs/<profile>)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="CHECKPOINT",
        help="continue from --out/last.pt (or the CHECKPOINT given) instead of starting afresh",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh in --out, deleting the run already there (its checkpoints and logs)",
    )
    parser.add_argument(
        "--no-eval",
        action="store_true",
        help="skip averaging and the test-set BLEU after training",
    )
    parser.add_argument(
        "--results-name",
        default=None,
        help="stem of the results file (default: translation_<corpus>_<src>_<tgt>)",
    )
    g = parser.add_argument_group("profile overrides (default: the profile's value)")
    g.add_argument("--corpus", choices=("multi30k", "iwslt14", "wmt14"))
    g.add_argument("--src-lang")
    g.add_argument("--tgt-lang")
    g.add_argument(
        "--vocab-size",
        type=positive_int,
        help="BPE vocabulary shared by source and target",
    )
    g.add_argument("--preset", help="model preset (base, big, tiny, a Table 3 row, ...)")
    g.add_argument("--layers", type=positive_int, help="encoder and decoder layers")
    g.add_argument("--d-model", type=positive_int)
    g.add_argument("--d-ff", type=positive_int)
    g.add_argument("--heads", type=positive_int)
    g.add_argument("--dropout", type=probability)
    g.add_argument("--label-smoothing", type=probability)
    g.add_argument(
        "--batch-tokens", type=positive_int, help="padded tokens per micro-batch"
    )
    g.add_argument(
        "--accumulation",
        type=positive_int,
        help="micro-batches per optimizer step and rank",
    )
    g.add_argument(
        "--lr",
        type=positive_float,
        dest="peak_lr",
        help="peak learning rate (the top of the warm-up curve)",
    )
    g.add_argument("--warmup", type=positive_int, dest="warmup_steps")
    g.add_argument("--max-steps", type=positive_int)
    g.add_argument("--max-epochs", type=positive_int)
    g.add_argument(
        "--minutes",
        type=positive_float,
        dest="time_budget_minutes",
        help="stop after this much training time",
    )
    g.add_argument(
        "--budget-clock",
        choices=("wall", "cpu"),
        help="what --minutes counts: wall time, or this process's CPU time per thread (fair on a shared machine)",
    )
    g.add_argument("--max-train-pairs", type=positive_int)
    g.add_argument("--precision", choices=PRECISIONS)
    g.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile the model",
    )
    g.add_argument("--seed", type=int)
    g.add_argument(
        "--threads",
        type=positive_int,
        help="CPU threads (default: one per core; 1 is faster on a busy machine)",
    )
    g.add_argument("--save-every-minutes", type=positive_float)
    g.add_argument("--save-every-steps", type=positive_int)
    g.add_argument(
        "--eval-every", type=non_negative_int, help="steps between validation losses"
    )
    g.add_argument(
        "--average-last", type=positive_int, help="snapshots averaged for the final model"
    )
    g.add_argument("--beam", type=positive_int, dest="beam_size")


_MODEL_FLAGS = {
    "layers": "n_layers",
    "d_model": "d_model",
    "d_ff": "d_ff",
    "heads": "n_heads",
    "dropout": "dropout",
    "label_smoothing": "label_smoothing",
}
_PROFILE_FLAGS = (
    "corpus",
    "src_lang",
    "tgt_lang",
    "vocab_size",
    "preset",
    "batch_tokens",
    "accumulation",
    "peak_lr",
    "warmup_steps",
    "max_steps",
    "max_epochs",
    "time_budget_minutes",
    "budget_clock",
    "max_train_pairs",
    "precision",
    "compile",
    "threads",
    "seed",
    "save_every_minutes",
    "save_every_steps",
    "eval_every",
    "average_last",
    "beam_size",
)


def profile_from_args(args: argparse.Namespace) -> Profile:
    """The named profile with the flags the user gave (and only those) applied."""
    profile = get_profile(
        args.profile, **{name: getattr(args, name, None) for name in _PROFILE_FLAGS}
    )
    model_overrides = {
        field: getattr(args, flag)
        for flag, field in _MODEL_FLAGS.items()
        if getattr(args, flag, None) is not None
    }
    if model_overrides:
        profile = profile.replace(
            model_overrides={**profile.model_overrides, **model_overrides}
        )
        profile.model_config()  # invalid combinations fail now, with the config's message
    return profile


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    profile = profile_from_args(args)
    summary = pipeline.run(
        profile,
        args.out,
        data_dir=args.data_dir,
        resume=args.resume,
        overwrite=args.overwrite,
        device=args.device,
        evaluate_test=not args.no_eval,
        results_name=args.results_name,
    )
    if summary["stopped_by"] == "interrupted":
        print(
            f"interrupted at step {summary['steps']}; checkpoint saved: continue with the same command and --resume"
        )
        return 130
    line = f"done: {summary['steps']} steps in {summary['train_time_s']:.0f} s ({summary['stopped_by']})"
    if summary.get("valid"):
        line += f", valid ppl {summary['valid']['ppl']:.2f}"
    if "test" in summary:
        t = summary["test"]
        line += f"; test sacreBLEU {t['sacrebleu']:.2f} ({t['sacrebleu_signature']}), tokenized BLEU {t['bleu_tokenized']:.2f}"
        line += f"; results -> {summary['results_path']}"
    print(line)
    return 0
