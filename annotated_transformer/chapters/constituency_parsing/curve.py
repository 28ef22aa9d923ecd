"""What it takes to parse: the parser's learning curves by epochs and by training-set size.

Chapter 07 cannot train the paper's parser on forty thousand trees, so it measures how F1 grows
with what it can vary: each run trains on the first share of the training files (a quarter, half,
all) for the same number of epochs, keeps a snapshot every few epochs, and scores every snapshot on
the development trees (greedy, constrained to valid trees). One run's snapshots give F1 against
epochs; the runs side by side give F1 against training-set size. Nothing here reads the test
split: the chapter scores it once, with the full run's averaged model (`parsing.report_parser`).

The recipe's `tags` says what fills the word slots of the targets (`parsing.linearize`): True, each
word's part-of-speech tag, as the authors' code writes them (chapter 07's parser, in every profile);
False, ``XX``, as Vinyals et al. wrote them (the chapter's variant, trained beside the shares as one
of `learning_curves`' `variants`).

On a CPU the runs go to processes of one thread each, as Table 3's rows do (`variations.train_rows`):
models this small keep one core busy and gain little from a second thread.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import torch
import torch.nn.functional as F
from nltk import Tree

from ...data.batching import TokenBatcher, collate_pairs
from ...model.config import TransformerConfig, preset
from ...runtime import attention_kernels
from ...runtime.files import save_torch, scratch_folder
from ...runtime.records import read_lines
from ...training.checkpoint import average_checkpoints, list_snapshots, load_checkpoint
from ...training.run_folder import METRICS_NAME
from ...training.settings import TrainSettings
from .. import constituency_parsing as parsing

AVERAGED_NAME = "averaged.pt"


@dataclass(frozen=True)
class ParserRecipe:
    """The parser's size and training, chosen on the development trees (`scripts/parser_sweep.py`).

    The model is the paper's parsing model (`preset("parsing")`) at the given size; `peak_lr`
    None keeps the paper's schedule, d_model^-0.5 at the top of the warm-up. `tags` True writes
    each word's part-of-speech tag in its slot (the authors' linearization, which the profiles
    set); the default False writes ``XX`` (the linearization of Vinyals et al.).
    """

    n_layers: int = 2
    d_model: int = 192
    d_ff: int = 768
    n_heads: int = 4
    dropout: float = 0.1
    label_smoothing: float = 0.1
    batch_tokens: int = 2048
    warmup_steps: int = 400
    peak_lr: float | None = None
    epochs: int = 12
    snapshot_epochs: int = 2
    average_last: int = 3
    precision: str = "auto"
    seed: int = 1
    tags: bool = False  # True: part-of-speech tags in the word slots; False: XX

    def __post_init__(self):
        if self.epochs < 1 or self.snapshot_epochs < 1 or self.average_last < 1:
            raise ValueError(
                f"epochs ({self.epochs}), snapshot_epochs ({self.snapshot_epochs}) and "
                f"average_last ({self.average_last}) must be at least 1"
            )
        snapshots = self.epochs // self.snapshot_epochs
        if self.average_last > snapshots:
            # parser-curve's flags: --average is average_last, --max-epochs the epochs
            raise ValueError(
                f"average_last (parser-curve --average) {self.average_last} is more than the "
                f"{snapshots} snapshot(s) that epochs (--max-epochs) {self.epochs} at one every "
                f"snapshot_epochs {self.snapshot_epochs} write: average at most {snapshots} or "
                "train more epochs"
            )

    @classmethod
    def from_dict(cls, values: dict) -> "ParserRecipe":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(
                f"unknown parser recipe fields {sorted(unknown)}; known: {sorted(known)}"
            )
        return cls(**values)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def config(self, data: parsing.ParsingData) -> TransformerConfig:
        return preset(
            "parsing",
            n_layers=self.n_layers,
            d_model=self.d_model,
            d_ff=self.d_ff,
            n_heads=self.n_heads,
            dropout=self.dropout,
            label_smoothing=self.label_smoothing,
            max_len=parsing.parser_max_len(data),
            warmup_steps=self.warmup_steps,
        )

    def settings(self, name: str, steps_per_epoch: int) -> TrainSettings:
        return TrainSettings(
            name=name,
            batch_tokens=self.batch_tokens,
            peak_lr=self.peak_lr,
            warmup_steps=self.warmup_steps,
            max_epochs=self.epochs,
            precision=self.precision,
            seed=self.seed,
            log_every=max(1, steps_per_epoch),
            eval_every=max(1, steps_per_epoch),  # dev loss about once an epoch
            keep_snapshots=10_000,
        )


def first_share(train_by_file: Sequence[Sequence[Tree]], share: float) -> list[Tree]:
    """The trees of the first `share` of the training files (whole files: no article is split)."""
    if not 0 < share <= 1:
        raise ValueError(f"a share of the training files must be in (0, 1], not {share}")
    total = len(train_by_file)
    files = round(total * share)
    if files < 1:
        # A whole file would be a share several times the one asked for: refuse, not round up.
        raise ValueError(
            f"a share of {share:g} of the {total} training files selects no whole file (one file "
            f"is a share of {1 / total:.4g}): give a share of at least {1 / total:.4g}"
        )
    return [tree for trees in train_by_file[:files] for tree in trees]


@dataclass
class ShareRun:
    """One run of the curve: its data, training, and dev F1 by snapshot."""

    share: float
    train_trees: int
    steps: int
    epochs: float
    seconds: float
    precision: str
    dev_loss: list[dict]  # {"step", "epochs", "nll"} about once an epoch
    # {"step", "epochs", "f1", "invalid"} per snapshot, greedy constrained
    dev_f1: list[dict]
    run_dir: str
    tags: bool = False  # True: tags in the word slots (the authors'); False: XX

    @property
    def averaged(self) -> Path:
        return Path(self.run_dir) / AVERAGED_NAME

    def to_dict(self) -> dict:
        record = dataclasses.asdict(self)
        record.pop("run_dir")
        return record


def train_share(
    train_trees: Sequence[Tree],
    dev_trees: Sequence[Tree],
    recipe: ParserRecipe,
    run_dir: str | os.PathLike,
    *,
    share: float = 1.0,
    device: str = "cpu",
) -> ShareRun:
    """Train one run of the curve, score each snapshot on the dev trees, and average the last ones.

    Snapshots are taken at the end of every `recipe.snapshot_epochs`-th epoch (and at the end);
    `averaged.pt` in `run_dir` is the mean of the last `recipe.average_last`.
    """
    run_dir = Path(run_dir)
    data = parsing.ParsingData.from_splits(
        {"train": list(train_trees), "dev": list(dev_trees)}, tags=recipe.tags
    )
    train_pairs = data.encoded("train")
    steps_per_epoch = TokenBatcher(
        train_pairs.src_lengths, train_pairs.tgt_lengths, recipe.batch_tokens
    ).steps_per_epoch(0)

    def snapshot_at_epoch_ends(trainer) -> None:
        p = trainer.progress
        if p.batch_cursor == trainer.batcher.steps_per_epoch(p.epoch) and (
            (p.epoch + 1) % recipe.snapshot_epochs == 0
        ):
            trainer.save_snapshot()

    started = time.perf_counter()
    fitted = parsing.train_parser(
        recipe.config(data),
        data,
        recipe.settings(f"parser, {share:g} of the training files", steps_per_epoch),
        run_dir,
        device=device,
        on_step=snapshot_at_epoch_ends,
    )
    seconds = time.perf_counter() - started
    steps = fitted.result.progress.step
    epochs = fitted.trainer.epochs_done()
    per_epoch = steps / max(epochs, 1e-9)
    dev_loss = [
        {"step": r["step"], "epochs": round(r["step"] / per_epoch, 2), "nll": r["nll"]}
        for r in _metrics(run_dir)
        if r.get("kind") == "valid"
    ]
    dev_f1 = []
    snapshots = list_snapshots(run_dir)
    for path in snapshots:
        state = load_checkpoint(path)
        model, vocabularies = parsing.load_parser(state, device)
        run = parsing.evaluate_parser(
            model, vocabularies, data.trees["dev"], beam_size=1, constrained=True
        )
        step = int(state["step"])
        dev_f1.append(
            {
                "step": step,
                "epochs": round(step / per_epoch, 2),
                "f1": run.score.f1,
                "invalid": run.score.invalid,
            }
        )
    if len(snapshots) < recipe.average_last:
        raise ValueError(
            f"{len(snapshots)} snapshots for an average of the last {recipe.average_last}: "
            f"train at least {recipe.average_last * recipe.snapshot_epochs} epochs, or lower "
            "average_last"
        )
    save_torch(
        run_dir / AVERAGED_NAME, average_checkpoints(snapshots[-recipe.average_last :])
    )
    return ShareRun(
        share=share,
        train_trees=len(train_trees),
        steps=steps,
        epochs=round(epochs, 3),
        seconds=round(seconds, 1),
        precision=str(fitted.trainer.precision),
        dev_loss=dev_loss,
        dev_f1=dev_f1,
        run_dir=str(run_dir),
        tags=recipe.tags,
    )


def learning_curves(
    train_by_file: Sequence[Sequence[Tree]],
    dev_trees: Sequence[Tree],
    recipe: ParserRecipe,
    shares: Sequence[float],
    out_dir: str | os.PathLike,
    *,
    workers: int = 1,
    device: str = "cpu",
    variants: Sequence[ParserRecipe] = (),
) -> Iterator[ShareRun]:
    """Train one run per share (largest first), and each of `variants` on all the training
    files, yielding each `ShareRun` as it finishes. Chapter 07 passes its recipe (tags in the word
    slots) with the XX recipe (`dataclasses.replace(recipe, tags=False)`) as the variant.

    With workers > 1 that many spawned processes of one thread each share the runs: the cores on a
    CPU, the device on a GPU (where four processes each trained a Table 3 row of this size about as
    fast as one alone, results/gpu/book_calibration); otherwise they run one after another here.
    """
    planned = [
        (share, recipe, f"share_{share:g}") for share in sorted(set(shares), reverse=True)
    ]
    planned[1:1] = [
        (1.0, variant, f"share_1_variant_{i}_{'tags' if variant.tags else 'xx'}")
        for i, variant in enumerate(variants)
    ]
    jobs = [
        dict(
            train_trees=first_share(train_by_file, share),
            dev_trees=list(dev_trees),
            recipe=planned_recipe,
            run_dir=Path(out_dir) / folder,
            share=share,
            device=str(device),
        )
        for share, planned_recipe, folder in planned
    ]
    from ...runtime.side_by_side import side_by_side

    yield from side_by_side(train_share, jobs, workers=workers)


def source_dependence(
    model,
    vocabularies: parsing.ParserVocabularies,
    trees: Sequence[Tree],
    *,
    seed: int = 0,
) -> dict:
    """Does the parser read its sentence? Teacher-forced loss per target symbol with each tree's
    own sentence, and with the sentence of another tree of the same length (so the number of word
    slots still fits). A parser that uses the words loses much more with the wrong sentence than
    one that has only learned what trees of a given length tend to look like.

    Only trees that can get another sentence count, on both sides: within each length, the trees
    are shuffled and then rotated by one (every tree gets another's sentence); a length held by
    one tree alone, or a pair too long for the model's positions, is left out."""
    pairs, _ = vocabularies.encode(trees).fitting(model.config.max_len)
    by_length: dict[int, list[int]] = {}
    for i, (src, _) in enumerate(pairs):
        by_length.setdefault(len(src), []).append(i)
    rng = random.Random(seed)
    own, swapped = [], []
    for ids in by_length.values():
        if len(ids) < 2:
            continue
        ids = ids[:]
        rng.shuffle(ids)
        for i, j in zip(ids, ids[1:] + ids[:1]):
            own.append((pairs[i][0], pairs[i][1]))
            swapped.append((pairs[j][0], pairs[i][1]))
    if not own:
        raise ValueError("no two trees share a sentence length: nothing to swap")
    return {
        "nll_own_sentence": _teacher_forced_nll(model, own),
        "nll_other_sentence": _teacher_forced_nll(model, swapped),
        "trees": len(pairs),
        "trees_with_another_sentence": len(own),
    }


def sentence_share(reads: Mapping) -> float:
    """The share of the loss (%) that the parser's own sentence is worth (`reads`: what
    `source_dependence` returns)."""
    other = reads["nll_other_sentence"]
    return 100 * (other - reads["nll_own_sentence"]) / other


@torch.no_grad()
def _teacher_forced_nll(model, pairs, batch: int = 32) -> float:
    c = model.config
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for start in range(0, len(pairs), batch):
        src, tgt = collate_pairs(
            [(list(s), list(t)) for s, t in pairs[start : start + batch]],
            c.pad_id,
            c.bos_id,
            c.eos_id,
        )
        src, tgt = src.to(device), tgt.to(device)
        with attention_kernels.for_varying_shapes(device):
            logits = model(src, tgt[:, :-1]).float()
        gold = tgt[:, 1:]
        total += F.cross_entropy(
            logits.reshape(-1, logits.size(-1)),
            gold.reshape(-1),
            ignore_index=c.pad_id,
            reduction="sum",
        ).item()
        count += int((gold != c.pad_id).sum())
    return total / max(count, 1)


def _metrics(run_dir: Path) -> list[dict]:
    path = run_dir / METRICS_NAME
    return read_lines(path, "metrics_log") if path.is_file() else []


@dataclass
class ChapterRuns:
    """Chapter 07's live runs: the tags parser by share, the XX variant on all the files, and the
    averaged models of both on all the files (loaded before the run folders go, by
    `load_checkpoint`, which refuses a file with a NaN or inf weight in one line naming the file
    and the tensor, as every other checkpoint is refused)."""

    runs: dict[float, ShareRun]
    variant: ShareRun
    states: dict[str, dict]  # "tags", "xx": each one's averaged state, all the files
    seconds: float


def chapter_runs(
    train_by_file: Sequence[Sequence[Tree]],
    dev_trees: Sequence[Tree],
    recipe: ParserRecipe,
    shares: Sequence[float],
    *,
    workers: int = 1,
    device: str = "cpu",
    show_progress: bool = True,
) -> ChapterRuns:
    """Train `recipe` (tags in the word slots) on each share and its XX twin on all the files
    (`learning_curves`), in a temporary folder, with a progress bar of runs."""

    from ...runtime.progress import progress_bar

    if not recipe.tags:
        raise ValueError(
            "chapter 07's parser writes the tags: give a recipe with tags=True"
        )
    shares = sorted(set(shares) | {1.0})
    xx_recipe = dataclasses.replace(recipe, tags=False)
    runs, states, variant = {}, {}, None
    started = time.perf_counter()
    with scratch_folder("at-parser-") as out_dir:
        bar = progress_bar(
            total=len(shares) + 1,
            desc="parser runs",
            unit="run",
            disable=not show_progress,
        )
        for run in learning_curves(
            train_by_file,
            dev_trees,
            recipe,
            shares,
            out_dir,
            workers=workers,
            device=device,
            variants=[xx_recipe],
        ):
            bar.update(1)
            if not run.tags:
                variant = run
                states["xx"] = load_checkpoint(run.averaged)
                continue
            runs[run.share] = run
            if run.share == 1.0:
                states["tags"] = load_checkpoint(run.averaged)
        bar.close()
    return ChapterRuns(runs, variant, states, time.perf_counter() - started)


# ------------------------------------------------------------------------ the extended run's curves
def best_point(curve: Sequence[Mapping], key: str = "epochs") -> tuple[float, float]:
    """(best F1, the epoch it came at; the first one on a tie)."""
    best = max(curve, key=lambda p: p["f1"])
    return best["f1"], best[key]


def scored_jobs(test: Mapping | None) -> dict[float, Mapping]:
    """The extended run's test records by share (`parsing_extended.score_test`'s file; {} for
    None)."""
    return {float(j["share"]): j for j in test["jobs"]} if test else {}


def extended_summary(document: Mapping, test: Mapping | None = None) -> list[dict]:
    """One row per share of the extended run (`parsing_extended.export`), smallest share first:
    trees, epochs, best dev F1 and its epoch, last dev F1, whether the run's rule stopped it, and
    its test record (`test`'s, None where that share is not scored)."""
    stopped = {float(k): v for k, v in document.get("stopped", {}).items()}
    scored = scored_jobs(test)
    rows = []
    for job in sorted(document["jobs"], key=lambda j: j["share"]):
        f1, at = best_point(job["curve"], key="epoch")
        rows.append(
            dict(
                share=job["share"],
                trees=job["train_trees"],
                epochs=len(job["curve"]),
                best=f1,
                at=at,
                last=job["curve"][-1]["f1"],
                stopped=bool(stopped.get(float(job["share"]), False)),
                test=scored.get(float(job["share"])),
            )
        )
    return rows
