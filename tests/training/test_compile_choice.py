"""Compile "auto": asked values are kept, a GPU compiles, a CPU compiles only when its measured step
pays for the compiling within the run (measured once, cached), a compiler that fails means eager
with one line, and the compiled step computes the eager step's loss."""

import argparse
import json
import logging

import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.commands import train as train_command
from annotated_transformer.data.batching import collate_pairs
from annotated_transformer.runtime import compiling as C
from annotated_transformer.training import compile_probe
from annotated_transformer.training.settings import TrainSettings
from annotated_transformer.training.teacher_forcing import batch_loss
from tests.support.training import VOCAB, copy_pairs, make_trainer, tiny_profile

FAST = {"eager": 1.0, "compiled": 0.5, "compile": 10.0}  # 2x, 10 s to compile
SLOW = {"eager": 1.0, "compiled": 1.25, "compile": 10.0}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def never(*_):
    raise AssertionError("the probe must not run here")


def fifteen_minutes(_step_s):
    return 900.0


@pytest.mark.parametrize("asked", [True, False])
def test_an_asked_value_is_kept(asked, cache):
    choice = C.choose_compile(asked, "cpu", probe=never)
    assert choice.compile is asked and choice.reason == "as asked"


@pytest.mark.parametrize("value", ["yes", 1, None, "AUTO"])
def test_an_unknown_value_is_refused(value):
    with pytest.raises(ValueError, match="compile must be true, false or 'auto'"):
        C.check_compile(value)
    with pytest.raises(ValueError, match="compile must be"):
        TrainSettings(max_steps=1, compile=value)


def test_old_settings_keep_working():
    for value in (True, False, "auto"):
        settings = TrainSettings.from_dict(
            TrainSettings(max_steps=1, compile=value).to_dict()
        )
        assert settings.compile == value
    assert tiny_profile().compile is False


def test_a_gpu_compiles_unmeasured(cache):
    choice = C.choose_compile("auto", "cuda", probe=never)
    assert choice.compile and "GPU" in choice.reason
    assert not (cache / C.CACHE_NAME).exists()


@pytest.mark.parametrize("seconds, compiles", [(FAST, True), (SLOW, False)])
def test_a_cpu_measures_once_per_shape_and_reuses_the_answer(cache, seconds, compiles):
    calls = []

    def probe():
        calls.append(1)
        return seconds

    def choose(shape):
        return C.choose_compile(
            "auto", "cpu", probe=probe, shape=shape, run_seconds=fifteen_minutes
        )

    first, again = choose({"d_model": 8}), choose({"d_model": 8})
    other_shape = choose({"d_model": 16})
    assert first.compile is again.compile is other_shape.compile is compiles
    assert "measured now" in first.reason and "measured before" in again.reason
    assert len(calls) == 2  # once per shape: the second call read the cache
    assert first.seconds == again.seconds == seconds
    assert (cache / C.CACHE_NAME).is_file()


def test_the_compile_seconds_are_charged_to_the_run(cache):
    # 1.25x per step, but 3 minutes of compiling: not worth it in 15 minutes, worth it in 10 hours.
    seconds = {"eager": 1.0, "compiled": 0.8, "compile": 180.0}

    def choose(run_s):
        return C.choose_compile(
            "auto", "cpu", probe=lambda: seconds, shape={}, run_seconds=lambda _: run_s
        )

    short, long = choose(900.0), choose(36_000.0)
    assert not short.compile and "over this run's 900 s that is 1.00x" in short.reason
    assert long.compile
    assert C.effective_speed(seconds, None) == pytest.approx(1.25)
    # below the margin even with nothing to charge: eager
    assert (
        C.effective_speed({"eager": 1.0, "compiled": 0.97, "compile": 0.0}, 1e9)
        < C.MARGIN
    )


def test_a_probe_that_raises_falls_back_to_eager_in_one_line(cache, caplog):
    def probe():
        raise RuntimeError("InductorError: no C++ compiler found\n  a long traceback")

    with caplog.at_level(logging.WARNING):
        choice = C.choose_compile("auto", "cpu", probe=probe, shape={})
    assert not choice.compile and choice.failed
    assert "compiling failed" in choice.reason
    assert "RuntimeError: InductorError: no C++ compiler found" in choice.reason
    assert "traceback" not in choice.reason
    records = [r for r in caplog.records if r.name == C.__name__]
    assert [r.getMessage() for r in records] == [choice.reason]
    assert not (cache / C.CACHE_NAME).exists()  # a failure is tried again next run


def test_the_trainer_trains_eagerly_when_compiling_fails(cache, tmp_path, monkeypatch):
    def broken(model):
        def forward(*args, **kwargs):
            raise RuntimeError("no C++ compiler: cc not found")

        return forward, compile_probe.label_smoothed_cross_entropy

    monkeypatch.setattr(compile_probe, "compiled_step_parts", broken)
    trainer = make_trainer(tiny_profile(compile="auto", max_steps=2), tmp_path / "run")
    assert not trainer.compiled and trainer.execution.compile_failed
    assert "RuntimeError: no C++ compiler" in trainer.execution.compile_reason
    assert trainer.execution.real_rows_only  # the eager CPU step
    assert trainer.train().progress.step == 2


def test_the_trainer_takes_a_measured_answer(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(
        compile_probe, "time_eager_and_compiled", lambda *a, **k: dict(FAST)
    )
    trainer = make_trainer(tiny_profile(compile="auto"), tmp_path / "run")
    assert trainer.compiled and "measured now" in trainer.execution.compile_reason
    assert not trainer.execution.real_rows_only  # a compiled graph takes every row
    assert isinstance(trainer.forward_model, torch._dynamo.eval_frame.OptimizedModule)
    again = make_trainer(tiny_profile(compile="auto"), tmp_path / "again")
    assert again.compiled and "measured before" in again.execution.compile_reason


def test_the_run_length_comes_from_the_budget_or_the_steps(tmp_path):
    trainer = make_trainer(tiny_profile(max_steps=100), tmp_path / "run")
    plan = compile_probe.planned_seconds
    micro = trainer.micro_batches_per_step
    assert plan(trainer.settings, trainer.batcher, micro)(0.5) == 100 * 0.5 * micro
    budget = trainer.settings.replace(time_budget_minutes=0.5)
    assert plan(budget, trainer.batcher, micro)(0.5) == 30.0
    epochs = trainer.settings.replace(max_steps=None, max_epochs=2)
    per_epoch = trainer.batcher.steps_per_epoch(0)
    assert plan(epochs, trainer.batcher, 1)(1.0) == 2 * per_epoch


@pytest.mark.parametrize(
    "argv, value",
    [
        ([], False),
        (["--compile"], True),
        (["--compile", "auto"], "auto"),
        (["--compile", "off"], False),
        (["--no-compile"], False),
    ],
)
def test_the_flag_takes_auto_and_keeps_its_old_forms(argv, value):
    parser = argparse.ArgumentParser()
    train_command.add_arguments(parser)
    args = parser.parse_args(["--profile", "smoke", *argv])
    assert train_command.profile_from_args(args).compile == value


@pytest.mark.slow  # about a minute of compiling on 2 busy cores
def test_the_compiled_step_computes_the_eager_loss():
    # fp32, no dropout: the compiled graph (every row, the loss as plain ops) and the eager step (real
    # rows, the hand-written backward) compute the same loss and the same gradients.
    profile = tiny_profile(dropout=0.0)
    torch.manual_seed(0)
    model = Transformer(profile.model_config(), VOCAB, VOCAB).train()
    c = model.config
    src, tgt = collate_pairs(list(copy_pairs(6, 2)), c.pad_id, c.bos_id, c.eos_id)
    compiled_model, compiled_loss = compile_probe.compiled_step_parts(model)
    results = []
    for forward, loss_fn, rows_only in (
        (model, compile_probe.eager_loss(), True),
        (compiled_model, compiled_loss, False),
    ):
        model.zero_grad(set_to_none=True)
        parts = batch_loss(
            forward,
            src,
            tgt,
            smoothing=c.label_smoothing,
            pad_id=c.pad_id,
            real_rows_only=rows_only,
            loss_fn=loss_fn,
        )
        parts.loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        results.append((parts, grads))
    (eager, eager_grads), (compiled, compiled_grads) = results
    assert int(eager.tokens) == int(compiled.tokens)
    torch.testing.assert_close(compiled.loss, eager.loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(compiled.nll, eager.nll, rtol=1e-5, atol=1e-5)
    for name, grad in eager_grads.items():
        torch.testing.assert_close(
            compiled_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name
        )


def _graphs_compiled_over_shapes(model, monkeypatch, marked: bool) -> int:
    """Dynamo graphs made for the model and the loss over three batches of different rows and
    lengths (Dynamo's eager backend: tracing and guards without Inductor's minutes of codegen)."""
    from torch._dynamo.utils import counters

    from annotated_transformer.training import teacher_forcing

    if not marked:
        monkeypatch.setattr(teacher_forcing, "_batch_shape_varies", lambda *t, **k: None)
    torch._dynamo.reset()
    counters.clear()
    forward, loss_fn = compile_probe.compiled_step_parts(model, backend="eager")
    c = model.config
    for rows, length in ((6, 3), (9, 5), (4, 6)):
        src, tgt = collate_pairs(
            list(copy_pairs(rows, length)), c.pad_id, c.bos_id, c.eos_id
        )
        parts = teacher_forcing.batch_loss(
            forward,
            src,
            tgt,
            smoothing=c.label_smoothing,
            pad_id=c.pad_id,
            real_rows_only=False,
            loss_fn=loss_fn,
        )
        parts.loss.backward()
    graphs = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    return graphs


def test_a_compiled_step_makes_one_graph_for_every_batch_shape(monkeypatch):
    # batch_loss marks rows and length as varying, so the model and the loss each compile once;
    # unmarked, Dynamo compiles each twice (a static graph, then a dynamic one at the next shape),
    # which on an H100 cost the gpu recipe about 50 s per graph (scripts/gpu/compile_shapes.py).
    torch.manual_seed(0)
    model = Transformer(tiny_profile(dropout=0.0).model_config(), VOCAB, VOCAB).train()
    assert _graphs_compiled_over_shapes(model, monkeypatch, marked=True) == 2
    assert _graphs_compiled_over_shapes(model, monkeypatch, marked=False) == 4


@pytest.mark.parametrize(
    "entry, says",
    [
        (
            {"seconds": {**FAST, "compiled": "0.5"}},
            "MeasuredCompile.seconds must be a dict[str, float]",
        ),
        (
            {"seconds": {**FAST, "compiled": 0.0}},
            "seconds['compiled'] must be a number > 0",
        ),
        ({"seconds": {"eager": 1.0}}, "seconds['compiled'] must be"),
        ({"eager": 1.0}, "unexpected keyword argument"),
        ([1.0, 0.5], "argument after ** must be a mapping"),
    ],
)
def test_a_cached_measurement_of_the_wrong_type_is_measured_again(
    cache, caplog, entry, says
):
    """A cached "compiled": "0.5" used to reach a division as a string (TypeError mid-run)."""
    key = C.measurement_key(
        {
            "measured": "compile",
            "capability": str(torch.backends.cpu.get_cpu_capability()),
            "d_model": 8,
        }
    )
    cache.mkdir()
    (cache / C.CACHE_NAME).write_text(json.dumps({key: entry}))
    choice = C.choose_compile(
        "auto",
        "cpu",
        probe=lambda: dict(FAST),
        shape={"d_model": 8},
        run_seconds=fifteen_minutes,
    )
    assert choice.compile is True and "measured now" in choice.reason
    assert says in caplog.text
    assert json.loads((cache / C.CACHE_NAME).read_text())[key] == {"seconds": FAST}


def test_a_probe_answering_the_wrong_type_is_refused_in_one_line(cache):
    with pytest.raises(ValueError) as caught:
        C.choose_compile(
            "auto", "cpu", probe=lambda: {**FAST, "eager": "1.0"}, shape={"d_model": 8}
        )
    message = str(caught.value)
    assert message.startswith("MeasuredCompile.seconds must be a dict[str, float], got ")
    assert "\n" not in message and not (cache / C.CACHE_NAME).exists()
    with pytest.raises(ValueError, match="CompileChoice.compile must be true or false"):
        C.CompileChoice("auto", "as asked")
