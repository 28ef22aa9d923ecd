"""The reproduction summary the introduction prints: each claim of the paper beside what our runs measured.

Every cell is read from a results file (`results.read_result`) or says that the file is missing, so
no measured number is ever typed in; the paper's side is quoted from `paper.py`. A chapter that wants
a row here writes the file and key that its `Claim` names.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Iterable

from ..evaluation import paper
from ..evaluation.results import list_results, lookup, read_result

NOT_RUN = "not run yet"
# Profiles whose results are committed (CI cannot rerun them); the summary shows them beside the executing one.
COMMITTED_PROFILES = ("gpu", "paper")


@dataclass(frozen=True)
class Claim:
    """One row of the reproduction summary: a number of the paper and where ours is written.

    Attributes:
        label: what is compared.
        paper: the paper's value as the summary prints it (text, because some are conditions or ranges).
        result: results file stem, read from `results/<profile>/<result>.json`.
        key: dotted path inside that file's "metrics".
        chapter: the chapter that computes it.
        fmt: how to print our number.
    """

    label: str
    paper: str
    result: str
    key: str
    chapter: str
    fmt: str = "{:.2f}"


def _flops(value: float) -> str:
    """3.3e18 as the paper writes it (not Python's 3.3e+18)."""
    return f"{value:.1e}".replace("e+", "e")


_BASE = paper.table2_row("Transformer (base)")

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Parameters, base model (millions)",
        f"{paper.TABLE3['base'].params_m}",
        "model",
        "params_m.base",
        "02_model",
        "{:.1f}",
    ),
    Claim(
        "Parameters, big model (millions)",
        f"{paper.TABLE3['big'].params_m}",
        "model",
        "params_m.big",
        "02_model",
        "{:.1f}",
    ),
    Claim(
        "Sequence length below which self-attention is cheaper than a recurrent layer (d = 512)",
        "n < d",
        "why_self_attention",
        "crossover_n",
        "03_why_self_attention",
        "{:.0f}",
    ),
    # Ours is the profile's model and batch on the profile's hardware: a throughput check, not a reproduction.
    Claim(
        "Training step time, seconds per step (the paper: base model; ours: the profile's model and batch)",
        f"{paper.TRAINING['base'].step_time_s} (base, {paper.TRAINING_HARDWARE})",
        "training",
        "step_time_s",
        "04_training",
        "{:.3f}",
    ),
    Claim(
        "EN-DE BLEU, base, tokenized",
        f"{_BASE.bleu_en_de} (newstest2014)",
        "translation",
        "bleu_tokenized",
        "05_translation_results",
        "{:.1f}",
    ),
    Claim(
        "EN-DE sacreBLEU, base",
        "not reported",
        "translation",
        "sacrebleu",
        "05_translation_results",
        "{:.1f}",
    ),
    Claim(
        "Training cost, base (FLOPs)",
        _flops(_BASE.flops_en_de),
        "translation",
        "training_flops",
        "05_translation_results",
        "{:.2g}",
    ),
    # Not a claim of the paper: the small-data check every profile can afford (`train --profile cpu|gpu`).
    Claim(
        "Multi30k EN-DE test2016 sacreBLEU (the profile's train recipe)",
        "not in the paper",
        "translation_multi30k_en_de",
        "sacrebleu",
        "05_translation_results",
        "{:.2f}",
    ),
    Claim(
        "Dev perplexity per subword, base (Table 3)",
        f"{paper.TABLE3['base'].ppl}",
        "model_variations",
        "rows.base.ppl",
        "06_model_variations",
        "{:.2f}",
    ),
    Claim(
        "Dev BLEU of one head (row A1) minus base",
        f"{paper.TABLE3['A1'].bleu - paper.TABLE3['base'].bleu:+.1f}",
        "model_variations",
        "rows.A1.bleu_minus_base",
        "06_model_variations",
        "{:+.1f}",
    ),
    # Ours is measured on the test files of the profile's treebank: NLTK's Penn Treebank sample (wsj_0180-0199)
    # unless chapter 07 is given the full WSJ; the paper's is WSJ section 23.
    Claim(
        "Constituency parsing F1, WSJ only (Table 4; ours on the Penn Treebank sample's test files)",
        f"{paper.table4_row('Transformer (4 layers)', paper.WSJ_ONLY).f1}",
        "constituency_parsing",
        "f1",
        "07_constituency_parsing",
        "{:.1f}",
    ),
)


def _format_claim(claim: Claim, record: dict | None) -> str:
    if record is None:
        return NOT_RUN
    value = lookup(record["metrics"], claim.key, default=None)
    if value is None:
        return f"not in {claim.result}.json"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        return claim.fmt.format(value)
    return str(value)


def profile_column(profile: str) -> str:
    """Summary-table column of a profile's measurements ("gpu run"), apart from "in the paper"."""
    return f"{profile} run"


def summary_table(
    profile: str,
    *,
    committed: Iterable[str] = COMMITTED_PROFILES,
    claims: Iterable[Claim] = CLAIMS,
    root: str | os.PathLike | None = None,
):
    """The reproduction summary as a pandas DataFrame: one row per claim, one column per profile
    (named by `profile_column`, e.g. "smoke run"), plus the paper's value and the chapter.

    The executing profile comes first and the committed GPU and paper results beside it, never
    merged: each cell is read from that profile's own results file, or says "not run yet".
    """
    import pandas as pd  # deferred: pandas comes with the `book` extra, not with the package

    claims = tuple(claims)
    profiles = [profile] + [p for p in committed if p != profile]
    columns = {prof: profile_column(prof) for prof in profiles}
    cache: dict[tuple[str, str], dict | None] = {}
    rows = []
    for claim in claims:
        row = {"claim": claim.label, "in the paper": claim.paper}
        for prof in profiles:
            if (claim.result, prof) not in cache:
                cache[(claim.result, prof)] = read_result(claim.result, prof, root)
            row[columns[prof]] = _format_claim(claim, cache[(claim.result, prof)])
        row["chapter"] = claim.chapter
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["claim", "in the paper", *columns.values(), "chapter"]
    )


# The page shows a dash where the table says NOT_RUN: short cells keep the columns readable.
SHOWN_NOT_RUN = "–"
# Results whose data is not a corpus (no "dataset" in their metrics, no recipe in their config).
DATASET_OF = {"attention": "random tensors", "model": "none (counts)", "book_run": "–"}


def shown_summary(profile: str, **kwargs):
    """`summary_table` as the introduction shows it: the chapter as its number, "not run yet"
    as a dash, the claim column first and wide (the stylesheet keeps the other cells on one line)."""
    table = summary_table(profile, **kwargs)
    table["chapter"] = table["chapter"].str[:2]
    measured = [c for c in table.columns if c.endswith(" run")]
    table[measured] = table[measured].replace(NOT_RUN, SHOWN_NOT_RUN)
    return table


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
        return f"{recipe['corpus']} {recipe.get('src_lang', '')}-{recipe.get('tgt_lang', '')}".rstrip(
            "-"
        )
    name = str(record.get("name", ""))
    if (
        name.startswith("translation_") and name.count("_") >= 3
    ):  # translation_<corpus>_<src>_<tgt>
        corpus, src, tgt = name[len("translation_") :].rsplit("_", 2)
        return f"{corpus} {src}-{tgt}"
    return DATASET_OF.get(name, "")


def book_run_table(record: dict):
    """The chapters of a `book_run` results record: status, wall time, date and commit."""
    import pandas as pd  # deferred, as in `summary_table`

    return pd.DataFrame(
        [
            {
                "chapter": name,
                "status": entry["status"],
                "wall time (s)": entry["wall_time_s"],
                "date": entry["date"][:16].replace("T", " "),
                "commit": (entry.get("git_commit") or "")[:7],
            }
            for name, entry in record["metrics"]["chapters"].items()
        ]
    )


def provenance_table(profiles: Iterable[str], root: str | os.PathLike | None = None):
    """One row per results file of `profiles`: where and when it was measured, and how long it took."""
    import pandas as pd  # deferred, as in `summary_table`

    rows = []
    for prof in profiles:
        for record in list_results(prof, root):
            prov = record.get("provenance") or {}
            rows.append(
                {
                    "profile": prof,
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
            "result",
            "dataset",
            "device",
            "date",
            "commit",
            "wall time (s)",
        ],
    )
