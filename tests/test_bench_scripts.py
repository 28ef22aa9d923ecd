"""The step and beam-search benchmarks and the GPU scripts run, check what they must, and write their records."""

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
    from bench_step import VARIANTS, step_fn

    from annotated_transformer.runtime import attention_kernels

    seen = []

    class Trainer:
        def train_step(self, batch):
            seen.append(attention_kernels.cudnn_attention_allowed())

    allowed = {}
    with attention_kernels.allow_cudnn_attention(True):  # whatever the environment says
        for name in VARIANTS:
            step_fn(name, Trainer(), [[[0]], [[1]]])()  # a round of two batches
            allowed[name] = seen[-2:]
    assert allowed.pop("eager_cudnn_attention") == [True, True]
    assert allowed.pop("eager_bucketed_cudnn_attention") == [True, True]
    assert not any(any(a) for a in allowed.values())
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
def test_step_benchmark_records_both_precisions_and_the_choice(tmp_path):
    record = run_script(
        "bench_step.py",
        tmp_path / "precision.json",
        tmp_path,
        "--precision",
        "fp32",
        "bf16",
    )
    choice = record["training"]["precision_choice"]
    seconds = choice["seconds_per_step"]
    assert set(seconds) == {"fp32", "bf16"} and all(s > 0 for s in seconds.values())
    assert (
        seconds["bf16"] == record["training"]["bf16"]["variants"]["eager"]["per_step_s"]
    )
    assert choice["bf16_speed_over_fp32"] == pytest.approx(
        seconds["fp32"] / seconds["bf16"]
    )
    if record["cpu"]["has_bf16_instructions"]:
        assert choice["auto_chooses"] == min(seconds, key=seconds.get)
    else:
        assert choice["auto_chooses"] == "fp32" and "emulated" in choice["auto_reason"]


@pytest.mark.slow
def test_step_benchmark_records_compiling_decoding_and_threads(tmp_path):
    # --quick: the smoke model through Dynamo without code generation, so the numbers mean nothing;
    # what is checked is the record the full run writes. ATEN_CPU_CAPABILITY pins the kernel path
    # (how a run on a wider CPU stands in for an AVX2-only one), and the record must say so.
    record = run_script(
        "bench_step.py", tmp_path / "compile.json", tmp_path,
        "--precision", "fp32", "--variants", "eager_all_rows", "compiled", "compiled_model",
        "--batches", "2", "--decode", "greedy", "beam", "--decoders", "eager_cache",
        "compiled_step", "--thread-settings", ATEN_CPU_CAPABILITY="avx2",
    )  # fmt: skip
    assert record["quick"] and record["cpu"]["name"] and record["cpu"]["flags"]
    assert record["env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    if "avx2" in record["cpu"]["flags"]:  # elsewhere torch ignores the pin
        assert record["cpu"]["capability"] == "AVX2"
    assert len(record["training"]["batch_shapes_rows_by_target_length"]) == 2
    fp32 = record["training"]["fp32"]
    assert list(fp32["variants"]) == [
        "eager",
        "eager_all_rows",
        "compiled",
        "compiled_model",
    ]
    for name, variant in fp32["variants"].items():
        assert variant["target_tokens_per_s"] > 0 and variant["compile_s"] >= 0, name
        assert variant["speed_over_eager"] == pytest.approx(
            fp32["variants"]["eager"]["median_s"] / variant["median_s"]
        )
    assert isinstance(fp32["auto_compile"]["compiles"], bool)
    assert sorted(row["search"] for row in record["decoding"]) == ["beam", "greedy"]
    for row in record["decoding"]:
        assert row["same_tokens"], row["search"]
        assert set(row["decoders"]) == {"eager_cache", "compiled_step"}
        assert row["decoders"]["compiled_step"]["compile_s"] >= 0
        assert row["decoder_rows"] >= row["decoder_steps"] > 0
    settings = record["threads_settings"]["settings"]
    assert [s["name"] for s in settings] == ["default", "set_num_threads(1)"]
    assert not [s["error"] for s in settings if "error" in s]
    assert settings[1]["threads"] == 1
    assert all(s["training"]["fp32"]["target_tokens_per_s"] > 0 for s in settings)
    assert all(s["greedy"]["tokens_per_s"] > 0 for s in settings)


def test_profile_kinds_classify_cpu_ops_and_gpu_kernels_by_name_and_by_what_encloses_them():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_step import KINDS, classify

    loss = ("bench_step::loss",)
    dropout_backward = ("MulBackward0", "autograd::engine::evaluate_function: MulBackward0",
                        "aten::mul", "bench_step::dropout")  # fmt: skip
    expected = {
        ("aten::mm", ()): "matmul",
        ("aten::addmm", loss): "matmul",  # a product is a matmul wherever it runs
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", ()): "matmul",
        ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", ()): "matmul",
        ("triton_tem_fused_mm_3", ()): "matmul",
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", ()): "matmul",
        ("aten::_scaled_dot_product_flash_attention_for_cpu", ()): "attention",
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", ()): "attention",
        ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", ()): "attention",
        ("aten::_softmax", ("aten::softmax",)): "softmax",
        ("aten::exp", loss): "loss over the vocabulary",
        ("void at::native::vectorized_elementwise_kernel<4, exp_kernel_cuda>", ("aten::exp_", *loss)):
            "loss over the vocabulary",
        ("aten::_log_softmax", ()): "loss over the vocabulary",
        ("aten::mul", ("_SmoothedCrossEntropyBackward",)): "loss over the vocabulary",
        ("aten::_fused_adam_", ("Optimizer.step#Adam.step",)): "optimizer",
        ("multi_tensor_apply_kernel<FusedAdamMathFunctor>", ()): "optimizer",
        ("aten::copy_", ("aten::to", "bench_step::batching")): "batching and host",
        ("aten::native_layer_norm", ()): "norms and dropout",
        ("aten::uniform_", ("aten::rand_like", "bench_step::dropout")): "norms and dropout",
        ("aten::mul", dropout_backward): "norms and dropout",
        ("triton_poi_fused_add_native_dropout_4", ()): "norms and dropout",
        ("aten::copy_", ()): "other elementwise",
        ("aten::add", ("autograd::engine::evaluate_function: AddBackward0",)): "other elementwise",
    }  # fmt: skip
    assert len(set(KINDS)) == 8
    got = {key: classify(*key) for key in expected}
    assert got == expected
    assert set(got.values()) == set(KINDS)


def _event(name, parent=None, *, start, cpu_us=0.0, seq=-1, thread=1, fwd=0, id=0):
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    return SimpleNamespace(
        name=name, cpu_parent=parent, self_cpu_time_total=cpu_us, sequence_nr=seq,
        thread=thread, fwd_thread=fwd, time_range=SimpleNamespace(start=start, end=start),
        device_type=DeviceType.CPU, is_user_annotation=False, id=id, linked_correlation_id=0,
    )  # fmt: skip


def _kernel(name, launched_by, us, *, annotation=False):
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    return SimpleNamespace(
        name=name, cpu_parent=None, sequence_nr=-1, device_type=DeviceType.CUDA,
        is_user_annotation=annotation, id=0, linked_correlation_id=launched_by.id,
        time_range=SimpleNamespace(start=100.0, end=100.0 + us),
    )  # fmt: skip


def test_time_by_kind_counts_each_kernel_once_and_a_backward_where_its_forward_ran():
    # Only the device's own events count on a GPU, each once, with the operator that launched it
    # (an operator's own device time would count its kernels again: the H100's first trace summed
    # 128.6 ms in a 70.7 ms step); a backward operator counts where its forward ran (autograd's
    # node carries the forward's sequence number); what the kinds leave of the profiled wall time
    # is batching and the host.
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_step import time_by_kind

    loss = _event("bench_step::loss", start=0, cpu_us=1.0, id=1)
    exp = _event("aten::exp", loss, start=1, cpu_us=4.0, seq=7, id=2)
    mm = _event("aten::mm", start=2, cpu_us=5.0, seq=8, id=3)
    node = _event(
        "autograd::engine::evaluate_function: ExpBackward0",
        start=3,
        seq=7,
        thread=2,
        fwd=1,
        id=4,
    )
    backward = _event("aten::mul", node, start=4, cpu_us=2.0, thread=2, id=5)
    adam = _event("Optimizer.step#Adam.step", start=5, cpu_us=1.0, id=6)
    fused = _event("aten::_fused_adam_", adam, start=6, cpu_us=1.0, id=7)
    kernels = [
        _kernel("exp_kernel_cuda", exp, 6.0),
        _kernel("sm90_xmma_gemm", mm, 30.0),
        _kernel("mul_kernel", backward, 10.0),
        _kernel("multi_tensor_apply_kernel", fused, 4.0),
        _kernel("Optimizer.step#Adam.step", adam, 8.0, annotation=True),  # spans the last
    ]
    events = [loss, exp, mm, node, backward, adam, fused, *kernels]  # fmt: skip
    gpu = time_by_kind(events, cuda=True, steps=2, wall_s=100e-6)
    ms = gpu["by_kind_ms_per_step"]
    assert ms["matmul"] == pytest.approx(0.015)  # 30 us over 2 steps
    assert ms["loss over the vocabulary"] == pytest.approx(
        0.008
    )  # forward 6 and backward 10
    assert ms["optimizer"] == pytest.approx(0.002)
    assert ms["batching and host"] == pytest.approx(0.025)  # 100 - 50 us the kernels took
    assert gpu["total_ms_per_step"] == pytest.approx(0.05)
    assert sum(gpu["by_kind_percent"].values()) == pytest.approx(100.0)
    assert [row["name"] for row in gpu["top_ops"]][:2] == ["sm90_xmma_gemm", "mul_kernel"]
    with pytest.raises(SystemExit, match="no GPU kernel"):
        time_by_kind([loss], cuda=True, steps=2, wall_s=1e-6)  # nothing to count
    cpu = time_by_kind(events, cuda=False, steps=1, wall_s=20e-6)
    ms = cpu["by_kind_ms_per_step"]  # the operators' self CPU time
    assert ms["loss over the vocabulary"] == pytest.approx(0.007)  # 1 + 4 + 2
    assert ms["matmul"] == pytest.approx(0.005) and ms["optimizer"] == pytest.approx(
        0.002
    )
    assert ms["batching and host"] == pytest.approx(0.006)  # 20 us wall, 14 in operators
    assert cpu["total_ms_per_step"] == pytest.approx(0.020)


def test_step_benchmark_profiles_fp32_and_bf16_against_the_matmul_peak(tmp_path):
    # The smoke profile's eager step, 2 profiled steps on the CPU in both precisions: the kinds
    # are the whole profiled step, and the step's FLOPs are set against a measured matmul peak.
    out = tmp_path / "profile.json"
    record = run_script(
        "bench_step.py", out, tmp_path, "--precision", "fp32", "bf16", "--profiler",
        "--profiler-steps", "2", "--threads", "1",
    )  # fmt: skip
    assert record["threads"] == 1
    runs = record["profiler"]["runs"]
    assert list(runs) == ["fp32 eager", "bf16 eager"]
    kinds = list(runs["fp32 eager"]["by_kind_ms_per_step"])
    assert kinds[0] == "matmul" and kinds[-1] == "batching and host" and len(kinds) == 8
    for key, run in runs.items():
        ms = run["by_kind_ms_per_step"]
        for kind in ("matmul", "attention", "norms and dropout", "loss over the vocabulary",
                     "optimizer", "batching and host"):  # fmt: skip
            assert ms[kind] > 0, (key, kind)
        assert sum(ms.values()) == pytest.approx(run["total_ms_per_step"], rel=1e-9)
        assert run["total_ms_per_step"] == pytest.approx(run["profiled_wall_ms_per_step"])
        assert sum(run["by_kind_percent"].values()) == pytest.approx(100.0)
        precision = key.split()[0]
        peak = record["profiler"]["matmul_peak"][precision]
        assert peak["peak_gflops_per_s"] == max(peak["gflops_per_s"].values()) > 0
        assert set(peak["shapes"]) >= {"qkv", "feed-forward in", "vocabulary"}
        timed = record["training"][precision]["variants"]["eager"]
        assert run["share_of_matmul_peak"] == pytest.approx(
            timed["gflops_per_s"] / peak["peak_gflops_per_s"]
        )
        assert timed["gflops_per_s"] == pytest.approx(
            record["training"]["flops_per_round"] / timed["median_s"] / 1e9
        )
    # The markdown table: each run's kinds, as printed (3 decimals), add up to its total.
    table = (tmp_path / "profile.md").read_text()
    cells = {
        line.split("|")[1].strip(): [float(c.split()[0]) for c in line.split("|")[2:-1]]
        for line in table.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip() in kinds + ["total (profiled wall)"]
    }  # fmt: skip
    total = cells.pop("total (profiled wall)")
    for column in range(2):
        column_sum = sum(row[column] for row in cells.values())
        assert column_sum == pytest.approx(total[column], abs=0.0005 * len(cells) + 1e-9)
    assert "step's share of the peak" in table


def test_step_benchmark_runs_each_change_and_decodes_the_same_tokens(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_step import DECODERS, VARIANTS

    record = run_script(
        "bench_step.py", tmp_path / "speed.json", tmp_path, "--precision", "fp32",
        "--variants", *VARIANTS, "--decode", "greedy", "beam", "--decoders", *DECODERS[:4],
    )  # fmt: skip
    training = record["training"]
    variants = training["fp32"]["variants"]
    assert set(variants) == set(VARIANTS)
    for name, v in variants.items():
        assert "error" not in v, (name, v)
        assert v["target_tokens_per_s"] > 0 and v["mfu"] is None  # no peak for a CPU
        assert v["speed_over_eager"] == pytest.approx(
            variants["eager"]["median_s"] / v["median_s"]
        )
    strategies = {name: v["loss_strategy"] for name, v in variants.items()}
    assert strategies["eager"] == default_strategy(torch.device("cpu"))
    assert strategies["eager_row_blocks_loss"] == "row_blocks"
    assert strategies["compiled"] == "compiled"
    bucketed = variants["compiled_bucketed"]["padded_shape"]
    assert variants["eager"]["padded_shape"] is None
    assert bucketed[1] in training["buckets"] and bucketed[2] in training["buckets"]
    assert variants["eager_bucketed"]["padded_shape"] == bucketed
    assert variants["eager_bucketed_graphed"]["padded_shape"] == bucketed
    assert variants["eager_bucketed_graphed"]["cuda_graphs"] is True
    assert variants["eager"]["cuda_graphs"] is False
    assert strategies["eager_bucketed"] == default_strategy(torch.device("cpu"))
    assert sorted(row["search"] for row in record["decoding"]) == ["beam", "greedy"]
    for row in record["decoding"]:
        assert row["same_tokens"] and not row["static_graphed"]  # graphs on CUDA only
        late = {"eager_cache_checked_every_step"} if row["search"] == "greedy" else set()
        assert set(row["decoders"]) == {"recompute", "eager_cache", "static_cache", *late}


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
        runs = json.loads((out / f"{stem}.json").read_text())["profiler"]["runs"]
        profiled = {"profile_step_eager": ["fp32 eager"],
                    "profile_step_graphed": ["fp32 eager", "fp32 eager_bucketed_graphed"],
                    "profile_step_compiled": ["fp32 eager", "fp32 compiled"]}  # fmt: skip
        assert list(runs) == profiled[stem]
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
    eager = json.loads((out / "speed_train_eager.json").read_text())["training"]["fp32"]
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
        record = record["fp32"]
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
    jobs = {(j["corpus"], j["row"]): len(j["curve"]) for j in document["jobs"]}
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
    rows = {(j["corpus"], j["row"]) for j in json.loads(merged.read_text())["jobs"]}
    assert rows == {*jobs, ("full", "C2")}  # the part's C1 and C2 beside the first's five


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
    """bench_step.host_syncs on a stand-in for a GPU step: the sync debug mode is on only for the
    step, and each warning CUDA would raise is counted at the line that made it."""
    import warnings
    from types import SimpleNamespace

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_step

    modes = []
    monkeypatch.setattr(bench_step, "sync", lambda device: None)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def step(batch):
        for _ in range(2):
            warnings.warn("called a synchronizing CUDA operation")  # the same line twice
        warnings.warn("called a synchronizing CUDA operation")
        warnings.warn("an unrelated warning")

    trainer = SimpleNamespace(device=torch.device("cuda"), train_step=step)
    record = bench_step.host_syncs(trainer, [[0]])
    assert modes == ["warn", 0]  # on for the step, then back as it was
    assert record["per_step"] == 3
    assert sorted(record["where"].values()) == [1, 2]
    assert all(
        where.startswith("tests/test_bench_scripts.py:") for where in record["where"]
    )
    cpu = SimpleNamespace(device=torch.device("cpu"), train_step=step)
    assert bench_step.host_syncs(cpu, [[0]]) is None


@on_a_gpu
def test_on_a_gpu_host_syncs_names_our_line_that_read_a_value_back():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from types import SimpleNamespace

    import bench_step

    def step(batch):
        doubled = torch.ones(3, device="cuda") * 2
        return doubled.sum().item()  # a value read back: the host waits

    trainer = SimpleNamespace(device=torch.device("cuda"), train_step=step)
    record = bench_step.host_syncs(trainer, [[0]])
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
