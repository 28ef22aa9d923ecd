"""The parser trained until it stops improving: dev F1 by epoch and by share of the training trees.

Chapter 07's live parser trains for the minutes a chapter has. How far the same recipe goes, and how
F1 grows with trees and with training, needs hours: this run trains one job per share of the
training files (a quarter, a half, all), one epoch at a time, scores every epoch's model on the 273
development trees (greedy, constrained to valid trees) and stops a job once its dev F1 has not risen
for `patience` (a fifth) of its epochs so far, after at least `min_epochs`. It is a long run
(`training.long_run`: its folder, records and export), resumed over several invocations. Jobs
advance in rounds of one epoch each, so an interrupted run leaves the three curves about as long; a
second invocation continues every job from its checkpoint (the schedule has no horizon, so an epoch
resumed is the epoch a single run would have trained) and retrains nothing.

Each job keeps its last `average_last` snapshots; whenever dev F1 reaches a new best it also keeps
that epoch's model (`best.pt`) and the average of the snapshots up to it (`best_average.pt`), so the
model the chapter scores on the test trees can be chosen on dev after the run. Training never reads
the test trees; `score_test` does, once a share's job has stopped: it chooses on the dev trees
between the two models and between greedy and the chapter's beam, parses the test sentences once
with the choice, and records the score in a results file that it never rewrites for that share.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from nltk import Tree

from ...runtime.devices import device_name
from ...runtime.files import copy_file, staged_files
from ...runtime.records import check_record, read_json, write_record
from ...training.checkpoint import (
    RESUME_NAME,
    atomic_torch_save,
    average_checkpoints,
    list_snapshots,
    load_checkpoint,
)
from ...training.long_run import (
    CURVE_NAME,
    JobRecord,
    LongRun,
    RunExport,
    RunPlan,
    machines,
    now,
    read_export,
)
from ...training.run_folder import LOCK_NAME
from .. import constituency_parsing as parsing
from .curve import ParserRecipe, first_share

KIND = "parser"
PLAN_NAME = "parser_run.json"
BEST_NAME, BEST_AVERAGE_NAME = "best.pt", "best_average.pt"
PATIENCE = 0.2  # stop once dev F1 has not risen for this share of the epochs so far


def long_run(out_dir: str | os.PathLike) -> LongRun:
    """The parser's run folder `out_dir` as a long run (its plan, records, lock and export)."""
    return LongRun(out_dir, KIND, PLAN_NAME, "parser-curve", "a parser run")


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
    """A run folder of one job per share, under one recipe (refused when it changes), trained on
    `device` (a resolved device: "cpu", "cuda:0"). The folder records the kind of device it was
    trained on and is continued only on that kind, and each job continues in the precision its
    curve was trained in: "auto" may mean another one elsewhere (measured on a CPU, bf16 or fp16 on
    a GPU), and one curve never mixes two."""

    recipe: ParserRecipe
    out_dir: Path
    min_epochs: int = 20
    max_epochs: int = 300
    device: str = "cpu"

    def __post_init__(self):
        if self.min_epochs < 1 or self.max_epochs < 1:
            raise ValueError(
                f"min_epochs (--min-epochs) {self.min_epochs} and max_epochs (--max-epochs) "
                f"{self.max_epochs} must be at least 1"
            )
        if self.min_epochs > self.max_epochs:
            raise ValueError(
                f"min_epochs (--min-epochs) {self.min_epochs} is more than max_epochs "
                f"(--max-epochs) {self.max_epochs}: a job stops at max_epochs, so the rule of at "
                "least min_epochs could never hold; lower --min-epochs or raise --max-epochs"
            )

    @property
    def run(self) -> LongRun:
        return long_run(self.out_dir)

    def identity(self) -> dict:
        """What every share's job shares: the recipe (its epochs are the run's limit, which a
        later call may raise) and the kind of device."""
        recipe = {k: v for k, v in self.recipe.to_dict().items() if k != "epochs"}
        return {"recipe": recipe, "device_type": torch.device(self.device).type}

    def folder(self, share: float) -> Path:
        return self.run.folder(share_name(share))

    def curve(self, share: float) -> list[dict]:
        return self.run.curve(share_name(share))

    def done(self, share: float) -> bool:
        f1 = [p["f1"] for p in self.curve(share)]
        return should_stop(f1, min_epochs=self.min_epochs, max_epochs=self.max_epochs)

    def stopped(self, share: float) -> bool:
        """Whether the share's job stopped under the rule of the training call that trained it
        last: the folder records each share's stop (`record_stops`) with that call's rule, and a
        share trained since (a longer curve) has not stopped. A folder from before the record is
        judged by its recorded rule (`done`)."""
        plan = self.run.plan()
        if plan is None:
            return self.done(share)
        stop = plan.stops.get(share_name(share))
        return stop is not None and stop["epochs"] == len(self.curve(share))

    def check_folder(self) -> None:
        self.run.check_folder()
        identity = self.identity()
        changed = self.run.changed(identity)
        if "recipe" in changed:
            saved, mine = changed["recipe"] or {}, identity["recipe"]
            differ = sorted(k for k in mine if saved.get(k) != mine[k])
            raise ValueError(
                f"{self.out_dir} was trained with another recipe ({', '.join(differ)} "
                "differ); continue it with its own recipe, or give another --out"
            )
        if "device_type" in changed:
            trained_on, here = changed["device_type"], identity["device_type"]
            raise ValueError(
                f"{self.out_dir} was trained on {trained_on}, and this run would continue "
                f"it on {here} in another precision; continue it with --device "
                f"{trained_on}, or give another --out"
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
        if curve:
            # A job continues in the precision its curve was trained in: "auto" may mean another
            # one here (measured on a CPU; fp16 on a GPU without bf16), and one curve never mixes two.
            settings = settings.replace(
                precision=self.run.job(share_name(share)).precision
            )
        started = time.perf_counter()
        fitted = parsing.train_parser(
            recipe.config(data),
            data,
            settings,
            folder / "train",
            device=self.device,
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
            copy_file(snapshots[-1], folder / BEST_NAME)
            atomic_torch_save(
                average_checkpoints(snapshots[-recipe.average_last :]),
                folder / BEST_AVERAGE_NAME,
            )
            point["best"] = True
        precision, device = str(fitted.trainer.precision), device_name(self.device)
        record = self.run.job(share_name(share)) or JobRecord(
            KIND,
            share_name(share),
            {"share": share},
            precision=precision,
            device=device,
            facts={"train_trees": len(train)},
        )
        self.run.write_job(record.with_point(point, precision=precision, device=device))
        return point


def read_splits(data_dir=None, names: Sequence[str] = ("train", "dev")) -> list:
    """The cleaned trees of each split in `names`, from the treebank: the training trees by
    file, the others' all in one list."""
    from ...data import treebank_zip_path

    files = parsing.read_treebank(treebank_zip_path(data_dir))
    split = parsing.split_by_file(files)

    def cleaned(fid):
        return [t for t in (parsing.clean_tree(x) for x in files[fid]) if t]

    by_file = {name: [cleaned(fid) for fid in split[name]] for name in names}
    return [
        trees if name == "train" else [t for file in trees for t in file]
        for name, trees in by_file.items()
    ]


def train_all(
    run: ParserCurveRun,
    shares: Sequence[float],
    *,
    data_dir=None,
    show_progress: bool = True,
) -> dict:
    """Advance every share's job an epoch a round until each one stops; under a lock."""
    from ...runtime.progress import progress_bar

    run.check_folder()
    with run.run.lock():
        write_plan(run)
        torch.set_num_threads(1)
        train_by_file, dev = read_splits(data_dir)
        trees = {s: first_share(train_by_file, s) for s in shares}
        trained = 0
        bar = progress_bar(unit="epoch", desc="parser", disable=not show_progress)
        while True:
            record_stops(run, shares)
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


def write_plan(run: ParserCurveRun) -> None:
    """The folder's recipe and the stopping rule it was last trained under, so that scoring it
    later (`open_run`) judges which jobs have stopped by that rule, not by flags given again.
    The shares' recorded stops (`record_stops`) are kept: each under the rule it stopped by."""
    old = run.run.plan()
    rule = {"min_epochs": run.min_epochs, "max_epochs": run.max_epochs}
    run.run.write_plan(RunPlan(KIND, run.identity(), rule, old.stops if old else {}))


def record_stops(run: ParserCurveRun, shares: Sequence[float]) -> None:
    """Record in the folder's plan each share that this training call finds stopped, with its
    epochs and this call's rule: `--score-test` scores a share only while its curve is as long
    as when it stopped, so a later call's other rule never makes a share still training look
    stopped."""
    plan = run.run.plan()
    stops = dict(plan.stops)
    for share in shares:
        if run.done(share):
            stops[share_name(share)] = {
                "epochs": len(run.curve(share)),
                "min_epochs": run.min_epochs,
                "max_epochs": run.max_epochs,
            }
    run.run.write_plan(RunPlan(KIND, plan.identity, plan.targets, stops))


# ------------------------------------------------------------------------------------------ results
def export(run: ParserCurveRun, shares: Sequence[float], path: str | os.PathLike) -> Path:
    """Write every share's curve to `path` (the committed results file); refuse to replace a file
    that holds a share or an epoch the run folder lacks, or another recipe's curves."""
    jobs = [j for j in (run.run.job(share_name(s)) for s in shares) if j is not None]
    document = RunExport(
        KIND,
        identity=run.identity(),
        targets={"min_epochs": run.min_epochs, "max_epochs": run.max_epochs},
        jobs=tuple(jobs),
        written=now(),
        machine=machines(jobs),
        notes={
            "patience": PATIENCE,
            "stopped": {str(j.job["share"]): run.done(j.job["share"]) for j in jobs},
        },
    )
    return run.run.export(
        path,
        document,
        other="another recipe",
        example="results/parser_extended_cpu/curves.json",
    )


def read_curves(path: str | os.PathLike) -> dict:
    """The exported parser run in `path` as chapter 07 reads it: the export's view
    (`RunExport.view`: each job its share, trees and curve; `stopped` by share) with the recipe
    and the stopping rule (`min_epochs`, `max_epochs`) at its top."""
    export = read_export(path, KIND)
    return {**export.view(), "recipe": dict(export.identity["recipe"]), **export.targets}


# --------------------------------------------------------------------------------- the test score
SNAPSHOT_NAMES = (BEST_NAME, BEST_AVERAGE_NAME)
SNAPSHOT_WORDS = {
    BEST_NAME: "the model of its best dev epoch",
    BEST_AVERAGE_NAME: "the average of its snapshots up to its best dev epoch",
}
_STEP = re.compile(r"step_0*(\d+)\.pt$")


def open_run(out_dir: str | os.PathLike, device: str = "cpu") -> ParserCurveRun:
    """The run in `out_dir` under the recipe and stopping rule (`should_stop`) it was trained with
    (its ``parser_run.json``), to read, and to score on `device`."""
    out = Path(out_dir)
    if not out.is_dir():
        raise ValueError(
            f"{out} does not exist: give the run folder that `parser-curve --out` trained"
        )
    plan = long_run(out).plan()
    if plan is None:
        raise ValueError(
            f"{out} holds no {PLAN_NAME}: it is not a parser-curve run folder"
        )
    rule = dict(plan.targets)
    recipe = {**plan.identity["recipe"], "epochs": rule["max_epochs"]}
    return ParserCurveRun(ParserRecipe.from_dict(recipe), out, **rule, device=str(device))


def _epochs_of(curve: Sequence[dict], state: dict, name: str) -> list[int]:
    """The epochs whose snapshots make the checkpoint `state` (one, or those averaged), read from
    its steps; refused when the curve names none of them (a folder edited by hand)."""
    by_step = {p["step"]: p["epoch"] for p in curve}
    steps = (
        [int(_STEP.search(n).group(1)) for n in state["averaged_from"]]
        if state.get("averaged_from")
        else [state["step"]]
    )
    missing = [s for s in steps if s not in by_step]
    if missing:
        raise ValueError(
            f"{name} holds step(s) {missing} that the share's {CURVE_NAME} does not end an "
            "epoch at: the folder is not as the run left it"
        )
    return [by_step[s] for s in steps]


def score_share(
    run: ParserCurveRun,
    share: float,
    train: Sequence[Tree],
    dev: Sequence[Tree],
    test: Sequence[Tree],
    trees_dir: str | os.PathLike,
    *,
    progress: Callable[[int], object] | None = None,
) -> dict:
    """One stopped job scored on the test trees once, at the model and search chosen on dev.

    `best.pt` and `best_average.pt` are each parsed on the dev trees greedily and with the
    chapter's beam (`parsing.choose_search`: beam 21, alpha 0.3, constrained); the pair with the
    highest dev F1 parses the test sentences once (`parsing.report_parser`, which writes the gold
    and parsed trees to `trees_dir` for evalb). Ties go to the single snapshot before the average
    and to greedy before the beam. The test F1's interval and its margins over the two floors
    are `parsing.paired_f1_bootstrap`'s, as chapter 07 computes them."""
    from ...evaluation.results import provenance
    from .report import read_parsed

    folder = run.folder(share)
    curve = run.curve(share)
    data = parsing.ParsingData.from_splits(
        {"train": list(train), "dev": list(dev), "test": list(test)},
        tags=run.recipe.tags,
    )
    dev_scores, snapshots, best = {}, {}, None
    for name in SNAPSHOT_NAMES:
        state = load_checkpoint(folder / name)
        model, vocabularies = parsing.load_parser(state, run.device)
        if vocabularies != data.vocabularies:
            raise ValueError(
                f"{folder / name} was trained on other trees than the first {share:g} of "
                "these training files: score it with the treebank it was trained on (--data-dir)"
            )
        runs, chosen = parsing.choose_search(model, vocabularies, dev, progress=progress)
        dev_scores[name] = {
            r.name: {
                "f1": round(r.score.f1, 2),
                "invalid": r.score.invalid,
                "seconds": round(r.seconds, 1),
            }
            for r in runs.values()
        }
        snapshots[name] = {
            "what": SNAPSHOT_WORDS[name],
            "epochs": _epochs_of(curve, state, folder / name),
        }
        if best is None or chosen.score.f1 > best[2].score.f1:
            best = (name, model, chosen)
    name, model, chosen = best
    test_report = parsing.report_parser(
        model,
        data,
        split="test",
        decodings=(dict(beam_size=chosen.beam_size, constrained=True),),
        results_dir=trees_dir,
        file_suffix=f"_{share_name(share)}",
        progress=progress,
    )
    parsed = read_parsed(trees_dir, test_report)
    floors = parsing.baselines(data.trees["test"], data.trees["train"])
    against = {
        floor: parsing.paired_f1_bootstrap(data.trees["test"], trees, parsed)
        for floor, trees in floors.items()
    }
    right = next(floor for floor in floors if floor.startswith("right-branching"))
    headline = test_report["decodings"][chosen.name]
    made = provenance(run.device)
    return {
        "share": share,
        "train_trees": len(train),
        "epochs_trained": len(curve),
        "stopping_rule": {
            "min_epochs": run.min_epochs,
            "max_epochs": run.max_epochs,
            "patience": PATIENCE,
        },
        "chosen_on_dev": {
            "snapshot": name,
            "search": chosen.name,
            "beam_size": chosen.beam_size,
            "epoch": snapshots[name]["epochs"][-1],
            "dev_f1": round(chosen.score.f1, 2),
        },
        "snapshots": snapshots,
        "dev": dev_scores,
        "test": {
            "sentences": test_report["sentences"],
            **{
                k: round(headline[k], 2) for k in ("f1", "f1_le40", "precision", "recall")
            },
            "f1_ci95": [round(x, 2) for x in against[right]["second"]["ci95"]],
            "sentences_le40": headline["sentences_le40"],
            "exact_trees": headline["exact"],
            "invalid_trees": headline["invalid"],
            "f1_by_length": headline["f1_by_length"],
            "seconds": headline["seconds"],
        },
        "right_branching_floor": right,
        "floors": test_report["baselines"],
        "against_floors": against,
        "files": test_report["files"],
        "provenance": {
            "date": made["date"],
            "git_commit": made["git_commit"],
            "git_dirty": made["git_dirty"],
            "machine": made["device_name"],
            "platform": made["platform"],
            "torch": made["torch"],
            "threads": torch.get_num_threads(),
        },
    }


def _test_document(run: ParserCurveRun) -> dict:
    return {
        "what": "the extended parser run scored on the test sentences once per share, with the "
        "snapshot and the search chosen on the development trees",
        "recipe": run.identity()["recipe"],
        "choice": {
            "snapshots": list(SNAPSHOT_NAMES),
            "searches": [
                "greedy, constrained",
                f"beam {parsing.PAPER_BEAM}, constrained",
            ],
            "alpha": parsing.PAPER_ALPHA,
            "max_length": f"input + {parsing.PAPER_EXTRA_LENGTH}",
        },
        "scoring": parsing.EVALB_CONVENTIONS,
        "interval": "95% percentile bootstrap over the test sentences "
        "(parsing.paired_f1_bootstrap, 2,000 resamples, seed 0)",
        "jobs": [],
    }


def score_test(
    run: ParserCurveRun,
    shares: Sequence[float],
    path: str | os.PathLike,
    *,
    data_dir=None,
    splits: tuple[Sequence[Sequence[Tree]], Sequence[Tree], Sequence[Tree]] | None = None,
    show_progress: bool = True,
    say: Callable[[str], object] | None = None,
) -> dict:
    """Score every stopped share on the test trees once (`score_share`), under the run folder's lock,
    adding each to the results file `path` (written atomically after each share). A share the
    file already holds is never scored again, and a share whose job has not stopped
    (`ParserCurveRun.done`) is skipped, each with one line to `say`. `splits`: (training trees by
    file, dev trees, test trees), read from the treebank when None.

    Returns {"scored", "already", "unfinished": shares, "document": what `path` holds}."""
    from tqdm import tqdm

    from ...runtime.locks import folder_lock
    from ...runtime.progress import progress_bar

    say = say or tqdm.write
    path, out = Path(path), Path(run.out_dir)
    if not out.is_dir():
        raise ValueError(
            f"{out} does not exist: give the run folder that `parser-curve --out` trained"
        )
    if path.resolve().is_relative_to(out.resolve()):
        raise ValueError(
            f"--score-test {path} lies inside the run folder {out}, which it reads; write the "
            "test score outside it (results/parser_extended_cpu/test.json)"
        )
    with_curves = [s for s in shares if (run.folder(s) / CURVE_NAME).is_file()]
    if not with_curves:
        raise ValueError(
            f"{out} holds no {CURVE_NAME} of the shares {', '.join(f'{s:g}' for s in shares)}: "
            "no epoch has finished, nothing to score"
        )
    document = read_json(path, "parser_test") if path.is_file() else _test_document(run)
    if (
        not isinstance(document, dict)
        or "choice" not in document
        or not all(isinstance(j, dict) and "test" in j for j in document.get("jobs", []))
    ):
        raise ValueError(
            f"{path} is not a test-results record of parser-curve --score-test (the curves "
            "export?): give the test results path (results/parser_extended_cpu/test.json)"
        )
    check_record(document, "parser_test", path)
    if document.get("recipe") != run.identity()["recipe"]:
        raise ValueError(
            f"{path} holds the test scores of a run with another recipe: give another results "
            "path"
        )
    busy = f"{out} is in use by another parser run: score it once that run has stopped"
    with folder_lock(out / LOCK_NAME, busy):
        held = {float(j["share"]): j for j in document["jobs"]}
        todo, already, unfinished = [], [], []
        for share in shares:
            name = share_name(share)
            if share not in with_curves:
                say(f"{name}: no epoch has finished in {out}; skipped")
            elif share in held:
                job, chosen = held[share], held[share]["chosen_on_dev"]
                already.append(share)
                say(
                    f"{name}: already scored on test in {path} (F1 {job['test']['f1']:.1f}, "
                    f"{chosen['snapshot']} of epoch {chosen['epoch']}, {chosen['search']}); the "
                    f"test set is scored once: to rescore, move {path} away"
                )
            elif not run.stopped(share):
                curve = run.curve(share)
                at = max(curve, key=lambda p: p["f1"])
                unfinished.append(share)
                say(
                    f"{name}: still training ({len(curve)} epoch{'s' * (len(curve) != 1)}, "
                    f"best dev F1 "
                    f"{at['f1']:.1f} at epoch {at['epoch']}; it stops once no new best came "
                    f"for {PATIENCE:.0%} of its epochs, after at least {run.min_epochs}); skipped"
                )
            else:
                todo.append(share)
        if todo:
            # A folder holds the tree files of one results file: those its jobs name. Another's
            # (a second results file beside it) would be overwritten by these shares' trees.
            ours = {
                name for j in document["jobs"] for name in (j.get("files") or {}).values()
            }
            theirs = sorted(
                p.name
                for p in path.parent.glob("parsing_test_*.txt")
                if p.name not in ours
            )
            if theirs:
                raise ValueError(
                    f"{path.parent} holds test trees that {path.name} does not name "
                    f"({', '.join(theirs[:3])}): another results file's scores; a folder holds "
                    "the trees of one results file, so give --score-test a path in a folder of "
                    "its own"
                )
            splits = splits or read_splits(data_dir, ("train", "dev", "test"))
            train_by_file, dev, test = splits
            bar = progress_bar(
                total=len(todo) * (2 * 2 * len(dev) + len(test)),
                unit="sentence",
                desc="test score",
                disable=not show_progress,
            )
            for share in todo:
                bar.set_postfix_str(share_name(share))
                # the tree files appear beside the results file only once the share is scored
                with staged_files(path.parent) as stage:
                    job = score_share(
                        run,
                        share,
                        first_share(train_by_file, share),
                        dev,
                        test,
                        stage,
                        progress=bar.update,
                    )
                document["jobs"] = sorted(
                    [*document["jobs"], job], key=lambda j: -j["share"]
                )
                write_record(path, "parser_test", document)
                chosen, t = job["chosen_on_dev"], job["test"]
                say(
                    f"{share_name(share)}: test F1 {t['f1']:.1f} [{t['f1_ci95'][0]:.1f}, "
                    f"{t['f1_ci95'][1]:.1f}] ({t['f1_le40']:.1f} on the sentences of at most "
                    f"40 words), {chosen['snapshot']} of epoch {chosen['epoch']} with "
                    f"{chosen['search']}, chosen on dev ({chosen['dev_f1']:.1f})"
                )
            bar.close()
        return {
            "scored": todo,
            "already": already,
            "unfinished": unfinished,
            "document": document,
        }
