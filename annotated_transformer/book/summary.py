"""The reproduction summary the introduction prints: each claim of the paper beside what our runs measured.

Every cell is read from a results file (`results.read_result`) or says that the file is missing, so
no measured number is ever typed in; the paper's side is quoted from `paper.py`. A claim reads its
chapter's results record as the chapter's own type (`ChapterRecord`, its `record.py`), so a row
here names the field the chapter writes.

The claims come in panels, one per task (the model's size, training speed, translation, Table 3,
parsing). A panel names, for the paper and for every profile, what its numbers were measured on
(data, model size, hardware), read from the same results files: the paper's WMT14 numbers of a
65M-parameter model and our Multi30k numbers of a small model are never set side by side unnamed.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from ..chapters.chapter_record import ChapterRecord, typed
from ..chapters.constituency_parsing.record import ConstituencyParsingRecord
from ..chapters.model.record import ModelRecord
from ..chapters.model_variations.record import ModelVariationsRecord
from ..chapters.training.record import TrainingRecord
from ..chapters.translation_results.record import TranslationRecord
from ..chapters.why_self_attention.record import WhySelfAttentionRecord
from ..evaluation import paper
from ..evaluation.results import list_results, read_result, uncommitted_changes
from ..model.config import preset
from . import committed as committed_runs
from .committed import COMMITTED_PROFILES

R = TypeVar("R")

NOT_RUN = "not run yet"


def result_folders(
    profile: str,
    executing: str | None = None,
    committed: Iterable[str] = COMMITTED_PROFILES,
) -> list[str]:
    """The results root's folders a profile's column reads, first one first. The executing
    profile: its own folder (`cpu`), what this run wrote. A committed one: its committed book run
    (`book_gpu`, see `committed`), then its other committed records (`gpu`: the recipe runs), so
    that the book run's chapters speak for the profile wherever they have run."""
    if profile != executing and profile in tuple(committed):
        return [f"book_{profile}", profile]
    return [profile]


@dataclass(frozen=True)
class Claim:
    """One number of the paper and where ours is written.

    Attributes:
        label: what is compared (the panel says on what).
        paper: the paper's value as the summary prints it (text, because some are conditions or ranges).
        record: the chapter's record type (`ChapterRecord`) whose file holds our number, read
            from `results/<profile>/<RESULTS_NAME>.json`.
        value: our number (or a cell's text) from the typed record and the file's whole record
            (its provenance); None, or a field the file lacks, means "not in the file".
        chapter: the chapter that computes it.
        panel: the name of its `Panel`.
        fmt: how to print our number.
        interval: our number's 95% interval from the typed record: a half-width, printed as
            "± x", or a (low, high) pair, printed as "(95%: low-high)"; a record without it takes
            the interval a committed comparison computed on the same translations
            (`rescored_interval`).
        also: further results file stems read as the same record when the chapter's own file is
            missing; a stem ending in "*" stands for every file it begins.
    """

    label: str
    paper: str
    record: type[ChapterRecord]
    value: Callable[[Any, dict], object]
    chapter: str
    panel: str
    fmt: str = "{:.2f}"
    interval: Callable[[Any], object] | None = None
    also: tuple[str, ...] = ()

    @property
    def results(self) -> tuple[str, ...]:
        return (self.record.RESULTS_NAME, *self.also)


@dataclass(frozen=True)
class Panel:
    """Claims measured on one task. `paper` says what the paper's numbers were measured on;
    `describe` says the same of one results record of ours ("" when it cannot tell)."""

    name: str
    title: str
    paper: str
    describe: Callable[[dict], str]


def _flops(value: float) -> str:
    """3.3e18 as the paper writes it (not Python's 3.3e+18)."""
    return f"{value:.1e}".replace("e+", "e")


def _millions(parameters: float | None) -> str:
    return f"{parameters / 1e6:.1f}M-parameter model" if parameters else ""


def _joined(*parts: str) -> str:
    return ", ".join(part for part in parts if part)


def _metrics(record: dict) -> dict:
    metrics = record.get("metrics")
    return metrics if isinstance(metrics, dict) else {}


def _describe_counts(record: dict) -> str:
    metrics = _metrics(record)
    if "crossover_d" in metrics:
        return _joined(
            f"layers of width d = {metrics['crossover_d']}",
            "timed on " + str(metrics.get("device_name", "")),
        )
    return "the paper's configurations, counted (no data)"


def _hardware(record: dict) -> str:
    """The machine that wrote `record` ("AMD EPYC (2 cores)", "NVIDIA H100 80GB HBM3")."""
    provenance = record.get("provenance") or {}
    return str(provenance.get("device_name") or provenance.get("device") or "")


def _describe_training(record: dict) -> str:
    metrics = _metrics(record)
    tokens = metrics.get("target_tokens_per_step")
    return _joined(
        str(metrics.get("dataset", "")),
        _millions(metrics.get("parameters")),
        f"batches of about {tokens:,.0f} target tokens" if tokens else "",
        _hardware(record),
    )


def _describe_translation(record: dict) -> str:
    metrics = _metrics(record)
    test = metrics.get("test") if isinstance(metrics.get("test"), dict) else {}
    test_set = metrics.get("test_set") or test.get("test_set")
    sentences = metrics.get("sentences") or test.get("sentences")
    return _joined(
        str(test_set or ""),
        f"{sentences:,} sentences" if sentences else "",
        _millions(metrics.get("parameters")),
        _hardware(record),
    )


def _describe_variations(record: dict) -> str:
    metrics = _metrics(record)
    base = (metrics.get("rows") or {}).get("base") or {}
    steps, seeds = metrics.get("steps"), metrics.get("seeds")
    return _joined(
        str(metrics.get("dataset", "")),
        f"base row {base['params_m']:.2f}M parameters" if "params_m" in base else "",
        f"{steps:,} steps x {seeds} seeds" if steps and seeds else "",
        _hardware(record),
    )


def _describe_parsing(record: dict) -> str:
    metrics = _metrics(record)
    files = metrics.get("test_files") or []
    # Since chapter 07's parser writes the tags (XX is its variant_xx); before, XX was its parser.
    slots = (
        "tags in the word slots"
        if "variant_xx" in metrics
        else ("XX in the word slots" if "variant_tags" in metrics else "")
    )
    return _joined(
        str(metrics.get("dataset", "")),
        slots,
        f"test files {files[0]}-{files[-1]}" if files else "",
        f"{metrics['params_m']:.1f}M-parameter model" if metrics.get("params_m") else "",
        f"{metrics['train_trees']:,} training trees"
        if metrics.get("train_trees")
        else "",
        f"{metrics['recipe']['epochs']} epochs" if metrics.get("recipe") else "",
        f"{metrics['steps']:,} steps" if metrics.get("steps") else "",
        _hardware(record),
    )


_BASE = paper.table2_row("Transformer (base)")
_BASE_MODEL = f"base model ({paper.TABLE3['base'].params_m}M parameters)"
_PARSER = preset("parsing")

PANELS: tuple[Panel, ...] = (
    Panel(
        "model",
        "The model's size and arithmetic",
        "the paper's configurations",
        _describe_counts,
    ),
    Panel(
        "training",
        "Training speed",
        f"WMT14 EN-DE, {_BASE_MODEL}, batches of about 25,000 target tokens, "
        f"{paper.TRAINING_HARDWARE}",
        _describe_training,
    ),
    Panel(
        "translation",
        "English-to-German translation (Table 2)",
        f"WMT14 newstest2014, {_BASE_MODEL}",
        _describe_translation,
    ),
    Panel(
        "variations",
        "Model variations (Table 3)",
        f"WMT14 newstest2013 (dev), {_BASE_MODEL} and its variants, "
        f"{paper.TRAINING['base'].steps:,} steps each",
        _describe_variations,
    ),
    Panel(
        "parsing",
        "Constituency parsing (Table 4)",
        f"WSJ section 23, {_PARSER.n_layers}-layer Transformer (d_model {_PARSER.d_model}) "
        "trained on the WSJ only",
        _describe_parsing,
    ),
)

# The translation claims read chapter 05's file, else the one `train --profile <name>` writes,
# else a committed run of the profile's recipe (`recipe_*`, results/gpu/).
_TRANSLATION = ("translation_*", "recipe_*")

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "parameters, base (millions)",
        f"{paper.TABLE3['base'].params_m}",
        ModelRecord,
        lambda r, _: r.params_m["base"],
        "02_model",
        "model",
        "{:.1f}",
    ),
    Claim(
        "parameters, big (millions)",
        f"{paper.TABLE3['big'].params_m}",
        ModelRecord,
        lambda r, _: r.params_m["big"],
        "02_model",
        "model",
        "{:.1f}",
    ),
    Claim(
        "length below which self-attention is cheaper than a recurrent layer "
        "(the paper: by operations; ours: by measured time)",
        "n < d",
        WhySelfAttentionRecord,
        lambda r, _: r.crossover_n,
        "03_why_self_attention",
        "model",
        "{:,.0f}",
    ),
    Claim(
        "seconds per training step",
        f"{paper.TRAINING['base'].step_time_s}",
        TrainingRecord,
        lambda r, _: r.step_time_s,
        "04_training",
        "training",
        "{:.3f}",
    ),
    Claim(
        "tokenized BLEU (the paper's kind)",
        f"{_BASE.bleu_en_de}",
        TranslationRecord,
        lambda r, _: r.bleu_tokenized,
        "05_translation_results",
        "translation",
        "{:.1f}",
        also=_TRANSLATION,
    ),
    Claim(
        "sacreBLEU ± 95%",
        "not reported",
        TranslationRecord,
        lambda r, _: r.sacrebleu,
        "05_translation_results",
        "translation",
        "{:.1f}",
        interval=lambda r: r.sacrebleu_ci95,
        also=_TRANSLATION,
    ),
    Claim(
        "training cost (FLOPs, Table 2's way)",
        _flops(_BASE.flops_en_de),
        TranslationRecord,
        lambda r, record: training_cost_cell(r, record),
        "05_translation_results",
        "translation",
        also=_TRANSLATION,
    ),
    Claim(
        "dev perplexity per subword, base",
        f"{paper.TABLE3['base'].ppl}",
        ModelVariationsRecord,
        lambda r, _: r.rows["base"].ppl,
        "06_model_variations",
        "variations",
        "{:.2f}",
    ),
    Claim(
        "one head (A1) against base: change in dev perplexity, and chapter 06's verdict",
        f"{100 * (paper.TABLE3['A1'].ppl / paper.TABLE3['base'].ppl - 1):+.1f}% (worse)",
        ModelVariationsRecord,
        lambda r, _: finding_cell(r, "one head is worse"),
        "06_model_variations",
        "variations",
    ),
    Claim(
        # Ours: chapter 07's parser, tags in the word slots as the authors' code writes them.
        "F1, WSJ only (ours: the tags parser)",
        f"{paper.table4_row('Transformer (4 layers)', paper.WSJ_ONLY).f1}",
        ConstituencyParsingRecord,
        lambda r, _: r.f1,
        "07_constituency_parsing",
        "parsing",
        "{:.1f}",
        interval=lambda r: r.f1_ci95,
    ),
)


def read_as(cls: type[R], metrics: dict) -> R:
    """A results file's "metrics" as the record type `cls`, leniently: a field the file lacks
    (an older record, or the `train --publish` file a translation claim also reads) is None."""
    fields = {f.name: None for f in dataclasses.fields(cls) if f.init}
    return typed(cls, fields | metrics)


def training_cost_cell(metrics: TranslationRecord, record: dict) -> str | None:
    """The training cost as Table 2 counts it (training time x devices x the device's sustained
    rate), as chapter 05 prices a run: a record of chapter 05's holds it (`training_flops`, with
    `training_flops_how`); a run's own record holds its time, devices and GPU, priced at the GPU's
    data-sheet peak (`table2.recorded_paper_way`), as chapter 05 prices the committed gpu run. A
    run on a CPU, which has no data-sheet rate, shows the count of the model's operations, said as
    such. None when the record has no cost."""
    from ..chapters.translation_results.table2 import recorded_paper_way

    value = metrics.training_flops
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if metrics.training_flops_how is not None:
        return _flops(value)
    paper_way = recorded_paper_way(record)
    if paper_way is not None:
        return _flops(paper_way)
    return f"{_flops(value)} (operations counted; the run measured no rate)"


def rescored_interval(record: dict, root=None) -> float | None:
    """The 95% half-width a committed comparison (`compared_translations`, in the record's own
    results folder) computed for this record's translations, or None."""
    folder, name = record.get("profile"), record.get("name")
    if not folder or not name:
        return None
    for other in list_results(folder, root):
        systems = other.get("metrics", {}).get("systems")
        if not isinstance(systems, dict):
            continue
        for system in systems.values():
            if (
                isinstance(system, dict)
                and Path(str(system.get("record", ""))).stem == name
                and isinstance(system.get("ci95"), (int, float))
            ):
                return float(system["ci95"])
    return None


def chapter06_findings(record: ModelVariationsRecord) -> list[dict] | None:
    """Chapter 06's verdicts on its runs' final perplexities, assessed as the chapter assesses
    them (`findings.assess` on every row's per-seed validation perplexity, the whole corpus and
    the small one): the same verdicts however old the file's own stored ones are. None when the
    file holds no per-seed perplexities."""
    from ..chapters.model_variations import statistics as findings

    if not record.rows:
        return None

    def per_seed(rows) -> dict:
        return {
            name: {int(s): float(p) for s, p in zip(r.seeds, r.ppl_seeds)}
            for name, r in (rows or {}).items()
            if r.ppl_seeds
        }

    ppl = {"full": per_seed(record.rows), "small": per_seed(record.overfit)}
    return findings.assess(findings.FINDINGS, ppl)


def finding_cell(record: ModelVariationsRecord, name: str) -> str | None:
    """Chapter 06's verdict on finding `name` (`chapter06_findings`): each comparison's change in
    perplexity with its interval, then the verdict. None when the file cannot tell it."""
    assessed = chapter06_findings(record) or []
    found = [f for f in assessed if f["finding"] == name]
    if not found:
        return None
    parts = []
    for c in found[0]["comparisons"]:
        if c.get("difference_pct") is None:
            continue
        low, high = c["interval_pct"]
        parts.append(f"{c['difference_pct']:+.1f}% ({low:+.1f}% to {high:+.1f}%)")
    return "; ".join(parts + [found[0]["verdict"]])


def _records(
    claim: Claim, folders: Iterable[str], root, cache: dict
) -> list[tuple[str, dict | None]]:
    """(stem, record or None) for each results file the claim may read, in its order: every
    file of the first folder, then of the next (`result_folders`)."""
    found = []
    for folder in folders:
        for stem in claim.results:
            if stem.endswith("*"):
                if (stem, folder) not in cache:
                    cache[stem, folder] = [
                        (r["name"], r)
                        for r in list_results(folder, root)
                        if str(r.get("name", "")).startswith(stem[:-1])
                    ]
                found += cache[stem, folder]
            else:
                if (stem, folder) not in cache:
                    cache[stem, folder] = read_result(stem, folder, root)
                found.append((stem, cache[stem, folder]))
    return found


def files_of(
    claim: Claim,
    profile: str,
    root: str | os.PathLike | None = None,
    *,
    executing: str | None = None,
    committed: Iterable[str] = COMMITTED_PROFILES,
) -> list[str]:
    """The stems of the results files of `profile` that `claim` may read and that exist (in the
    folders `result_folders` gives it beside the `executing` profile)."""
    folders = result_folders(profile, executing, committed)
    return [stem for stem, r in _records(claim, folders, root, {}) if r is not None]


def _measured(
    claim: Claim, folders: list[str], root, cache: dict
) -> tuple[str, dict | None]:
    """The claim's cell for a profile read from `folders` and the record it came from (None: no file)."""
    records = _records(claim, folders, root, cache)
    present = [(stem, r) for stem, r in records if r is not None]
    if not present:
        return NOT_RUN, None
    for stem, record in present:
        metrics = _field(read_as, claim.record, record["metrics"])
        value = _field(claim.value, metrics, record)
        if value is not None:
            return _format_claim(claim, metrics, record, value, root), record
    return f"not in {present[0][0]}.json", None


def _field(read: Callable, *args) -> object:
    """`read(*args)`, or None where it reaches for what the file does not hold."""
    try:
        return read(*args)
    except (LookupError, TypeError, AttributeError):
        return None


def _format_claim(claim: Claim, metrics, record: dict, value, root=None) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    text = claim.fmt.format(value).replace("e+", "e")  # 3.3e18, as the paper writes it
    if claim.interval:
        interval = _field(claim.interval, metrics)
        if interval is None:
            interval = rescored_interval(record, root)
        if isinstance(interval, (int, float)) and not isinstance(interval, bool):
            text += f" ± {claim.fmt.format(interval).lstrip('+')}"
        elif isinstance(interval, (list, tuple)) and len(interval) == 2:
            low, high = (claim.fmt.format(x) for x in interval)
            text += f" (95%: {low}-{high})"
    return text


def profile_column(profile: str) -> str:
    """Summary-table column of a profile's measurements ("gpu run"), apart from "in the paper"."""
    return f"{profile} run"


def _profiles(profile: str, committed: Iterable[str]) -> list[str]:
    return [profile] + [p for p in committed if p != profile]


def summary_table(
    profile: str,
    *,
    committed: Iterable[str] = COMMITTED_PROFILES,
    claims: Iterable[Claim] = CLAIMS,
    root: str | os.PathLike | None = None,
):
    """Every claim as one row, for checking: its panel, the paper's value, one column per profile
    (named by `profile_column`, e.g. "smoke run") and the chapter. Each cell is read from that
    profile's own results file (for a committed profile, its book run's first: `result_folders`),
    or says "not run yet". The page shows `summary_panels` instead,
    which name what each number was measured on."""
    import pandas as pd  # deferred: pandas comes with the `book` extra, not with the package

    committed = tuple(committed)
    profiles = _profiles(profile, committed)
    cache: dict = {}
    rows = []
    for claim in claims:
        row = {"panel": claim.panel, "claim": claim.label, "in the paper": claim.paper}
        for prof in profiles:
            folders = result_folders(prof, profile, committed)
            row[profile_column(prof)] = _measured(claim, folders, root, cache)[0]
        row["chapter"] = claim.chapter
        rows.append(row)
    columns = [
        "panel",
        "claim",
        "in the paper",
        *map(profile_column, profiles),
        "chapter",
    ]
    return pd.DataFrame(rows, columns=columns)


def summary_panels(
    profile: str,
    *,
    committed: Iterable[str] = COMMITTED_PROFILES,
    claims: Iterable[Claim] = CLAIMS,
    root: str | os.PathLike | None = None,
) -> list[tuple[str, object]]:
    """The summary as the introduction shows it: (title, pandas DataFrame) per panel. A panel's
    table has one row for the paper and one per profile; its "measured on" column names the data
    and model of the row's numbers (from the records the row's cells were read from), then one
    column per claim. "not run yet" shows as a dash; the title names the panel's chapters."""
    import pandas as pd  # deferred, as in `summary_table`

    claims = tuple(claims)
    committed = tuple(committed)
    cache: dict = {}
    out = []
    for panel in PANELS:
        mine = [c for c in claims if c.panel == panel.name]
        if not mine:
            continue
        rows = [
            {"": "the paper", "measured on": panel.paper}
            | {c.label: c.paper for c in mine}
        ]
        for prof in _profiles(profile, committed):
            cells, described = {}, []
            folders = result_folders(prof, profile, committed)
            for claim in mine:
                text, record = _measured(claim, folders, root, cache)
                cells[claim.label] = SHOWN_NOT_RUN if text == NOT_RUN else text
                what = panel.describe(record) if record is not None else ""
                if what and what not in described:
                    described.append(what)
            rows.append(
                {
                    "": profile_column(prof),
                    "measured on": "; ".join(described) or SHOWN_NOT_RUN,
                }
                | cells
            )
        chapters = sorted({c.chapter[:2] for c in mine})
        where = f"chapter{'s' * (len(chapters) > 1)} {', '.join(chapters)}"
        title = (  # "Model variations (Table 3; chapter 06)", not "(Table 3) (chapter 06)"
            f"{panel.title[:-1]}; {where})"
            if panel.title.endswith(")")
            else f"{panel.title} ({where})"
        )
        out.append((title, pd.DataFrame(rows)))
    return out


# The page shows a dash where the table says NOT_RUN: short cells keep the columns readable.
SHOWN_NOT_RUN = "–"
# Results whose data is not a corpus (no "dataset" in their metrics, no recipe in their config).
DATASET_OF = {
    "attention": "random tensors",
    "model": "none (counts)",
    "book_run": "–",
    "attention_figures": "the paper's Figure 3-5 sentences, Multi30k model",
    "model_variations": "multi30k en->de, valid split",
}


def dataset_of(record: dict) -> str:
    """The data a results record was measured on: its metrics' "dataset", else its recipe's
    corpus and languages, else what the book's chapters without a corpus use."""
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    if metrics.get("dataset"):
        return str(metrics["dataset"])
    recipe = (
        (record.get("config") or {}).get("recipe")
        if isinstance(record.get("config"), dict)
        else None
    )
    if isinstance(recipe, dict) and recipe.get("corpus"):
        languages = f"{recipe.get('src_lang', '')}-{recipe.get('tgt_lang', '')}"
        return f"{recipe['corpus']} {languages}".rstrip("-")
    name = str(record.get("name", ""))
    # translation_<corpus>_<src>_<tgt>
    if name.startswith("translation_") and name.count("_") >= 3:
        corpus, src, tgt = name[len("translation_") :].rsplit("_", 2)
        return f"{corpus} {src}-{tgt}"
    return DATASET_OF.get(name, "")


def committed_book_runs(
    profile: str,
    *,
    committed: Iterable[str] = COMMITTED_PROFILES,
    root: str | os.PathLike | None = None,
) -> dict[str, dict]:
    """{profile: record} of each committed book run (`results/book_<profile>/book_run.json`)
    of the committed profiles other than the executing `profile`."""
    runs = {}
    for other in committed:
        if other != profile:
            record = committed_runs.read_run(other, root)
            if record is not None:
                runs[other] = record
    return runs


def describe_book_run(record: dict) -> str:
    """'3 chapters, run on 2026-11-27 at commit 1a2b3c4' for a book run's record."""
    entries = record["metrics"]["chapters"].values()
    days = sorted({(e.get("date") or "")[:10] for e in entries if e.get("date")})
    commits = [
        (e.get("git_commit") or "")[:7] + uncommitted_changes(e)
        for e in entries
        if e.get("git_commit")
    ]
    commits = list(dict.fromkeys(commits))
    text = f"{len(entries)} chapter{'s' * (len(entries) != 1)}"
    if days:
        text += f", run on {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "")
    if commits:
        text += f" at commit{'s' * (len(commits) > 1)} {', '.join(commits)}"
    return text


def book_run_table(
    record: dict | None,
    committed: dict[str, dict] | None = None,
    *,
    profile: str | None = None,
):
    """Each chapter's wall time in seconds, a column per book run: the executing `profile`'s
    `record` first, then each committed run (`committed_book_runs`), every column headed with its
    profile and hardware ("gpu: NVIDIA H100 80GB HBM3"). A chapter that did not succeed shows its status; one
    that a run has not reached is None (the page shows a dash)."""
    import pandas as pd  # deferred, as in `summary_table`

    runs: dict[str, dict] = {}
    if record is not None:
        runs[profile or record.get("profile", "")] = record
    for name, run in (committed or {}).items():
        runs.setdefault(name, run)
    columns = {
        name: f"{name}: {committed_runs.hardware(run)}" for name, run in runs.items()
    }
    chapters = sorted({c for run in runs.values() for c in run["metrics"]["chapters"]})
    rows = []
    for chapter in chapters:
        row: dict = {"chapter": chapter}
        for name, run in runs.items():
            entry = run["metrics"]["chapters"].get(chapter)
            row[columns[name]] = (
                None
                if entry is None
                else entry["wall_time_s"]
                if entry.get("status") == "ok"
                else entry.get("status")
            )
        rows.append(row)
    return pd.DataFrame(rows, columns=["chapter", *columns.values()])


def provenance_table(
    profiles: Iterable[str],
    root: str | os.PathLike | None = None,
    *,
    committed: Iterable[str] = COMMITTED_PROFILES,
):
    """One row per results file of `profiles` (the first the executing one; each read from the
    folders `result_folders` gives it): where and when it was measured, and how long it took."""
    import pandas as pd  # deferred, as in `summary_table`

    profiles, committed = list(profiles), tuple(committed)
    rows = []
    for prof in profiles:
        for folder in result_folders(prof, profiles[0], committed):
            for record in list_results(folder, root):
                prov = record.get("provenance") or {}
                rows.append(
                    {
                        "profile": prof,
                        "folder": f"results/{folder}/",
                        "result": record.get("name"),
                        "dataset": dataset_of(record),
                        "device": prov.get("device_name") or prov.get("device"),
                        "date": (prov.get("date") or "")[:10],
                        "commit": (prov.get("git_commit") or "")[:7],
                        "wall time (s)": record.get("wall_time_s"),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "profile",
            "folder",
            "result",
            "dataset",
            "device",
            "date",
            "commit",
            "wall time (s)",
        ],
    )


# ----------------------------------------------------------------------------------------------
# The introduction's closing section


def _shown(value) -> bool:
    """Whether a panel cell holds a measurement (not a dash, not "not in <file>")."""
    text = str(value)
    return text not in (SHOWN_NOT_RUN, NOT_RUN) and not text.startswith("not in ")


def closing(
    panels: list[tuple[str, object]], runs: dict[str, dict] | None = None
) -> list[str]:
    """The introduction's "What this run shows": one sentence per panel and profile row that holds
    a measurement, written from `panels` (what `summary_panels` returns, the tables the page shows
    above it), so that no sentence can say what its table does not; then one sentence per book run
    in `runs` ({profile: book_run record}) with its chapters, time and hardware."""
    sentences = []
    for title, table in panels:
        labels = [c for c in table.columns if c not in ("", "measured on")]
        paper = table[table[""] == "the paper"].iloc[0]
        for _, row in table[table[""] != "the paper"].iterrows():
            measured = [label for label in labels if _shown(row[label])]
            if not measured:
                continue
            pairs = "; ".join(
                f"{label}: {row[label]} (the paper: {paper[label]})" for label in measured
            )
            sentences.append(
                f"{title}: the {row['']} measured {pairs}; on {row['measured on']} "
                f"(the paper: on {paper['measured on']})."
            )
    for profile, record in (runs or {}).items():
        entries = record["metrics"]["chapters"].values()
        good = [e for e in entries if e.get("status") == "ok"]
        if not good:
            continue
        seconds = sum(float(e.get("wall_time_s") or 0) for e in good)
        failed = len(entries) - len(good)
        sentences.append(
            f"The {profile} book: {describe_book_run(record)}, on "
            f"{committed_runs.hardware(record)}; {seconds:,.0f} s of chapters "
            f"({seconds / 60:.1f} minutes)"
            + (f", {failed} of them without success" if failed else "")
            + "."
        )
    return sentences
