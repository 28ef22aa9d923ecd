"""The step and beam-search benchmarks and the GPU scripts run, check what they must, and write their records."""

import json
import subprocess
import sys
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


@pytest.mark.slow
def test_kernel_cache_benchmark_trains_both_sizes_to_the_same_numbers(tmp_path, data_dir):
    record = run_script(
        "bench_kernel_cache.py", tmp_path / "cache.json", tmp_path,
        AT_DATA_DIR=str(data_dir), AT_OFFLINE="1",
    )  # fmt: skip
    assert record["cache_sizes"] == {"onednn_default": 1024, "package": 16384}
    for runs in record["runs"].values():
        assert [run["steps"] for run in runs] == [record["steps"]]
    # ten smoke steps need fewer kernels than either size keeps: both build the same ones
    default, package = record["runs"]["onednn_default"], record["runs"]["package"]
    assert default[0]["kernels_built"] == package[0]["kernels_built"]
    # the cache size changes which kernels are kept, never what they compute
    assert record["same_valid_loss"]


def test_the_package_sizes_onednns_kernel_cache_and_keeps_a_size_of_your_own():
    def seen(**env: str) -> str:
        code = "import annotated_transformer, os; print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'])"
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
            env={"PATH": "/usr/bin:/bin", **env},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert seen() == "16384"
    assert seen(ONEDNN_PRIMITIVE_CACHE_CAPACITY="64") == "64"


def _kernel_cache_benchmark_with_a_run_that(monkeypatch, stopped_at, stopped_by, log):
    """bench_kernel_cache with its training process replaced by one that wrote a run stopped at
    step `stopped_at` (`stopped_by`) and the oneDNN log text `log`."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import bench_kernel_cache

    def trained(command, env, log_path, cwd=None):
        out = Path(command[command.index("--out") + 1])
        out.mkdir()
        stop = {
            "kind": "stop",
            "step": stopped_at,
            "train_time_s": 1.0,
            "stopped_by": stopped_by,
        }
        valid = {"kind": "valid", "step": stopped_at, "loss": 3.0}
        (out / "metrics.jsonl").write_text(f"{json.dumps(valid)}\n{json.dumps(stop)}\n")
        log_path.write_text(log)
        return 0, 100.0

    monkeypatch.setattr(bench_kernel_cache, "run_fresh", trained)
    return bench_kernel_cache


def test_kernel_cache_benchmark_refuses_a_run_that_stopped_short(tmp_path, monkeypatch):
    bench = _kernel_cache_benchmark_with_a_run_that(monkeypatch, 7, "interrupted", "")
    with pytest.raises(SystemExit, match="stopped at step 7 of 10 .*unequal work"):
        bench.train_once(1024, "smoke", 10, "bf16", tmp_path / "run")


@pytest.mark.parametrize("onednn_runs_bf16", [True, False])
def test_kernel_cache_benchmark_refuses_a_bf16_log_without_kernels(
    tmp_path, monkeypatch, onednn_runs_bf16
):
    """Where oneDNN runs bf16's products, a run builds kernels: a log naming none means this
    oneDNN did not log them, and the count is refused. Where bf16 is emulated, none is the count."""
    bench = _kernel_cache_benchmark_with_a_run_that(
        monkeypatch, 10, "max_steps", "train smoke: 100%|##########| 10/10\n"
    )
    monkeypatch.setattr(bench, "cpu_supports_bf16", lambda: onednn_runs_bf16)
    if onednn_runs_bf16:
        with pytest.raises(SystemExit, match="names no kernel built in a bf16 run"):
            bench.train_once(1024, "smoke", 10, "bf16", tmp_path / "run")
    else:
        run = bench.train_once(1024, "smoke", 10, "bf16", tmp_path / "run")
        assert run["kernels_built"] == 0


@pytest.mark.slow
def test_step_benchmark_steps_through_the_profiles_own_pairs(tmp_path, data_dir):
    def batches(*args: str) -> list:
        record = run_script(
            "bench_step.py", tmp_path / "real.json", tmp_path, "--precision", "fp32",
            "--batches", "2", *args, AT_DATA_DIR=str(data_dir), AT_OFFLINE="1",
        )  # fmt: skip
        return record["data"], record["training"]["batch_shapes_rows_by_target_length"]

    real, real_batches = batches("--real-data")
    synthetic, synthetic_batches = batches()
    assert (real, synthetic) == ("multi30k training pairs", "synthetic pairs")
    assert real_batches != synthetic_batches  # other pairs, so other shapes
