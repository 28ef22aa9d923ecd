"""Section 6.1 and Table 2 of the paper applied to one of our runs: which snapshots to average, and
what the training cost, counted two ways.

The paper reports a model as the average of its last checkpoints and prices training as
time x GPUs x a sustained FLOP/s per GPU (Table 2). This module reads a finished run folder
(`pipeline.run` writes `metrics.jsonl`, `checkpoints/step_*.pt` and `averaged.pt` there), picks the
snapshot counts a sweep over averaging compares, and holds the small cost arithmetic, so that the
chapter and the tests use one formula each:

- the paper's way: seconds x devices x sustained FLOP/s per device (`paper_way_flops`);
- counted from the model: training FLOPs per target token (`model/flops.py`) x target tokens seen
  (`counted_training_flops`), with `six_n_flops` (6 x parameters x tokens) as the usual shorthand.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from ...data.batching import EncodedPairs
from ...evaluation import paper, results
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from ...evaluation.scoring import paired_bootstrap
from ...model import flops
from ...model.config import TransformerConfig
from ...model.decoding import beam_search
from ...pipeline import AVERAGED_NAME, TRANSLATIONS_NAME, prepare_data
from ...pipeline import run as run_pipeline
from ...profiles import Profile, comparable_record
from ...runtime import attention_kernels
from ...runtime.devices import cpu_name
from ...runtime.files import scratch_folder
from ...runtime.records import read_json
from ...training.checkpoint import average_last, list_snapshots
from ...training.training_log import read_metrics


# ------------------------------------------------------------------------------------------ the run
@dataclass(frozen=True)
class FinishedRun:
    """What a finished run folder says about its training (from `metrics.jsonl`)."""

    folder: Path
    steps: int
    train_time_s: float
    target_tokens: int
    device: str
    precision: str
    stopped_by: str
    snapshots: tuple[str, ...]


def finished_run(folder: str | Path, profile: Profile) -> FinishedRun | None:
    """The run in `folder` if it is a run of exactly `profile` that trained to its limit and was averaged
    and scored (what `pipeline.run` leaves); None for no run, another profile's, or an interrupted one."""
    folder = Path(folder)
    records = read_metrics(folder)
    starts = [r for r in records if r.get("kind") == "start"]
    trains = [r for r in records if r.get("kind") == "train"]
    if not starts or not trains or records[-1].get("kind") != "stop":
        return None
    stop = records[-1]
    same_profile = _training_fields(starts[0].get("profile") or {}) == _training_fields(
        profile.to_dict()
    )
    snapshots = list_snapshots(folder)
    complete = (
        (folder / AVERAGED_NAME).is_file()
        and (folder / TRANSLATIONS_NAME).is_file()
        and bool(snapshots)
    )
    if not same_profile or stop.get("stopped_by") == "interrupted" or not complete:
        return None
    return FinishedRun(
        folder=folder,
        steps=int(stop["step"]),
        train_time_s=float(stop["train_time_s"]),
        target_tokens=int(trains[-1]["target_tokens"]),
        device=str(starts[-1]["device"]),
        precision=str(starts[-1]["precision"]),
        stopped_by=str(stop["stopped_by"]),
        snapshots=tuple(p.name for p in snapshots),
    )


class NoBookRun(RuntimeError):
    """Chapter 05 found no finished run of its profile; IPython shows it as one line naming the
    ways on, without a traceback."""

    # IPython's hook for an exception's own display
    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def run_to_translate(
    profile: Profile, *, run_folder=None, missing: str | None = None
) -> tuple[FinishedRun, str]:
    """The finished run of exactly `profile` that chapter 05 translates, and where it came from.

    Only chapter 04 trains the book's run folder; this chapter trains nothing. It reads
    `run_folder` when given, else the first of `results.book_run_dirs` that holds a finished run:
    the book run's folder, or for a chapter run by hand the reader's own run of chapter 04 by
    hand, then the book's published run.

    Raises:
        NoBookRun: none is finished; `missing` is its line (naming the ways on), else one that
            names chapter 04.
    """
    folders = [Path(run_folder)] if run_folder else results.book_run_dirs(profile.name)
    for folder in folders:
        run = finished_run(folder, profile)
        if run is not None:
            return run, run_origin(folder, profile.name, given=bool(run_folder))
    looked = " nor ".join(str(f) for f in folders)
    raise NoBookRun(
        missing
        or f"run chapter 04 first: {looked} holds no finished {profile.name} run, and only "
        f"chapter 04 trains it (python -m annotated_transformer book --profile "
        f"{profile.name} --chapters 04 05)"
    )


def run_origin(folder: Path, profile_name: str, *, given: bool = False) -> str:
    """Who trained the run folder chapter 05 reads, in a few words for its table."""
    if given:
        return "the run folder given"
    if results.by_hand() and folder == results.by_hand_root() / f"book-{profile_name}":
        return "chapter 04 run by hand"
    if folder == results.published_book_run_dir(profile_name):
        return "the book's run"
    return "this book run's chapter 04"


def _training_fields(profile: dict) -> dict:
    """A profile's fields that decide what a run trains and scores: all but the name's description and the
    scales of the book's other chapters, which may change without making a trained model stale. As
    today's code writes them (`comparable_record`: fields added since take their defaults, tuples are
    lists, as in the file)."""
    return {
        k: v
        for k, v in comparable_record(profile).items()
        if k not in ("book", "description")
    }


# ------------------------------------------------------------------------------------------ averaging
def averaging_sizes(average_last_k: int, available: int) -> list[int]:
    """How many of the newest snapshots each point of an averaging sweep merges: 1 (no averaging), 2,
    the profile's `average_last`, and every kept snapshot; none above what is available."""
    if available < 1:
        raise ValueError(
            "no snapshots to average: the run folder holds no checkpoints/step_*.pt"
        )
    return sorted({k for k in (1, 2, average_last_k, available) if 1 <= k <= available})


def averaging_sweep(
    folder: str | Path, sizes: list[int]
) -> Iterator[tuple[int, dict, list[str]]]:
    """(k, the average of the newest k snapshots, their file names) for each k, as section 6.1 averages."""
    for k in sizes:
        checkpoint, used = average_last(folder, k)
        yield k, checkpoint, [p.name for p in used]


# ------------------------------------------------------------------------------------------ cost
def paper_way_flops(
    train_time_s: float, devices: int, sustained_flops_per_device: float
) -> float:
    """Table 2's estimate: training time x number of devices x sustained FLOP/s of one device."""
    return train_time_s * devices * sustained_flops_per_device


def recorded_paper_way(record: dict) -> float | None:
    """A results record's training cost the paper's way, from what the run recorded: its training
    seconds x its devices x the data-sheet peak of its GPU in its precision. None where the
    record lacks one of them or names a device without a data-sheet peak (a CPU)."""
    metrics = record.get("metrics") or {}
    device = (record.get("provenance") or {}).get("device_name")
    seconds, devices = metrics.get("train_time_s"), metrics.get("world_size", 1)
    if not device or not isinstance(seconds, (int, float)) or "precision" not in metrics:
        return None
    peak = flops.peak_flops_by_name(device, metrics["precision"])
    return None if peak is None else paper_way_flops(seconds, devices, peak)


def mean_lengths(pairs: EncodedPairs) -> tuple[float, float]:
    """Mean source and target lengths in positions, as the trainer counts them (with eos; with bos on the
    decoder's side), which is how `pipeline.train` feeds `flops.training_flops_per_target_token`."""
    return float(pairs.src_lengths.mean()) + 1, float(pairs.tgt_lengths.mean()) + 1


def counted_training_flops(
    config: TransformerConfig,
    vocab_size: int,
    mean_src_len: float,
    mean_tgt_len: float,
    target_tokens: float,
) -> float:
    """Training FLOPs counted from the model: FLOPs per target token x target tokens trained on."""
    return (
        flops.training_flops_per_target_token(
            config, vocab_size, mean_src_len, mean_tgt_len
        )
        * target_tokens
    )


def six_n_flops(parameters: int, tokens: float) -> float:
    """The rule of thumb: 6 FLOPs per parameter per token (2 forward, 4 backward). For an encoder-decoder
    it is only indicative: every token passes half of the weights, but the embeddings cost no multiply."""
    return 6.0 * parameters * tokens


def device_hours(
    total_flops: float, peak_flops_per_s: float, fraction_of_peak: float
) -> float:
    """Hours one device needs for `total_flops` when it sustains `fraction_of_peak` of its peak."""
    if not 0 < fraction_of_peak <= 1:
        raise ValueError(f"fraction_of_peak must be in (0, 1], got {fraction_of_peak}")
    return total_flops / (peak_flops_per_s * fraction_of_peak) / 3600.0


def measured_matmul_flops(
    size: int = 1024, seconds: float = 1.0, device: str | torch.device = "cpu"
) -> float:
    """Sustained fp32 FLOP/s of square matrix products on `device`, measured for about `seconds`.

    For a CPU, where no data sheet gives the number Table 2 needs, this stands in for the paper's
    "sustained single-precision" rate: the speed of the kind of work that dominates a training step.
    """
    device = torch.device(device)
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    torch.mm(a, b)  # warm-up: thread pool, allocations
    repeats, started = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        repeats += 1
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return 2.0 * size**3 * repeats / elapsed


# ------------------------------------------------------------------------------------------ chapter 05
# Chapter 05's steps between a finished run and its numbers, so that the page keeps the ideas
# (greedy decoding, averaging, the two BLEUs, the cost) and calls these for the rest. The
# sentences that read the numbers are in `sentences`, the tables in `tables`, the results record
# in `record`.

# Section 5.7 runs a few steps of the paper's recipe with a small model: enough to see it run.
RECIPE_STEPS = {"smoke": 2, "cpu": 8}
# A typical sustained share of the bf16 peak for a well-tuned Transformer training step.
ASSUMED_FRACTION = 0.35
# A small model for the recipe's check: the only change besides the number of steps.
RECIPE_CHECK_MODEL = dict(n_layers=1, d_model=64, d_ff=256, n_heads=4, max_len=1024)


def recipe_check_steps(profile_name: str, requested: int | None = None) -> int:
    """The optimizer steps of section 5.7's check: `requested`, else the profile's (20 on GPUs)."""
    return int(requested or RECIPE_STEPS.get(profile_name, 20))


def time_cache(model, sources: torch.Tensor, decoding) -> list[dict]:
    """Beam search on one batch with the key-value cache and without it: seconds and tokens."""
    rows = []
    for use_cache in (True, False):
        started = time.perf_counter()
        # every step has a new key length: on a GPU, no cuDNN plan built per step
        with attention_kernels.for_varying_shapes(sources.device):
            tokens = beam_search(
                model, sources, **decoding.search_arguments(), use_cache=use_cache
            )
        rows.append(
            {
                "decoder": "key-value cache" if use_cache else "whole prefix every step",
                "seconds": time.perf_counter() - started,
                "tokens": tokens,
            }
        )
    return rows


def same_run(run_record: dict | None, run: FinishedRun, averaged_from) -> bool:
    """Whether the run's own results file scored this very run and averaged model."""
    metrics = (run_record or {}).get("metrics", {})
    test = metrics.get("test", {})
    return metrics.get("steps") == run.steps and test.get("averaged_checkpoints") == list(
        averaged_from
    )


def sweep_frame(swept: dict, tests: dict) -> pd.DataFrame:
    """The averaging sweep, one row per k: {k: (snapshot names, scores)} and the paired
    bootstrap of every average against k = 1 (`tests`, keyed "k=<k>"). The scores are on the
    validation split, where a choice among the averages may be made; `ppl` is its perplexity."""
    first = next(iter(swept.values()))[1]["sacrebleu"]
    return pd.DataFrame(
        [
            {
                "k": k,
                "snapshots": f"{used[0]} .. {used[-1]}" if k > 1 else used[0],
                "ppl": scores["ppl"],
                "bleu": scores["sacrebleu"],
                "ci95": tests[f"k={k}"]["ci95"],
                "minus_k1": scores["sacrebleu"] - first,
                "p_value": tests[f"k={k}"].get("p_value"),
                "beyond_noise": tests[f"k={k}"].get("exceeds_noise"),
            }
            for k, (used, scores) in swept.items()
        ]
    )


# ------------------------------------------------------------------------------------------ run cost
@dataclass(frozen=True)
class RunCost:
    """A run's training cost both ways: the paper's (seconds x sustained FLOP/s) and counted."""

    sustained: float  # FLOP/s of the device
    how: str  # where the sustained rate comes from
    train_time_s: float
    target_tokens: int
    parameters: int
    paper_way: float
    counted: float
    six_n: float

    @property
    def utilisation(self) -> float:
        """Counted over the paper's way: the model FLOPs utilisation over the whole run."""
        return self.counted / self.paper_way


def sustained_rate(run: FinishedRun, threads: int) -> tuple[float, str]:
    """(FLOP/s, where it comes from): a GPU's data-sheet peak, or fp32 matrix products measured
    here on `threads` threads (what the run trained with) for a CPU, which has no data sheet value."""
    if run.device.startswith("cuda") and torch.cuda.is_available():
        name = torch.cuda.get_device_name(torch.device(run.device))
        peak = flops.peak_flops(run.device, run.precision)
        return peak, f"data-sheet peak of {name}, {run.precision}"
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rate = measured_matmul_flops(device="cpu")
    finally:
        torch.set_num_threads(before)
    return rate, f"measured here: fp32 matrix products on {cpu_name()}, {threads} threads"


def run_cost(
    profile: Profile,
    run: FinishedRun,
    vocab_size: int,
    parameters: int,
    data_dir,
    threads,
) -> RunCost:
    """The run's cost: the paper's way on one device, counted from the model and the mean lengths
    of the training pairs it saw, and the 6N shorthand."""
    mean_src, mean_tgt = mean_lengths(prepare_data(profile, data_dir).train)
    counted = counted_training_flops(
        profile.model_config(), vocab_size, mean_src, mean_tgt, run.target_tokens
    )
    sustained, how = sustained_rate(run, threads)
    return RunCost(
        sustained=sustained,
        how=how,
        train_time_s=run.train_time_s,
        target_tokens=run.target_tokens,
        parameters=parameters,
        paper_way=paper_way_flops(run.train_time_s, 1, sustained),
        counted=counted,
        six_n=six_n_flops(parameters, run.target_tokens),
    )


# ------------------------------------------------------------------------------------------ Table 2
def table2_points() -> pd.DataFrame:
    """The paper's Table 2 systems with an EN-DE BLEU and cost: system, bleu, training_flops."""
    return pd.DataFrame(
        [
            {
                "system": r.model + (" (ensemble)" if r.ensemble else ""),
                "bleu": r.bleu_en_de,
                "training_flops": r.flops_en_de,
            }
            for r in paper.TABLE2
            if r.bleu_en_de is not None and r.flops_en_de is not None
        ]
    )


# How a run's training cost is priced: its two points on Table 2's cost axis.
COSTS = ("paper's way", "counted")


def run_points(label: str, bleu: float, ci95: float, paper_way: float, counted: float):
    """One run's two points on Table 2's axes, priced the paper's way and counted: `system`
    (the run and the cost, for tables), `run` (the chart's one label for both points), `cost`
    (how it was priced, the point's shape), bleu, ci95, training_flops."""
    return [
        {
            "system": f"{label} ({how})",
            "run": label,
            "cost": how,
            "bleu": bleu,
            "ci95": ci95,
            "training_flops": flops_spent,
        }
        for how, flops_spent in zip(COSTS, (paper_way, counted))
    ]


# The `gpu` recipe's committed H100 run, under a name of its own so that a reader's
# `train --profile gpu --publish` (translation_multi30k_en_de.json) is never refused over it.
COMMITTED_GPU_RUN = "recipe_d256x4_seed1"


def committed_gpu_run(profile_name: str) -> tuple[dict | None, str, Path | None]:
    """(record, label, its test translations) of the `gpu` profile's published run, else its
    committed H100 run, else the committed H100 run of the earlier gpu recipe (chosen on test
    BLEU, so its score is optimistic); (None, "", None) under the gpu profile itself or when none
    is there."""
    if profile_name == "gpu":
        return None, "", None
    # The reader's own `train --profile gpu --publish`, else the committed run of the recipe.
    for name in ("translation_multi30k_en_de", COMMITTED_GPU_RUN):
        record = results.read_result(name, "gpu")
        if record is not None:
            folder = results.run_folder_of_record(record)
            return record, "gpu", folder and (folder / TRANSLATIONS_NAME)
    record = results.read_result("earlier_recipe_d128x4", "gpu")
    if record is None:
        return None, "", None
    file = results.results_root() / "gpu" / "logs" / "gpu_test2016_translations.de"
    return record, "gpu, earlier recipe chosen on test", file


def gpu_comparison(
    profile_name: str, test_set: str, mine: str, hypotheses, references, all_references
) -> dict | None:
    """The committed `gpu` run on this run's test set, compared with this run (`mine`, its label
    and `hypotheses`) by the paired bootstrap when both translated the same sentences, as the
    fields of the record's `GpuRun`; None when there is no such run or it scored another test
    set."""
    record, label, file = committed_gpu_run(profile_name)
    metrics = (record or {}).get("metrics", {})
    if metrics.get("test", {}).get("test_set") != test_set or not (
        file and file.is_file()
    ):
        return None
    theirs = file.read_text(encoding="utf-8").splitlines()
    name = f"{label}, {metrics['parameters'] / 1e6:.1f}M"
    paired = len(references) == len(all_references)  # the same sentences
    systems = ({mine: list(hypotheses)} if paired else {}) | {name: theirs}
    tests = paired_bootstrap(systems, references if paired else all_references)
    if abs(tests[name]["bleu"] - metrics["sacrebleu"]) >= 0.01:
        raise ValueError(
            f"{file} does not score the {metrics['sacrebleu']} its record holds"
        )
    paper_way = recorded_paper_way(record)
    if paper_way is None:
        raise ValueError(
            f"the committed gpu run's record names no GPU with a data-sheet peak "
            f"({record['provenance'].get('device_name')!r}): add its peak to model/flops.py"
        )
    size = f"{metrics['parameters'] / 1e6:.1f}M"
    short = "gpu (earlier)" if "earlier" in label else "gpu"
    return dict(
        label=name,
        short=f"{short}, {size}",
        sacrebleu=metrics["sacrebleu"],
        ci95=tests[name]["ci95"],
        paper_way=paper_way,
        counted=metrics["training_flops"],
        paired=paired,
        difference=tests[name]["bleu"] - tests[mine]["bleu"] if paired else None,
        p_value=tests[name].get("p_value") if paired else None,
        exceeds_noise=tests[name].get("exceeds_noise") if paired else None,
    )


# ------------------------------------------------------------------------------------------ 5.7
PAPER_RECIPE_FIELDS = (
    "corpus", "src_lang", "tgt_lang", "train_split", "valid_split", "test_split",
    "vocab_size", "preset", "model_overrides", "batch_tokens", "accumulation", "peak_lr",
    "warmup_steps", "adam_betas", "adam_eps", "max_steps", "precision", "compile",
    "save_every_minutes", "keep_snapshots", "average_last", "beam_size",
    "length_penalty_alpha", "max_len_a", "max_len_b",
)  # fmt: skip


@dataclass(frozen=True)
class RecipeCost:
    """The `paper` recipe's arithmetic, counted with the base model on a sample of WMT14's lengths."""

    mean_src: float
    mean_tgt: float
    steps: int
    tokens: float  # target tokens over the whole recipe
    counted: float
    table2: float  # Table 2's estimate for the base model
    h100_peak: float
    fractions: dict  # {how: share of the H100's bf16 peak}

    @property
    def implied_utilisation(self) -> float:
        return self.counted / self.table2

    def hours(self) -> dict:
        return {
            how: device_hours(self.counted, self.h100_peak, f)
            for how, f in self.fractions.items()
        }


def measured_base_fraction(benchmark: Path) -> float | None:
    """The share of an H100's bf16 peak that the base model's training step kept busy, from the
    committed benchmark (benchmarks/gpu_compile.json), or None without it."""
    if not benchmark.is_file():
        return None
    step = read_json(benchmark)["measurements"]["gpu_bf16_compile"]["steps"]
    return step["bf16_compile_model_and_loss"]["mfu_with_logits"]


def paper_recipe_cost(paper_profile: Profile, data_dir=None) -> RecipeCost:
    """Count the recipe: the base model's FLOPs per target token at WMT14's mean lengths (measured
    on the staged sample, with the recipe's 37k BPE) x 100,000 steps x 25,000 target tokens."""
    probe = paper_profile.replace(train_split="train_sample", max_valid_pairs=64)
    mean_src, mean_tgt = mean_lengths(prepare_data(probe, data_dir).train)
    tokens = paper_profile.max_steps * PAPER_TARGET_TOKENS_PER_STEP
    base = paper.TRAINING["base"]
    measured = measured_base_fraction(
        results.results_root() / "benchmarks" / "gpu_compile.json"
    )
    return RecipeCost(
        mean_src=mean_src,
        mean_tgt=mean_tgt,
        steps=paper_profile.max_steps,
        tokens=tokens,
        counted=counted_training_flops(
            paper_profile.model_config(), paper_profile.vocab_size, mean_src, mean_tgt,
            tokens,
        ),
        table2=paper_way_flops(
            base.wall_time_h * 3600, 8, paper.TABLE2_SUSTAINED_FLOPS["P100"]
        ),
        h100_peak=flops.peak_flops_by_name("H100", "bf16"),
        fractions={"assumed": ASSUMED_FRACTION}
        | ({"measured for base (benchmarks)": measured} if measured else {}),
    )  # fmt: skip


def recipe_check_profile(paper_profile: Profile, steps: int) -> Profile:
    """The paper's recipe on the staged 10,000-pair WMT14 sample with a small model, for `steps`."""
    return paper_profile.replace(
        train_split="train_sample",
        max_valid_pairs=64,
        max_steps=steps,
        compile=False,
        model_overrides=RECIPE_CHECK_MODEL,
        log_every=1,
        eval_every=0,
        save_every_minutes=None,
        keep_snapshots=1,
        average_last=1,
    )


@dataclass(frozen=True)
class RecipeCheck:
    steps: int
    seconds: float
    losses: list  # the training loss of each step
    log: list  # the training records (step, loss, nll, lr, target_tokens)
    valid_loss: float
    valid_pairs: int
    vocab_size: int

    @property
    def uniform_loss(self) -> float:
        """The loss of a uniform guess over the vocabulary."""
        return math.log(self.vocab_size)


def run_recipe_check(check: Profile, data_dir=None, device="auto") -> RecipeCheck:
    """Train `check` in a temporary folder, quietly (the trainer's own lines would be log lines
    on the page), and check that every loss is finite."""
    with scratch_folder("at-recipe-check-") as folder:
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            summary = run_pipeline(
                check, folder, data_dir=data_dir, device=device, evaluate_test=False,
                show_progress=False,
            )  # fmt: skip
        seconds = time.perf_counter() - started
        log = [r for r in read_metrics(folder) if r["kind"] == "train"]
    losses = [r["loss"] for r in log]
    if summary["steps"] != check.max_steps or summary["stopped_by"] != "max_steps":
        raise RuntimeError(f"the recipe's check stopped at {summary['steps']} steps")
    if not all(math.isfinite(x) for x in losses + [summary["valid"]["loss"]]):
        raise RuntimeError("the recipe's check gave a loss that is not finite")
    keep = ("step", "loss", "nll", "lr", "target_tokens")
    return RecipeCheck(
        steps=summary["steps"],
        seconds=seconds,
        losses=losses,
        log=[{k: r[k] for k in keep} for r in log],
        valid_loss=summary["valid"]["loss"],
        valid_pairs=check.max_valid_pairs,
        vocab_size=check.vocab_size,
    )
