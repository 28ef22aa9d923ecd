"""A run's precision and compiling are decided once, before the trainer: explicit settings cost
nothing, and the eager CPU step alone computes logits for real rows only."""

import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.runtime.compiling import CompileChoice
from annotated_transformer.runtime.distributed import DistributedContext
from annotated_transformer.training import compile_probe, execution, precision_probe
from annotated_transformer.training.execution import StepExecution, choose_execution
from tests.support.training import VOCAB, copy_pairs, tiny_profile

PAIRS = copy_pairs(40, 0)
CPU = DistributedContext()


@pytest.fixture
def no_probe(monkeypatch, tmp_path):
    """Any timing fails the test; measurements would be cached under tmp_path."""
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))

    def never(*args, **kwargs):
        raise AssertionError("explicit settings must not time anything")

    monkeypatch.setattr(precision_probe, "time_both_precisions", never)
    monkeypatch.setattr(compile_probe, "time_eager_and_compiled", never)


def model() -> Transformer:
    return Transformer(tiny_profile().model_config(), VOCAB, VOCAB)


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("compile", [False, True])
def test_explicit_settings_are_taken_as_asked_without_a_probe(
    no_probe, precision, compile
):
    settings = tiny_profile(precision=precision, compile=compile).train_settings()
    chosen = choose_execution(model(), settings, PAIRS, CPU)
    assert chosen == StepExecution(
        precision=precision,
        precision_reason="as asked",
        compiled=compile,
        compile_reason="as asked",
        compile_failed=False,
        real_rows_only=not compile,
    )


@pytest.mark.parametrize("compile", [False, True])
def test_a_gpu_keeps_every_row(no_probe, compile):
    settings = tiny_profile(precision="bf16", compile=compile).train_settings()
    gpu = DistributedContext(device=torch.device("cuda"))  # only the type is read
    chosen = choose_execution(model(), settings, PAIRS, gpu)
    assert chosen.compiled is compile and not chosen.real_rows_only


def test_compiling_is_decided_in_the_chosen_precision(monkeypatch):
    seen = {}

    def training_compile(*args, precision, micro_batches_per_step):
        seen.update(precision=precision, micro_batches=micro_batches_per_step)
        return CompileChoice(False, "recorded")

    monkeypatch.setattr(execution, "training_compile", training_compile)
    settings = tiny_profile(precision="bf16", accumulation=3).train_settings()
    chosen = choose_execution(model(), settings, PAIRS, CPU)
    assert seen == {"precision": "bf16", "micro_batches": 3}
    assert chosen.compile_reason == "recorded"


def test_a_compiler_that_fails_to_be_timed_means_the_eager_step(no_probe, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler: cc not found")

    monkeypatch.setattr(compile_probe, "time_eager_and_compiled", broken)
    settings = tiny_profile(precision="fp32", compile="auto").train_settings()
    chosen = choose_execution(model(), settings, PAIRS, CPU)
    assert not chosen.compiled and chosen.compile_failed and chosen.real_rows_only
    assert "no C++ compiler" in chosen.compile_reason


def test_choosing_draws_no_random_number(no_probe):
    settings = tiny_profile(precision="fp32").train_settings()
    m = model()
    torch.manual_seed(11)
    choose_execution(m, settings, PAIRS, CPU)
    after = torch.rand(3)
    torch.manual_seed(11)
    assert torch.equal(torch.rand(3), after)
