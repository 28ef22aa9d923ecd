"""A resume checkpoint holds everything a run needs to go on as if it never stopped, and refuses,
by name, a continuation that would be another run."""

import dataclasses
import random
import re

import numpy as np
import pytest
import torch

from annotated_transformer import Transformer
from annotated_transformer.data.batching import collate_pairs
from annotated_transformer.training.checkpoint import (
    atomic_torch_save,
    load_checkpoint,
    snapshot_of,
)
from annotated_transformer.training.resume_state import (
    TrainingProgress,
    check_resumable,
    data_digest,
    restore_resume_state,
    resume_state,
)
from annotated_transformer.training.schedule import (
    NoamSchedule,
    build_optimizer,
    schedule_factor,
)
from annotated_transformer.training.settings import FIXED_ON_RESUME
from annotated_transformer.training.teacher_forcing import batch_loss
from tests.support.training import VOCAB, FakeTokenizer, copy_pairs, tiny_profile

PROFILE = tiny_profile()  # dropout 0.1: a step draws random numbers
CONFIG, SETTINGS = PROFILE.model_config(), PROFILE.train_settings()
PAIRS = copy_pairs(8, 0)
MICRO_BATCHES = 2
DATA = {"valid": "digest-of-the-validation-pairs"}
# A value each FIXED_ON_RESUME setting could take that differs from SETTINGS'.
OTHER_VALUES = {
    "batch_tokens": 97,
    "accumulation": 3,
    "peak_lr": 1e-3,
    "warmup_steps": 6,
    "adam_betas": (0.9, 0.999),
    "adam_eps": 1e-8,
    "clip_norm": 1.0,
    "dropout_from_epoch": 4,
    "seed": 4,
    "length_buckets": True,
}


class OtherTokenizer:
    def to_bytes(self) -> bytes:
        return b"another vocabulary"


def new_run(model_seed: int):
    torch.manual_seed(model_seed)
    model = Transformer(CONFIG, VOCAB, VOCAB)
    optimizer = build_optimizer(model, SETTINGS, torch.device("cpu"))
    factor = schedule_factor(SETTINGS, CONFIG.d_model)
    scheduler = NoamSchedule(optimizer, CONFIG.d_model, SETTINGS.warmup_steps, factor)
    return model, optimizer, scheduler


def train_step(model, optimizer, scheduler) -> float:
    src, tgt = collate_pairs(
        [PAIRS[i] for i in range(len(PAIRS))], CONFIG.pad_id, CONFIG.bos_id, CONFIG.eos_id
    )
    model.train()
    parts = batch_loss(model, src, tgt, smoothing=0.1, pad_id=CONFIG.pad_id)
    parts.loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return parts.loss.item()


def saved_state(progress=None, scaler=None, data=DATA) -> dict:
    model, optimizer, scheduler = new_run(0)
    snapshot = snapshot_of(model, FakeTokenizer(), step=0, settings=SETTINGS.to_dict())
    return resume_state(
        snapshot,
        optimizer,
        scheduler,
        progress or TrainingProgress(),
        MICRO_BATCHES,
        scaler,
        data=data,
    )


def check(
    state, *, config=CONFIG, settings=SETTINGS, tokenizer=None, batches=2, data=DATA
):
    check_resumable(
        state,
        "last.pt",
        config=config,
        settings=settings,
        tokenizer=FakeTokenizer() if tokenizer is None else tokenizer,
        micro_batches_per_step=batches,
        data=data,
    )


# ------------------------------------------------------------------------------------------ round trip
def test_a_resumed_step_equals_the_uninterrupted_one(tmp_path):
    model, optimizer, scheduler = new_run(0)
    torch.manual_seed(5)
    for _ in range(2):
        train_step(model, optimizer, scheduler)
    progress = TrainingProgress(step=2, epoch=1, batch_cursor=1)
    snapshot = snapshot_of(model, FakeTokenizer(), step=2, settings=SETTINGS.to_dict())
    state = resume_state(snapshot, optimizer, scheduler, progress, MICRO_BATCHES)
    atomic_torch_save(state, tmp_path / "last.pt")
    straight_loss = train_step(model, optimizer, scheduler)

    resumed, resumed_optimizer, resumed_scheduler = new_run(99)
    torch.manual_seed(1234)  # the checkpoint's RNG state wins over whatever this one is
    restored = restore_resume_state(
        load_checkpoint(tmp_path / "last.pt"),
        resumed,
        resumed_optimizer,
        resumed_scheduler,
    )
    assert restored == progress
    assert train_step(resumed, resumed_optimizer, resumed_scheduler) == straight_loss
    for (name, a), (_, b) in zip(
        model.state_dict().items(), resumed.state_dict().items()
    ):
        assert torch.equal(a, b), f"{name} differs after resume"
    assert resumed_scheduler.last_epoch == scheduler.last_epoch == 3


def test_progress_comes_back_field_by_field():
    progress = TrainingProgress(
        step=7,
        epoch=2,
        batch_cursor=3,
        target_tokens=1234,
        train_time_s=56.5,
        train_cpu_s=40.25,
        last_snapshot_time_s=50.0,
        last_valid={"loss": 2.5, "ppl": 9.0, "step": 6},
    )
    state = saved_state(progress)
    assert restore_resume_state(state, *new_run(1)) == progress


def test_every_random_generator_continues_where_it_was():
    state = saved_state()
    draws = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    restore_resume_state(state, *new_run(2))
    assert torch.equal(torch.rand(3), draws[0])
    assert (random.random(), np.random.rand()) == draws[1:]


def test_an_fp16_scaler_factor_is_kept_and_restored():
    state = saved_state(scaler=torch.amp.GradScaler("cpu", init_scale=8.0))
    assert state["scaler"]["scale"] == 8.0
    scaler = torch.amp.GradScaler("cpu")
    restore_resume_state(state, *new_run(1), scaler)
    assert scaler.get_scale() == 8.0


def test_a_disabled_scaler_is_not_saved_and_an_enabled_one_without_state_starts_afresh():
    state = saved_state(scaler=torch.amp.GradScaler("cpu", enabled=False))
    assert "scaler" not in state
    scaler = torch.amp.GradScaler("cpu")
    restore_resume_state(state, *new_run(1), scaler)
    assert scaler.get_scale() == 2.0**16


def test_the_state_is_a_resume_checkpoint_with_its_data_only_when_given():
    state = saved_state()
    assert state["kind"] == "resume" and state["micro_batches_per_step"] == MICRO_BATCHES
    assert state["data"] == DATA
    assert "data" not in saved_state(data=None)


# ------------------------------------------------------------------------------------------ refusals
def test_the_run_that_saved_it_may_resume():
    check(saved_state())


def test_changes_that_keep_the_run_the_same_are_allowed():
    changed = SETTINGS.replace(
        max_steps=1000, precision="bf16", log_every=1, keep_snapshots=9
    )
    check(saved_state(), settings=changed)


def test_a_snapshot_is_refused_as_weights_only():
    snapshot = snapshot_of(new_run(0)[0], FakeTokenizer(), step=0)
    with pytest.raises(ValueError, match="last.pt holds weights only"):
        check(snapshot)


def test_another_model_is_refused_naming_what_differs():
    other = dataclasses.replace(CONFIG, d_ff=128, n_layers=2)
    with pytest.raises(ValueError, match=r"another model \(d_ff, .*n_layers.* differ\)"):
        check(saved_state(), config=other)


def test_other_values_name_every_fixed_setting():
    assert set(OTHER_VALUES) == set(FIXED_ON_RESUME)


@pytest.mark.parametrize("name", FIXED_ON_RESUME)
def test_each_fixed_setting_that_changed_is_refused_by_name(name):
    old = getattr(SETTINGS, name)
    new = OTHER_VALUES[name]
    with pytest.raises(
        ValueError, match=re.escape(f"with {name} {old!r}, this run asks for {new!r}")
    ):
        check(saved_state(), settings=SETTINGS.replace(**{name: new}))


def test_every_fixed_setting_that_changed_is_named_at_once():
    changed = {name: OTHER_VALUES[name] for name in ("warmup_steps", "seed")}
    with pytest.raises(ValueError) as refused:
        check(saved_state(), settings=SETTINGS.replace(**changed))
    assert all(f"{name} " in str(refused.value) for name in changed)


@pytest.mark.parametrize("tokenizer", [OtherTokenizer(), False])
def test_another_tokenizer_is_refused(tokenizer):
    with pytest.raises(ValueError, match="another tokenizer"):
        # False stands for a run without a tokenizer, where the checkpoint has one
        check_resumable(
            saved_state(),
            "last.pt",
            config=CONFIG,
            settings=SETTINGS,
            tokenizer=tokenizer or None,
            micro_batches_per_step=MICRO_BATCHES,
            data=DATA,
        )


def test_other_validation_pairs_are_refused():
    with pytest.raises(ValueError, match="validated on other valid data"):
        check(saved_state(), data={"valid": "another digest"})


@pytest.mark.parametrize(
    "saved,mine",
    [(None, DATA), (DATA, None), ({"valid": None}, DATA), (DATA, {"test": "x"})],
)
def test_validation_data_that_cannot_say_is_not_compared(saved, mine):
    check(saved_state(data=saved), data=mine)


def test_another_number_of_micro_batches_per_step_is_refused_with_both_numbers():
    with pytest.raises(ValueError, match="took 2 micro-batches per step .* this run 4"):
        check(saved_state(), batches=4)
    older = saved_state()
    del older["micro_batches_per_step"]  # a checkpoint from before it was recorded
    check(older, batches=4)


# ------------------------------------------------------------------------------------------ digest
def test_the_data_digest_follows_the_pairs_and_their_order():
    assert data_digest(copy_pairs(5, 0)) == data_digest(copy_pairs(5, 0))
    assert data_digest(copy_pairs(5, 0)) != data_digest(copy_pairs(5, 1))
    reordered = copy_pairs(5, 0).subset([1, 0, 2, 3, 4])
    assert data_digest(reordered) != data_digest(copy_pairs(5, 0))
    assert data_digest(None) is None and data_digest([([1], [1])]) is None
