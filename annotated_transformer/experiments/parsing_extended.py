"""The parser trained until it stops improving: dev F1 by epoch and by share of the training trees.

Chapter 07's live parser trains for the minutes a chapter has. How far the same recipe goes, and how
F1 grows with trees and with training, needs hours: this run trains one job per share of the
training files (a quarter, a half, all), one epoch at a time, scores every epoch's model on the 273
development trees (greedy, constrained to valid trees) and stops a job once its dev F1 has not risen
for `patience` (a fifth) of its epochs so far, after at least `min_epochs`. Jobs advance in rounds of
one epoch each, so an interrupted run leaves the three curves about as long; a second invocation
continues every job from its checkpoint (the schedule has no horizon, so an epoch resumed is the
epoch a single run would have trained) and retrains nothing.

Each job keeps its last `average_last` snapshots; whenever dev F1 reaches a new best it also keeps
that epoch's model (`best.pt`) and the average of the snapshots up to it (`best_average.pt`), so the
model the chapter scores on the test trees can be chosen on dev after the run. The test trees are
never read here.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from nltk import Tree

from ..runtime.files import atomic_write_text
from ..training.checkpoint import (
    RESUME_NAME,
    atomic_torch_save,
    average_checkpoints,
    list_snapshots,
)
from ..training.run_folder import LOCK_NAME
from . import parsing
from .parsing_curve import ParserRecipe, first_share

CURVE_NAME = "curve.json"
PLAN_NAME = "parser_run.json"
BEST_NAME, BEST_AVERAGE_NAME = "best.pt", "best_average.pt"
PATIENCE = 0.2  # stop once dev F1 has not risen for this share of the epochs so far


def share_name(share: float) -> str:
    return f"share_{share:g}"


def should_stop(
    f1: Sequence[float], *, min_epochs: int, max_epochs: int, patience: float = PATIENCE
) -> bool:
    """Whether a job is done: `max_epochs` reached, or at least `min_epochs` trained and the best dev
    F1 is `patience` of the epochs or more behind (epoch 50 best, 63 trained: 13 >= 12.6, stop)."""
    epochs = len(f1)
    if epochs >= max_epochs:
        return True
    if epochs < min_epochs:
        return False
    best = max(range(epochs), key=lambda i: (f1[i], -i)) + 1
    return epochs - best >= patience * epochs


@dataclass(frozen=True)
class ParserCurveRun:
    """A run folder of one job per share, under one recipe (refused when it changes)."""

    recipe: ParserRecipe
    out_dir: Path
    min_epochs: int = 20
    max_epochs: int = 300

    def folder(self, share: float) -> Path:
        return Path(self.out_dir) / share_name(share)

    def curve(self, share: float) -> list[dict]:
        path = self.folder(share) / CURVE_NAME
        return json.loads(path.read_text())["curve"] if path.is_file() else []

    def done(self, share: float) -> bool:
        f1 = [p["f1"] for p in self.curve(share)]
        return should_stop(f1, min_epochs=self.min_epochs, max_epochs=self.max_epochs)

    def check_folder(self) -> None:
        path = Path(self.out_dir) / PLAN_NAME
        if path.is_file():
            # The epochs are the run's limit, not its recipe: a later call may raise them.
            saved = json.loads(path.read_text())["recipe"]
            mine = self.recipe.to_dict()
            changed = sorted(k for k in mine if k != "epochs" and saved.get(k) != mine[k])
            if changed:
                raise ValueError(
                    f"{self.out_dir} was trained with another recipe ({', '.join(changed)} "
                    "differ); continue it with its own recipe, or give another --out"
                )
        elif Path(self.out_dir).is_dir() and any(
            p.name != LOCK_NAME for p in Path(self.out_dir).iterdir()
        ):
            raise ValueError(
                f"{self.out_dir} holds files but no {PLAN_NAME}: it is not a parser run; give "
                "an empty or new --out"
            )

    def train_epoch(
        self, share: float, train: Sequence[Tree], dev: Sequence[Tree]
    ) -> dict:
        """One more epoch of the job of `share`, its dev F1, and the best models kept."""
        folder = self.folder(share)
        curve = self.curve(share)
        epoch = len(curve) + 1
        recipe = self.recipe
        data = parsing.ParsingData.from_splits(
            {"train": list(train), "dev": list(dev)}, tags=recipe.tags
        )
        settings = recipe.settings(f"parser extended, {share:g} of the files", 1).replace(
            max_epochs=epoch,
            eval_every=0,
            log_every=10_000,
            keep_snapshots=recipe.average_last,
        )
        started = time.perf_counter()
        fitted = parsing.train_parser(
            recipe.config(data),
            data,
            settings,
            folder / "train",
            resume=(folder / "train" / RESUME_NAME).is_file(),
        )
        result = fitted.result
        if result.stopped_by != "max_epochs":
            raise KeyboardInterrupt(f"{share_name(share)} stopped by {result.stopped_by}")
        model = fitted.model.eval()
        scored = parsing.evaluate_parser(
            model, data.vocabularies, data.trees["dev"], beam_size=1, constrained=True
        )
        point = {
            "epoch": epoch,
            "step": result.progress.step,
            "dev_nll": round(float(result.valid["nll"]), 4),
            "f1": scored.score.f1,
            "invalid": scored.score.invalid,
            "train_s": round(result.progress.train_time_s, 1),
            "wall_s": round(time.perf_counter() - started, 1),
        }
        if point["f1"] > max((p["f1"] for p in curve), default=-1.0):
            snapshots = list_snapshots(folder / "train")
            shutil.copyfile(snapshots[-1], folder / f"{BEST_NAME}.tmp")
            os.replace(folder / f"{BEST_NAME}.tmp", folder / BEST_NAME)
            atomic_torch_save(
                average_checkpoints(snapshots[-recipe.average_last :]),
                folder / BEST_AVERAGE_NAME,
            )
            point["best"] = True
        record = {
            "share": share,
            "train_trees": len(train),
            "recipe": recipe.to_dict(),
            "precision": str(fitted.trainer.precision),
            "curve": [*curve, point],
        }
        atomic_write_text(folder / CURVE_NAME, json.dumps(record, indent=1))
        return point


def read_splits(data_dir=None) -> tuple[list[list[Tree]], list[Tree]]:
    """(training trees by file, development trees), cleaned, from the treebank."""
    from ..data import treebank_zip_path

    files = parsing.read_treebank(treebank_zip_path(data_dir))
    split = parsing.split_by_file(files)

    def cleaned(ids):
        return [t for t in (parsing.clean_tree(x) for f in ids for x in files[f]) if t]

    return [cleaned([f]) for f in split["train"]], cleaned(split["dev"])


def train_all(
    run: ParserCurveRun,
    shares: Sequence[float],
    *,
    data_dir=None,
    show_progress: bool = True,
) -> dict:
    """Advance every share's job an epoch a round until each one stops; under a lock."""
    from filelock import FileLock, Timeout

    from ..runtime.progress import progress_bar

    run.check_folder()
    out = Path(run.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / PLAN_NAME).is_file():
        atomic_write_text(
            out / PLAN_NAME, json.dumps({"recipe": run.recipe.to_dict()}, indent=1)
        )
    lock = FileLock(str(out / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise ValueError(
            f"{out} is in use by another parser run; wait for it or give another --out"
        ) from None
    try:
        torch.set_num_threads(1)
        train_by_file, dev = read_splits(data_dir)
        trees = {s: first_share(train_by_file, s) for s in shares}
        trained = 0
        bar = progress_bar(unit="epoch", desc="parser", disable=not show_progress)
        while True:
            active = [s for s in shares if not run.done(s)]
            if not active:
                break
            for share in active:
                point = run.train_epoch(share, trees[share], dev)
                trained += 1
                bar.set_postfix_str(
                    f"{share_name(share)} epoch {point['epoch']}: dev F1 {point['f1']:.1f}"
                )
                bar.update(1)
        bar.close()
        return {"trained": trained, "epochs": {s: len(run.curve(s)) for s in shares}}
    finally:
        lock.release()


# ------------------------------------------------------------------------------------------ results
def export(run: ParserCurveRun, shares: Sequence[float], path: str | os.PathLike) -> Path:
    """Write every share's curve to `path` (the committed results file); refuse to replace a file
    that holds a share or an epoch the run folder lacks, or another recipe's curves."""
    path = Path(path)
    if path.resolve().is_relative_to(Path(run.out_dir).resolve()):
        raise ValueError(
            f"--export {path} lies inside the run folder {run.out_dir}, whose files it reads; "
            "export to a path outside it (results/parser_extended_cpu/curves.json)"
        )
    jobs = []
    for share in shares:
        folder = run.folder(share)
        if (folder / CURVE_NAME).is_file():
            jobs.append(json.loads((folder / CURVE_NAME).read_text()))
    if not jobs:
        raise ValueError(f"{run.out_dir} holds no finished epoch: nothing to export")
    if path.is_file():
        old = json.loads(path.read_text())
        mine = {j["share"]: len(j["curve"]) for j in jobs}
        lost = [
            f"share {j['share']:g} ({len(j['curve'])} epochs)"
            for j in old["jobs"]
            if mine.get(j["share"], 0) < len(j["curve"])
        ]
        if lost or old["recipe"] != {
            k: v for k, v in run.recipe.to_dict().items() if k != "epochs"
        }:
            raise ValueError(
                f"{path} holds what {run.out_dir} lacks ({', '.join(lost) or 'another recipe'});"
                " export to another path, or continue the run that wrote it"
            )
    document = {
        "recipe": {k: v for k, v in run.recipe.to_dict().items() if k != "epochs"},
        "min_epochs": run.min_epochs,
        "max_epochs": run.max_epochs,
        "patience": PATIENCE,
        "stopped": {j["share"]: run.done(j["share"]) for j in jobs},
        "jobs": [{k: v for k, v in j.items() if k != "recipe"} for j in jobs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(document, indent=1))
