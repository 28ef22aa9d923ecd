"""Precision "auto": asked values are kept, a GPU gets what its tensor cores compute in, a CPU
without bf16 instructions gets fp32 unmeasured, a CPU with them gets the faster of two timed steps
(cached), and measuring changes nothing of a run."""

import json

import pytest
import torch

from annotated_transformer.runtime import precision as P
from tests.support.training import VOCAB, make_trainer, tiny_profile


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def never(*_):
    raise AssertionError("the probe must not run here")


@pytest.mark.parametrize("asked", ["fp32", "bf16", "fp16"])
def test_an_asked_precision_is_kept(asked):
    choice = P.choose_precision(asked, "cpu", probe=never)
    assert choice.precision == asked and choice.reason == "as asked"


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be one of"):
        P.choose_precision("fp8", "cpu")


@pytest.mark.parametrize(
    "capability, bf16_supported, chosen",
    [
        ((9, 0), True, "bf16"),  # H100
        ((8, 0), True, "bf16"),  # A100
        ((7, 5), True, "fp16"),  # T4: torch emulates bf16 there and says yes
        ((7, 5), False, "fp16"),
        ((7, 0), False, "fp16"),  # V100
        ((6, 1), True, "fp32"),  # Pascal: no tensor cores
        ((6, 1), False, "fp32"),
    ],
)
def test_auto_on_a_gpu_follows_its_tensor_cores(
    monkeypatch, capability, bf16_supported, chosen
):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *_, **__: bf16_supported)
    choice = P.choose_precision("auto", "cuda", probe=never)
    assert choice.precision == chosen and choice.reason.startswith("auto: ")
    if chosen == "fp16":
        assert "gradient scaler" in choice.reason
    # a CPU's "auto" is not the GPU's: never fp16, whatever torch.cuda says
    monkeypatch.setattr(P, "cpu_supports_bf16", lambda: False)
    assert P.choose_precision("auto", "cpu", probe=never).precision == "fp32"


@pytest.mark.parametrize(
    "precision, dtype",
    [("fp16", torch.float16), ("bf16", torch.bfloat16), ("fp32", torch.float32)],
)
def test_autocast_multiplies_in_the_precision(precision, dtype):
    a = torch.randn(4, 8)
    with P.autocast_context("cpu", precision):
        assert (a @ a.T).dtype == dtype


@pytest.mark.parametrize(
    "mine, other, common",
    [("bf16", "fp16", "fp16"), ("fp16", "fp32", "fp32"), ("fp16", "bf16", "fp16")],
)
def test_ranks_that_choose_differently_train_alike(monkeypatch, mine, other, common):
    # Under DDP a rank in fp16 scales its gradients and one in bf16 does not: all take the
    # precision every rank computes in.
    from annotated_transformer import Transformer
    from annotated_transformer.runtime.distributed import DistributedContext
    from annotated_transformer.training import precision_probe

    reach = precision_probe.BY_REACH.index
    monkeypatch.setattr(
        precision_probe, "max_over_ranks", lambda value, _: max(value, reach(other))
    )
    profile = tiny_profile(precision=mine)
    choice = precision_probe.training_precision(
        Transformer(profile.model_config(), VOCAB, VOCAB),
        profile.train_settings(),
        None,
        None,
        DistributedContext(rank=0, world_size=2),
        real_rows_only=True,
    )
    assert choice.precision == common
    assert ("another rank chose" in choice.reason) is (common != mine)


def test_a_cpu_without_bf16_instructions_gets_fp32_unmeasured(monkeypatch, cache):
    monkeypatch.setattr(P, "cpu_supports_bf16", lambda: False)
    choice = P.choose_precision("auto", "cpu", probe=never, shape={"d_model": 8})
    assert choice.precision == "fp32" and "emulated" in choice.reason
    assert not (cache / P.CACHE_NAME).exists()


@pytest.mark.parametrize(
    "seconds, faster",
    [({"fp32": 2.0, "bf16": 1.0}, "bf16"), ({"fp32": 1.0, "bf16": 2.3}, "fp32")],
)
def test_a_cpu_with_bf16_instructions_takes_the_faster_and_caches_it(
    monkeypatch, cache, seconds, faster
):
    monkeypatch.setattr(P, "cpu_supports_bf16", lambda: True)
    calls = []

    def probe():
        calls.append(1)
        return seconds

    first = P.choose_precision("auto", "cpu", probe=probe, shape={"d_model": 8})
    again = P.choose_precision("auto", "cpu", probe=probe, shape={"d_model": 8})
    other_shape = P.choose_precision("auto", "cpu", probe=probe, shape={"d_model": 16})
    assert first.precision == again.precision == other_shape.precision == faster
    assert "measured now" in first.reason and "measured before" in again.reason
    assert len(calls) == 2  # once per shape: the second call read the cache
    assert first.seconds == seconds


def test_measuring_changes_nothing_of_the_run(monkeypatch, cache, tmp_path):
    # On a (pretended) bf16 CPU "auto" times both precisions on a copy of the model with the random
    # generators put back; the run must then equal a run that asked for the chosen precision.
    monkeypatch.setattr(P, "cpu_supports_bf16", lambda: True)
    measured = make_trainer(
        tiny_profile(precision="auto", max_steps=4), tmp_path / "auto"
    )
    assert (
        measured.precision in ("fp32", "bf16")
        and "measured now" in measured.execution.precision_reason
    )
    measured.train()
    asked = make_trainer(
        tiny_profile(precision=measured.precision, max_steps=4), tmp_path / "asked"
    )
    asked.train()
    for (name, a), (_, b) in zip(
        measured.model.state_dict().items(), asked.model.state_dict().items()
    ):
        assert torch.equal(a, b), (
            f"{name} differs: measuring the precision changed the run"
        )


@pytest.mark.parametrize(
    "flags, capability, isa, native",
    [
        ({"avx2", "avx512_bf16"}, "AVX512", None, True),
        ({"avx2", "avx512_bf16"}, "AVX512", "AVX2", False),  # an AVX2-only CPU imitated
        ({"avx2", "avx512_bf16"}, "AVX512", "avx512_core", False),  # below the bf16 sets
        ({"avx2", "avx512_bf16"}, "AVX512", "AVX512_CORE_BF16", True),
        ({"avx2", "avx512_bf16"}, "AVX512", "AVX512_CORE_FP16", True),  # AMX off, bf16 on
        ({"avx2", "avx512_bf16"}, "AVX512", "ALL", True),  # oneDNN 2.x: no cap
        ({"avx2", "avx512_bf16"}, "AVX512", "DEFAULT", True),
        # ATEN_CPU_CAPABILITY holds the elementwise kernels, not oneDNN's bf16 products
        ({"avx2", "avx512_bf16"}, "AVX2", None, True),
        ({"avx2", "avx512f"}, "AVX512", None, False),  # no bf16 instructions at all
    ],
)
def test_bf16_counts_as_native_only_where_onednn_may_use_the_instructions(
    monkeypatch, flags, capability, isa, native
):
    # A CPU flag says what instructions exist, not what runs: an AVX2-only CPU imitated on
    # an AVX512-BF16 one must take fp32 unmeasured, as a real AVX2-only one does.
    from annotated_transformer.runtime import devices

    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(devices, "cpu_capability", lambda: capability)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    if isa is None:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    else:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    assert devices.cpu_supports_bf16() is native
    assert devices.cpu_has_bf16_instructions() is ("avx512_bf16" in flags)


def test_a_measured_precision_is_not_reused_under_other_caps_or_another_step(monkeypatch):
    from annotated_transformer.runtime import devices

    monkeypatch.setattr(P, "cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(P, "onednn_isa_cap", lambda: "")
    full = P.measurement_key({"d_model": 8})
    monkeypatch.setattr(P, "cpu_capability", lambda: "AVX2")
    held_aten = P.measurement_key({"d_model": 8})
    monkeypatch.setattr(P, "onednn_isa_cap", lambda: "AVX512_CORE_BF16")
    held_both = P.measurement_key({"d_model": 8})
    monkeypatch.setattr(P, "STEP_REVISION", P.STEP_REVISION + 1)
    next_step = P.measurement_key({"d_model": 8})
    assert len({full, held_aten, held_both, next_step}) == 4
    assert devices.cpu_capability() == torch.backends.cpu.get_cpu_capability().upper()


@pytest.mark.parametrize(
    "entry, says",
    [
        (
            {"precision": "bf16", "seconds": {"fp32": "2.0", "bf16": 1.0}},
            "MeasuredPrecision.seconds must be a dict[str, float], got {'fp32': '2.0'",
        ),
        (
            {"precision": "bf16", "seconds": {"fp32": 2.0}},
            "MeasuredPrecision.seconds['bf16'] must be a number > 0",
        ),
        ({"precision": 16, "seconds": {"fp32": 2.0, "bf16": 1.0}}, "precision must be"),
        ({"seconds": {"fp32": 2.0, "bf16": 1.0}}, "missing 1 required"),
        ("bf16", "argument after ** must be a mapping"),
    ],
)
def test_a_cached_answer_that_is_not_a_measurement_is_measured_again(
    monkeypatch, cache, caplog, entry, says
):
    """A cache edited by hand or written by another version used to fail later, dividing a
    string; it is read as a typed record, and one that does not make one is measured again."""
    monkeypatch.setattr(P, "cpu_supports_bf16", lambda: True)
    key = P.measurement_key({"d_model": 8})
    cache.mkdir()
    (cache / P.CACHE_NAME).write_text(json.dumps({key: entry}))
    choice = P.choose_precision(
        "auto", "cpu", probe=lambda: {"fp32": 1.0, "bf16": 2.0}, shape={"d_model": 8}
    )
    assert choice.precision == "fp32" and "measured now" in choice.reason
    assert says in caplog.text
    stored = json.loads((cache / P.CACHE_NAME).read_text())[key]
    assert stored == {"precision": "fp32", "seconds": {"fp32": 1.0, "bf16": 2.0}}


@pytest.mark.parametrize(
    "seconds, says",
    [
        (
            {"fp32": "1.0", "bf16": 2.0},
            "MeasuredPrecision.seconds must be a dict[str, float]",
        ),
        ({"fp32": True, "bf16": 2.0}, "got {'fp32': True, 'bf16': 2.0} (dict)"),
        ({"fp32": float("nan"), "bf16": 2.0}, "seconds['fp32'] must be a number > 0"),
    ],
)
def test_a_measurement_of_the_wrong_type_is_refused_at_construction(seconds, says):
    with pytest.raises(ValueError) as caught:
        P.MeasuredPrecision("bf16", seconds)
    assert says in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="PrecisionChoice.seconds must be"):
        P.PrecisionChoice("bf16", "measured", {"fp32": "1.0"})
    with pytest.raises(ValueError, match="PrecisionChoice.precision must be one of"):
        P.PrecisionChoice("bf-16", "as asked")


@pytest.mark.parametrize("batches", [9, 2])
def test_the_probe_steps_each_precision_through_distinct_batches(monkeypatch, batches):
    # oneDNN builds bf16 kernels per shape, and a run meets a new shape at almost every step: one
    # batch timed again and again made bf16 look faster for a model it trained 1.5x slower. Each
    # precision walks the same batches in order, each once (round again where there are few).
    from annotated_transformer import Transformer
    from annotated_transformer.training import precision_probe
    from tests.support.training import copy_pairs

    seen = {"fp32": [], "bf16": []}
    real_batch_loss = precision_probe.batch_loss

    def recording(model, src, tgt, *, precision, **kwargs):
        seen[precision].append(tuple(src.shape))
        return real_batch_loss(model, src, tgt, precision=precision, **kwargs)

    monkeypatch.setattr(precision_probe, "batch_loss", recording)
    data = copy_pairs(60, 0)
    # batch k holds k // 7 + 1 pairs of the (k % 7)-th length, so every batch has its own shape
    by_length = {}
    for j in range(len(data)):
        by_length.setdefault(len(data[j][0]), []).append(j)
    groups = [pairs for _, pairs in sorted(by_length.items())]
    chosen = [groups[k % 7][: k // 7 + 1] for k in range(batches)]
    shapes = [(len(pairs), len(data[pairs[0]][0])) for pairs in chosen]
    assert len(set(shapes)) == batches
    profile = tiny_profile()
    seconds = precision_probe.time_both_precisions(
        Transformer(profile.model_config(), VOCAB, VOCAB),
        data,
        chosen,
        torch.device("cpu"),
        real_rows_only=True,
    )
    assert set(seconds) == {"fp32", "bf16"} and all(s > 0 for s in seconds.values())
    calls = max(batches, 4)  # a warm-up and at least three timed rounds
    extra = seen["fp32"][0][1] - shapes[0][1]  # the end-of-sequence token collating adds
    walked = [(rows, length - extra) for rows, length in seen["fp32"]]
    assert walked == [shapes[k % batches] for k in range(calls)]
    assert seen["fp32"] == seen["bf16"]
