"""Table 1 of the paper, measured: cost per layer, sequential operations and maximum path length.

Section 4 compares three ways of mixing information across the n positions of a sequence of
d-dimensional vectors. This module builds one layer of each kind with the same interface,
(batch, n, d) -> (batch, n, d), and measures what Table 1 states:

* cost per layer: FLOPs counted by PyTorch (`FlopCounterMode`) and checked against closed forms,
  wall-clock time, and the activation memory a layer keeps for its backward pass;
* sequential operations: the longest chain of dependent steps inside one layer;
* maximum path length: computed on the connectivity graph of positions, as the number of edges a
  signal crosses from an input position to an output position, in the shallowest stack that
  connects every pair.

The self-attention layer here is the part Table 1 counts, softmax(X X^T / sqrt(d)) X: the Q, K, V
and output projections are position-wise matrix products, O(n d^2) like a feed-forward layer, and
are left out of the table's comparison (`attention_flops(..., projections=True)` adds them).
Graphs are causal (output j may depend on inputs 0..j), as in the decoder. What the paper prints in
Table 1 is `paper.TABLE1`.
"""

from __future__ import annotations

import functools
import math
import operator
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

LAYER_KINDS: tuple[str, ...] = ("self-attention", "recurrent", "convolutional")
PATH_KINDS: tuple[str, ...] = (
    "self-attention",
    "restricted self-attention",
    "recurrent",
    "convolutional",
    "dilated convolutional",
)


# ----------------------------------------------------------------------------------------------
# One layer of each kind


class SelfAttentionLayer(nn.Module):
    """softmax(Q K^T / sqrt(d)) V over the whole sequence, one head of width d.

    Args:
        d: model width.
        projections: add the Q, K, V and output projections of a full attention sub-layer
            (4 n d^2 multiply-adds that Table 1 leaves out).
        fused: use `F.scaled_dot_product_attention` (never stores the n x n weights when a
            flash-style kernel is available); False writes the textbook steps out.
    """

    def __init__(self, d: int, *, projections: bool = False, fused: bool = True):
        super().__init__()
        self.fused = fused
        self.qkv = nn.Linear(d, 3 * d) if projections else None
        self.out = nn.Linear(d, d) if projections else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = k = v = x
        if self.qkv is not None:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v)
        else:
            weights = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(
                dim=-1
            )  # (B, n, n)
            y = weights @ v
        return self.out(y) if self.out is not None else y


class RecurrentLayer(nn.Module):
    """A plain tanh RNN, h_t = tanh(W x_t + U h_(t-1) + b): n steps, each waiting for the last."""

    def __init__(self, d: int):
        super().__init__()
        self.rnn = nn.RNN(d, d, batch_first=True, nonlinearity="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


class ConvolutionalLayer(nn.Module):
    """A 1-D convolution over positions with kernel size k and d input and output channels."""

    def __init__(self, d: int, kernel_size: int = 3):
        super().__init__()
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(
                f"kernel_size must be odd and >= 1 so outputs keep length n, got {kernel_size}"
            )
        self.conv = nn.Conv1d(d, d, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.transpose(1, 2)).transpose(1, 2)  # Conv1d wants (B, d, n)


def make_layer(kind: str, d: int, *, kernel_size: int = 3, **kwargs) -> nn.Module:
    """One layer of `kind` ("self-attention", "recurrent", "convolutional") of width d."""
    if kind == "self-attention":
        return SelfAttentionLayer(d, **kwargs)
    if kind == "recurrent":
        return RecurrentLayer(d)
    if kind == "convolutional":
        return ConvolutionalLayer(d, kernel_size)
    raise ValueError(
        f"unknown layer kind {kind!r}; choose one of {', '.join(LAYER_KINDS)}"
    )


# ----------------------------------------------------------------------------------------------
# Closed-form FLOPs (one multiply-add = 2 FLOPs), per sequence


def attention_flops(n: int, d: int, *, projections: bool = False) -> int:
    """Q K^T and weights @ V: 2 n^2 d each; projections add 4 matrices of d x d per position."""
    return 4 * n * n * d + (8 * n * d * d if projections else 0)


def recurrent_flops(n: int, d: int) -> int:
    """W x_t and U h_(t-1) at each of n steps: 2 d^2 each."""
    return 4 * n * d * d


def convolutional_flops(n: int, d: int, kernel_size: int = 3) -> int:
    """k taps of a d x d matrix at each of n positions."""
    return 2 * kernel_size * n * d * d


def layer_flops(kind: str, n: int, d: int, *, kernel_size: int = 3) -> int:
    """The closed form for `kind` (the layers built by `make_layer` with default options)."""
    if kind == "self-attention":
        return attention_flops(n, d)
    if kind == "recurrent":
        return recurrent_flops(n, d)
    if kind == "convolutional":
        return convolutional_flops(n, d, kernel_size)
    raise ValueError(
        f"unknown layer kind {kind!r}; choose one of {', '.join(LAYER_KINDS)}"
    )


def counted_flops(layer: nn.Module, x: torch.Tensor) -> int:
    """FLOPs of `layer(x)` as PyTorch's dispatcher sees them (matmuls, convolutions, attention).

    Attention is counted on its textbook path: the FLOP counter knows the GPU attention kernels but
    not every CPU one, and the textbook path performs the same matrix products on any device.
    """
    fused = [m for m in layer.modules() if isinstance(m, SelfAttentionLayer) and m.fused]
    for m in fused:
        m.fused = False
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            layer(x)
    finally:
        for m in fused:
            m.fused = True
    return int(counter.get_total_flops())


def flop_crossover_n(d: int) -> float:
    """The n at which self-attention and a recurrent layer cost the same FLOPs (4 n^2 d = 4 n d^2)."""
    return float(d)


# ----------------------------------------------------------------------------------------------
# Measured time and memory


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def time_layer(
    layer: nn.Module,
    x: torch.Tensor,
    *,
    repeats: int = 3,
    warmup: int = 1,
    min_time: float = 0.05,
    max_repeats: int = 200,
) -> float:
    """Fastest wall-clock seconds of one forward pass over at least `repeats` timed calls.

    Calls continue until they have taken `min_time` seconds in all (at most `max_repeats`), so
    small inputs get many samples. The minimum, not the mean, is reported: on a shared machine
    other processes only ever add time, so the fastest run is the best estimate of the layer's own.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        layer(x)
    _sync(x.device)
    times: list[float] = []
    while len(times) < repeats or (sum(times) < min_time and len(times) < max_repeats):
        start = time.perf_counter()
        layer(x)
        _sync(x.device)
        times.append(time.perf_counter() - start)
    return min(times)


def saved_activation_bytes(layer: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors autograd keeps from `layer(x)` for the backward pass.

    This is the activation memory a layer costs during training, measured the same way on any
    device: every tensor saved for backward is recorded once (by storage), and the layer's own
    parameters, which exist anyway, are not counted.
    """
    params = {p.data_ptr() for p in layer.parameters()}
    seen: dict[tuple[int, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in params:
            seen[(t.data_ptr(), t.numel())] = t.numel() * t.element_size()
        return t

    x = x.detach().requires_grad_(True)
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x)
    return sum(seen.values())


@dataclass
class Measurement:
    """One (kind, n, d) point: FLOPs counted and by formula, fastest forward time, saved bytes."""

    kind: str
    n: int
    d: int
    batch: int
    flops: int
    formula_flops: int
    seconds: float
    saved_bytes: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def measure_layer(
    kind: str,
    n: int,
    d: int,
    *,
    batch: int = 1,
    kernel_size: int = 3,
    repeats: int = 3,
    device: str | torch.device = "cpu",
    memory: bool = True,
    flops: bool = True,
    seed: int = 0,
) -> Measurement:
    """Build one `kind` layer of width d and measure it on a random (batch, n, d) input.

    `memory=False` and `flops=False` skip those measurements (reported as 0) when only time matters.
    """
    device = torch.device(device)
    torch.manual_seed(seed)
    layer = make_layer(kind, d, kernel_size=kernel_size).to(device).eval()
    x = torch.randn(batch, n, d, device=device)
    return Measurement(
        kind=kind,
        n=n,
        d=d,
        batch=batch,
        flops=counted_flops(layer, x) if flops else 0,
        formula_flops=batch * layer_flops(kind, n, d, kernel_size=kernel_size),
        seconds=time_layer(layer, x, repeats=repeats),
        saved_bytes=saved_activation_bytes(layer, x) if memory else 0,
    )


def sweep(
    kinds: tuple[str, ...] = LAYER_KINDS,
    ns: tuple[int, ...] = (64, 128, 256),
    ds: tuple[int, ...] = (64,),
    **kwargs,
) -> list[dict]:
    """`measure_layer` for every kind, n and d; a list of dicts, ready for `pandas.DataFrame`."""
    return [
        measure_layer(kind, n, d, **kwargs).to_dict()
        for d in ds
        for n in ns
        for kind in kinds
    ]


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of log(y) against log(x): the measured exponent of a power law."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(
            f"need at least two (x, y) points of equal count, got {len(xs)} and {len(ys)}"
        )
    if min(xs) <= 0 or min(ys) <= 0:
        raise ValueError("a log-log slope needs positive x and y")
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    var = sum((a - mx) ** 2 for a in lx)
    if var == 0:
        raise ValueError("all x are equal; a slope needs at least two distinct x")
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / var


def crossover(xs, cheaper, dearer) -> float | None:
    """First x where `cheaper(x)` stops being below `dearer(x)`, interpolated on log scales.

    Args:
        xs: increasing positions (e.g. sequence lengths).
        cheaper, dearer: costs at each x; at small x the first is expected to be the smaller.

    Returns:
        The crossing point, x[0] if `cheaper` is never below, or None if it stays below throughout.
    """
    xs, a, b = list(xs), list(cheaper), list(dearer)
    if not (len(xs) == len(a) == len(b)) or not xs:
        raise ValueError("xs, cheaper and dearer must be non-empty and of equal length")
    ratio = [math.log(p / q) for p, q in zip(a, b)]  # < 0 while cheaper is cheaper
    if ratio[0] >= 0:
        return float(xs[0])
    for i in range(1, len(xs)):
        if ratio[i] >= 0:
            lo, hi = math.log(xs[i - 1]), math.log(xs[i])
            t = -ratio[i - 1] / (ratio[i] - ratio[i - 1])
            return math.exp(lo + t * (hi - lo))
    return None


# ----------------------------------------------------------------------------------------------
# Connectivity: sequential operations and maximum path length


def layer_inputs(
    kind: str, n: int, *, kernel_size: int = 3, depth: int = 0
) -> list[list[int]]:
    """For each output position j of one causal layer, the input positions it reads directly.

    Args:
        kind: one of `PATH_KINDS` except "recurrent" (a recurrent layer is a chain, see
            `recurrent_graph`).
        n: sequence length.
        kernel_size: k of a convolution, or the neighbourhood r of restricted self-attention.
        depth: index of the layer in its stack (dilated convolutions use dilation k**depth).
    """
    k = kernel_size
    if k < 2 and kind != "self-attention":
        raise ValueError(
            f"kernel_size must be >= 2 for {kind!r} to connect neighbours, got {k}"
        )
    if kind == "self-attention":
        return [list(range(j + 1)) for j in range(n)]
    if kind in ("convolutional", "restricted self-attention"):
        return [list(range(max(0, j - k + 1), j + 1)) for j in range(n)]
    if kind == "dilated convolutional":
        step = k**depth
        return [[j - m * step for m in range(k) if j - m * step >= 0] for j in range(n)]
    raise ValueError(
        f"no layer-wise connectivity for {kind!r}; choose one of {', '.join(PATH_KINDS)}"
    )


def recurrent_graph(n: int) -> tuple[int, list[tuple[int, int]], list[int], list[int]]:
    """The unrolled recurrent layer: nodes 0..n-1 are inputs x_t, n..2n-1 hidden states h_t.

    Returns (number of nodes, edges (u, v), input nodes, output nodes); x_t -> h_t and h_(t-1) -> h_t.
    """
    edges = [(t, n + t) for t in range(n)] + [(n + t - 1, n + t) for t in range(1, n)]
    return 2 * n, edges, list(range(n)), list(range(n, 2 * n))


def _longest_chain(n_nodes: int, edges: list[tuple[int, int]]) -> int:
    """Edges on the longest path of a DAG whose edges go from lower to higher node ids."""
    incoming: list[list[int]] = [[] for _ in range(n_nodes)]
    for u, v in edges:
        if u >= v:
            raise ValueError("edges must point from a lower to a higher node id")
        incoming[v].append(u)
    depth = [0] * n_nodes
    for v in range(n_nodes):
        if incoming[v]:
            depth[v] = 1 + max(depth[u] for u in incoming[v])
    return max(depth)


def sequential_operations(kind: str, n: int, *, kernel_size: int = 3) -> int:
    """The longest chain of operations inside one layer that must run one after another."""
    if kind == "recurrent":
        n_nodes, edges, _, _ = recurrent_graph(n)
    else:
        inputs = layer_inputs(kind, n, kernel_size=kernel_size)
        n_nodes, edges = (
            2 * n,
            [(i, n + j) for j, srcs in enumerate(inputs) for i in srcs],
        )
    return _longest_chain(n_nodes, edges)


def _bfs_levels(n_nodes: int, edges: list[tuple[int, int]], sources: list[int]):
    """Breadth-first search from every source at once (one bit per source in a Python int).

    Yields, level by level, (level, {node: bitmask of sources first reaching it at this level},
    reached), where `reached[node]` is the bitmask of every source that reaches it so far.
    """
    successors: list[list[int]] = [[] for _ in range(n_nodes)]
    for u, v in edges:
        successors[u].append(v)
    reached = [0] * n_nodes
    for bit, s in enumerate(sources):
        reached[s] |= 1 << bit
    frontier, level = {s: reached[s] for s in sources}, 0
    while frontier:
        level += 1
        gained: dict[int, int] = {}
        for u, bits in frontier.items():
            for v in successors[u]:
                new = bits & ~reached[v]
                if new:
                    reached[v] |= new
                    gained[v] = gained.get(v, 0) | new
        if gained:
            yield level, gained, reached
        frontier = gained


def _stacked_reach(kind: str, n: int, kernel_size: int):
    """Stack layers of `kind` one at a time; after each, yield (depth, reach) where `reach[j]` is the
    bitmask of input positions connected to output j. Stops once every j reaches every i <= j."""
    reach = [1 << j for j in range(n)]
    full = [(1 << (j + 1)) - 1 for j in range(n)]
    depth = 0
    while reach != full:
        if depth > n:
            raise RuntimeError(
                f"{kind!r} with kernel_size={kernel_size} never connects {n} positions"
            )
        inputs = layer_inputs(kind, n, kernel_size=kernel_size, depth=depth)
        reach = [
            functools.reduce(operator.or_, (reach[i] for i in srcs), 0) for srcs in inputs
        ]
        depth += 1
        yield depth, reach


def max_path_length(kind: str, n: int, *, kernel_size: int = 3) -> int:
    """Edges a signal crosses between the farthest input and output positions.

    Layer-wise kinds (attention, convolutions) are stacked until every output j is connected to
    every input i <= j; in such a stack every path crosses each layer once, so the answer is the
    depth of the shallowest connecting stack. A single recurrent layer already connects every
    causal pair, through a chain of hidden states; the answer is its longest shortest path.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if kind == "recurrent":
        n_nodes, edges, sources, targets = recurrent_graph(n)
        longest, reached = 0, None
        for level, gained, reached in _bfs_levels(n_nodes, edges, sources):
            if not gained.keys().isdisjoint(targets):
                longest = level
        assert all(reached[t] == (1 << (j + 1)) - 1 for j, t in enumerate(targets)), (
            "the chain must connect i <= j"
        )
        return longest
    depth = 0
    for depth, _ in _stacked_reach(kind, n, kernel_size):
        pass
    return max(depth, 1)


def path_lengths_to_last(kind: str, n: int, *, kernel_size: int = 3) -> list[int]:
    """For each input position i, the path length from input i to the last output position n-1.

    Same graphs as `max_path_length`: recurrent steps along the chain for a recurrent layer, and
    for stacked layers the number of layers a stack needs before i reaches n-1. The largest entry
    is `max_path_length(kind, n)`.
    """
    lengths: list[int | None] = [None] * n

    def record(bits: int, level: int) -> None:
        for i in range(n):
            if bits >> i & 1 and lengths[i] is None:
                lengths[i] = level

    if kind == "recurrent":
        n_nodes, edges, sources, targets = recurrent_graph(n)
        for level, gained, _ in _bfs_levels(n_nodes, edges, sources):
            if targets[-1] in gained:
                record(gained[targets[-1]], level)
    else:
        for depth, reach in _stacked_reach(kind, n, kernel_size):
            record(reach[n - 1], depth)  # only inputs not yet recorded take this depth
        if n == 1:
            lengths[0] = 1
    return [int(x) for x in lengths]


def path_length_formula(kind: str, n: int, *, kernel_size: int = 3) -> int:
    """The closed forms the measured path lengths should match (causal layers, k >= 2)."""
    k = kernel_size
    if kind == "self-attention":
        return 1
    if kind == "recurrent":
        return n
    if kind in ("convolutional", "restricted self-attention"):
        return max(1, math.ceil((n - 1) / (k - 1)))
    if kind == "dilated convolutional":
        depth = 0
        while k**depth < n:
            depth += 1
        return max(1, depth)
    raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(PATH_KINDS)}")
