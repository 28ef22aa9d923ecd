"""A chapter run by hand: opened in Jupyter or Colab and run cell by cell, or executed with
papermill or nbconvert without the book's runner.

Such a run is a run of its own. Its profile, unless the parameters cell names one, is the
machine's (`gpu` where CUDA is visible, else `cpu`). It writes under `runs/by-hand/` (its results
in `runs/by-hand/results/<profile>/`, chapter 04's model in `runs/by-hand/book-<profile>/`), never
over what the book's runner published in `results/` and `runs/book-<profile>/`. Its first output
says what it runs, about how long that took before, how to choose `smoke` and where it writes.
A chapter that reads chapter 04's model (05, 08) takes the reader's own run by hand, else the
book's published one, else stops in one line that names the ways on.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..evaluation import results
from ..runtime.files import atomic_write_bytes, make_folder, point_link
from ..runtime.progress import on_a_page
from .progress import RECORD_NAME, good_times, minutes

AUTO = "auto"
# What a chapter reads from the results of others is seeded from the published ones; the runner's
# own record of its run is not (a chapter run by hand is not in it).
NOT_SEEDED = {RECORD_NAME}


class OneLineError(Exception):
    """An error IPython shows as one line, without a traceback: a chapter's own refusal."""

    # IPython's hook for an exception's own display
    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class NeedsTrainedModel(OneLineError, RuntimeError):
    """A chapter that reads chapter 04's model found none; one line naming the ways on."""


def machine_profile() -> str:
    """The profile that fits this machine: `gpu` where CUDA is visible, else `cpu`."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def resolve_profile_name(profile_name: str | None) -> str:
    """`profile_name`, or for "auto" (and None) the machine's."""
    return machine_profile() if profile_name in (None, AUTO) else profile_name


def by_hand() -> bool:
    """True when no book runner started this kernel (it sets AT_BOOK_BUILD)."""
    return not on_a_page()


def begin(profile_name: str, chapter: str | None, *, chosen: bool, show=print) -> None:
    """Make this kernel a run by hand (results and chapter 04's run under `runs/by-hand/`) and
    show its first line; nothing under the book's runner. `chosen` says whether the profile was
    named (else it is the machine's)."""
    if not by_hand():
        return
    os.environ[results.BY_HAND_ENV] = "1"
    if not os.environ.get(results.RESULTS_ENV):
        seed_results(profile_name)
    show(introduction(profile_name, chapter, chosen=chosen))


def seed_results(profile_name: str) -> Path:
    """Prepare the results root of runs by hand: the published results of `profile_name` that it
    lacks are copied in (the chapters that read another chapter's results find them), and every
    other folder of the published root is linked (the committed runs the chapters show)."""
    published = results.published_results_root()
    root = results.results_root()
    own = make_folder(root / profile_name, "the results folder of runs by hand")
    if not published.is_dir():
        return root
    for entry in published.iterdir():
        if not entry.name.startswith(".") and entry.name != profile_name:
            point_link(root / entry.name, entry.resolve())
    source = published / profile_name
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            if not path.is_file() or path.is_symlink() or path.name in NOT_SEEDED:
                continue
            target = own / path.relative_to(source)
            if not target.exists():
                atomic_write_bytes(target, path.read_bytes())
    return root


def expected_time(profile_name: str, chapter: str | None) -> str | None:
    """'about 18 min in the committed cpu run on AMD EPYC (2 cores)', from the newest good run of
    `chapter` under `profile_name` the book recorded: the runner's last run on this machine,
    else the committed run (with its hardware); None when neither has one."""
    if chapter is None:
        return None
    committed = results.committed_root()
    records = [results.published_results_root() / profile_name / RECORD_NAME]
    if committed is not None:
        records.append(committed / f"book_{profile_name}" / RECORD_NAME)
    for path in records:
        times, record = good_times(path) or ({}, {})
        for name, seconds in times.items():
            if name.startswith(f"{chapter}_"):
                machine = (record.get("provenance") or {}).get("device_name")
                where = (
                    "the book's last run here"
                    if path == records[0]
                    else f"the committed {profile_name} run on {machine or 'its machine'}"
                )
                return f"about {minutes(seconds)} in {where}"
    return None


def _book_minutes(profile_name: str) -> str:
    from ..profiles import get_profile

    return f"the whole {profile_name} book is sized for {get_profile(profile_name).book.minutes:g} min"


def introduction(profile_name: str, chapter: str | None, *, chosen: bool) -> str:
    """The first lines of a chapter run by hand: what it runs, about how long, how to choose
    `smoke`, and where it writes."""
    what = f"Chapter {chapter}" if chapter else "This chapter"
    why = "" if chosen else f" (the machine's: {_machine_words()})"
    lines = [f"{what}, run by hand with the {profile_name!r} profile{why}."]
    took = expected_time(profile_name, chapter)
    lines.append(
        f"It took {took}."
        if took
        else f"No run of it is recorded; {_book_minutes(profile_name)}."
    )
    if profile_name != "smoke":
        quick = expected_time("smoke", chapter)
        lines.append(
            'For a quick run, set profile_name = "smoke" in the parameters cell'
            + (f" ({quick})." if quick else f" ({_book_minutes('smoke')}).")
        )
    given = os.environ.get(results.RESULTS_ENV)
    where = _shown(Path(given) if given else results.by_hand_root() / "results")
    where = f"{where}/{profile_name}"
    published = _shown(results.published_results_root() / profile_name)
    lines.append(
        f"Results go to {where}/, never over what the book published in {published}/."
    )
    if chapter == "04":
        run = os.environ.get(results.BOOK_RUN_ENV)
        run = Path(run) if run else results.by_hand_root() / f"book-{profile_name}"
        lines.append(f"The model trains in {_shown(run)}/.")
    return "\n".join(lines)


def _machine_words() -> str:
    import torch

    if torch.cuda.is_available():
        return f"CUDA sees {torch.cuda.get_device_name(0)}"
    return "no GPU is visible"


def _shown(path: Path) -> str:
    """A path relative to the clone (or the working directory) when it lies inside."""
    base = results.repo_root() or Path.cwd()
    path = Path(path)
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def missing_model(profile_name: str, chapter: str, own_model: str) -> str:
    """The one line of a chapter that reads chapter 04's model and finds none: where it looked,
    and the ways on (chapter 04 under this profile or under `smoke`, with their times, or
    `own_model`, e.g. 'set checkpoint = "path/to/averaged.pt"')."""
    looked = " and ".join(_shown(f) + "/" for f in results.book_run_dirs(profile_name))
    if not by_hand():
        return (
            f"run chapter 04 first: {looked} holds no finished {profile_name} run, and only "
            f"chapter 04 trains it (python -m annotated_transformer book --profile "
            f"{profile_name} --chapters 04 {chapter})"
        )
    this = expected_time(profile_name, "04") or _book_minutes(profile_name)
    smoke = expected_time("smoke", "04") or _book_minutes("smoke")
    ways = [
        f"run chapter 04 with the {profile_name!r} profile first"
        + (f" ({this})" if this else "")
    ]
    if profile_name != "smoke":
        ways.append(
            'run it with profile_name = "smoke" and then this chapter with the same'
            + (f" ({smoke})" if smoke else "")
        )
    ways.append(own_model)
    return (
        f"chapter {chapter} reads the model chapter 04 trains under the {profile_name!r} "
        f"profile, and none is here (looked in {looked}): " + "; or ".join(ways) + "."
    )


def chapter04_checkpoint(profile_name: str, chapter: str) -> Path:
    """The averaged checkpoint of chapter 04's run that a chapter reads: the reader's own run by
    hand, else the book's published run (`results.book_run_dirs`).

    Raises:
        NeedsTrainedModel: none has one (one line: `missing_model`).
    """
    for folder in results.book_run_dirs(profile_name):
        if (folder / "averaged.pt").is_file():
            return folder / "averaged.pt"
    raise NeedsTrainedModel(
        missing_model(
            profile_name,
            chapter,
            'set checkpoint = "path/to/averaged.pt" (any checkpoint `train` wrote)',
        )
    )
