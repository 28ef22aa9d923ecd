"""The eager step's forward and backward replayed as CUDA graphs, one pair per batch shape (issue 54).

An eager training step of the `base` model dispatches some 3,000 operators (forward, loss, the
backward's autograd bookkeeping), and on a GPU each costs the host several microseconds whatever the
kernel's size: the host, not the GPU, sets the pace, and more so for the small models the `gpu` book
trains. With length buckets (`TrainSettings.length_buckets`) a run meets a few batch shapes only, so
each shape's forward and loss, and their backward, can be captured once as CUDA graphs
(`torch.cuda.make_graphed_callables`) and replayed every later step: two launches where there were
thousands, and no compiler, whose minutes per shape are why the `gpu` recipe trains eager. What
stays eager around the graphs is small: the batch's copy into the graph's inputs, the loss scaling,
each parameter's gradient taken from the graph, and the fused Adam update.

The graphs of all shapes share one memory pool. That is safe because a step replays one shape's
forward and then its backward before any other graph runs, so no graph's live tensors sit in memory
another is about to reuse; each shape keeps its own outputs and parameter gradients. Casts under
autocast are not cached (`autocast_context(cache_casts=False)`, which a capture needs), so a graph
reads the weights themselves, as the optimizer leaves them.

On a CPU there are no CUDA graphs: `GraphedLosses` then runs the same module eagerly, so the
plumbing is tested everywhere and only the capture needs a GPU (tests marked `gpu`).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

from ..runtime import attention_kernels
from ..runtime.precision import autocast_context
from .loss import LossParts


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
    batch shape (src and tgt sizes) arrives, then replayed; on other devices called eagerly.

    Capturing a shape runs its forward and backward a few times first (`warmup`, as torch asks, so
    lazy initialisations stay out of the graph), with `torch.autograd.grad`: no parameter's
    gradient changes, but dropout draws random numbers, so a graphed run is not the eager run's
    random stream. Not for DDP (its hooks live in the module the graph bypasses) or accumulation
    across shapes inside a step (each micro-batch's gradient is taken from its graph and summed
    eagerly, which holds; the check is on the caller)."""

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[..., LossParts],
        *,
        smoothing: float,
        pad_id: int,
        precision: str,
        warmup: int = 3,
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
        self._pool = torch.cuda.graph_pool_handle() if self.graphed else None

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
        if not self.graphed:
            loss, nll, tokens = self._eager(src, tgt)
            return LossParts(loss=loss, nll=nll, tokens=tokens)
        key = (tuple(src.shape), tuple(tgt.shape))
        step = self._by_shape.get(key)
        if step is None:
            try:
                step = self._capture(src, tgt)
            except RuntimeError as error:
                raise RuntimeError(
                    f"capturing the training step as CUDA graphs for batches of shape {key} "
                    f"failed ({str(error).splitlines()[0][:200]}): train without --cuda-graphs"
                ) from error
            self._by_shape[key] = step
        loss, nll, tokens = step(src, tgt)
        return LossParts(loss=loss, nll=nll, tokens=tokens)

    def _capture(self, src: torch.Tensor, tgt: torch.Tensor) -> Callable:
        # A module of its own for every shape: make_graphed_callables replaces its forward.
        module = BatchLoss(self.model, **self._settings)
        return torch.cuda.make_graphed_callables(
            module,
            (src.clone(), tgt.clone()),
            num_warmup_iters=self.warmup,
            allow_unused_input=True,  # a parameter a configuration leaves unused gets no gradient
            pool=self._pool,
        )
