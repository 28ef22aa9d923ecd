"""The beam-search, precision and compile benchmarks run, check what they must, and write their records."""

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from annotated_transformer.training.loss import default_strategy
from tests.support.gpu import on_a_gpu

REPO = Path(__file__).resolve().parents[1]


def run_script(name: str, out: Path, tmp_path: Path, *args: str, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), "--quick", "--out", str(out)]
        + list(args),
        capture_output=True,
        text=True,
        env={"AT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", **env},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


def test_the_cudnn_variant_steps_with_cudnn_attention_allowed_and_the_others_without():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_gpu_step import TRAINING_VARIANTS, _step

    from annotated_transformer.runtime import attention_kernels

    class Trainer:
        def train_step(self, batch):
            return attention_kernels.cudnn_attention_allowed()

    # whatever the environment says
    with attention_kernels.allow_cudnn_attention(True):
        allowed = {name: _step(name, Trainer(), [[0]])() for name in TRAINING_VARIANTS}
    assert allowed.pop("eager_cudnn_attention") is True
    assert allowed.pop("eager_bucketed_cudnn_attention") is True
    assert not any(allowed.values())
    # and only inside its step
    assert attention_kernels.cudnn_attention_allowed() is False


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


def test_profile_kinds_classify_cpu_ops_and_gpu_kernels():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from profile_step import KINDS, classify

    expected = {
        "aten::mm": "matmul",
        "aten::addmm": "matmul",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64": "matmul",
        "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn": "matmul",
        "triton_tem_fused_mm_3": "matmul",
        "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT": "matmul",
        "void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)": "softmax/cross-entropy",
        "void cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>": "softmax/cross-entropy",
        "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>": "attention",
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80": "attention",
        "aten::_log_softmax": "softmax/cross-entropy",
        "triton_red_fused__log_softmax_exp_sum_7": "softmax/cross-entropy",
        "aten::exp": "softmax/cross-entropy",
        "aten::_fused_adam_": "optimizer",
        "Optimizer.step#Adam.step": "optimizer",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>": "optimizer",
        "aten::native_layer_norm": "elementwise/other",
        "triton_poi_fused_add_native_dropout_4": "elementwise/other",
        "aten::copy_": "elementwise/other",
    }
    assert {classify(name) for name in expected} <= set(KINDS)
    assert {name: classify(name) for name in expected} == expected


def test_gpu_time_by_kind_counts_each_kernel_once():
    # An operator carries its kernels' time as its own self device time: only the device's
    # events count, or the H100's first trace (128.6 ms in a 70.7 ms step) comes back.
    sys.path.insert(0, str(REPO / "benchmarks"))
    from types import SimpleNamespace

    from profile_step import time_by_kind
    from torch.autograd import DeviceType

    def event(key, device_type, device_us, cpu_us=0.0, annotation=False):
        return SimpleNamespace(
            key=key, device_type=device_type, count=2, is_user_annotation=annotation,
            self_device_time_total=device_us, self_cpu_time_total=cpu_us,
        )  # fmt: skip

    events = [
        event("aten::mm", DeviceType.CPU, 30.0, 5.0),
        event("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", DeviceType.CUDA, 30.0),
        event("aten::_cudnn_attention_forward", DeviceType.CPU, 20.0, 4.0),
        event("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", DeviceType.CUDA, 20.0),
        event("Memcpy HtoD (Pageable -> Device)", DeviceType.CUDA, 10.0),
        # a record_function range's device-side copy spans the kernels inside it
        event("Optimizer.step#Adam.step", DeviceType.CUDA, 8.0, annotation=True),
        event("multi_tensor_apply_kernel<FusedAdamMathFunctor>", DeviceType.CUDA, 6.0),
    ]
    gpu = time_by_kind(events, cuda=True, steps=2)
    assert gpu["metric"] == "self_device_time_total"
    assert gpu["total_ms_per_step"] == pytest.approx(0.033)  # 66 us over 2 steps
    assert gpu["by_kind_ms_per_step"]["matmul"] == pytest.approx(0.015)
    assert gpu["by_kind_ms_per_step"]["attention"] == pytest.approx(0.010)
    assert gpu["by_kind_ms_per_step"]["optimizer"] == pytest.approx(0.003)
    names = [row["name"][:4] for row in gpu["top_ops"]]
    assert names == ["sm90", "cudn", "Memc", "mult"]
    with pytest.raises(SystemExit, match="no GPU kernel"):
        time_by_kind(events[:1], cuda=True, steps=2)  # operators only: nothing to count
    cpu = time_by_kind(events, cuda=False, steps=1)
    assert cpu["total_ms_per_step"] == pytest.approx(
        0.009
    )  # the operators' self CPU time


def test_profile_step_table_adds_up(tmp_path):
    # The smoke profile's eager step, 2 profiled steps on the CPU: the kinds are the whole total.
    out = tmp_path / "profile.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "profile_step.py"),
            "--profile",
            "smoke",
            "--warmup",
            "1",
            "--steps",
            "2",
            "--threads",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={"AT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(out.read_text())
    profile = record["profile"]
    assert profile["profiled_steps"] == 2 and profile["metric"] == "self_cpu_time_total"
    kinds = profile["by_kind_ms_per_step"]
    assert list(kinds) == [
        "matmul",
        "attention",
        "softmax/cross-entropy",
        "optimizer",
        "elementwise/other",
    ]
    assert kinds["matmul"] > 0 and kinds["attention"] > 0 and kinds["optimizer"] > 0
    assert sum(kinds.values()) == pytest.approx(profile["total_ms_per_step"], rel=1e-9)
    assert sum(profile["by_kind_percent"].values()) == pytest.approx(100.0)
    t = record["timing"]
    assert t["wall_s_per_step"] > 0 and t["host_cpu_s_per_step"] > 0
    # The markdown table: its rows, as printed (3 decimals), add up to its total within rounding.
    table = (tmp_path / "profile.md").read_text()
    rows = {
        line.split("|")[1].strip(): float(line.split("|")[2])
        for line in table.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip() in list(kinds) + ["total"]
    }
    assert set(rows) == set(kinds) | {"total"}
    total = rows.pop("total")
    assert sum(rows.values()) == pytest.approx(total, abs=0.0005 * len(rows) + 1e-9)


def test_gpu_step_benchmark_runs_each_change_and_decodes_the_same_tokens(tmp_path):
    record = run_script("bench_gpu_step.py", tmp_path / "speed.json", tmp_path)
    training = record["training"]
    assert set(training["variants"]) == {
        "eager",
        "eager_cudnn_attention",
        "eager_row_blocks_loss",
        "compiled",
        "eager_bucketed",
        "eager_bucketed_cudnn_attention",
        "eager_bucketed_graphed",
        "compiled_bucketed",
        "compiled_bucketed_reduce_overhead",
    }
    for name, v in training["variants"].items():
        assert "error" not in v, (name, v)
        assert v["target_tokens_per_s"] > 0 and v["mfu"] is None  # no peak for a CPU
        assert v["speed_over_eager"] == pytest.approx(
            training["variants"]["eager"]["median_s"] / v["median_s"]
        )
    strategies = {name: v["loss_strategy"] for name, v in training["variants"].items()}
    assert strategies["eager"] == default_strategy(torch.device("cpu"))
    assert strategies["eager_row_blocks_loss"] == "row_blocks"
    assert strategies["compiled"] == "compiled"
    bucketed = training["variants"]["compiled_bucketed"]["padded_shape"]
    assert training["variants"]["eager"]["padded_shape"] is None
    assert bucketed[1] in training["buckets"] and bucketed[2] in training["buckets"]
    assert training["variants"]["eager_bucketed"]["padded_shape"] == bucketed
    assert training["variants"]["eager_bucketed_graphed"]["padded_shape"] == bucketed
    assert training["variants"]["eager_bucketed_graphed"]["cuda_graphs"] is True
    assert training["variants"]["eager"]["cuda_graphs"] is False
    assert strategies["eager_bucketed"] == default_strategy(torch.device("cpu"))
    assert sorted(row["search"] for row in record["decoding"]) == ["beam", "greedy"]
    for row in record["decoding"]:
        assert row["same_tokens"] and not row["static_graphed"]  # graphs on CUDA only
        late = {"eager_cache_checked_every_step"} if row["search"] == "greedy" else set()
        assert set(row["decoders"]) == {"recompute", "eager_cache", "static_cache", *late}


@pytest.mark.slow  # a second run of the benchmark, with one compile
def test_gpu_step_benchmark_times_the_variants_asked_beside_eager(tmp_path):
    """A call of its own for the compiled variants still has eager, the reference, beside them."""
    record = run_script(
        "bench_gpu_step.py", tmp_path / "s.json", tmp_path, "--only", "train",
        "--variants", "compiled",
    )  # fmt: skip
    assert set(record["training"]["variants"]) == {"eager", "compiled"}
    assert "decoding" not in record


def _speed(tmp_path, *parts, **env):
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu" / "speed.sh"), *parts],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            "AT_CACHE_DIR": str(tmp_path / "cache"),
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "DEVICE": "cpu",
            "QUICK": "1",
            "OUT": str(tmp_path / "out"),
            **env,
        },
    )


def test_speed_script_checks_its_parts_and_its_time_before_running_any():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for parts in (
            ("decode", "everything"),
            ("decode train_eager",),
        ):  # names, exactly
            unknown = _speed(Path(tmp), *parts)
            assert unknown.returncode == 2 and "unknown part" in unknown.stderr
        assert not (Path(tmp) / "out" / "decode.log").exists()
        for bad in ("0", "300s"):
            limit = _speed(Path(tmp), "decode", PART_LIMIT_S=bad)
            assert limit.returncode == 2 and f"PART_LIMIT_S={bad} is not" in limit.stderr
        # under a minute left for a part: skipped and named for the next call, exit non-zero
        short = _speed(Path(tmp), "decode", LIMIT_S="30")
        assert short.returncode == 1
        assert "decode skipped" in short.stdout and "another call" in short.stdout


@pytest.mark.slow
def test_speed_script_runs_its_commands_on_a_cpu(tmp_path):
    # scripts/gpu/speed.sh with DEVICE=cpu QUICK=1: the GPU run's commands, the smoke profile,
    # with time enough on a busy 2-core machine that no part is skipped
    proc = _speed(tmp_path, LIMIT_S="3000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "out"
    names = {p.name for p in out.iterdir()}
    parts = ("decode", "decode_bf16", "train_eager", "profile_eager", "profile_graphed")
    parts += ("train_compiled",)
    parts += ("train_bucketed",)
    parts += ("train_graphs", "profile_compiled")
    assert {f"{part}.log" for part in parts} <= names
    for stem in ("profile_step_compiled", "profile_step_eager", "profile_step_graphed"):
        assert {f"{stem}.json", f"{stem}.md"} <= names
        record = json.loads((out / f"{stem}.json").read_text())
        assert record["setting"]["compile"] == (stem == "profile_step_compiled")
        assert record["setting"]["cuda_graphs"] == (stem == "profile_step_graphed")
    decode = json.loads((out / "speed_decode.json").read_text())
    assert all(row["same_tokens"] for row in decode["decoding"])
    bf16 = json.loads((out / "speed_decode_bf16.json").read_text())["decoding"]
    assert {row["precision"] for row in bf16} == {"bf16"}
    assert sorted((row["search"], row["batch"]) for row in bf16) == [
        ("beam", 2),
        ("beam", 3),
        ("greedy", 2),
        ("greedy", 3),
    ]
    eager = json.loads((out / "speed_train_eager.json").read_text())["training"]
    assert set(eager["variants"]) == {
        "eager",
        "eager_cudnn_attention",
        "eager_row_blocks_loss",
        "eager_bucketed",
        "eager_bucketed_cudnn_attention",
        "eager_bucketed_graphed",
    }
    for part, variant in (
        ("compiled", "compiled"),
        ("bucketed", "compiled_bucketed"),
        ("graphs", "compiled_bucketed_reduce_overhead"),
    ):
        record = json.loads((out / f"speed_train_{part}.json").read_text())["training"]
        assert set(record["variants"]) == {"eager", variant}  # one compile, beside eager


def _table3_extended(tmp_path, data_dir, **env):
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu" / "table3_extended.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            "AT_CACHE_DIR": str(tmp_path / "cache"),
            "AT_DATA_DIR": data_dir or "",
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "DEVICE": "cpu",
            "QUICK": "1",
            "OUT": str(tmp_path / "out"),
            "BUILD_DIR": str(tmp_path / "build"),
            **env,
        },
    )


def test_table3_extended_script_refuses_a_part_it_does_not_know(tmp_path):
    proc = _table3_extended(tmp_path, None, GROUP="heads")
    assert proc.returncode == 2
    assert "GROUP=heads is not a part; choose all, findings, size or rest" in proc.stderr
    assert not (tmp_path / "build").exists()


@pytest.mark.slow
def test_table3_extended_script_exports_whole_epochs_on_a_cpu(tmp_path, data_dir):
    # scripts/gpu/table3_extended.sh with DEVICE=cpu QUICK=1: the GPU command on the smoke
    # profile, its export and the tarball that comes back, all under BUILD_DIR; then one part of
    # the run (GROUP), as a second machine trains it, merged into the first's export
    out, build = tmp_path / "out", tmp_path / "build"
    out.mkdir()
    proc = _table3_extended(tmp_path, data_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    side = build / "table3_extended_smoke"
    document = json.loads((side / "runs.json").read_text())
    jobs = {
        (j["job"]["corpus"], j["job"]["row"]): len(j["curve"]) for j in document["jobs"]
    }
    assert jobs == {
        ("full", "base"): 1,
        ("full", "C1"): 1,
        ("full", "D1"): 1,
        ("small", "base"): 1,
        ("small", "D1"): 1,
    }
    assert document["targets"] == {"full": 1, "small": 1}
    with tarfile.open(out / "table3_extended_smoke.tgz") as packed:
        names = {Path(n).name for n in packed.getnames()}
    assert names == {"log.txt", "runs.json"}  # no checkpoints travel back
    assert "2 processes, exit 0" in (side / "log.txt").read_text()
    part = _table3_extended(tmp_path, data_dir, GROUP="size")
    assert part.returncode == 0, part.stdout + part.stderr
    assert (out / "table3_extended_smoke_size.tgz").is_file()
    merged = tmp_path / "merged.json"
    proc = subprocess.run(
        [sys.executable, "-m", "annotated_transformer", "table3", "--merge"]
        + [
            str(side / "runs.json"),
            str(build / "table3_extended_smoke_size" / "runs.json"),
        ]
        + ["--export", str(merged)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {
        (j["job"]["corpus"], j["job"]["row"])
        for j in json.loads(merged.read_text())["jobs"]
    }
    assert rows == {*jobs, ("full", "C2")}  # the part's C1 and C2 beside the first's five


def test_a_stacked_step_gives_each_model_what_the_trainer_gives_it_alone():
    """Stacking (vmap over stacked weights, full logits, the plain-op loss) against `batch_loss`
    per model (real target rows, the hand-written loss), each model with weights of its own: the
    same losses and gradients, tied embeddings included, on a CPU where the attention's empty-row
    check must step aside; and after one Adam step each the same losses again, so the stacked
    optimizer moved the very weights the stacked loss reads."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_stacked_rows import stacked_matches_separate

    from annotated_transformer.experiments.table3.rows import row_config, row_settings
    from annotated_transformer.profiles import get_profile

    profile = get_profile("smoke")
    config = row_config("base", profile)
    settings = row_settings(profile, config, epochs=1, seed=1)
    check = stacked_matches_separate(config, 500, 6, 3, torch.device("cpu"), settings)
    assert check["models"] == 3 and check["largest_gradient"] > 1e-3
    assert check["max_loss_difference"] < 1e-5
    assert check["max_gradient_difference"] < 1e-4 * check["largest_gradient"]
    moved = abs(check["loss_after_step"] - check["loss_before_step"])
    assert moved > 1e-3
    assert check["max_loss_difference_after_step"] < 0.01 * moved


def test_the_stacked_benchmark_refuses_to_time_a_stack_that_disagrees():
    """`disagreements` passes what bf16 rounding gives and names a loss, gradient or step that
    differs beyond its precision's tolerance; the benchmark stops on any of them."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_stacked_rows import disagreements, stacked_matches_separate

    from annotated_transformer.experiments.table3.rows import row_config, row_settings
    from annotated_transformer.profiles import get_profile

    profile = get_profile("smoke")
    config = row_config("base", profile)
    settings = row_settings(profile, config, epochs=1, seed=1)
    rounded = stacked_matches_separate(
        config, 500, 6, 2, torch.device("cpu"), settings, "bf16"
    )
    assert rounded["max_gradient_difference"] > 0 and disagreements(rounded) == []
    good = {
        "precision": "fp32",
        "max_loss_difference": 1e-7,
        "max_gradient_difference": 1e-9,
        "largest_gradient": 0.1,
        "loss_before_step": 8.0,
        "loss_after_step": 7.5,
        "max_loss_difference_after_step": 1e-6,
    }
    assert disagreements(good) == []
    for key, value, named in (
        ("max_loss_difference", 0.01, "losses differ"),
        ("max_gradient_difference", 0.001, "gradients differ"),
        ("loss_after_step", 8.0, "after one Adam step"),  # a step that moved nothing
    ):
        [fault] = disagreements({**good, key: value})
        assert fault.startswith(named), fault


@pytest.mark.slow
def test_stacked_rows_benchmark_times_three_ways_and_checks_the_stack(tmp_path):
    record = run_script("bench_stacked_rows.py", tmp_path / "stacked.json", tmp_path)
    [check] = record["stacked_matches_separate"]  # fp32 on a CPU, so one check
    assert check["precision"] == "fp32" and check["max_loss_difference"] < 1e-4
    assert set(record["variants"]) == {"one_after_another", "stacked", "processes"}
    for name, v in record["variants"].items():
        assert v["seconds_per_step"] > 0 and v["model_steps_per_s"] > 0, name
    assert record["variants"]["one_after_another"]["speed_vs_one_after_another"] == 1.0
    assert (
        len(record["variants"]["processes"]["each_process_s_per_step"])
        == record["models"]
    )
    # torch's CPU attention has no batching rule: the record says what ran once per model
    assert any("scaled_dot_product" in w for w in record["vmap_warnings"])


@pytest.mark.slow  # spawns two processes that import torch
def test_a_process_that_fails_stops_the_processes_variant_at_once():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_stacked_rows import time_processes

    broken = {
        "device": "cpu",
        "threads": 1,
    }  # no model, no data: each process raises at once
    with pytest.raises(RuntimeError, match=r"process \d exited with 1"):
        time_processes(broken, 2, deadline_s=60)


@pytest.mark.slow  # a pytest subprocess
def test_the_gpu_tests_script_selects_the_marked_tests_and_skips_them_without_cuda(
    tmp_path,
):
    """scripts/gpu/gpu_tests.sh: every test marked `gpu` is collected (and on a CPU skipped),
    none of the others runs, and the JUnit record says so."""
    import xml.etree.ElementTree as ElementTree

    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu" / "gpu_tests.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"OUT": str(tmp_path), "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = list(ElementTree.parse(tmp_path / "gpu_tests.xml").getroot().iter("testcase"))
    names = {case.get("name") for case in cases}
    assert {
        "test_on_a_gpu_logits_of_several_blocks_give_the_cpu_loss_and_gradient[dtype0]",
        "test_on_a_gpu_a_decoder_of_one_position_captures_its_step",
        "test_on_a_gpu_translation_with_cuda_graphs_is_the_eager_translation",
        "test_in_autocast_keys_and_values_are_kept_as_computed_and_change_nothing[bf16-cuda]",
    } <= names
    assert not any("cpu" in name.split("[")[-1] for name in names if "[" in name)
    importing = {
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if "from tests.support.gpu import" in path.read_text()
    }
    (line,) = [
        x for x in proc.stdout.splitlines() if x.startswith("gpu_tests.sh: collecting ")
    ]
    assert set(line.removeprefix("gpu_tests.sh: collecting ").split()) == importing
    assert len(importing) >= 4  # the static decoders, evaluation, the loss, this file
    if not torch.cuda.is_available():
        assert all(case.find("skipped") is not None for case in cases)


def test_host_syncs_counts_the_synchronising_calls_of_a_step_by_line(monkeypatch):
    """profile_step.host_syncs on a stand-in for a GPU step: the sync debug mode is on only for the
    step, and each warning CUDA would raise is counted at the line that made it."""
    import warnings
    from types import SimpleNamespace

    sys.path.insert(0, str(REPO / "benchmarks"))
    import profile_step

    modes = []
    monkeypatch.setattr(profile_step, "sync", lambda device: None)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def step(batch):
        for _ in range(2):
            warnings.warn("called a synchronizing CUDA operation")  # the same line twice
        warnings.warn("called a synchronizing CUDA operation")
        warnings.warn("an unrelated warning")

    trainer = SimpleNamespace(device=torch.device("cuda"), train_step=step)
    record = profile_step.host_syncs(trainer, [[0]])
    assert modes == ["warn", 0]  # on for the step, then back as it was
    assert record["per_step"] == 3
    assert sorted(record["where"].values()) == [1, 2]
    assert all(
        where.startswith("tests/test_bench_scripts.py:") for where in record["where"]
    )
    cpu = SimpleNamespace(device=torch.device("cpu"), train_step=step)
    assert profile_step.host_syncs(cpu, [[0]]) is None


@on_a_gpu
def test_on_a_gpu_host_syncs_names_our_line_that_read_a_value_back():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from types import SimpleNamespace

    import profile_step

    def step(batch):
        doubled = torch.ones(3, device="cuda") * 2
        return doubled.sum().item()  # a value read back: the host waits

    trainer = SimpleNamespace(device=torch.device("cuda"), train_step=step)
    record = profile_step.host_syncs(trainer, [[0]])
    assert record["per_step"] >= 1
    assert [w.split(":")[0] for w in record["where"]] == ["tests/test_bench_scripts.py"]
    assert torch.cuda.get_sync_debug_mode() == 0


def test_table3_extended_parts_split_the_twenty_rows_as_the_findings_need():
    """table3_extended.sh names its parts' rows in bash: they must split Table 3's 20 rows, and
    the findings part must hold every row of every finding but bigger-is-better (the size part)."""
    import re

    from annotated_transformer.experiments.table3.statistics import FINDINGS
    from annotated_transformer.model.config import TABLE3_ALL_ROWS

    script = (REPO / "scripts" / "gpu" / "table3_extended.sh").read_text()
    parts = {
        name: rows.split()
        for name, rows in re.findall(r"^\s+(\w+)\) rows=\(([^)]*)\) ;;", script, re.M)
    }
    assert set(parts) == {"all", "findings", "size", "rest"}
    assert sorted(parts["all"]) == sorted(TABLE3_ALL_ROWS)
    split = parts["findings"] + parts["size"] + parts["rest"]
    assert sorted(split) == sorted(TABLE3_ALL_ROWS)  # each row in exactly one part
    for finding in FINDINGS:
        rows = {row for pair in finding.pairs for row in pair}
        part = "size" if finding.name == "bigger is better" else "findings"
        assert rows <= set(parts[part]) | {"base"}, finding.name
    assert (
        "base" in parts["findings"]
    )  # the findings part trains the base the others compare to
