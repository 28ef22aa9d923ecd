"""The eager step's forward and backward replayed as CUDA graphs, one pair per batch shape.

An eager training step of the `base` model dispatches some 3,000 operators (forward, loss, the
backward's autograd bookkeeping), and on a GPU each costs the host several microseconds whatever the
kernel's size: the host, not the GPU, sets the pace, and more so for the small models the `gpu` book
trains. With length buckets (`TrainSettings.length_buckets`) a run meets a few batch shapes only, so
each shape's forward and loss, and their backward, can be captured once as CUDA graphs
(`torch.cuda.make_graphed_callables`) and replayed every later step: two launches where there were
thousands, and no compiler, whose minutes per shape are why the `gpu` recipe trains eager. What
stays eager around the graphs is small: the batch's copy into the graph's inputs, the loss scaling,
each parameter's gradient taken from the graph, and the fused Adam update.

The graphs of all shapes share one memory pool: a shape captured later may place its scratch
tensors where an earlier shape keeps its outputs and gradients. That is safe as the trainer uses
the graphs: one shape's forward, then its backward, and the results read (the loss into the step's
sums, each parameter's gradient added into a `.grad` of its own, `keep_gradients`) before any other
graph replays. Each shape does keep its own outputs and a copy of every parameter's gradient, so
memory grows with the shapes a run meets: past `gradient_budget_bytes` of those copies, further
shapes run eagerly. Casts under autocast are not cached (`autocast_context(cache_casts=False)`,
which a capture needs), so a graph reads the weights themselves, as the optimizer leaves them.

Capturing runs a shape's forward and backward a few times first (torch's warm-up), which draws
dropout's random numbers; the CUDA generator is put back afterwards, so the run's random stream is
what replays draw, and a resumed run, which captures its shapes again, draws what it would have.

On a CPU there are no CUDA graphs: `GraphedLosses` then runs the same module eagerly, so the
plumbing is tested everywhere and only the capture needs a GPU (tests marked `gpu`).
"""

from __future__ import annotations

import logging
from typing import Callable

import torch
import torch.nn as nn

from ..runtime import attention_kernels
from ..runtime.compiling import failure_summary
from ..runtime.precision import autocast_context
from .loss import LossParts

logger = logging.getLogger(__name__)

# The copies of the parameters' gradients that captured shapes may keep, in all: 4 GiB is some 110
# shapes of the `gpu` recipe's model (9.4M parameters) and 17 of the paper's `base` (63M), in
# float32.
GRADIENT_BUDGET_BYTES = 4 << 30


class BatchLoss(nn.Module):
    """The summed loss, NLL and token count of one collated batch (src, tgt) as a module, whose
    parameters (the model's) are what a graph of it takes gradients for. Every target row is
    projected (a fixed shape: no selection of the real ones), as on a GPU eagerly."""

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[..., LossParts],
        *,
        smoothing: float,
        pad_id: int,
        precision: str,
    ):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.smoothing, self.pad_id, self.precision = smoothing, pad_id, precision

    def forward(
        self, src: torch.Tensor, tgt: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        with (
            autocast_context(src.device, self.precision, cache_casts=False),
            attention_kernels.for_varying_shapes(src.device),
        ):
            logits = self.model(src, tgt_in)
        parts = self.loss_fn(logits, tgt_out, self.smoothing, self.pad_id)
        return parts.loss, parts.nll, parts.tokens


class GraphedLosses:
    """`BatchLoss` of `model`, captured as a forward and a backward CUDA graph the first time each
    batch shape (src and tgt sizes) arrives, then replayed; on other devices, for a model in eval
    mode and for shapes past the budget, called eagerly.

    Capturing a shape runs its forward and backward `warmup` times first (as torch asks, so lazy
    initialisations stay out of the graph) with `torch.autograd.grad`: no parameter's gradient
    changes, and the random generator is restored. Micro-batches of any shapes may accumulate
    into one step: every call first gives each parameter a gradient of its own to add into
    (`keep_gradients`), so the optimizer must zero gradients, not drop them. Not for DDP, whose
    hooks live in the module the graph bypasses (the trainer refuses it)."""

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[..., LossParts],
        *,
        smoothing: float,
        pad_id: int,
        precision: str,
        warmup: int = 3,
        gradient_budget_bytes: int = GRADIENT_BUDGET_BYTES,
    ):
        self.model = model
        self._settings = dict(
            loss_fn=loss_fn, smoothing=smoothing, pad_id=pad_id, precision=precision
        )
        self.warmup = warmup
        self.device = next(model.parameters()).device
        self.graphed = self.device.type == "cuda"
        self._eager = BatchLoss(model, **self._settings)
        self._by_shape: dict[tuple, Callable] = {}
        gradient_bytes = sum(
            p.numel() * p.element_size() for p in model.parameters() if p.requires_grad
        )
        # how many shapes may keep their copy of the gradients (at least one)
        self.max_shapes = max(1, gradient_budget_bytes // max(1, gradient_bytes))
        self._warned_full = False
        self._pool = None
        if self.graphed:
            with torch.cuda.device(self.device):
                self._pool = torch.cuda.graph_pool_handle()

    def keep_gradients(self) -> None:
        """Give every parameter a gradient tensor of its own, to be zeroed rather than dropped
        between steps. A graph's backward returns each parameter's gradient in the graph's own
        memory, and autograd takes such a tensor as the parameter's `.grad` when it has none: a
        second micro-batch of the same shape in one step would then overwrite the first's gradient
        before adding itself to it. With gradients kept, each micro-batch's is added in place."""
        for p in self.model.parameters():
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)

    @property
    def shapes(self) -> list[tuple]:
        """The (src shape, tgt shape) pairs captured so far."""
        return list(self._by_shape)

    def __call__(self, src: torch.Tensor, tgt: torch.Tensor) -> LossParts:
        self.keep_gradients()
        step = self._step_for(src, tgt)
        loss, nll, tokens = step(src, tgt)
        return LossParts(loss=loss, nll=nll, tokens=tokens)

    def _step_for(self, src: torch.Tensor, tgt: torch.Tensor) -> Callable:
        """The graphed module for this batch's shape (captured now if new), or the eager one: off
        a GPU, for a model in eval mode (the graphs hold training's dropout) and past the budget."""
        if not self.graphed or not self.model.training:
            return self._eager
        key = (tuple(src.shape), tuple(tgt.shape))
        step = self._by_shape.get(key)
        if step is not None:
            return step
        if len(self._by_shape) >= self.max_shapes:
            if not self._warned_full:
                logger.warning(
                    "--cuda-graphs: %d batch shapes captured, as many as the gradient budget "
                    "allows; further shapes run eagerly",
                    len(self._by_shape),
                )
                self._warned_full = True
            return self._eager
        try:
            step = self._capture(src, tgt)
        except RuntimeError as error:
            raise RuntimeError(
                f"capturing the training step as CUDA graphs for batches of shape {key} "
                f"failed ({failure_summary(error)}): train without --cuda-graphs"
            ) from error
        self._by_shape[key] = step
        return step

    def _capture(self, src: torch.Tensor, tgt: torch.Tensor) -> Callable:
        # A module of its own for every shape: make_graphed_callables replaces its forward. The
        # warm-up's dropout draws are undone, and the capture runs on the model's device.
        module = BatchLoss(self.model, **self._settings)
        with torch.cuda.device(self.device):
            rng = torch.cuda.get_rng_state(self.device)
            graphed = torch.cuda.make_graphed_callables(
                module,
                (src.clone(), tgt.clone()),
                num_warmup_iters=self.warmup,
                allow_unused_input=True,  # a parameter a configuration leaves unused: no gradient
                pool=self._pool,
            )
            torch.cuda.set_rng_state(rng, self.device)
        return graphed
