"""Several Table 3 models in one step, against one after another and against processes.

    python benchmarks/bench_stacked_rows.py --device cuda --out results/gpu/stacked_rows.json
    python benchmarks/bench_stacked_rows.py --quick --out /tmp/stacked.json   # CPU: the plumbing

A Table 3 row at the `gpu` scale (d_model 256) is too small to keep an H100 busy, so the book trains
several at once. Two ways exist, and the issue asks which is faster:

- processes: each model trained by a process of its own, all sharing the device (what `table3
  --workers` does, and what the calibration measured);
- stacked: the models' weights stacked along a new first dimension (`torch.func.stack_module_state`)
  and one step of all of them through `torch.func.vmap`, so each kernel launch does the work of
  every model.

Both against the baseline, the same models trained one after another in one process. Every variant
trains `--models` copies of one row (the seeds of a row share their shapes, so they can stack) on
the same synthetic batches: each model its own batch of Multi30k-like lengths, one padded shape for
all, with the trainer's fused Adam, in the precision a Table 3 row gets on the device. The one
process's two variants alternate within every round; the processes run afterwards, their clock
started by a barrier once each has warmed up.

Stacking changes how the loss is written (vmap needs fixed shapes: the logits at every target
position, padding masked, through the plain-op loss), not what it computes. Before timing, the
record checks that a stacked step gives each model the loss and gradients that the trainer's own
path (`batch_loss`) gives it alone, and, after one Adam step each, the same loss again (dropout off,
fp32; at the device's precision too where that is not fp32, with a tolerance for its rounding:
`TOLERANCES`); where they disagree it stops before timing anything.
The record also keeps the warnings vmap raised: an operator without a batching rule runs once per
model (torch's CPU attention has none; on CUDA, see the record); and the dtypes the linear layers
returned each way, since under autocast a batched linear adds its bias in float32 (pytorch#192617:
on an AMD EPYC in bf16, float32 and bf16 stacked where alone gives bf16 only).

Times: the in-process variants alternate in rounds of `INNER` steps, the device drained at each
round's ends, and each reports the median round's seconds per step; the processes report their
wall time from the barrier to the last one's end over the steps (a mean: `mean_s`).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import itertools
import json
import multiprocessing as mp
import queue
import sys
import time
import warnings
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from bench_model import interleaved, provenance  # noqa: E402
from bench_precision import synthetic_pairs  # noqa: E402
from profile_step import sync  # noqa: E402

from annotated_transformer.chapters.model_variations.rows import (  # noqa: E402
    row_config,
    row_settings,
)
from annotated_transformer.data import collate_pairs  # noqa: E402
from annotated_transformer.model.config import TransformerConfig  # noqa: E402
from annotated_transformer.model.transformer import Transformer  # noqa: E402
from annotated_transformer.profiles import get_profile  # noqa: E402
from annotated_transformer.runtime import attention_kernels  # noqa: E402
from annotated_transformer.runtime.devices import resolve_device  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402
from annotated_transformer.runtime.precision import (  # noqa: E402
    autocast_context,
    resolve_precision,
)
from annotated_transformer.training.loss import composite_smoothed_cross_entropy  # noqa: E402
from annotated_transformer.training.schedule import build_optimizer  # noqa: E402
from annotated_transformer.training.teacher_forcing import batch_loss  # noqa: E402

VARIANTS = ("one_after_another", "stacked", "processes")
POOL = 4  # distinct batches per model, cycled
INNER = 5  # steps in a timed round of the in-process variants


def model_batches(
    config: TransformerConfig, vocab: int, rows: int, model: int, seed: int, device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`POOL` (src, tgt) batches of model number `model`, all of one shape: `rows` synthetic pairs
    of Multi30k's lengths (`bench_precision.synthetic_pairs`: 10-20 source, 12-22 target pieces),
    collated as training collates them and padded to 21 and 24 columns, their longest."""
    batches = []
    for k in range(POOL):
        pairs = synthetic_pairs(rows, vocab, seed=(seed * 1000 + model) * POOL + k)
        src, tgt = collate_pairs(
            [pairs[i] for i in range(rows)],
            config.pad_id,
            config.bos_id,
            config.eos_id,
            pad_to=(rows, 21, 24),
        )
        batches.append((src.to(device), tgt.to(device)))
    return batches


def padded_batches(config, vocab: int, rows: int, models: int, seed: int, device) -> list:
    """Each model's `model_batches`."""
    return [model_batches(config, vocab, rows, m, seed, device) for m in range(models)]


def optimizer(module: torch.nn.Module, settings, device) -> torch.optim.Adam:
    """The trainer's fused Adam at the row's peak rate, held (the schedule does not change speed)."""
    adam = build_optimizer(module, settings, device)
    for group in adam.param_groups:
        group["lr"] = settings.peak_lr or 1e-3
    return adam


def build_models(
    config: TransformerConfig, vocab: int, models: int, seed: int, device
) -> list[Transformer]:
    """Model m initialised from seed `seed + m`, whichever process builds it."""
    out = []
    for m in range(models):
        torch.manual_seed(seed + m)
        out.append(Transformer(config, vocab, vocab).to(device).train())
    return out


class Stacked:
    """`models` (one shape) as one set of stacked leaves, trained by one vmapped step."""

    def __init__(self, models: list[Transformer], precision: str, device, settings):
        stacked, self.buffers = torch.func.stack_module_state(models)
        # The optimizer's tensors must be the very leaves the vmapped loss reads: a Parameter made
        # from a tensor is a new leaf (sharing its storage) whose .grad backward would never fill.
        holder = torch.nn.Module()
        holder.stacked = torch.nn.ParameterList(
            torch.nn.Parameter(t.detach()) for t in stacked.values()
        )
        self.params = dict(zip(stacked, holder.stacked))
        # functional_call needs every name of a tied weight (embeddings and output projection)
        first: dict[int, str] = {}
        named = list(models[0].named_parameters(remove_duplicate=False))
        for name, p in named:
            first.setdefault(id(p), name)
        self.alias = {name: first[id(p)] for name, p in named}
        self.skeleton = copy.deepcopy(models[0]).to("meta")
        self.config, self.precision, self.device = models[0].config, precision, device
        self.optimizer = optimizer(holder, settings, device)
        self.losses = torch.func.vmap(self._one, randomness="different")

    def _one(self, params, buffers, src, tgt):
        named = {name: params[a] for name, a in self.alias.items()}
        logits = torch.func.functional_call(
            self.skeleton, (named, buffers), (src, tgt[:, :-1]), tie_weights=False
        )
        c = self.config
        parts = composite_smoothed_cross_entropy(
            logits, tgt[:, 1:], c.label_smoothing, c.pad_id
        )
        return parts.loss / parts.tokens

    def loss(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """Per-model mean losses of stacked batches (models, rows, width)."""
        with (
            autocast_context(self.device, self.precision),
            attention_kernels.for_varying_shapes(self.device),
        ):
            return self.losses(self.params, self.buffers, src, tgt)

    def step(self, src: torch.Tensor, tgt: torch.Tensor) -> None:
        self.loss(src, tgt).sum().backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


def separate_loss(model: Transformer, src, tgt, precision: str) -> torch.Tensor:
    """One model's mean loss as the trainer computes it (`batch_loss`: real target rows only)."""
    c = model.config
    parts = batch_loss(
        model, src, tgt, smoothing=c.label_smoothing, pad_id=c.pad_id, precision=precision
    )
    return parts.loss / parts.tokens


def _compare(
    stacked: Stacked, alone: list[Transformer], src, tgt, precision: str
) -> dict:
    """Largest differences of the per-model losses and gradients, stacked against alone."""
    stacked_losses = stacked.loss(src, tgt)
    stacked_losses.sum().backward()
    loss_diff = grad_diff = grad_scale = 0.0
    for m, model in enumerate(alone):
        loss = separate_loss(model, src[m], tgt[m], precision)
        loss.backward()
        loss_diff = max(loss_diff, abs(loss.item() - stacked_losses[m].item()))
        for name, p in model.named_parameters():
            mine = stacked.params[stacked.alias[name]].grad[m]
            grad_diff = max(grad_diff, float((p.grad.float() - mine.float()).abs().max()))
            grad_scale = max(grad_scale, float(p.grad.abs().max()))
    return {
        "max_loss_difference": loss_diff,
        "max_gradient_difference": grad_diff,
        "largest_gradient": grad_scale,
        "loss": float(stacked_losses.detach().mean()),
    }


@contextlib.contextmanager
def linear_output_dtypes(module: torch.nn.Module):
    """The dtypes of what `module`'s linear layers return while the block runs."""
    seen: set[str] = set()

    def note(_layer, _inputs, output) -> None:
        seen.add(str(output.dtype).removeprefix("torch."))

    hooks = [
        m.register_forward_hook(note)
        for m in module.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        yield seen
    finally:
        for hook in hooks:
            hook.remove()


def stacked_matches_separate(
    config: TransformerConfig,
    vocab: int,
    rows: int,
    models: int,
    device,
    settings,
    precision: str = "fp32",
) -> dict:
    """One step, stacked against each model alone (no dropout): the losses and gradients, then,
    after one Adam step on each side, the losses again (an optimizer that missed the stacked
    weights would leave them as they were)."""
    config = config.replace(dropout=0.0)
    alone = build_models(config, vocab, models, seed=7, device=device)
    batches = padded_batches(config, vocab, rows, models, seed=7, device=device)
    stacked = Stacked(alone, precision, device, settings)
    src = torch.stack([b[0][0] for b in batches])
    tgt = torch.stack([b[0][1] for b in batches])
    before = _compare(stacked, alone, src, tgt, precision)
    stacked.optimizer.step()
    stacked.optimizer.zero_grad(set_to_none=True)
    for model in alone:
        adam = optimizer(model, settings, device)
        adam.step()
        adam.zero_grad(set_to_none=True)
    after = _compare(stacked, alone, src, tgt, precision)
    # Under autocast a batched linear may add its bias outside the cast (pytorch#192617), leaving
    # activations in float32 where the model alone has bf16: the record says what the linears gave.
    with linear_output_dtypes(stacked.skeleton) as stacked_dtypes, torch.no_grad():
        stacked.loss(src, tgt)
    with (
        linear_output_dtypes(alone[0]) as alone_dtypes,
        autocast_context(device, precision),
        torch.no_grad(),
    ):
        alone[0](src[0], tgt[0][:, :-1])
    return {
        "models": models,
        "precision": precision,
        "linear_output_dtypes": {
            "stacked": sorted(stacked_dtypes),
            "alone": sorted(alone_dtypes),
        },
        **{k: v for k, v in before.items() if k != "loss"},
        "loss_before_step": before["loss"],
        "loss_after_step": after["loss"],
        "max_loss_difference_after_step": after["max_loss_difference"],
    }


# How far stacked may be from alone: fp32 rounding, or a 16-bit autocast's (where, besides, torch
# adds a batched linear's bias in float32). Loss: relative; gradients: against the largest one;
# after a step: against how far the step moved the loss.
TOLERANCES = {
    "fp32": (1e-5, 1e-4, 0.01),
    "bf16": (1e-2, 0.2, 0.25),
    "fp16": (1e-2, 0.2, 0.25),
}


def disagreements(check: dict) -> list[str]:
    """What in a `stacked_matches_separate` check lies outside its precision's tolerance."""
    loss_tol, grad_tol, step_tol = TOLERANCES[check["precision"]]
    moved = abs(check["loss_after_step"] - check["loss_before_step"])
    faults = []
    if check["max_loss_difference"] > loss_tol * max(1.0, abs(check["loss_before_step"])):
        faults.append(f"losses differ by {check['max_loss_difference']:.3g}")
    if check["max_gradient_difference"] > grad_tol * check["largest_gradient"]:
        faults.append(
            f"gradients differ by {check['max_gradient_difference']:.3g} "
            f"(largest {check['largest_gradient']:.3g})"
        )
    if moved == 0 or check["max_loss_difference_after_step"] > step_tol * moved:
        faults.append(
            f"after one Adam step the losses differ by "
            f"{check['max_loss_difference_after_step']:.3g} (the step moved them {moved:.3g})"
        )
    return faults


def _train_alone(arguments: dict, go, messages) -> None:
    """A process of the `processes` variant: one model, warmed up, then timed from `go`."""
    torch.set_num_threads(arguments["threads"])
    device = torch.device(arguments["device"])
    config, vocab, m = arguments["config"], arguments["vocab"], arguments["index"]
    model = build_models(config, vocab, 1, arguments["seed"] + m, device)[0]
    batches = model_batches(
        config, vocab, arguments["rows"], m, arguments["seed"], device
    )
    adam = optimizer(model, arguments["settings"], device)

    def step(k: int) -> None:
        src, tgt = batches[k % POOL]
        separate_loss(model, src, tgt, arguments["precision"]).backward()
        adam.step()
        adam.zero_grad(set_to_none=True)

    for k in range(arguments["warmup"]):
        step(k)
    sync(device)
    messages.put(("ready", m, None))
    go.wait()
    started = time.perf_counter()
    for k in range(arguments["steps"]):
        step(k)
    sync(device)
    messages.put(("done", m, time.perf_counter() - started))


def time_processes(arguments: dict, models: int, deadline_s: float = 600.0) -> dict:
    """Wall seconds per step of all `models` when each trains in a process of its own, the clock
    started once every one has warmed up. A process that dies is named at once (its exit code);
    one that neither answers nor dies within `deadline_s` a phase stops the run; none is left."""
    context = mp.get_context("spawn")
    go, messages = context.Event(), context.Queue()
    workers = [
        context.Process(
            target=_train_alone,
            args=({**arguments, "index": m}, go, messages),
            daemon=True,
        )
        for m in range(models)
    ]
    for w in workers:
        w.start()

    def collect(kind: str) -> dict[int, float]:
        got: dict[int, float] = {}
        until = time.monotonic() + deadline_s
        while len(got) < models:
            try:
                what, m, seconds = messages.get(timeout=5)
            except queue.Empty:
                dead = [
                    f"process {m} exited with {w.exitcode}"
                    for m, w in enumerate(workers)
                    if w.exitcode is not None and w.exitcode != 0
                ]
                if dead:
                    raise RuntimeError("; ".join(dead)) from None
                if time.monotonic() > until:
                    raise TimeoutError(
                        f"{models - len(got)} process(es) not {kind} after {deadline_s:.0f} s"
                    ) from None
                continue
            if what != kind:
                raise RuntimeError(f"process {m} said {what!r} where {kind!r} was due")
            got[m] = seconds
        return got

    try:
        collect("ready")
        started = time.perf_counter()
        go.set()
        each = collect("done")
        wall = time.perf_counter() - started
    finally:
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
    steps = arguments["steps"]
    return {
        "mean_s": wall / steps,
        "each_process_s_per_step": [round(each[m] / steps, 6) for m in sorted(each)],
        "steps": steps,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--profile", default="gpu", help="whose Table 3 scale (default gpu)"
    )
    parser.add_argument("--row", default="base")
    parser.add_argument(
        "--models", type=int, default=3, help="models at once (3: a row's seeds)"
    )
    parser.add_argument(
        "--steps", type=int, default=60, help="timed steps of every model"
    )
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument(
        "--precision",
        default="auto",
        choices=sorted(TOLERANCES) + ["auto"],
        help="auto: what a Table 3 row gets on the device (bf16 on a recent GPU); fp32 times "
        "stacking without autocast's float32 bias add under vmap",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke scale, a few steps: plumbing"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.models < 2:
        parser.error(f"--models {args.models}: stacking needs at least 2 models")
    if args.quick:
        args.profile, args.steps, args.warmup, args.models = "smoke", 3, 1, 2
    started = time.perf_counter()
    device = resolve_device(args.device)
    profile = get_profile(args.profile)
    config = row_config(args.row, profile)
    settings = row_settings(profile, config, epochs=1, seed=1)
    table3 = profile.book.table3
    vocab = table3.vocab_size or profile.vocab_size
    batch_tokens = table3.batch_tokens or profile.batch_tokens
    rows = max(1, batch_tokens // 24)  # the target side's 24 columns fill the budget
    precision = resolve_precision(
        settings.precision if args.precision == "auto" else args.precision, device
    )
    # fp32, where the two must agree to rounding; the device's precision too, where it differs
    checks = [
        stacked_matches_separate(
            config, vocab, min(rows, 16), args.models, device, settings, p
        )
        for p in dict.fromkeys(("fp32", precision))
    ]
    for check in checks:
        print(f"[stacked] stacked against alone: {json.dumps(check)}", flush=True)
        if faults := disagreements(check):
            raise SystemExit(
                f"[stacked] stacked and alone disagree at {check['precision']}: "
                + "; ".join(faults)
                + ": nothing timed, since a stacked step that trains something else is no rival"
            )

    record = {
        "schema": 1,
        "name": "bench_stacked_rows",
        "quick": args.quick,
        "command": "benchmarks/bench_stacked_rows.py " + " ".join(argv or sys.argv[1:]),
        "provenance": provenance(device),
        "profile": profile.name,
        "row": args.row,
        "config": dataclasses.asdict(config),
        "models": args.models,
        "batch": {"rows": rows, "source_width": 21, "target_width": 24},
        "precision": precision,
        "stacked_matches_separate": checks,
    }
    models = build_models(config, vocab, args.models, seed=1, device=device)
    batches = padded_batches(config, vocab, rows, args.models, seed=1, device=device)
    # real target tokens a step of all the models trains, on average over the batches they cycle
    tokens_per_step = (
        sum(
            int((tgt[:, 1:] != config.pad_id).sum())
            for pool in batches
            for _, tgt in pool
        )
        / POOL
    )
    timed: dict = {}
    in_process = {}
    if "one_after_another" in args.variants:
        optimizers = [optimizer(m, settings, device) for m in models]
        counter = itertools.count()

        def one_after_another() -> None:
            k = next(counter)
            for m, model in enumerate(models):
                src, tgt = batches[m][k % POOL]
                separate_loss(model, src, tgt, precision).backward()
                optimizers[m].step()
                optimizers[m].zero_grad(set_to_none=True)

        in_process["one_after_another"] = one_after_another
    if "stacked" in args.variants:
        stacked = Stacked(models, precision, device, settings)
        stacked_batches = [
            (
                torch.stack([b[k][0] for b in batches]),
                torch.stack([b[k][1] for b in batches]),
            )
            for k in range(POOL)
        ]
        turn = itertools.count()

        def stacked_step() -> None:
            k = next(turn)
            stacked.step(*stacked_batches[k % POOL])

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stacked_step()
        record["vmap_warnings"] = sorted({str(w.message).split(".")[0] for w in caught})
        in_process["stacked"] = stacked_step
    if in_process:
        print(f"[stacked] timing {', '.join(in_process)} side by side", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rounds = max(1, args.steps // INNER)
            for name, t in interleaved(
                in_process, rounds, args.warmup, device, inner=INNER
            ).items():
                timed[name] = {
                    **t,
                    "seconds_per_step": t["median_s"],
                    "steps": rounds * INNER,
                }
    if "processes" in args.variants:
        print(f"[stacked] timing {args.models} processes", flush=True)
        arguments = {
            "device": str(device),
            "config": config,
            "vocab": vocab,
            "rows": rows,
            "seed": 1,
            "settings": settings,
            "precision": precision,
            "steps": args.steps,
            "warmup": args.warmup,
            "threads": 1 if device.type == "cpu" else torch.get_num_threads(),
        }
        t = time_processes(arguments, args.models)
        timed["processes"] = {**t, "seconds_per_step": t["mean_s"]}
    base = timed.get("one_after_another", {}).get("seconds_per_step")
    for name, t in timed.items():
        per_step = t["seconds_per_step"]
        t["model_steps_per_s"] = args.models / per_step
        t["target_tokens_per_s"] = tokens_per_step / per_step
        t["speed_vs_one_after_another"] = base / per_step if base else None
        print(
            f"[stacked] {name}: {per_step * 1e3:.1f} ms for a step of all {args.models}, "
            f"{t['model_steps_per_s']:.1f} model-steps/s"
            + (
                f", {t['speed_vs_one_after_another']:.2f}x one after another"
                if base
                else ""
            ),
            flush=True,
        )
    record["variants"] = timed
    record["wall_time_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
