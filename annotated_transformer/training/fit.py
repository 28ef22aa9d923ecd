"""The one door to training: a config, batches, settings and a seed in; a trained model out.

The pipeline (`train --profile`), Table 3's rows and the parser all come through here, so the build
sequence is written once: seed the initial weights, build the model on its device, seed dropout apart
per rank, then train (or resume) with the `Trainer`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..data.batching import EncodedPairs
from ..model.config import TransformerConfig
from ..model.transformer import Transformer
from ..runtime.distributed import DistributedContext
from .checkpoint import RESUME_NAME
from .execution import choose_execution
from .settings import TrainSettings
from .trainer import Trainer, TrainResult


@dataclass
class Fitted:
    """What `fit` returns: the model (trained in place), its trainer (for epochs done, precision...)
    and the trainer's result (steps, why it stopped, the last validation loss)."""

    model: Transformer
    trainer: Trainer
    result: TrainResult


def build_model(
    config: TransformerConfig,
    vocab_size: int | tuple[int, int],
    *,
    seed: int,
    device: torch.device | str = "cpu",
) -> Transformer:
    """The model with the initial weights of `seed`, the same on every rank and every rerun.

    `vocab_size` is one shared vocabulary (tied embeddings, as the paper) or a (source, target) pair
    of separate ones.
    """
    torch.manual_seed(seed)
    if isinstance(vocab_size, tuple):
        src, tgt = vocab_size
        return Transformer(config, src, tgt, share_embeddings=False).to(device)
    return Transformer(config, vocab_size, vocab_size, share_embeddings=True).to(device)


def fit(
    config: TransformerConfig,
    tokenizer,
    train: EncodedPairs,
    valid: EncodedPairs | None,
    settings: TrainSettings,
    out_dir: str | os.PathLike,
    *,
    vocab_size: int | tuple[int, int] | None = None,
    context: DistributedContext | None = None,
    device: torch.device | str = "cpu",
    resume: bool | str | os.PathLike = False,
    metadata: dict | None = None,
    show_progress: bool = True,
    on_step: Callable[[Trainer], None] | None = None,
    on_start: Callable[[Trainer], None] | None = None,
) -> Fitted:
    """Build a model from `config` and train it on `train` under `settings` into `out_dir`, with
    the `Trainer`'s arguments; `vocab_size` defaults to the tokenizer's, shared by source and
    target, `context` to one process on `device`. `resume`: True continues from
    `out_dir/last.pt`, a path names another resume checkpoint. `on_start(trainer)` is called once
    the trainer is built (and resumed), before the first step.

    The seed is `settings.seed`: the initial weights come from it alone, dropout from
    `seed * 1000 + rank` (different on every rank, as it should be).
    """
    context = context or DistributedContext(device=torch.device(device))
    vocab = vocab_size if vocab_size is not None else tokenizer.vocab_size
    model = build_model(config, vocab, seed=settings.seed, device=context.device)
    torch.manual_seed(settings.seed * 1000 + context.rank)
    execution = choose_execution(model, settings, train, context)
    trainer = Trainer(
        model,
        tokenizer,
        train,
        valid,
        settings,
        out_dir,
        context,
        execution=execution,
        show_progress=show_progress,
        on_step=on_step,
        metadata=metadata,
    )
    if resume:
        path = Path(out_dir) / RESUME_NAME if resume is True else Path(resume)
        if not path.exists():
            raise FileNotFoundError(f"--resume {path}: no such checkpoint")
        trainer.resume_from(path)
    if on_start is not None:
        on_start(trainer)
    return Fitted(model, trainer, trainer.train())
