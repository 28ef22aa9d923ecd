"""The beam-search, precision and compile benchmarks run, check what they must, and write their records."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_script(name: str, out: Path, tmp_path: Path, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        env={"AT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", **env},
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


@pytest.mark.slow
def test_compile_benchmark_records_training_decoding_and_threads(tmp_path):
    # --quick: the smoke model through Dynamo without code generation, so the numbers mean nothing;
    # what is checked is the record the full run writes. ATEN_CPU_CAPABILITY pins the kernel path
    # (how a run on a wider CPU stands in for an AVX2-only one), and the record must say so.
    record = run_script(
        "bench_compile.py",
        tmp_path / "compile.json",
        tmp_path,
        ATEN_CPU_CAPABILITY="avx2",
    )
    assert record["quick"] and record["cpu"]["name"] and record["cpu"]["flags"]
    assert record["env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    if "avx2" in record["cpu"]["flags"]:  # elsewhere torch ignores the pin
        assert record["cpu"]["capability"] == "AVX2"
    assert isinstance(record["cpu"]["has_bf16_instructions"], bool)
    fp32 = record["training"]["fp32"]
    assert set(fp32["variants"]) == {
        "eager",
        "eager_all_rows",
        "compiled_model_and_loss",
        "compiled_model",
    }
    for name, variant in fp32["variants"].items():
        assert variant["target_tokens_per_s"] > 0 and variant["compile_s"] >= 0, name
        assert variant["speed_over_eager"] == pytest.approx(
            fp32["variants"]["eager"]["median_s"] / variant["median_s"]
        )
    assert isinstance(fp32["auto"]["compiles"], bool)
    for search in ("greedy", "beam"):
        row = record["decoding"][search]
        assert row["same_tokens"], search
        assert row["eager"]["tokens_per_s"] > 0 and row["compiled"]["tokens_per_s"] > 0
        assert row["compiled"]["compile_s"] >= 0
    settings = record["threads_settings"]["settings"]
    assert [s["name"] for s in settings] == ["default", "set_num_threads(1)"]
    assert settings[1]["threads"] == 1
    assert all(s["training"]["fp32"]["target_tokens_per_s"] > 0 for s in settings)
