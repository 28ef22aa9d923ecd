"""The copy task: learn to output the input sequence. The smallest end-to-end proof that the model,
the loss, the schedule and decoding work together, trained on a CPU in about a minute and a half.
"""

from __future__ import annotations

import argparse
import time

import torch

from ...data.synthetic import synthetic_batch
from ...model.config import preset
from ...model.decoding import greedy_decode
from ...model.transformer import Transformer
from ...runtime.checks import COUNT, NON_NEGATIVE_INT
from ...training.loss import label_smoothed_cross_entropy
from ...training.schedule import NoamSchedule


def sequence_accuracy(model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> float:
    """Fraction of sources whose greedy output equals the target exactly (eos included)."""
    out = greedy_decode(model, src, max_new_tokens=tgt.size(1) - 1)
    width = max(out.size(1), tgt.size(1))
    out = torch.nn.functional.pad(out, (0, width - out.size(1)))
    tgt = torch.nn.functional.pad(tgt, (0, width - tgt.size(1)))
    return (out == tgt).all(dim=1).float().mean().item()


def train_copy_task(
    task: str = "copy",
    steps: int = 1600,
    batch_size: int = 64,
    vocab_size: int = 14,
    length: tuple[int, int] = (1, 10),
    seed: int = 0,
    log_every: int = 200,
    verbose: bool = True,
    positional: str = "sinusoidal",
) -> dict:
    """Train a tiny Transformer on synthetic data and return held-out exact-sequence accuracy.

    `positional` is "sinusoidal" (the paper's) or "learned" (Table 3's row E), for chapter 04's
    question whether either extrapolates to longer sequences than it was trained on. The
    returned `history` holds step 1's loss alone, then at every multiple of `log_every` (and the
    last step) the mean loss of the steps since the previous multiple, step 1 included in the
    first (each record's `steps` says how many), with the learning rate its last step used.
    """
    torch.manual_seed(seed)
    config = preset(
        "tiny",
        dropout=0.1,
        label_smoothing=0.1,
        warmup_steps=200,
        positional=positional,
    )
    model = Transformer(config, vocab_size, vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = NoamSchedule(optimizer, config.d_model, config.warmup_steps, factor=1.0)
    train_gen = torch.Generator().manual_seed(seed + 1)
    start = time.perf_counter()
    history, window = [], []
    for step in range(1, steps + 1):
        src, tgt = synthetic_batch(
            task, batch_size, length, vocab_size, generator=train_gen
        )
        logits = model(src, tgt[:, :-1])
        parts = label_smoothed_cross_entropy(
            logits, tgt[:, 1:], config.label_smoothing, config.pad_id
        )
        loss = parts.loss / parts.tokens
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        lr = schedule.get_last_lr()[0]  # the rate this step's update uses
        optimizer.step()
        schedule.step()
        window.append(loss.item())
        # the first step alone (the untrained model's loss), then every log_every steps the mean
        # of those log_every steps (one batch's loss alone jumps with its draw)
        if step == 1 or step % log_every == 0 or step == steps:
            mean = sum(window) / len(window)
            history.append({"step": step, "loss": mean, "steps": len(window), "lr": lr})
            if step % log_every == 0 or step == steps:  # step 1 stays in the first window
                window = []
            if verbose:
                print(f"step {step:5d}  loss {mean:.3f}  lr {lr:.2e}", flush=True)
    train_seconds = time.perf_counter() - start
    # Held-out sequences come from a generator the training loop never touched.
    test_gen = torch.Generator().manual_seed(seed + 12345)
    src, tgt = synthetic_batch(task, 1000, length, vocab_size, generator=test_gen)
    accuracy = sequence_accuracy(model, src, tgt)
    return {
        "task": task,
        "positional": positional,
        "steps": steps,
        "accuracy": accuracy,
        "train_seconds": train_seconds,
        "history": history,
        "model": model,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=["copy", "reverse"], default="copy")
    parser.add_argument(
        "--steps",
        type=COUNT.argument(),
        default=1600,
        help="optimizer steps (default 1600, about a minute and a half)",
    )
    parser.add_argument("--batch-size", type=COUNT.argument(), default=64)
    parser.add_argument("--seed", type=NON_NEGATIVE_INT.argument(), default=0)


def run(args: argparse.Namespace) -> int:
    print(
        f"training a tiny Transformer on the {args.task} task for {args.steps} steps on the CPU"
    )
    result = train_copy_task(args.task, args.steps, args.batch_size, seed=args.seed)
    print(
        f"held-out exact-sequence accuracy: {result['accuracy']:.1%} "
        f"(1,000 sequences, {result['train_seconds']:.0f} s of training)"
    )
    return 0 if result["accuracy"] >= 0.99 else 1


@torch.no_grad()
def accuracy_by_length(
    model: Transformer, lengths, per_length: int, vocab_size: int = 14, seed: int = 0
) -> list[dict]:
    """Per length n: the share of `per_length` random sequences of n tokens that greedy decoding
    copies whole (eos included), and the share of tokens put in their place."""
    generator = torch.Generator().manual_seed(seed + 12345)
    rows = []
    for n in lengths:
        src, tgt = synthetic_batch("copy", per_length, n, vocab_size, generator=generator)
        out = greedy_decode(model, src, max_new_tokens=n + 1)
        out = torch.nn.functional.pad(out, (0, tgt.size(1) - out.size(1)))
        out = out[:, : tgt.size(1)]
        inner = (out[:, 1 : n + 1] == tgt[:, 1 : n + 1]).float().mean().item()
        whole = (out == tgt).all(1).float().mean().item()
        rows.append({"length": n, "exact_sequence": whole, "tokens_in_place": inner})
    return rows
