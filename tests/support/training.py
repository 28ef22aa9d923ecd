"""The training tests' synthetic world: copy-task pairs, a tokenizer that is only bytes, a tiny
profile and a trainer over them, shared by the training, reliability, precision, misuse and CLI tests."""

import numpy as np
import torch

from annotated_transformer import Transformer
from annotated_transformer.data import EncodedPairs
from annotated_transformer.profiles import PROFILES, Profile
from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training.execution import choose_execution
from annotated_transformer.training.trainer import Trainer

VOCAB = 24

# The smoke profile at a scale of seconds for the commands' tests (train, average, translate, ...):
# snapshots every 2 steps, the last 2 averaged, a 60-piece vocabulary, fp32 everywhere.
TINY_RUN = dict(
    vocab_size=60,
    save_every_steps=2,
    keep_snapshots=3,
    average_last=2,
    eval_every=0,
    log_every=2,
    batch_tokens=256,
    eval_max_sentences=6,
    eval_batch_tokens=400,
    beam_size=2,
    max_len_b=5,
    precision="fp32",
)


class FakeTokenizer:
    """Checkpoints store the tokenizer's bytes; synthetic runs need nothing more."""

    def to_bytes(self) -> bytes:
        return b"synthetic"


def copy_pairs(n: int, seed: int) -> EncodedPairs:
    """Copy-task pairs of 3..9 tokens drawn from the ids after the specials."""
    rng = np.random.default_rng(seed)
    seqs = [
        rng.integers(4, VOCAB, size=int(rng.integers(3, 10))).tolist() for _ in range(n)
    ]
    return EncodedPairs(seqs, seqs)


def tiny_profile(**overrides) -> Profile:
    base = dict(
        name="test",
        description="unit test",
        book=PROFILES["smoke"].book,
        preset="tiny",
        model_overrides=dict(
            d_model=32, d_ff=64, n_heads=2, n_layers=1, dropout=0.1, max_len=32
        ),
        batch_tokens=96,
        accumulation=2,
        peak_lr=3e-3,
        warmup_steps=5,
        max_steps=12,
        log_every=3,
        eval_every=4,
        save_every_steps=4,
        save_every_minutes=None,
        keep_snapshots=3,
        average_last=3,  # no more than are kept (the profile refuses that)
        precision="fp32",
        eval_batch_tokens=200,
        seed=3,
    )
    dropout = overrides.pop("dropout", None)
    base.update(overrides)
    if dropout is not None:
        base["model_overrides"] = {**base["model_overrides"], "dropout": dropout}
    return Profile.flat(**base)


def make_trainer(profile, out_dir, on_step=None, model_seed=0, device="cpu"):
    torch.manual_seed(model_seed)
    model = Transformer(profile.model_config(), VOCAB, VOCAB).to(device)
    torch.manual_seed(profile.seed)
    train, settings = copy_pairs(120, 0), profile.train_settings()
    context = DistributedContext(device=torch.device(device))
    return Trainer(
        model,
        FakeTokenizer(),
        train,
        copy_pairs(20, 1),
        settings,
        out_dir,
        context=context,
        execution=choose_execution(model, settings, train, context),
        show_progress=False,
        on_step=on_step,
    )
