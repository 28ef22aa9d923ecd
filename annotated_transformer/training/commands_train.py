"""`python -m annotated_transformer train`: train a translation model, then average and evaluate it.

The profile picks every default (see `recipes.py`); flags override single fields. A run writes into
`--out` (default `runs/<profile>`): `metrics.jsonl`, `last.pt` (resume), `checkpoints/step_*.pt`
(snapshots), `averaged.pt`, `test_translations.txt`, and the results file `results/<profile>/<name>.json`.
"""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import torch

from .recipes import PROFILE_CHOICES, TrainingRecipe, recipe_for

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------ data
def prepare_data(recipe: TrainingRecipe, data_dir=None, context=None, max_len: int | None = None):
    """(tokenizer, train pairs, valid pairs) for a recipe: the corpus loaded, BPE trained once (on the
    training split only) and cached, pairs encoded, and pairs longer than the model's positions dropped."""
    from ..data import EncodedPairs, load_parallel, tokenizer_for_corpus
    from .distributed import barrier

    is_main = context is None or context.is_main
    if is_main:  # rank 0 trains (or finds) the tokenizer; the others then load it from the cache
        tokenizer = tokenizer_for_corpus(recipe.corpus, recipe.vocab_size, split=recipe.train_split, data_dir=data_dir)
    if context is not None:
        barrier(context)
    if not is_main:
        tokenizer = tokenizer_for_corpus(recipe.corpus, recipe.vocab_size, split=recipe.train_split, data_dir=data_dir)

    def encode(split: str, limit: int | None) -> EncodedPairs:
        corpus = load_parallel(recipe.corpus, split, recipe.src_lang, recipe.tgt_lang, data_dir,
                               max_len=recipe.max_sentence_words)
        src, tgt = corpus.src, corpus.tgt
        if limit is not None:
            src, tgt = src[:limit], tgt[:limit]
        src_ids, tgt_ids = tokenizer.encode_batch(src), tokenizer.encode_batch(tgt)
        if max_len is not None:  # the model has max_len positions; bos/eos take one or two
            keep = [i for i in range(len(src_ids)) if len(src_ids[i]) + 1 <= max_len and len(tgt_ids[i]) + 2 <= max_len]
            if len(keep) < len(src_ids):
                logger.warning("dropped %d pairs of %s longer than %d subwords", len(src_ids) - len(keep), split, max_len)
                src_ids, tgt_ids = [src_ids[i] for i in keep], [tgt_ids[i] for i in keep]
        return EncodedPairs(src_ids, tgt_ids)

    train = encode(recipe.train_split, recipe.max_train_pairs)
    valid = encode(recipe.valid_split, recipe.max_valid_pairs)
    return tokenizer, train, valid


def build_model(recipe: TrainingRecipe, vocab_size: int, device: torch.device):
    from ..model import Transformer

    torch.manual_seed(recipe.seed)  # the same initial weights on every rank and every rerun
    return Transformer(recipe.model_config(), vocab_size, vocab_size, share_embeddings=True).to(device)


# ------------------------------------------------------------------------------------------ the job
def train_translation(
    recipe: TrainingRecipe,
    out_dir: str | Path,
    *,
    data_dir=None,
    resume: bool | str | Path = False,
    device: str = "auto",
    evaluate: bool = True,
    results_name: str | None = None,
    show_progress: bool = True,
    on_step=None,
) -> dict:
    """Train (or resume) a translation model under `recipe`; then average the last snapshots, translate
    the test set with beam search and write the results file. Returns a summary dict.

    resume: True continues from `out_dir/last.pt` when it exists; a path names another checkpoint.
    """
    from .. import flops
    from ..model import count_parameters
    from .checkpoint import RESUME_NAME
    from .distributed import init_distributed, shutdown_distributed
    from .trainer import Trainer

    started = time.perf_counter()
    out_dir = Path(out_dir)
    if recipe.threads:
        # On a busy machine one thread per process beats two that wait for each other.
        torch.set_num_threads(recipe.threads)
    context = init_distributed(device)
    try:
        config = recipe.model_config()
        tokenizer, train, valid = prepare_data(recipe, data_dir, context, max_len=config.max_len)
        model = build_model(recipe, tokenizer.vocab_size, context.device)
        torch.manual_seed(recipe.seed * 1000 + context.rank)  # dropout differs between ranks, as it should
        trainer = Trainer(model, tokenizer, train, valid, recipe, out_dir, context, show_progress=show_progress, on_step=on_step)
        resume_path = None
        if resume:
            resume_path = Path(resume) if not isinstance(resume, bool) else out_dir / RESUME_NAME
            if resume_path.exists():
                trainer.resume_from(resume_path)
            elif not isinstance(resume, bool):
                raise FileNotFoundError(f"--resume {resume_path}: no such checkpoint")
            else:
                resume_path = None
        if context.is_main:
            print(f"training {count_parameters(model) / 1e6:.1f}M parameters on {len(train)} pairs "
                  f"({recipe.corpus} {recipe.src_lang}->{recipe.tgt_lang}), {trainer.precision} on {context.device}, "
                  f"world size {context.world_size}" + (f", resumed at step {trainer.progress.step}" if resume_path else ""))
        result = trainer.train()
        summary = {
            "out_dir": str(out_dir),
            "steps": result.progress.step,
            "epochs": result.progress.epoch + result.progress.batch_cursor / max(1, len(trainer.sampler.global_batches(result.progress.epoch)) // trainer.micro_batches_per_step),
            "stopped_by": result.stopped_by,
            "train_time_s": round(result.progress.train_time_s, 1),
            "train_cpu_s_per_thread": round(result.progress.train_cpu_s, 1),
            "threads": torch.get_num_threads(),
            "target_tokens": result.progress.target_tokens,
            "target_tokens_per_s": round(result.progress.target_tokens / max(result.progress.train_time_s, 1e-9), 1),
            "valid": result.valid,
            "parameters": count_parameters(model),
            "precision": trainer.precision,
            "world_size": context.world_size,
        }
        mean_src = float(train.src_lengths.mean()) + 1
        mean_tgt = float(train.tgt_lengths.mean()) + 1
        per_token = flops.training_flops_per_target_token(config, tokenizer.vocab_size, mean_src, mean_tgt)
        achieved = per_token * summary["target_tokens_per_s"] * context.world_size
        summary["flops_per_target_token"] = per_token
        summary["mfu"] = flops.mfu(achieved / context.world_size, context.device, trainer.precision)
        summary["training_flops"] = per_token * result.progress.target_tokens
        if evaluate and result.stopped_by != "interrupted" and context.is_main:
            summary["test"] = evaluate_run(out_dir, recipe, data_dir=data_dir, device=context.device)
            summary["wall_time_s"] = round(time.perf_counter() - started, 1)
            write_run_results(summary, recipe, config, results_name, context.device)
        return summary
    finally:
        shutdown_distributed()


def evaluate_run(out_dir: str | Path, recipe: TrainingRecipe, *, data_dir=None, device="cpu", max_sentences=None) -> dict:
    """Average the last `recipe.average_last` snapshots into `averaged.pt` and score it on the test set."""
    from ..data import load_parallel
    from ..evaluation import evaluate_translation
    from .checkpoint import atomic_torch_save, average_last, model_from_checkpoint
    from .trainer import resolve_precision

    out_dir = Path(out_dir)
    averaged, used = average_last(out_dir, recipe.average_last)
    atomic_torch_save(averaged, out_dir / "averaged.pt")
    model, tokenizer = model_from_checkpoint(averaged, device)
    test = load_parallel(recipe.corpus, recipe.test_split, recipe.src_lang, recipe.tgt_lang, data_dir)
    limit = max_sentences or recipe.eval_max_sentences
    sources, references = (test.src[:limit], test.tgt[:limit]) if limit else (test.src, test.tgt)
    scores = evaluate_translation(
        model, tokenizer, sources, references, beam_size=recipe.beam_size, length_penalty=recipe.length_penalty,
        max_len_a=recipe.max_len_a, max_len_b=recipe.max_len_b, batch_tokens=recipe.eval_batch_tokens,
        precision=resolve_precision(recipe.precision, torch.device(device)), target_language=recipe.tgt_lang,
    )
    (out_dir / "test_translations.txt").write_text("\n".join(scores.pop("hypotheses")) + "\n", encoding="utf-8")
    scores["test_set"] = test.name
    scores["averaged_checkpoints"] = [p.name for p in used]
    return scores


def write_run_results(summary: dict, recipe: TrainingRecipe, config, name: str | None, device) -> Path | None:
    """results/<profile>/<name>.json with provenance (git commit, device, torch, date) via results.py."""
    try:
        from ..results import write_result
    except ImportError:  # an installed copy without the book's results module still trains
        logger.warning("annotated_transformer.results is missing: no results file written")
        return None
    name = name or f"translation_{recipe.corpus}_{recipe.src_lang}_{recipe.tgt_lang}"
    profile = recipe.profile.split("-")[0]
    metrics = {k: v for k, v in summary.items() if k not in ("out_dir", "wall_time_s")}
    for key in ("sacrebleu", "bleu_tokenized", "ppl", "sacrebleu_signature"):  # flat keys the summary table reads
        if key in summary.get("test", {}):
            metrics[key] = summary["test"][key]
    record_config = {"model": config.to_dict(), "recipe": recipe.to_dict()}
    path = write_result(name, metrics, profile=profile, config=record_config,
                        wall_time_s=summary.get("wall_time_s"), device=device)
    print(f"results -> {path}")
    return path


# ------------------------------------------------------------------------------------------ CLI
def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """--profile and the flags that override single recipe fields (shared by train and evaluate)."""
    parser.add_argument("--profile", default="cpu", choices=PROFILE_CHOICES,
                        help="picks every default: smoke (seconds, tests), cpu (Multi30k in 15 min on a laptop CPU), "
                             "gpu (Multi30k on one GPU), gpu-iwslt14, paper (WMT14 base on 8 GPUs), paper-big "
                             "(default: %(default)s)")
    parser.add_argument("--data-dir", default=None,
                        help="folder holding the corpus (e.g. ../shared/data); default: $AT_DATA_DIR, then a download")
    parser.add_argument("--device", default="auto", help="auto (a GPU when visible), cpu, cuda, cuda:1 ...")


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
    add_recipe_arguments(parser)
    parser.add_argument("--out", default=None, help="run folder for checkpoints and logs (default: runs/<profile>)")
    parser.add_argument("--resume", nargs="?", const=True, default=False, metavar="CHECKPOINT",
                        help="continue from --out/last.pt (or the CHECKPOINT given) instead of starting afresh")
    parser.add_argument("--no-eval", action="store_true", help="skip averaging and the test-set BLEU after training")
    parser.add_argument("--results-name", default=None, help="stem of the results file (default: translation_<corpus>_<src>_<tgt>)")
    g = parser.add_argument_group("recipe overrides (default: the profile's value)")
    g.add_argument("--corpus", choices=("multi30k", "iwslt14", "wmt14"))
    g.add_argument("--src-lang")
    g.add_argument("--tgt-lang")
    g.add_argument("--vocab-size", type=int, help="BPE vocabulary shared by source and target")
    g.add_argument("--preset", help="model preset (base, big, tiny, a Table 3 row, ...)")
    g.add_argument("--layers", type=int, help="encoder and decoder layers")
    g.add_argument("--d-model", type=int)
    g.add_argument("--d-ff", type=int)
    g.add_argument("--heads", type=int)
    g.add_argument("--dropout", type=float)
    g.add_argument("--label-smoothing", type=float)
    g.add_argument("--batch-tokens", type=int, help="padded tokens per micro-batch")
    g.add_argument("--accumulation", type=int, help="micro-batches per optimizer step and rank")
    g.add_argument("--lr", type=float, dest="peak_lr", help="peak learning rate (the top of the warm-up curve)")
    g.add_argument("--warmup", type=int, dest="warmup_steps")
    g.add_argument("--max-steps", type=int)
    g.add_argument("--max-epochs", type=int)
    g.add_argument("--minutes", type=float, dest="time_budget_minutes", help="stop after this much training time")
    g.add_argument("--budget-clock", choices=("wall", "cpu"),
                   help="what --minutes counts: wall time, or this process's CPU time per thread (fair on a shared machine)")
    g.add_argument("--max-train-pairs", type=int)
    g.add_argument("--precision", choices=("auto", "bf16", "fp32"))
    g.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None, help="torch.compile the model")
    g.add_argument("--seed", type=int)
    g.add_argument("--threads", type=int, help="CPU threads (default: one per core; 1 is faster on a busy machine)")
    g.add_argument("--save-every-minutes", type=float)
    g.add_argument("--save-every-steps", type=int)
    g.add_argument("--eval-every", type=int, help="steps between validation losses")
    g.add_argument("--average-last", type=int, help="snapshots averaged for the final model")
    g.add_argument("--beam", type=int, dest="beam_size")


_MODEL_FLAGS = {"layers": "n_layers", "d_model": "d_model", "d_ff": "d_ff", "heads": "n_heads",
                "dropout": "dropout", "label_smoothing": "label_smoothing"}
_RECIPE_FLAGS = ("corpus", "src_lang", "tgt_lang", "vocab_size", "preset", "batch_tokens", "accumulation", "peak_lr",
                 "warmup_steps", "max_steps", "max_epochs", "time_budget_minutes", "budget_clock", "max_train_pairs", "precision",
                 "compile", "threads", "seed", "save_every_minutes", "save_every_steps", "eval_every", "average_last", "beam_size")


def recipe_from_args(args: argparse.Namespace) -> TrainingRecipe:
    """The profile's recipe with the flags the user gave (and only those) applied."""
    overrides = {name: getattr(args, name, None) for name in _RECIPE_FLAGS}
    recipe = recipe_for(args.profile, **overrides)
    model_overrides = {field: getattr(args, flag) for flag, field in _MODEL_FLAGS.items() if getattr(args, flag, None) is not None}
    if model_overrides:
        recipe = recipe.replace(model_overrides={**recipe.model_overrides, **model_overrides})
    recipe.model_config()  # invalid combinations fail now, with the config's message
    return recipe


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    recipe = recipe_from_args(args)
    out_dir = Path(args.out or Path("runs") / recipe.profile)
    summary = train_translation(recipe, out_dir, data_dir=args.data_dir, resume=args.resume, device=args.device,
                                evaluate=not args.no_eval, results_name=args.results_name)
    if summary["stopped_by"] == "interrupted":
        print(f"interrupted at step {summary['steps']}; checkpoint saved: continue with the same command and --resume")
        return 130
    line = f"done: {summary['steps']} steps in {summary['train_time_s']:.0f} s ({summary['stopped_by']})"
    if summary.get("valid"):
        line += f", valid ppl {summary['valid']['ppl']:.2f}"
    if "test" in summary:
        t = summary["test"]
        line += f"; test sacreBLEU {t['sacrebleu']:.2f} ({t['sacrebleu_signature']}), tokenized BLEU {t['bleu_tokenized']:.2f}"
    print(line)
    return 0
