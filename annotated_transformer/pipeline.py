"""The translation pipeline, top to bottom: corpus -> shared BPE -> encoded pairs -> token batches ->
training -> the average of the last snapshots -> beam search on the test set -> BLEU -> results file.

This is what `train`, `evaluate` and the book's chapters call; a command is argument parsing plus one
call here. Every default comes from a `Profile` (profiles.py). Following one batch: `prepare_data`
reads the corpus (data/reading.py via `load_parallel`), encodes it with the corpus's tokenizer
(data/tokenizer.py) into `EncodedPairs` (data/batching.py); the `Trainer` (training/trainer.py) packs
them into token batches (`TokenBatcher`) and trains on them through `teacher_forcing.batch_loss`
(model/transformer.py, training/loss.py); `average` merges snapshots (training/checkpoint.py); `evaluate` translates the
test set (evaluation/scoring.py, model/decoding.py) and scores it; `write_results` stamps provenance (evaluation/results.py).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .data import EncodedPairs, Tokenizer, load_parallel, tokenizer_for_corpus
from .evaluation.results import write_result
from .evaluation.scoring import evaluate_translation
from .model import flops
from .model.transformer import count_parameters
from .profiles import Profile
from .runtime.distributed import (
    DistributedContext,
    barrier,
    init_distributed,
    shutdown_distributed,
)
from .runtime.files import atomic_write_text
from .training.checkpoint import (
    atomic_torch_save,
    average_last,
    load_checkpoint,
    model_from_checkpoint,
)
from .training.fit import fit
from .training.run_folder import claim_run_folder
from .training.trainer import Trainer

logger = logging.getLogger(__name__)

AVERAGED_NAME = "averaged.pt"
TRANSLATIONS_NAME = "test_translations.txt"


# ------------------------------------------------------------------------------------------ data
@dataclass
class PreparedData:
    tokenizer: Tokenizer
    train: EncodedPairs
    valid: EncodedPairs


def prepare_data(
    profile: Profile,
    data_dir=None,
    context: DistributedContext | None = None,
    max_positions: int | None = None,
) -> PreparedData:
    """The profile's corpus, its BPE (trained once on the training split only, then cached) and the
    encoded training and validation pairs, without pairs too long for the model's positions
    (`max_positions`, default the profile's model's)."""
    is_main = context is None or context.is_main

    def tokenizer() -> Tokenizer:
        return tokenizer_for_corpus(
            profile.corpus,
            profile.vocab_size,
            split=profile.train_split,
            data_dir=data_dir,
        )

    if (
        is_main
    ):  # rank 0 trains (or finds) the tokenizer; the others then load it from the cache
        shared = tokenizer()
    if context is not None:
        barrier(context)
    if not is_main:
        shared = tokenizer()
    if max_positions is None:
        max_positions = profile.model_config().max_len

    def encode(split: str, limit: int | None) -> EncodedPairs:
        corpus = load_parallel(
            profile.corpus,
            split,
            profile.src_lang,
            profile.tgt_lang,
            data_dir,
            max_words=profile.max_sentence_words,
        )
        src, tgt = (
            (corpus.src[:limit], corpus.tgt[:limit])
            if limit is not None
            else (corpus.src, corpus.tgt)
        )
        pairs, too_long = EncodedPairs.from_texts(shared, src, tgt).fitting(max_positions)
        if too_long:
            logger.warning(
                "dropped %d pairs of %s longer than the model's %d positions",
                too_long,
                split,
                max_positions,
            )
        return pairs

    return PreparedData(
        shared,
        encode(profile.train_split, profile.max_train_pairs),
        encode(profile.valid_split, profile.max_valid_pairs),
    )


# ------------------------------------------------------------------------------------------ training
def train(
    profile: Profile,
    out_dir: str | Path,
    *,
    data_dir=None,
    resume: bool | str | Path = False,
    context: DistributedContext,
    show_progress: bool = True,
    on_step=None,
) -> dict:
    """Train (or resume) under `profile` into `out_dir`; returns a summary of the run.

    resume: True continues from `out_dir/last.pt`; a path names another checkpoint to continue from.
    The caller makes sure the folder is this run's (`run` does, through `claim_run_folder`).
    """
    if profile.threads:
        # On a busy machine one thread per process beats two that wait for each other.
        torch.set_num_threads(profile.threads)
    out_dir = Path(out_dir)
    config = profile.model_config()
    data = prepare_data(profile, data_dir, context, config.max_len)

    def announce(trainer: Trainer) -> None:
        if context.is_main:
            step = trainer.progress.step
            print(
                f"training {count_parameters(trainer.model) / 1e6:.1f}M parameters on {len(data.train)} pairs "
                f"({profile.corpus} {profile.src_lang}->{profile.tgt_lang}), {trainer.precision} on "
                f"{context.device}, world size {context.world_size}"
                + (f", resumed at step {step}" if resume else "")
            )
            print(f"precision {trainer.precision}: {trainer.precision_reason}")

    fitted = fit(
        config,
        data.tokenizer,
        data.train,
        data.valid,
        profile.train_settings(),
        out_dir,
        context=context,
        resume=resume,
        metadata={"profile": profile.to_dict()},
        show_progress=show_progress,
        on_step=on_step,
        on_start=announce,
    )
    model, trainer, result = fitted.model, fitted.trainer, fitted.result
    progress = result.progress
    summary = {
        "out_dir": str(out_dir),
        "steps": progress.step,
        "epochs": trainer.epochs_done(),
        "stopped_by": result.stopped_by,
        "train_time_s": round(progress.train_time_s, 1),
        "train_cpu_s_per_thread": round(progress.train_cpu_s, 1),
        "threads": torch.get_num_threads(),
        "target_tokens": progress.target_tokens,
        "target_tokens_per_s": round(
            progress.target_tokens / max(progress.train_time_s, 1e-9), 1
        ),
        "valid": result.valid,
        "parameters": count_parameters(model),
        "precision": trainer.precision,
        "precision_reason": trainer.precision_reason,
        "world_size": context.world_size,
        "model_config": config.to_dict(),
    }
    # Training FLOPs counted from the model (section 6.1 estimates them from time x GPUs x FLOP/s instead).
    per_token = flops.training_flops_per_target_token(
        config,
        data.tokenizer.vocab_size,
        float(data.train.src_lengths.mean()) + 1,
        float(data.train.tgt_lengths.mean()) + 1,
    )
    summary["flops_per_target_token"] = per_token
    summary["training_flops"] = per_token * progress.target_tokens
    # target_tokens_per_s counts every rank's tokens; MFU is per device.
    per_device = per_token * summary["target_tokens_per_s"] / context.world_size
    summary["mfu"] = flops.mfu(per_device, context.device, trainer.precision)
    return summary


# ------------------------------------------------------------------------------------------ averaging
def average(out_dir: str | Path, last: int) -> tuple[dict, list[Path]]:
    """The mean of the newest `last` snapshots of a run (section 6.1), written to `out_dir/averaged.pt`."""
    averaged, used = average_last(out_dir, last)
    atomic_torch_save(averaged, Path(out_dir) / AVERAGED_NAME)
    return averaged, used


def load_for_evaluation(path: str | Path, average_last_k: int) -> tuple[dict, str]:
    """A checkpoint file as it is, or a run folder's newest snapshots averaged; with a description."""
    path = Path(path)
    if path.is_dir():
        checkpoint, used = average_last(path, average_last_k)
        return checkpoint, f"average of {', '.join(p.name for p in used)}"
    return load_checkpoint(path), str(path)


# ------------------------------------------------------------------------------------------ evaluation
def evaluate(
    checkpoint: dict,
    profile: Profile,
    *,
    data_dir=None,
    device: str | torch.device = "cpu",
    split: str | None = None,
    max_sentences: int | None = None,
    progress: bool = False,
) -> dict:
    """Translate the profile's test split (or `split`) with its beam settings and score it: sacreBLEU with
    its signature, tokenized BLEU, perplexity. The "hypotheses" entry holds the translations."""
    device = torch.device(device)
    model, tokenizer = model_from_checkpoint(checkpoint, device)
    test = load_parallel(
        profile.corpus,
        split or profile.test_split,
        profile.src_lang,
        profile.tgt_lang,
        data_dir,
    )
    limit = max_sentences or profile.eval_max_sentences
    sources, references = (
        (test.src[:limit], test.tgt[:limit]) if limit else (test.src, test.tgt)
    )
    scores = evaluate_translation(
        model,
        tokenizer,
        sources,
        references,
        profile.decode_settings(device),
        target_language=profile.tgt_lang,
        progress=progress,
    )
    scores["test_set"] = test.name
    scores["step"] = checkpoint.get("step")
    return scores


# ------------------------------------------------------------------------------------------ results
def default_results_name(profile: Profile) -> str:
    return f"translation_{profile.corpus}_{profile.src_lang}_{profile.tgt_lang}"


def write_results(
    summary: dict, profile: Profile, name: str | None = None, device=None
) -> Path:
    """`results/<profile>/<name>.json`: the run's numbers with provenance (git commit, device, torch, date).
    The test scores are also copied to the top level, where the book's summary table reads them."""
    metrics = {
        k: v
        for k, v in summary.items()
        if k not in ("out_dir", "wall_time_s", "model_config")
    }
    for key in ("sacrebleu", "bleu_tokenized", "ppl", "sacrebleu_signature"):
        if key in summary.get("test", {}):
            metrics[key] = summary["test"][key]
    config = {"model": summary["model_config"], "profile": profile.to_dict()}
    return write_result(
        name or default_results_name(profile),
        metrics,
        profile=profile.results_folder,
        config=config,
        wall_time_s=summary.get("wall_time_s"),
        device=device,
    )


# ------------------------------------------------------------------------------------------ all of it
@contextlib.contextmanager
def _this_runs_folder(
    out_dir: Path, context: DistributedContext, *, resume: bool, overwrite: bool
):
    """Rank 0 claims the folder (lock, no mixing of runs); the other ranks wait until it has."""
    if not context.is_main:
        barrier(context)
        yield
        return
    with claim_run_folder(out_dir, resume=resume, overwrite=overwrite):
        barrier(context)
        yield


def run(
    profile: Profile,
    out_dir: str | Path | None = None,
    *,
    data_dir=None,
    resume: bool | str | Path = False,
    overwrite: bool = False,
    device: str = "auto",
    evaluate_test: bool = True,
    results_name: str | None = None,
    show_progress: bool = True,
    on_step=None,
) -> dict:
    """Train, average the last snapshots, score the test set and write the results file.

    The run folder must hold no other run (`overwrite=True` clears it first; `resume=True` continues
    the one there), and no other process may be writing into it. Returns the training summary, with
    "test" (the scores) and "results_path" when evaluated. An interrupted run (Ctrl-C, SIGTERM) is
    neither averaged nor scored: resume it first.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir) if out_dir is not None else Path("runs") / profile.name
    context = init_distributed(device)
    try:
        with _this_runs_folder(
            out_dir, context, resume=resume is True, overwrite=overwrite
        ):
            summary = train(
                profile,
                out_dir,
                data_dir=data_dir,
                resume=resume,
                context=context,
                show_progress=show_progress,
                on_step=on_step,
            )
            if (
                evaluate_test
                and summary["stopped_by"] != "interrupted"
                and context.is_main
            ):
                averaged, used = average(out_dir, profile.average_last)
                scores = evaluate(
                    averaged,
                    profile,
                    data_dir=data_dir,
                    device=context.device,
                    progress=show_progress,
                )
                atomic_write_text(
                    out_dir / TRANSLATIONS_NAME,
                    "\n".join(scores.pop("hypotheses")) + "\n",
                )
                scores["averaged_checkpoints"] = [p.name for p in used]
                summary["test"] = scores
                summary["wall_time_s"] = round(time.perf_counter() - started, 1)
                summary["results_path"] = str(
                    write_results(summary, profile, results_name, context.device)
                )
        return summary
    finally:
        shutdown_distributed()
