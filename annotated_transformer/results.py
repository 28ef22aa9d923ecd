"""Results files: every number the book shows is written by the run that made it, with provenance.

A run writes `results/<profile>/<name>.json`:

    {"schema": 1, "name": ..., "profile": ..., "metrics": {...}, "config": {...} | null,
     "wall_time_s": ... | null, "provenance": {"git_commit", "git_dirty", "torch", "python",
     "device", "device_name", "date", ...}}

`smoke` and `cpu` results are regenerated on every run (git-ignored); `gpu` and `paper` results are
committed because CI cannot rerun them. The introduction's summary table reads the files listed in
`CLAIMS`, so a chapter that wants a row there writes the named file and key.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

SCHEMA_VERSION = 1
RESULTS_ENV = "AT_RESULTS_DIR"
NOT_RUN = "not run yet"
COMMITTED_PROFILES = ("gpu", "paper")

_PACKAGE_DIR = Path(__file__).resolve().parent


def repo_root() -> Path | None:
    """The clone this package was imported from, or None for an installed copy (e.g. Colab)."""
    candidate = _PACKAGE_DIR.parent
    if (candidate / "pyproject.toml").is_file() and (candidate / "book").is_dir():
        return candidate
    return None


def results_root(root: str | os.PathLike | None = None) -> Path:
    """Where results live: `root`, else $AT_RESULTS_DIR, else the clone's results/, else ./results."""
    if root is not None:
        return Path(root)
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    repo = repo_root()
    return (repo / "results") if repo is not None else Path.cwd() / "results"


def results_path(name: str, profile: str, root: str | os.PathLike | None = None) -> Path:
    """`<results root>/<profile>/<name>.json`; names are plain words so paths stay portable."""
    if not name or any(c in name for c in "/\\") or name.startswith("."):
        raise ValueError(f"result name must be a plain file stem like 'translation', got {name!r}")
    if not profile or any(c in profile for c in "/\\"):
        raise ValueError(f"profile must be a plain word like 'cpu', got {profile!r}")
    return results_root(root) / profile / f"{name}.json"


# ----------------------------------------------------------------------------------------------
# Provenance

def _git(*args: str) -> str | None:
    repo = repo_root()
    if repo is None:
        return None
    try:
        out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_description(device: Any = None) -> tuple[str, str]:
    """(device, human-readable name): ("cuda", "NVIDIA H100 80GB HBM3") or ("cpu", "<model> (2 cores)")."""
    import torch

    from annotated_transformer.profiles import resolve_device

    device = resolve_device(str(device) if device is not None else "auto")
    if device.startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index or 0
        count = torch.cuda.device_count()
        name = torch.cuda.get_device_name(index)
        return device, name if count == 1 else f"{count} x {name}"
    if device.startswith("cpu"):
        return device, f"{_cpu_name()} ({os.cpu_count()} cores)"
    return device, device


def provenance(device: Any = None) -> dict:
    """Who made a number: git commit (and whether the tree had edits), torch, device, date (UTC)."""
    import torch

    dev, dev_name = device_description(device)
    commit = _git("rev-parse", "HEAD")
    dirty = None
    if commit is not None:
        status = _git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status) if status is not None else None
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "device": dev,
        "device_name": dev_name,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ----------------------------------------------------------------------------------------------
# Writing and reading

def _jsonable(value: Any) -> Any:
    """numpy and torch scalars, paths and dataclasses become plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot write {type(value).__name__} to a results file; convert it to numbers or strings")


def _config_dict(config: Any) -> dict | None:
    if config is None or isinstance(config, dict):
        return config
    if hasattr(config, "to_dict"):
        return config.to_dict()
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    raise TypeError(f"config must be a dict or a dataclass, got {type(config).__name__}")


def write_result(
    name: str,
    metrics: dict,
    *,
    profile: str,
    config: Any = None,
    wall_time_s: float | None = None,
    device: Any = None,
    root: str | os.PathLike | None = None,
) -> Path:
    """Write `results/<profile>/<name>.json` atomically, stamped with `provenance(device)`.

    Args:
        name: the file stem (e.g. "translation"); see `CLAIMS` for names the summary reads.
        metrics: the numbers, nested dicts allowed (e.g. {"bleu_tokenized": 27.1, "rows": {...}}).
        profile: the profile that produced them; keeps CI numbers apart from GPU ones.
        config: the model or run configuration (a dict or a dataclass), for reproducing the run.
        wall_time_s: how long the run took.
        device: the device used ("cpu", "cuda", a torch.device; None: what "auto" picks).
        root: results root (default: `results_root()`).

    Returns:
        The path written.
    """
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict, got {type(metrics).__name__}")
    path = results_path(name, profile, root)
    record = {
        "schema": SCHEMA_VERSION,
        "name": name,
        "profile": profile,
        "metrics": metrics,
        "config": _config_dict(config),
        "wall_time_s": wall_time_s,
        "provenance": provenance(device),
    }
    text = json.dumps(record, indent=2, default=_jsonable)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)  # readers never see half a file
    return path


def read_result(name: str, profile: str, root: str | os.PathLike | None = None) -> dict | None:
    """The record written by `write_result`, or None when that run has not happened yet."""
    path = results_path(name, profile, root)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); delete it and rerun the chapter that writes it") from exc
    if not isinstance(record, dict) or "metrics" not in record:
        raise ValueError(f"{path} is not a results file (no 'metrics'); it should come from write_result")
    return record


def list_results(profile: str, root: str | os.PathLike | None = None) -> list[dict]:
    """Every results record of `profile`, sorted by name."""
    folder = results_root(root) / profile
    if not folder.is_dir():
        return []
    records = (read_result(p.stem, profile, root) for p in sorted(folder.glob("*.json")))
    return [r for r in records if r is not None]


_MISSING = object()


def lookup(metrics: dict, key: str, default: Any = _MISSING) -> Any:
    """metrics["rows"]["base"]["ppl"] for key "rows.base.ppl"; KeyError (or default) when absent."""
    value: Any = metrics
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif default is not _MISSING:
            return default
        else:
            raise KeyError(f"{key!r}: no {part!r} in the results metrics")
    return value


def describe_provenance(record: dict) -> str:
    """'measured on NVIDIA H100 80GB HBM3 on 2025-01-31 at commit 1a2b3c4' for a results record."""
    prov = record.get("provenance") or {}
    where = prov.get("device_name") or prov.get("device") or "an unknown device"
    date = (prov.get("date") or "an unknown date")[:10]
    commit = prov.get("git_commit")
    text = f"measured on {where} on {date}"
    if commit:
        text += f" at commit {commit[:7]}" + (" (with local edits)" if prov.get("git_dirty") else "")
    return text


# ----------------------------------------------------------------------------------------------
# What the paper reports, and the summary table the introduction prints

# Table 2 of the paper (newstest2014): BLEU and training cost in FLOPs; None where the paper is empty.
PAPER_TABLE2: tuple[dict, ...] = (
    dict(model="ByteNet", ensemble=False, bleu_en_de=23.75, bleu_en_fr=None, flops_en_de=None, flops_en_fr=None),
    dict(model="Deep-Att + PosUnk", ensemble=False, bleu_en_de=None, bleu_en_fr=39.2, flops_en_de=None, flops_en_fr=1.0e20),
    dict(model="GNMT + RL", ensemble=False, bleu_en_de=24.6, bleu_en_fr=39.92, flops_en_de=2.3e19, flops_en_fr=1.4e20),
    dict(model="ConvS2S", ensemble=False, bleu_en_de=25.16, bleu_en_fr=40.46, flops_en_de=9.6e18, flops_en_fr=1.5e20),
    dict(model="MoE", ensemble=False, bleu_en_de=26.03, bleu_en_fr=40.56, flops_en_de=2.0e19, flops_en_fr=1.2e20),
    dict(model="Deep-Att + PosUnk", ensemble=True, bleu_en_de=None, bleu_en_fr=40.4, flops_en_de=None, flops_en_fr=8.0e20),
    dict(model="GNMT + RL", ensemble=True, bleu_en_de=26.30, bleu_en_fr=41.16, flops_en_de=1.8e20, flops_en_fr=1.1e21),
    dict(model="ConvS2S", ensemble=True, bleu_en_de=26.36, bleu_en_fr=41.29, flops_en_de=7.7e19, flops_en_fr=1.2e21),
    dict(model="Transformer (base)", ensemble=False, bleu_en_de=27.3, bleu_en_fr=38.1, flops_en_de=3.3e18, flops_en_fr=3.3e18),
    dict(model="Transformer (big)", ensemble=False, bleu_en_de=28.4, bleu_en_fr=41.8, flops_en_de=2.3e19, flops_en_fr=2.3e19),
)


@dataclass(frozen=True)
class Claim:
    """One row of the reproduction summary: a number of the paper and where ours is written.

    Attributes:
        label: what is compared.
        paper: the paper's value as it prints it (text, because some are ranges or conditions).
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


CLAIMS: tuple[Claim, ...] = (
    Claim("Parameters, base model (millions)", "65", "model", "params_m.base", "02_model", "{:.1f}"),
    Claim("Parameters, big model (millions)", "213", "model", "params_m.big", "02_model", "{:.1f}"),
    Claim("Sequence length below which self-attention is cheaper than a recurrent layer (d = 512)",
          "n < d", "why_self_attention", "crossover_n", "03_why_self_attention", "{:.0f}"),
    Claim("Training step time, base model (seconds per step)", "0.4 (8 P100)", "training", "step_time_s",
          "04_training", "{:.3f}"),
    Claim("EN-DE BLEU, base, tokenized", "27.3 (newstest2014)", "translation", "bleu_tokenized",
          "05_translation_results", "{:.1f}"),
    Claim("EN-DE sacreBLEU, base", "not reported", "translation", "sacrebleu", "05_translation_results", "{:.1f}"),
    Claim("Training cost, base (FLOPs)", "3.3e18", "translation", "training_flops", "05_translation_results", "{:.2g}"),
    # Not a claim of the paper: the small-data check every profile can afford (`train --profile cpu|gpu`).
    Claim("Multi30k EN-DE test2016 sacreBLEU (the profile's train recipe)", "not in the paper",
          "translation_multi30k_en_de", "sacrebleu", "05_translation_results", "{:.2f}"),
    Claim("Dev perplexity per subword, base (Table 3)", "4.92", "model_variations", "rows.base.ppl",
          "06_model_variations", "{:.2f}"),
    Claim("Dev BLEU of one head (row A1) minus base", "-0.9", "model_variations", "rows.A1.bleu_minus_base",
          "06_model_variations", "{:+.1f}"),
    Claim("Constituency parsing F1, WSJ only (Table 4)", "91.3", "constituency_parsing", "f1",
          "07_constituency_parsing", "{:.1f}"),
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
    import pandas as pd

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
    return pd.DataFrame(rows, columns=["claim", "in the paper", *columns.values(), "chapter"])


def profile_column(profile: str) -> str:
    """Summary-table column of a profile's measurements ("gpu run"), apart from "in the paper"."""
    return f"{profile} run"


def provenance_table(profiles: Iterable[str], root: str | os.PathLike | None = None):
    """One row per results file of `profiles`: where and when it was measured, and how long it took."""
    import pandas as pd

    rows = []
    for prof in profiles:
        for record in list_results(prof, root):
            prov = record.get("provenance") or {}
            metrics = record.get("metrics") or {}
            rows.append({
                "profile": prof,
                "result": record.get("name"),
                "dataset": metrics.get("dataset", "") if isinstance(metrics, dict) else "",
                "device": prov.get("device_name") or prov.get("device"),
                "date": (prov.get("date") or "")[:10],
                "commit": (prov.get("git_commit") or "")[:7],
                "wall time (s)": record.get("wall_time_s"),
            })
    return pd.DataFrame(rows, columns=["profile", "result", "dataset", "device", "date", "commit", "wall time (s)"])
