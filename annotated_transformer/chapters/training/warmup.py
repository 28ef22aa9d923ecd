"""Chapter 04's reader's question: why the paper needs a warm-up, post-norm against pre-norm.

A six-layer model of width 64 on the profile's training pairs, built post-norm (the paper) and
pre-norm (most Transformers since), is measured twice: the gradient each layer receives before any
update (`layer_gradient_norms`), and four short trainings with the same batches, with a warm-up to
the peak rate and starting at the peak at once (`warmup_run`).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...data.batching import TokenBatcher, collate_pairs
from ...model.config import preset
from ...model.transformer import Transformer
from ...runtime.progress import progress_bar
from ...training.schedule import noam_lr, peak_lr
from ...training.teacher_forcing import batch_loss


@dataclass(frozen=True)
class NormSetup:
    """The experiment's model and schedule: `layers` x `width`, a peak rate of `peak` after
    `warmup` steps, batches of `batch_tokens` a side."""

    layers: int = 6
    width: int = 64
    peak: float = 2e-3
    warmup: int = 50
    batch_tokens: int = 512

    @property
    def factor(self) -> float:
        """The schedule's scale that puts its top at `peak`."""
        return self.peak / peak_lr(self.width, self.warmup)


class NormExperiment:
    """The models and batches of the experiment, on `pairs` (the profile's training pairs)."""

    def __init__(
        self, pairs, vocab: int, setup: NormSetup, seed: int, device, betas, eps
    ):
        self.pairs, self.vocab, self.setup, self.seed = pairs, vocab, setup, seed
        self.device, self.betas, self.eps = device, betas, eps
        self.batches = TokenBatcher(
            pairs.src_lengths,
            pairs.tgt_lengths,
            setup.batch_tokens,
            seed=seed,
            skip_too_long=True,
        ).epoch_batches(0)

    def model(self, norm_position: str) -> Transformer:
        """A freshly initialised model, the same weights for every call with the same norm."""
        torch.manual_seed(self.seed)
        s = self.setup
        config = preset(
            "tiny",
            n_layers=s.layers,
            d_model=s.width,
            d_ff=4 * s.width,
            n_heads=4,
            dropout=0.1,
            norm_position=norm_position,
        )
        return Transformer(config, self.vocab, self.vocab).to(self.device)

    def batch(self, i: int):
        chosen = self.batches[i % len(self.batches)]
        src, tgt = collate_pairs([self.pairs[j] for j in chosen])
        return src.to(self.device), tgt.to(self.device)

    def loss(self, model: Transformer, i: int):
        c = model.config
        return batch_loss(
            model, *self.batch(i), smoothing=c.label_smoothing, pad_id=c.pad_id
        )


def layer_gradient_norms(experiment: NormExperiment, norm: str, n_batches: int = 4):
    """Norm of the loss gradient w.r.t. each layer's parameters at initialisation, averaged over
    the first `n_batches` batches: one row per (stack, layer)."""
    model = experiment.model(norm)
    norms = collections.defaultdict(float)
    layers = [("encoder", i, l) for i, l in enumerate(model.encoder_layers, 1)]
    layers += [("decoder", i, l) for i, l in enumerate(model.decoder_layers, 1)]
    for b in range(n_batches):
        model.zero_grad(set_to_none=True)
        parts = experiment.loss(model, b)
        (parts.loss / parts.tokens).backward()
        for stack, i, layer in layers:
            squares = sum(p.grad.pow(2).sum() for p in layer.parameters())
            norms[stack, i] += torch.sqrt(squares).item() / n_batches
    return pd.DataFrame(
        [
            {"stack": s, "layer": i, "gradient norm": v, "norm": f"{norm}-norm"}
            for (s, i), v in norms.items()
        ]
    )


def top_over_bottom(gradients: pd.DataFrame) -> dict[tuple[str, str], float]:
    """{(norm, stack): the top layer's gradient norm over the bottom layer's}."""
    out = {}
    for (norm, stack), g in gradients.groupby(["norm", "stack"]):
        by_layer = g.set_index("layer")["gradient norm"]
        out[norm, stack] = by_layer[by_layer.index.max()] / by_layer[1]
    return out


def run_name(norm: str, warmup: bool) -> str:
    return f"{norm}-norm, " + ("warm-up" if warmup else "no warm-up")


def warmup_run(
    experiment: NormExperiment,
    norm: str,
    warmup: bool,
    steps: int,
    progress: bool = True,
):
    """Train one model for `steps`: the schedule with its ramp, or cut to its peak from step 1
    (the rate of step max(step, w)). One row per step: the rate and the batch's NLL per token."""
    s = experiment.setup
    model = experiment.model(norm)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=0.0, betas=experiment.betas, eps=experiment.eps
    )
    torch.manual_seed(experiment.seed + 1)  # the same dropout draws in all four runs
    name = run_name(norm, warmup)
    log = []
    for step in progress_bar(range(1, steps + 1), desc=name, disable=not progress):
        at = step if warmup else max(step, s.warmup)
        rate = noam_lr(at, s.width, s.warmup, s.factor)
        for group in optimizer.param_groups:
            group["lr"] = rate
        parts = experiment.loss(model, step - 1)
        optimizer.zero_grad(set_to_none=True)
        (parts.loss / parts.tokens).backward()
        optimizer.step()
        nll = (parts.nll / parts.tokens).item()
        log.append({"run": name, "step": step, "learning rate": rate, "nll": nll})
    return log


RUN_ORDER = [(norm, warm) for norm in ("post", "pre") for warm in (True, False)]


def warmup_jobs(experiment: NormExperiment, steps: int, progress: bool) -> list[dict]:
    """The four runs' arguments for `warmup_run`, in RUN_ORDER; `progress`: each run's own bar."""
    return [
        dict(
            experiment=experiment, norm=norm, warmup=warm, steps=steps, progress=progress
        )
        for norm, warm in RUN_ORDER
    ]


def log_frame(logs, steps: int) -> pd.DataFrame:
    """The four runs' logs (in any order) as one frame in RUN_ORDER, with a running mean of the NLL
    over a twentieth of the steps for the chart."""
    by_run = {log[0]["run"]: log for log in logs}
    log = pd.DataFrame([row for n, w in RUN_ORDER for row in by_run[run_name(n, w)]])
    window = max(1, steps // 20)
    log["nll (running mean)"] = log.groupby("run").nll.transform(
        lambda s: s.rolling(window, 1).mean()
    )
    return log


def final_losses(log: pd.DataFrame, steps: int) -> pd.DataFrame:
    """Per run, the mean NLL of its last tenth of steps and the standard error of that mean
    over those batches (the batch-to-batch noise of the final loss)."""
    tail = max(1, steps // 10)
    last = log.groupby("run").nll.apply(lambda s: s.iloc[-tail:].to_numpy())
    return pd.DataFrame(
        {
            "run": last.index,
            f"mean NLL of the last {tail} steps": [float(v.mean()) for v in last],
            "standard error": [
                float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
                for v in last
            ],
        }
    )


def unigram_entropy(pairs, eos_id: int) -> float:
    """The loss of a model that ignores the context and predicts each target token (and the end
    of sentence) by its frequency alone, in nats per token."""
    ids = np.concatenate(
        [pairs[i][1] for i in range(len(pairs))] + [np.full(len(pairs), eos_id)]
    )
    freq = np.bincount(ids) / len(ids)
    freq = freq[freq > 0]
    return float(-(freq * np.log(freq)).sum())
