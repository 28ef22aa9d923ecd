"""Chapter 00's reproduction summary says what the chapters' committed `cpu` results say: each
cell is the number in `results/book_cpu/`, the chapters' closing sentences quote the same numbers,
and the Table 3 row carries chapter 06's verdict (`findings.assess`), not a number of its own."""

import json
import shutil
from pathlib import Path

import pytest

from annotated_transformer.book import summary
from annotated_transformer.chapters.model_variations import record as variations_record
from annotated_transformer.chapters.model_variations import statistics as findings
from annotated_transformer.chapters.model_variations.record import (
    ModelVariationsRecord,
    RowRecord,
)
from annotated_transformer.chapters.training import record as training_record
from annotated_transformer.chapters.training import sentences as training_sentences
from annotated_transformer.evaluation import results

COMMITTED = Path(__file__).resolve().parents[2] / "results" / "book_cpu"


@pytest.fixture(scope="module")
def cpu_root(tmp_path_factory) -> Path:
    """results/book_cpu's results files as the `cpu` profile's folder of a results root."""
    if not COMMITTED.is_dir():
        pytest.skip("no committed results/book_cpu")
    root = tmp_path_factory.mktemp("results")
    (root / "cpu").mkdir()
    for path in COMMITTED.glob("*.json"):
        if "metrics" in json.loads(path.read_text()):  # results files, not analyses
            shutil.copy(path, root / "cpu" / path.name)
    return root


def _cell(table, label: str) -> str:
    return table.set_index("claim").loc[label, summary.profile_column("cpu")]


def test_every_cell_is_the_committed_number(cpu_root):
    table = summary.summary_table("cpu", committed=(), root=cpu_root)
    for claim in summary.CLAIMS:
        files = summary.files_of(claim, "cpu", cpu_root)
        if not files:
            continue
        record = results.read_result(files[0], "cpu", cpu_root)
        value = claim.value(claim.record.from_metrics(record["metrics"]), record)
        if not isinstance(value, (int, float)):
            continue  # a verdict, not a number
        shown = claim.fmt.format(value).replace(
            "e+", "e"
        )  # 3.3e18, as the paper writes it
        assert _cell(table, claim.label).startswith(shown), claim.label


def test_chapter_04_closes_on_the_summary_s_step_time(cpu_root):
    table = summary.summary_table("cpu", committed=(), root=cpu_root)
    record = training_record.read("cpu", cpu_root)
    step = _cell(table, "seconds per training step")
    assert f"One step took {step} s" in training_sentences.closing(record)


def test_table_3_row_carries_chapter_06_s_verdict(cpu_root):
    table = summary.summary_table("cpu", committed=(), root=cpu_root)
    record = variations_record.read("cpu", cpu_root)
    (label,) = [c.label for c in summary.CLAIMS if c.label.startswith("one head (A1)")]
    verdict = next(
        f["verdict"]
        for f in summary.chapter06_findings(record)
        if f["finding"] == "one head is worse"
    )
    assert verdict in findings.VERDICTS
    assert _cell(table, label).endswith(verdict)
    assert "BLEU" not in label  # a BLEU change the chapter cannot tell is no summary row


def test_finding_cell_follows_the_verdict():
    seeds = [1, 2, 3]
    worse = {"base": [30.0, 30.1, 29.9], "A1": [36.0, 36.2, 35.9]}
    same = {"base": [30.0, 31.0, 29.0], "A1": [30.2, 29.5, 30.8]}
    for ppl, expected in ((worse, findings.HOLDS), (same, findings.CANNOT_TELL)):
        rows = {
            r: summary.read_as(RowRecord, {"seeds": seeds, "ppl_seeds": v})
            for r, v in ppl.items()
        }
        record = summary.read_as(ModelVariationsRecord, {"rows": rows})
        cell = summary.finding_cell(record, "one head is worse")
        assert cell.endswith(expected), cell
    empty = summary.read_as(ModelVariationsRecord, {})
    assert summary.finding_cell(empty, "one head is worse") is None


def test_the_introduction_s_closing_says_only_what_its_tables_hold(cpu_root):
    panels = summary.summary_panels("cpu", committed=(), root=cpu_root)
    lines = summary.closing(panels)
    said = 0
    for title, table in panels:
        paper = table[table[""] == "the paper"].iloc[0]
        for _, row in table[table[""] != "the paper"].iterrows():
            mine = [line for line in lines if line.startswith(f"{title}: the {row['']} ")]
            cells = [c for c in table.columns if c not in ("", "measured on")]
            shown = [c for c in cells if row[c] != summary.SHOWN_NOT_RUN]
            assert len(mine) == (1 if shown else 0), (title, row[""])
            for label in shown:  # each measurement beside the paper's
                assert f"{label}: {row[label]} (the paper: {paper[label]})" in mine[0]
            said += len(mine)
    assert said == len(lines) >= 5  # every panel of the committed cpu run has a sentence


def test_the_introduction_s_closing_leaves_out_what_did_not_run(tmp_path):
    # Only chapter 05's record: one sentence (its panel), none for the panels without numbers,
    # and a cell the record lacks ("not in translation.json") is not said as a measurement.
    results.write_result(
        "translation",
        {"sacrebleu": 36.13, "sacrebleu_ci95": 1.21, "bleu_tokenized": 36.08},
        profile="cpu",
        device="cpu",
        root=tmp_path,
    )
    panels = summary.summary_panels("cpu", committed=(), root=tmp_path)
    (line,) = summary.closing(panels)
    assert line.startswith(
        "English-to-German translation (Table 2; chapter 05): the cpu run"
    )
    assert (
        "sacreBLEU ± 95%: 36.1 ± 1.2 (the paper: " in line
        and ": 36.1 (the paper: " in line
    )
    assert "training cost" not in line and "not in" not in line


def test_the_introduction_s_closing_gives_each_book_run_its_time_and_hardware():
    def entry(status, seconds, device):
        return {
            "status": status,
            "wall_time_s": seconds,
            "date": "2026-11-27T09:00:00+00:00",
            "git_commit": "4c449b3" + "0" * 33,
            "device": "cuda" if "H100" in device else "cpu",
            "device_name": device,
        }

    runs = {
        "cpu": {
            "metrics": {
                "chapters": {
                    "01_attention": entry("ok", 20.0, "AMD EPYC (2 cores)"),
                    "04_training": entry("ok", 1100.0, "AMD EPYC (2 cores)"),
                    "06_model_variations": entry("error", 300.0, "AMD EPYC (2 cores)"),
                }
            }
        }
    }
    (line,) = summary.closing([], runs)
    assert line.startswith(
        "The cpu book: 3 chapters, run on 2026-11-27 at commit 4c449b3"
    )
    assert "on AMD EPYC (2 cores); 1,120 s of chapters (18.7 minutes)" in line
    assert line.endswith(", 1 of them without success.")
