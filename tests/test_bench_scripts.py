"""The beam-search and precision benchmarks run, check what they must, and write their records."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_script(name: str, out: Path, tmp_path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        env={"AT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


@pytest.mark.slow
def test_beam_benchmark_decodes_the_same_tokens_both_ways(tmp_path):
    record = run_script("bench_beam.py", tmp_path / "beam.json", tmp_path)
    assert {row["beam"] for row in record["rows"]} == {4, 21}
    for row in record["rows"]:
        assert row["same_tokens"], row["setting"]
        times = row["times"]
        assert row["speedup"] == pytest.approx(
            times["reference"]["median_s"] / times["package"]["median_s"]
        )


@pytest.mark.slow
def test_precision_benchmark_records_both_paths_and_the_choice(tmp_path):
    record = run_script("bench_precision.py", tmp_path / "precision.json", tmp_path)
    seconds = record["seconds_per_step"]
    assert set(seconds) == {"fp32", "bf16"} and all(s > 0 for s in seconds.values())
    assert record["bf16_speed_over_fp32"] == pytest.approx(
        seconds["fp32"] / seconds["bf16"]
    )
    if record["cpu_has_bf16_instructions"]:
        assert record["auto_chooses"] == min(seconds, key=seconds.get)
    else:
        assert record["auto_chooses"] == "fp32" and "emulated" in record["auto_reason"]
