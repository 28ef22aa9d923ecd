"""Table 3 at a scale one machine can afford: each row's change applied to a scaled-down base.

Section 6.2 varies one thing at a time around the base model (heads and key size, depth, width,
feed-forward size, dropout, label smoothing, learned positions, and the big model). Training every
row at the paper's size takes days of GPU time; what carries over to a smaller model is the *ratio*
of each change. A `VariationScale` divides every width of the paper's configurations (d_model, d_ff,
d_k, d_v) by one number and every depth by another, so a row keeps its relation to base exactly: A1
still has one head with d_k = d_model, B1 still has a quarter of base's d_k, C3 still has 4/3 of
base's layers. Head counts, dropout, label smoothing and the kind of positions are not sizes and stay
as the paper has them.

`train_row` trains one row on prepared data through `training.fit`, the pipeline's door, and measures what Table 3
reports (dev perplexity per subword, dev BLEU, parameters); `verdict` decides, by one written rule,
whether a finding of the paper holds at the measured scale, given the spread between seeds.
"""

from __future__ import annotations

import itertools
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..evaluation.scoring import sacrebleu_score, translate
from ..model.config import TABLE3_ALL_ROWS, TransformerConfig, preset
from ..model.transformer import count_parameters
from ..profiles import Profile
from ..runtime.precision import resolve_precision
from ..training.fit import fit
from ..training.settings import TrainSettings

WIDTH_FIELDS = ("d_model", "d_ff", "d_k", "d_v")
DEPTH_FIELDS = ("n_layers",)


def paper_config(row: str) -> TransformerConfig:
    """The paper's configuration of a Table 3 row (the presets of model/config.py), d_k and d_v explicit."""
    if row not in TABLE3_ALL_ROWS:
        raise ValueError(
            f"unknown Table 3 row {row!r}; choose one of {', '.join(TABLE3_ALL_ROWS)}"
        )
    config = preset(row)
    return config.replace(d_k=config.head_dim_k, d_v=config.head_dim_v)


def changes(row: str) -> dict:
    """The fields in which a row differs from the paper's base (d_k and d_v explicit)."""
    base, config = paper_config("base"), paper_config(row)
    fields = (
        "n_layers",
        "d_model",
        "d_ff",
        "n_heads",
        "d_k",
        "d_v",
        "dropout",
        "label_smoothing",
        "positional",
    )
    return {
        f: getattr(config, f) for f in fields if getattr(config, f) != getattr(base, f)
    }


@dataclass(frozen=True)
class VariationScale:
    """Divide the paper's widths by `width` and its depths by `depth` (both must divide exactly)."""

    width: int = 4
    depth: int = 2

    def _divide(self, name: str, value: int, by: int, row: str) -> int:
        if value % by:
            raise ValueError(
                f"row {row}: {name}={value} is not divisible by {by}; choose another scale"
            )
        return value // by

    def config(self, row: str, **overrides) -> TransformerConfig:
        """Row `row` at this scale: every width and depth of the paper's config divided, the rest kept.

        `overrides` set what is not part of Table 3 (max_len, warmup_steps).
        """
        paper = paper_config(row)
        sized = {
            f: self._divide(f, getattr(paper, f), self.width, row) for f in WIDTH_FIELDS
        }
        sized.update(
            {f: self._divide(f, getattr(paper, f), self.depth, row) for f in DEPTH_FIELDS}
        )
        return paper.replace(**sized, name=row, **overrides)


def scaled_changes(row: str, scale: VariationScale) -> dict:
    """What row `row` changes from base at this scale (same fields as `changes`, scaled values)."""
    base, config = scale.config("base"), scale.config(row)
    return {f: getattr(config, f) for f in changes(row)} | {
        f: getattr(config, f)
        for f in ("d_k", "d_v")
        if getattr(config, f) != getattr(base, f)
    }


def row_settings(
    profile: Profile, config: TransformerConfig, steps: int, seed: int
) -> TrainSettings:
    """The training settings of one row: the profile's batches and optimiser, `steps` steps, no snapshots.

    The peak learning rate follows the paper's rule lr ~ d_model^-0.5 (section 5.3), anchored at the
    profile's own model: a row with the profile model's d_model gets the profile's peak rate (or the
    paper's curve when the profile sets none). The warm-up is a quarter of the steps at most.
    """
    anchor = profile.model_config().d_model
    peak = (
        None
        if profile.peak_lr is None
        else profile.peak_lr * math.sqrt(anchor / config.d_model)
    )
    return profile.train_settings().replace(
        name=f"table3 {profile.name}",
        max_steps=steps,
        max_epochs=None,
        time_budget_minutes=None,
        seed=seed,
        peak_lr=peak,
        warmup_steps=max(1, min(profile.warmup_steps, steps // 4)),
        eval_every=0,
        log_every=max(1, steps // 5),
        save_every_steps=None,
        save_every_minutes=None,
        keep_snapshots=1,
        compile=False,
    )


def row_config(
    row: str, profile: Profile, scale: VariationScale, steps: int
) -> TransformerConfig:
    """Row `row` as `train_row` trains it: scaled, with the profile model's positions and the row's
    warm-up (`row_settings`), so a results file can record what trained rather than the preset's."""
    config = scale.config(row, max_len=profile.model_config().max_len)
    warmup = row_settings(profile, config, steps, seed=0).warmup_steps
    return config.replace(warmup_steps=warmup)


@dataclass
class RowRun:
    """One trained row and seed: what Table 3 reports and what it cost."""

    row: str
    seed: int
    ppl: float  # validation perplexity per subword (eos included, no smoothing)
    bleu: float  # sacreBLEU of greedy translations of the validation subset
    params: int
    steps: int
    train_s: float
    train_cpu_s: float  # CPU time per thread inside the training loop
    eval_s: float
    hypotheses: list[str] = field(
        default_factory=list
    )  # the greedy translations BLEU scored

    def to_dict(self) -> dict:
        """The measurements, without the translations."""
        return {k: v for k, v in self.__dict__.items() if k != "hypotheses"}


def train_row(
    row: str,
    data,
    profile: Profile,
    scale: VariationScale,
    *,
    steps: int,
    seed: int,
    device: torch.device | str = "cpu",
    bleu_sources: Sequence[str] = (),
    bleu_references: Sequence[str] = (),
) -> RowRun:
    """Train row `row` at `scale` on `data` (a `pipeline.PreparedData`) for `steps` steps with `seed`.

    Perplexity is measured on all of `data.valid`; BLEU from greedy decoding of `bleu_sources`
    (0.0 when none are given).
    """
    config = row_config(row, profile, scale, steps)
    # Rows are compared with one another, so they share one precision decided without timing:
    # timing each row's own shape could train rows of one table in different precisions.
    settings = row_settings(profile, config, steps, seed)
    settings = settings.replace(precision=resolve_precision(settings.precision, device))
    with tempfile.TemporaryDirectory(prefix=f"table3-{row}-") as out_dir:
        fitted = fit(
            config,
            data.tokenizer,
            data.train,
            data.valid,
            settings,
            out_dir,
            device=device,
            show_progress=False,
        )
    model, result = fitted.model, fitted.result
    started = time.perf_counter()
    bleu, hypotheses = 0.0, []
    if len(bleu_sources):
        greedy = profile.decode_settings().replace(beam_size=1)
        hypotheses = translate(model, data.tokenizer, list(bleu_sources), greedy)
        bleu = sacrebleu_score(hypotheses, list(bleu_references))["score"]
    return RowRun(
        row=row,
        seed=seed,
        ppl=float(result.valid["ppl"]),
        bleu=float(bleu),
        params=count_parameters(model),
        steps=result.progress.step,
        train_s=result.progress.train_time_s,
        train_cpu_s=result.progress.train_cpu_s,
        eval_s=time.perf_counter() - started,
        hypotheses=list(hypotheses),
    )


# ------------------------------------------------------------------------------------------ analysis
def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties get their mean rank)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError("spearman needs two sequences of the same length, at least 2")

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        r = np.empty(v.size)
        r[order] = np.arange(1, v.size + 1)
        for value in np.unique(v):  # ties: the mean of their ranks
            tied = v == value
            r[tied] = r[tied].mean()
        return r

    rx, ry = ranks(x) - ranks(x).mean(), ranks(y) - ranks(y).mean()
    denominator = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denominator) if denominator else float("nan")


def spearman_null(n: int, *, samples: int = 20_000, seed: int = 0) -> np.ndarray:
    """Spearman's correlation of two unrelated orderings of `n` rows: every permutation's when n <= 8,
    else that of `samples` random permutations (fixed seed, so the numbers repeat)."""
    if n < 2:
        raise ValueError("spearman_null needs at least 2 rows")
    if n <= 8:
        orders = np.array(list(itertools.permutations(range(n))))
    else:
        rng = np.random.default_rng(seed)
        orders = np.argsort(rng.random((samples, n)), axis=1)
    d2 = ((orders - np.arange(n)) ** 2).sum(axis=1)
    return 1 - 6 * d2 / (n * (n**2 - 1))


def spearman_p_value(rho: float, n: int) -> float:
    """Two-sided p-value of a rank correlation `rho` over `n` rows: the share of unrelated orderings
    whose correlation is at least as large in size."""
    null = np.abs(spearman_null(n))
    return float(np.mean(null >= abs(rho) - 1e-9))


def spearman_critical(n: int, alpha: float = 0.05) -> float | None:
    """The smallest size of a rank correlation over `n` rows with a two-sided p-value of at most
    `alpha`; None when even a perfect ordering is that likely by chance (n of 4 or fewer)."""
    null = np.sort(np.abs(spearman_null(n)))[::-1]
    sizes = np.unique(np.round(null, 9))[::-1]
    found = None
    for size in sizes:  # from the largest down, while the tail stays below alpha
        if np.mean(null >= size - 1e-9) > alpha:
            break
        found = float(size)
    return found


@dataclass(frozen=True)
class Finding:
    """A claim of section 6.2 as comparisons of perplexity between rows.

    kind "worse": in each (worse, better) pair the first row has the higher perplexity.
    kind "tie": the two rows of each pair have the same perplexity (within noise).
    """

    name: str
    pairs: tuple[tuple[str, str], ...]
    kind: str = "worse"


FINDINGS: tuple[Finding, ...] = (
    Finding("one head is worse", (("A1", "base"),)),
    Finding("too many heads hurt", (("A4", "base"),)),
    Finding("small d_k hurts", (("B1", "base"),)),
    # The smallest against the largest of each size the C rows vary: depth, width, feed-forward.
    Finding("bigger is better", (("C1", "C3"), ("C4", "C5"), ("C6", "C7"))),
    Finding("dropout helps", (("D1", "base"),)),
    Finding("learned and sinusoidal positions tie", (("E", "base"),), kind="tie"),
)

HOLDS, DOES_NOT_HOLD, CANNOT_TELL = "holds", "does not hold", "cannot tell at this scale"


def seed_spread(values: Sequence[float]) -> float | None:
    """max - min over seeds; None with a single seed (no measure of noise)."""
    return float(max(values) - min(values)) if len(values) >= 2 else None


def compare(first: Sequence[float], second: Sequence[float], kind: str = "worse") -> dict:
    """The rule for one pair of rows, from their perplexities over seeds.

    difference = mean(first) - mean(second); noise = the larger of the two rows' seed spreads (max -
    min). "worse": holds when difference > noise, does not hold when difference < -noise, else cannot
    tell. "tie": holds when |difference| <= noise, does not hold otherwise. A row with one seed gives no
    noise: cannot tell.
    """
    difference = float(np.mean(first) - np.mean(second))
    spreads = [seed_spread(first), seed_spread(second)]
    if any(s is None for s in spreads):
        return {"verdict": CANNOT_TELL, "difference": difference, "noise": None}
    noise = max(spreads)
    if kind == "tie":
        verdict = HOLDS if abs(difference) <= noise else DOES_NOT_HOLD
    elif kind == "worse":
        verdict = (
            HOLDS
            if difference > noise
            else DOES_NOT_HOLD
            if difference < -noise
            else CANNOT_TELL
        )
    else:
        raise ValueError(f"kind must be 'worse' or 'tie', got {kind!r}")
    return {"verdict": verdict, "difference": difference, "noise": noise}


def verdict(finding: Finding, ppl: dict[str, Sequence[float]]) -> dict:
    """A finding's verdict from per-row perplexities over seeds (`ppl[row]` = one value per seed).

    Every pair must hold for the finding to hold; one pair against it beyond noise makes it not hold;
    otherwise (or when a row was not trained) it cannot be told at this scale.
    """
    missing = sorted({r for pair in finding.pairs for r in pair} - set(ppl))
    if missing:
        return {
            "finding": finding.name,
            "verdict": CANNOT_TELL,
            "pairs": [],
            "reason": f"rows {', '.join(missing)} were not trained under this profile",
        }
    pairs = [
        {"first": a, "second": b, **compare(ppl[a], ppl[b], finding.kind)}
        for a, b in finding.pairs
    ]
    verdicts = [p["verdict"] for p in pairs]
    if all(v == HOLDS for v in verdicts):
        overall = HOLDS
    elif DOES_NOT_HOLD in verdicts:
        overall = DOES_NOT_HOLD
    else:
        overall = CANNOT_TELL
    relation = "vs" if finding.kind == "tie" else "minus"
    reason = "; ".join(
        f"{p['first']} {relation} {p['second']}: ppl difference {p['difference']:+.2f}, "
        + (
            f"seed noise {p['noise']:.2f}"
            if p["noise"] is not None
            else "one seed, no noise measure"
        )
        for p in pairs
    )
    return {"finding": finding.name, "verdict": overall, "pairs": pairs, "reason": reason}


# ------------------------------------------------------------------------------------------ many rows
_WORKER: dict = {}


def _start_worker(profile: Profile, data_dir) -> None:
    """A worker process: one thread, and the data prepared once (the tokenizer comes from the cache)."""
    from ..pipeline import prepare_data

    torch.set_num_threads(1)
    _WORKER["data"] = prepare_data(profile, data_dir)


def _train_in_worker(arguments: dict) -> RowRun:
    return train_row(data=_WORKER["data"], **arguments)


def train_rows(
    plan: Sequence[tuple[str, int]],
    data,
    profile: Profile,
    scale: VariationScale,
    *,
    steps: int,
    workers: int = 1,
    data_dir=None,
    device: torch.device | str = "cpu",
    bleu_sources: Sequence[str] = (),
    bleu_references: Sequence[str] = (),
):
    """Train every (row, seed) of `plan`, yielding each `RowRun` as it finishes (in any order).

    On a CPU with workers > 1, that many processes of one thread each train rows side by side (each
    prepares the same data from the tokenizer cache once): models this small keep one core busy but
    gain little from a second thread, so two processes do about twice the work of one. Otherwise the
    rows train one after another in this process, on `data`.
    """
    common = {
        "profile": profile,
        "scale": scale,
        "steps": steps,
        "device": str(device),
        "bleu_sources": list(bleu_sources),
        "bleu_references": list(bleu_references),
    }
    if workers <= 1 or torch.device(device).type != "cpu":
        for row, seed in plan:
            yield train_row(row, data, seed=seed, **common)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context(
        "spawn"
    )  # no fork of a process that holds torch's threads
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(profile, data_dir),
    ) as pool:
        futures = [
            pool.submit(_train_in_worker, {"row": row, "seed": seed, **common})
            for row, seed in plan
        ]
        for future in as_completed(futures):
            yield future.result()
