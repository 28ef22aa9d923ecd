"""`python -m annotated_transformer train`: train a translation model, then average and evaluate it.

The profile picks every default (profiles/catalogue.py); flags override single fields, each parsed with
its field's own bounds. The work is `pipeline.run`: a run writes into `--out` (default
`runs/<profile>`) `metrics.jsonl`, `last.pt` (resume), `checkpoints/step_*.pt` (snapshots),
`averaged.pt`, `test_translations.txt` and its results file `results.json`; `--publish` also files
the results as `results/<profile>/<name>.json`, where the book and the README read them.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from .. import pipeline
from ..evaluation.results import check_name, results_path
from ..profiles import PROFILE_NAMES, Profile, get_profile
from ..runtime.compiling import COMPILE_MODES
from ..runtime.ownership import check_output, check_own_folder
from ..runtime.precision import PRECISIONS
from ..training import stopping
from .arguments import add_data_and_device, positive_int, probability, setting


# ------------------------------------------------------------------------------------------ CLI
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
    parser.add_argument(
        "--profile",
        default="cpu",
        choices=PROFILE_NAMES,
        help="picks every default: smoke (seconds, tests), cpu (Multi30k in 15 min on a laptop CPU), "
        "gpu (Multi30k on one GPU), gpu-iwslt14, paper (WMT14 base on 8 GPUs), paper-big "
        "(default: %(default)s)",
    )
    add_data_and_device(parser)
    parser.add_argument(
        "--out",
        default=None,
        help="run folder for checkpoints and logs (default: runs/<profile>): new, empty or a "
        "run folder of train's, inside no folder another command made",
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
        help="start afresh in --out, moving the run already there (its checkpoints and logs) aside to --out/replaced/<time>/",
    )
    parser.add_argument(
        "--no-eval",
        action="store_true",
        help="skip averaging and the test-set BLEU after training",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="also file the results as results/<profile>/<name>.json, where the book and the "
        "README read them (never over a committed result of another run)",
    )
    parser.add_argument(
        "--results-name",
        default=None,
        help="with --publish: the stem of that file (default: translation_<corpus>_<src>_<tgt>)",
    )
    g = parser.add_argument_group("profile overrides (default: the profile's value)")
    for field, (kind, help_text) in _OVERRIDES.items():
        options: dict = dict(dest=field, help=help_text)
        if kind == "choice":
            options["choices"] = _CHOICES[field]
        elif kind == "switch":
            options.update(action=argparse.BooleanOptionalAction, default=None)
        elif kind == "compile":
            # --compile (on), --compile auto (measured on a CPU), --no-compile (off)
            options.update(nargs="?", const=True, type=compile_setting, metavar="auto")
        elif kind == "number":
            options["type"] = setting(field)
        g.add_argument(FLAGS[field], **options)
        if kind == "compile":
            g.add_argument(
                "--no-compile",
                dest=field,
                action="store_const",
                const=False,
                help="train eagerly",
            )
    for field, flag in MODEL_FLAGS.items():
        kind = probability if field in ("dropout", "label_smoothing") else positive_int
        g.add_argument(flag, dest=field, type=kind, help=f"the model's {field}")


_CHOICES = {
    "corpus": ("multi30k", "iwslt14", "wmt14"),
    "budget_clock": ("wall", "cpu"),
    "precision": PRECISIONS,
    "compile_mode": COMPILE_MODES,
}
# Every profile field `train` sets, in --help's order: (kind, help). A number parses with its
# field's bounds (`setting`), so a flag accepts exactly what `Profile` does.
_OVERRIDES: dict[str, tuple[str, str | None]] = {
    "corpus": ("choice", "the parallel corpus (its folder under --data-dir)"),
    "src_lang": (
        "text",
        "source language code, a file suffix of the corpus (en, de, ...)",
    ),
    "tgt_lang": ("text", "target language code (de, en, ...)"),
    "vocab_size": ("number", "BPE vocabulary shared by source and target"),
    "preset": ("text", "model preset (base, big, tiny, a Table 3 row, ...)"),
    "batch_tokens": ("number", "padded tokens per micro-batch"),
    "accumulation": ("number", "micro-batches per optimizer step and rank"),
    "peak_lr": ("number", "peak learning rate (the top of the warm-up curve)"),
    "warmup_steps": ("number", "warm-up steps of the schedule"),
    "adam_eps": ("number", "Adam's epsilon"),
    "clip_norm": ("number", "clip the gradient norm to this (default: no clipping)"),
    "dropout_from_epoch": (
        "number",
        "train without dropout before this epoch (counted from 0) and with the model's after "
        "it (default: the profile's; 0: dropout throughout)",
    ),
    "max_steps": ("number", "stop after this many optimizer steps"),
    "max_epochs": ("number", "stop after this many passes over the training pairs"),
    "time_budget_minutes": ("number", "stop after this much training time"),
    "budget_clock": (
        "choice",
        "what --minutes counts: wall time, or this process's CPU time per thread (fair on "
        "a shared machine)",
    ),
    "max_train_pairs": (
        "number",
        "train on the first N pairs (after --max-sentence-words)",
    ),
    "max_valid_pairs": (
        "number",
        "validate on the first N pairs (after --max-sentence-words)",
    ),
    "max_sentence_words": ("number", "skip pairs with a longer side (words of raw text)"),
    "precision": (
        "choice",
        "auto: bf16 on a GPU that has it, fp16 with a gradient scaler on one with fp16 "
        "tensor cores only (V100, T4), else fp32; on a CPU with bf16 instructions, "
        "training times a step in each (once, cached) and takes the faster, and decoding "
        "runs in fp32",
    ),
    "compile": (
        "compile",
        "torch.compile the model and loss; `--compile auto` measures this machine's step eager "
        "and compiled (once, cached) and compiles only where that pays",
    ),
    "compile_mode": (
        "choice",
        "torch.compile's mode when compiled: reduce-overhead replays the step as CUDA graphs on "
        "a GPU (one recording per batch shape: pair it with --length-buckets)",
    ),
    "length_buckets": (
        "switch",
        "pad every batch to one of a few widths (8, 12, 16, 24, ...), so a compiled or graphed "
        "step meets few shapes; packs other batches than without (fixed on --resume)",
    ),
    "cuda_graphs": (
        "switch",
        "on a GPU, capture the eager step's forward and backward as CUDA graphs, a pair per "
        "batch shape, and replay them (needs --length-buckets; no compiler); elsewhere eager",
    ),
    "seed": ("number", "seeds the weights, dropout and batch order"),
    "threads": (
        "number",
        "CPU threads (default: one per core; 1 is faster on a busy machine)",
    ),
    "log_every": ("number", "steps between training-loss records"),
    "save_every_minutes": (
        "number",
        "minutes on --budget-clock between snapshots kept for averaging (section 6.1: 10)",
    ),
    "save_every_steps": ("number", "steps between snapshots kept for averaging"),
    "keep_snapshots": ("number", "snapshots kept for averaging"),
    "eval_every": ("number", "steps between validation losses"),
    "average_last": ("number", "snapshots averaged for the final model"),
    "beam_size": ("number", "beam width of the test-set decoding (1: greedy)"),
    "length_penalty_alpha": ("number", "length penalty of the beam search"),
    "max_len_a": ("number", "outputs may be a x source length + b subwords long: a"),
    "max_len_b": ("number", "... and b"),
    "eval_batch_tokens": ("number", "source tokens x beam per decoding batch"),
    "eval_max_sentences": ("number", "score only the first N test sentences"),
}


# The flag of each profile field `train` sets: its name with dashes, but for these. A message
# about a field names its flag (`flag_of`).
_RENAMED = {
    "peak_lr": "--lr",
    "warmup_steps": "--warmup",
    "time_budget_minutes": "--minutes",
    "beam_size": "--beam",
    "length_penalty_alpha": "--alpha",
}
FLAGS = {
    field: _RENAMED.get(field, "--" + field.replace("_", "-")) for field in _OVERRIDES
}
# The model's fields that `train` sets directly (into `model_overrides`), with their flags.
MODEL_FLAGS = {
    "n_layers": "--layers",
    "d_model": "--d-model",
    "d_ff": "--d-ff",
    "n_heads": "--heads",
    "dropout": "--dropout",
    "label_smoothing": "--label-smoothing",
}


def flag_of(field: str) -> str | None:
    """The flag that sets `field` (a profile or model field), or None."""
    return FLAGS.get(field) or MODEL_FLAGS.get(field)


def compile_setting(text: str) -> bool | str:
    """--compile's value: auto, or on/off (true/false, yes/no, 1/0)."""
    value = text.strip().lower()
    if value == "auto":
        return "auto"
    if value in ("on", "true", "yes", "1"):
        return True
    if value in ("off", "false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected auto, on or off, got {text!r}")


def profile_from_args(args: argparse.Namespace) -> Profile:
    """The named profile with the flags the user gave (and only those) applied."""
    profile = get_profile(
        args.profile, **{name: getattr(args, name, None) for name in _OVERRIDES}
    )
    model_overrides = {
        field: getattr(args, field)
        for field in MODEL_FLAGS
        if getattr(args, field, None) is not None
    }
    if model_overrides:
        # Invalid combinations fail here, with the config's message.
        profile = profile.replace(
            model_overrides={**profile.model_overrides, **model_overrides}
        )
    return profile


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.results_name is not None:
        check_name(args.results_name, "--results-name")
    profile = profile_from_args(args)
    if args.publish:  # a name the book's record says a chapter wrote is the book's
        name = args.results_name or pipeline.default_results_name(profile)
        published = results_path(name, profile.results_folder)
        check_output("--publish --results-name", published, command="train", publish=True)
    # another command's folder (an extended run, the book's results, the site) is not a run folder
    check_own_folder("--out", args.out or Path("runs") / profile.name, command="train")
    try:
        summary = pipeline.run(
            profile,
            args.out,
            data_dir=args.data_dir,
            resume=args.resume,
            overwrite=args.overwrite,
            device=args.device,
            evaluate_test=not args.no_eval,
            results_name=args.results_name,
            publish=args.publish,
        )
    except pipeline.ResumeConflict as conflict:  # name the flag that changed the setting
        flag = flag_of(conflict.setting)
        if flag is None:
            raise
        raise conflict.with_setting_label(f"{conflict.setting} ({flag})") from None
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
        if t.get("ppl_pairs_left_out"):
            line += (
                f", perplexity {t['ppl']:.2f} leaving out {t['ppl_pairs_left_out']} test "
                "pairs too long for the model's positions"
            )
        line += f"; results -> {summary['results_path']}"
    print(line)
    note = stopping.contention_note(summary.get("cpu_share"), summary["stopped_by"])
    if note:
        print(f"note: {note}")
    return 0
