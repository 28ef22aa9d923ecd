"""The training loop does what section 5 says, and a stopped run continues exactly where it stopped."""

import json
import math
import os
import signal

import pytest
import torch

from annotated_transformer.training.schedule import noam_lr
from tests.support.training import (  # noqa: F401
    VOCAB,
    FakeTokenizer,
    copy_pairs,
    make_trainer,
    tiny_profile,
)


# ------------------------------------------------------------------------------------------ the loop
def test_a_run_learns_and_logs_metrics(tmp_path):
    trainer = make_trainer(
        tiny_profile(max_steps=30, peak_lr=5e-3, eval_every=10, dropout=0.0), tmp_path
    )
    before = trainer.validate()["loss"]
    result = trainer.train()
    assert result.stopped_by == "max_steps" and result.progress.step == 30
    assert result.valid["loss"] < before - 0.3
    records = [
        json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    kinds = {r["kind"] for r in records}
    assert {"start", "train", "valid", "stop"} <= kinds
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(3, 31, 3))  # every log_every steps
    # The schedule: never above the peak rate, falling once the 5 warm-up steps are past; the
    # target tokens count up.
    lrs = [r["lr"] for r in train]
    assert max(lrs) <= 5e-3 * (1 + 1e-9) and lrs[1:] == sorted(lrs[1:], reverse=True)
    assert lrs[0] < lrs[1]  # step 3 is still warming up
    tokens = [r["target_tokens"] for r in train]
    assert tokens == sorted(set(tokens))
    assert (tmp_path / "last.pt").is_file()
    assert len(list((tmp_path / "checkpoints").glob("step_*.pt"))) == 3  # keep_snapshots


def test_interrupted_and_resumed_run_ends_bit_identical(tmp_path):
    # Dropout is on, so the RNG states must be restored too; accumulation 2 and an epoch boundary
    # (about 8 steps per epoch here) are crossed after the interruption.
    profile = tiny_profile()
    uninterrupted = make_trainer(profile, tmp_path / "straight")
    uninterrupted.train()

    def interrupt_at_step_5(trainer):
        if trainer.progress.step == 5:
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does

    first = make_trainer(profile, tmp_path / "stopped", on_step=interrupt_at_step_5)
    result = first.train()
    assert result.stopped_by == "interrupted" and result.progress.step == 5

    torch.manual_seed(1234)  # whatever state the new process is in, the checkpoint's wins
    second = make_trainer(profile, tmp_path / "stopped", model_seed=99)
    second.resume_from(tmp_path / "stopped" / "last.pt")
    result = second.train()
    assert result.progress.step == profile.max_steps and result.progress.epoch >= 1
    for (name, a), (_, b) in zip(
        uninterrupted.model.state_dict().items(), second.model.state_dict().items()
    ):
        assert torch.equal(a, b), f"{name} differs after resume"


def _assert_stopped_at_5_and_resumed_ends_as(straight, profile, folder):
    """`profile` stopped after step 5 (as by Ctrl-C) in `folder` and resumed ends with the very
    weights of the `straight` run."""

    def interrupt_at_step_5(trainer):
        if trainer.progress.step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    make_trainer(profile, folder, on_step=interrupt_at_step_5).train()
    resumed = make_trainer(profile, folder, model_seed=99)
    resumed.resume_from(folder / "last.pt")
    resumed.train()
    for (name, a), (_, b) in zip(
        straight.model.state_dict().items(), resumed.model.state_dict().items()
    ):
        assert torch.equal(a, b), f"{name} differs after resume"


def test_dropout_from_an_epoch_is_off_before_it_on_after_and_resumes_bit_identical(
    tmp_path,
):
    profile = tiny_profile(dropout_from_epoch=1)  # about 8 steps an epoch: crossed at 12
    rates = []

    def record_rates(trainer):
        modules = [m for m in trainer.model.modules() if isinstance(m, torch.nn.Dropout)]
        rates.append((trainer.progress.epoch, {m.p for m in modules}))

    straight = make_trainer(profile, tmp_path / "straight", on_step=record_rates)
    straight.train()
    assert {epoch for epoch, _ in rates} == {0, 1}
    assert all(p == ({0.0} if epoch == 0 else {0.1}) for epoch, p in rates)

    _assert_stopped_at_5_and_resumed_ends_as(straight, profile, tmp_path / "stopped")
    # and the dropout it switched on is what the run trains with: not the run without it
    never = make_trainer(tiny_profile(dropout_from_epoch=2), tmp_path / "never")
    never.train()
    assert not all(
        torch.equal(a, b)
        for a, b in zip(straight.model.parameters(), never.model.parameters())
    )


def test_a_bucketed_run_steps_on_bucketed_shapes_learns_and_resumes_bit_identical(
    tmp_path,
):
    # --length-buckets: every micro-batch is collated to a bucket's widths and the budget's rows
    profile = tiny_profile(length_buckets=True, max_steps=12, peak_lr=5e-3)
    seen = []

    def record_shapes(trainer):
        collate = trainer._micro_batch

        def recorded(indices):
            src, tgt = collate(indices)
            seen.append((src.shape, tgt.shape))
            return src, tgt

        trainer._micro_batch = recorded
        return trainer

    straight = record_shapes(make_trainer(profile, tmp_path / "straight"))
    before = straight.validate()["loss"]
    result = straight.train()
    sizes = straight.batcher.buckets.sizes
    assert all(s[1] in sizes and t[1] in sizes and s[0] == t[0] for s, t in seen)
    assert len(set(seen)) < len(seen) and result.valid["loss"] < before - 0.3

    _assert_stopped_at_5_and_resumed_ends_as(straight, profile, tmp_path / "stopped")


def test_the_compile_mode_reaches_torch_compile_for_the_model_and_the_loss(
    tmp_path, monkeypatch
):
    from annotated_transformer.training import compile_probe

    seen = []
    monkeypatch.setattr(
        compile_probe.torch, "compile", lambda fn, **options: seen.append(options) or fn
    )
    for mode, expected in (
        ("default", {}),
        ("reduce-overhead", {"mode": "reduce-overhead"}),
    ):
        seen.clear()
        make_trainer(tiny_profile(compile=True, compile_mode=mode), tmp_path / mode)
        assert seen == [expected, expected]  # the model and the loss


def eager_scaler() -> torch.amp.GradScaler:
    """A scaler that grows its factor every step, so gradients overflow every other step or so
    and its state (factor, growth count) changes along the run, as over a long real one."""
    return torch.amp.GradScaler("cpu", growth_interval=1)


def test_fp16_trains_through_a_gradient_scaler_that_skips_overflowed_steps(tmp_path):
    trainer = make_trainer(
        tiny_profile(
            precision="fp16", max_steps=30, peak_lr=5e-3, dropout=0.0, clip_norm=1.0
        ),
        tmp_path,
    )
    assert (
        trainer.scaler.is_enabled() and trainer.execution.precision_reason == "as asked"
    )
    trainer.scaler = eager_scaler()
    factors = []
    trainer.on_step = lambda t: factors.append(t.scaler.get_scale())
    before = trainer.validate()["loss"]
    result = trainer.train()
    # Overflowed steps were skipped (the factor fell) without stopping the run: the loss the
    # divergence check reads is the unscaled one, finite; the schedule moved on every step.
    assert any(b < a for a, b in zip(factors, factors[1:]))
    assert result.progress.step == 30 and trainer.scheduler.last_epoch == 30
    assert math.isfinite(result.valid["loss"]) and result.valid["loss"] < before - 0.3
    assert torch.load(tmp_path / "last.pt", weights_only=True)["scaler"]["scale"] > 1


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_bf16_and_fp32_steps_take_no_scaler(tmp_path, precision):
    # A disabled GradScaler hands every call straight through (scale returns its input, step
    # calls optimizer.step), so these steps are the ones before fp16 existed.
    trainer = make_trainer(tiny_profile(precision=precision, max_steps=1), tmp_path)
    assert not trainer.scaler.is_enabled()
    loss = torch.ones(())
    assert trainer.scaler.scale(loss) is loss
    trainer.train()
    assert "scaler" not in torch.load(tmp_path / "last.pt", weights_only=True)


def test_an_interrupted_fp16_run_resumes_bit_identical_scaler_included(tmp_path):
    profile = tiny_profile(precision="fp16")
    uninterrupted = make_trainer(profile, tmp_path / "straight")
    uninterrupted.scaler = eager_scaler()
    uninterrupted.train()

    def interrupt_at_step_5(trainer):
        if trainer.progress.step == 5:
            os.kill(os.getpid(), signal.SIGINT)

    first = make_trainer(profile, tmp_path / "stopped", on_step=interrupt_at_step_5)
    first.scaler = eager_scaler()
    assert first.train().progress.step == 5
    assert (
        first.scaler.get_scale() != 2.0**16
    )  # the factor moved: resuming must restore it

    second = make_trainer(profile, tmp_path / "stopped", model_seed=99)
    second.resume_from(
        tmp_path / "stopped" / "last.pt"
    )  # a default scaler takes the saved one
    assert second.scaler.state_dict() == first.scaler.state_dict()
    second.train()
    for (name, a), (_, b) in zip(
        uninterrupted.model.state_dict().items(), second.model.state_dict().items()
    ):
        assert torch.equal(a, b), f"{name} differs after resume"


def test_a_checkpoint_without_scaler_state_resumes_in_fp16(tmp_path):
    # An older last.pt, or one trained in fp32 (precision may change on resume), has no scaler
    # state: the fp16 run starts its scaler afresh.
    make_trainer(tiny_profile(max_steps=2), tmp_path).train()
    resumed = make_trainer(tiny_profile(precision="fp16", max_steps=4), tmp_path)
    resumed.resume_from(tmp_path / "last.pt")
    assert resumed.scaler.get_scale() == 2.0**16
    assert resumed.train().progress.step == 4


def test_time_budget_stops_the_run(tmp_path):
    trainer = make_trainer(
        tiny_profile(max_steps=None, time_budget_minutes=1e-6), tmp_path
    )
    result = trainer.train()
    assert result.stopped_by == "time_budget" and result.progress.step == 1


def test_resume_refuses_a_weights_only_checkpoint(tmp_path):
    trainer = make_trainer(tiny_profile(max_steps=4), tmp_path)
    trainer.train()
    with pytest.raises(ValueError, match="weights only"):
        make_trainer(tiny_profile(), tmp_path / "other").resume_from(
            tmp_path / "checkpoints" / "step_00000004.pt"
        )


def test_the_logged_rate_is_the_one_the_logged_step_used(tmp_path):
    trainer = make_trainer(tiny_profile(max_steps=7, log_every=1, eval_every=0), tmp_path)
    schedule = trainer.scheduler
    trainer.train()
    records = [
        json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(1, 8))
    for record in train:  # step k's update used the schedule's rate at k
        expected = noam_lr(
            record["step"], schedule.d_model, schedule.warmup_steps, schedule.factor
        )
        assert record["lr"] == pytest.approx(expected, rel=1e-12)


def test_a_run_with_the_gpus_loss_strategy_follows_the_cpus_run(tmp_path, monkeypatch):
    """The trainer with its loss walking the logits as on a GPU (softmax kernels), here on the CPU:
    it learns, and step for step it logs the losses of the CPU's row blocks up to float rounding."""
    from annotated_transformer.training import loss

    profile = tiny_profile(max_steps=12, peak_lr=5e-3, dropout=0.0, log_every=1)
    logged, chosen = {}, []

    def forced(strategy):
        def default_strategy(device):
            chosen.append(strategy)
            return strategy

        return default_strategy

    for strategy in loss.STRATEGIES:
        monkeypatch.setattr(loss, "default_strategy", forced(strategy))
        trainer = make_trainer(profile, tmp_path / strategy)
        before = trainer.validate()["loss"]
        assert trainer.train().valid["loss"] < before - 0.3
        records = (tmp_path / strategy / "metrics.jsonl").read_text().splitlines()
        logged[strategy] = [
            r["loss"] for r in map(json.loads, records) if r["kind"] == "train"
        ]
    assert set(chosen) == set(loss.STRATEGIES)  # the trainer's loss asked, in both runs
    rows, kernels = logged["row_blocks"], logged["softmax_kernels"]
    assert len(rows) == 12
    assert kernels == pytest.approx(rows, rel=1e-5)
