"""Chapter 04's run folders: whether to continue the profile's run, reading its log, and the
resume demonstration's folders and weights.

Reads a run as `pipeline.run` leaves it; moves nothing aside by itself (`pipeline.run(overwrite=
True)` does that, under the folder's lock).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...profiles import comparable_record
from ...runtime.files import remove_folder
from ...training.checkpoint import RESUME_NAME
from ...training.training_log import read_metrics


def start_run(folder: str | Path, profile, resume: bool) -> bool:
    """Whether the chapter continues the run in its folder: True when it holds an unfinished run
    of exactly `profile` (and `resume` asks for it). Otherwise the chapter starts afresh with
    `pipeline.run(..., overwrite=True)`, which moves an older run's files aside to
    `replaced/<time>/` (never deleted) only once it holds the folder's lock, so a run that is
    refused moves nothing of the run that holds it. Reads only."""
    return bool(resume and unfinished_run_of(Path(folder), profile))


def unfinished_run_of(folder: str | Path, profile) -> bool:
    """Whether `folder` holds a run of exactly this profile that stopped (or was killed) early
    (its start record read as today's code writes it: `comparable_record`)."""
    folder = Path(folder)
    records = read_metrics(folder)
    starts = [r for r in records if r["kind"] == "start"]
    stops = [r for r in records if r["kind"] == "stop"]
    same = bool(starts) and comparable_record(starts[0]["profile"]) == comparable_record(
        profile.to_dict()
    )
    early = (
        not stops or stops[-1]["stopped_by"] == "interrupted" or len(stops) < len(starts)
    )
    return (folder / RESUME_NAME).is_file() and same and early


def run_logs(folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(training log, validation log, start record) of a run folder's `metrics.jsonl`; a resumed
    run may log a step twice, and the later line wins."""
    records = read_metrics(folder)
    frame = lambda kind: pd.DataFrame(
        [r for r in records if r["kind"] == kind]
    ).drop_duplicates("step", keep="last")
    start = next(r for r in records if r["kind"] == "start")
    return frame("train"), frame("valid"), start


def fresh_folder(path: str | Path) -> Path:
    """`path`, emptied: a demonstration's runs must not find an older run there."""
    path = Path(path)
    remove_folder(path)
    return path


def compare_weights(first: str | Path, second: str | Path) -> tuple[int, float]:
    """(tensors, largest absolute difference) between the models of two resume checkpoints."""
    from ...training.checkpoint import load_checkpoint

    a = load_checkpoint(Path(first) / RESUME_NAME)["model"]
    b = load_checkpoint(Path(second) / RESUME_NAME)["model"]
    if a.keys() != b.keys():
        raise ValueError("the two checkpoints hold different tensors")
    largest = max((a[n].float() - b[n].float()).abs().max().item() for n in a)
    return len(a), largest


def quiet_run(profile, folder: str | Path, **kwargs) -> dict:
    """`pipeline.run` without a progress bar, a test evaluation or the trainer's opening lines
    (what it trains, in which precision): a demonstration's run, whose table says what it did."""
    import contextlib
    import io

    from ... import pipeline

    with contextlib.redirect_stdout(io.StringIO()):
        return pipeline.run(
            profile, folder, evaluate_test=False, show_progress=False, **kwargs
        )
