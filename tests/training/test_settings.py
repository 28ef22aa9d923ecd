"""What a run may be asked: every number within its bounds, at least one limit, known names; the
record survives JSON, and a resume names each setting that would make it another run."""

import json

import pytest

from annotated_transformer.training.settings import (
    BOUNDS,
    FIXED_ON_RESUME,
    TrainSettings,
)

# A value each FIXED_ON_RESUME setting could take that differs from TrainSettings(max_steps=1)'s.
OTHER_VALUES = {
    "batch_tokens": 2048,
    "accumulation": 4,
    "peak_lr": 1e-3,
    "warmup_steps": 8000,
    "adam_betas": (0.9, 0.999),
    "adam_eps": 1e-8,
    "clip_norm": 1.0,
    "dropout_from_epoch": 4,
    "seed": 7,
    "length_buckets": True,
}


def test_bounds_and_fixed_settings_name_real_fields():
    assert set(BOUNDS) <= set(TrainSettings.fields())
    assert set(FIXED_ON_RESUME) <= set(TrainSettings.fields())
    assert set(OTHER_VALUES) == set(FIXED_ON_RESUME)


@pytest.mark.parametrize(
    "name,value",
    [
        ("batch_tokens", 0),
        ("batch_tokens", 1.5),
        ("accumulation", 0),
        ("peak_lr", 0.0),
        ("peak_lr", float("nan")),
        ("warmup_steps", 0),
        ("adam_eps", 0.0),
        ("clip_norm", -1.0),
        ("max_steps", 0),
        ("max_steps", True),
        ("max_steps", 2**31),
        ("max_epochs", 0),
        ("time_budget_minutes", float("inf")),
        ("time_budget_minutes", -1.0),
        ("seed", -1),
        ("log_every", 0),
        ("eval_every", -1),
        ("eval_batch_tokens", 0),
        ("save_every_steps", 0),
        ("save_every_minutes", 0.0),
        ("keep_snapshots", 0),
    ],
)
def test_a_number_out_of_bounds_is_refused_naming_the_setting(name, value):
    changes = {"max_steps": 1, name: value}
    with pytest.raises(ValueError, match=rf"^{name} must be "):
        TrainSettings(**changes)


@pytest.mark.parametrize(
    "name,value",
    [
        ("clip_norm", None),
        ("peak_lr", None),
        ("save_every_steps", None),
        ("eval_every", 0),
        ("seed", 0),
        ("time_budget_minutes", 0.5),
    ],
)
def test_the_edges_of_the_bounds_are_allowed(name, value):
    assert getattr(TrainSettings(**{"max_steps": 1, name: value}), name) == value


@pytest.mark.parametrize(
    "betas,message",
    [
        ((0.9,), "adam_betas must be two numbers"),
        ((0.9, 0.98, 0.999), "adam_betas must be two numbers"),
        ((0.9, 1.0), "adam_betas must be"),
        ((-0.1, 0.98), "adam_betas must be"),
    ],
)
def test_adam_betas_are_two_probabilities_below_one(betas, message):
    with pytest.raises(ValueError, match=message):
        TrainSettings(max_steps=1, adam_betas=betas)


def test_a_run_without_any_limit_is_refused():
    with pytest.raises(ValueError, match="no limit"):
        TrainSettings()
    for limit in ("max_steps", "max_epochs", "time_budget_minutes"):
        assert getattr(TrainSettings(**{limit: 1}), limit) == 1


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("budget_clock", "cpu-time", "budget_clock must be 'wall' or 'cpu'"),
        ("precision", "fp8", "precision must be one of auto, bf16, fp16, fp32"),
        ("compile", "yes", "compile must be true, false or 'auto'"),
    ],
)
def test_an_unknown_name_is_refused_with_the_known_ones(name, value, message):
    with pytest.raises(ValueError, match=message):
        TrainSettings(**{"max_steps": 1, name: value})


def test_replace_checks_the_new_values_too():
    settings = TrainSettings(max_steps=5)
    assert settings.replace(max_steps=9).max_steps == 9 and settings.max_steps == 5
    with pytest.raises(ValueError, match="max_steps must be"):
        settings.replace(max_steps=0)


def test_the_record_round_trips_through_json():
    settings = TrainSettings(
        name="x",
        max_steps=3,
        max_epochs=2,
        peak_lr=2e-3,
        adam_betas=(0.8, 0.9),
        clip_norm=1.0,
        budget_clock="cpu",
        precision="bf16",
        compile="auto",
        save_every_minutes=10.0,
    )
    record = json.loads(json.dumps(settings.to_dict()))
    assert isinstance(record["adam_betas"], list)  # what JSON makes of a tuple
    assert TrainSettings.from_dict(record) == settings
    assert set(record) == set(TrainSettings.fields())


def test_from_dict_ignores_fields_it_does_not_know():
    record = {**TrainSettings(max_steps=2).to_dict(), "a_field_that_is_gone": 1}
    assert TrainSettings.from_dict(record) == TrainSettings(max_steps=2)


def test_the_same_settings_have_no_resume_conflicts():
    settings = TrainSettings(max_steps=1)
    assert settings.resume_conflicts(settings.to_dict()) == []
    # JSON's list of betas is the same betas
    assert settings.resume_conflicts(json.loads(json.dumps(settings.to_dict()))) == []


@pytest.mark.parametrize("name", FIXED_ON_RESUME)
def test_each_fixed_setting_that_changed_is_a_conflict(name):
    saved = TrainSettings(max_steps=1)
    mine = saved.replace(**{name: OTHER_VALUES[name]})
    old = tuple(getattr(saved, name)) if name == "adam_betas" else getattr(saved, name)
    assert mine.resume_conflicts(saved.to_dict()) == [(name, old, OTHER_VALUES[name])]


def test_limits_rhythm_and_engineering_may_change_on_resume():
    saved = TrainSettings(max_steps=1)
    mine = saved.replace(
        name="other",
        max_steps=100,
        max_epochs=3,
        time_budget_minutes=5.0,
        budget_clock="cpu",
        precision="fp16",
        compile=True,
        log_every=7,
        eval_every=0,
        eval_batch_tokens=10,
        save_every_steps=3,
        keep_snapshots=2,
    )
    assert mine.resume_conflicts(saved.to_dict()) == []


def test_settings_a_checkpoint_lacks_are_not_compared():
    saved = TrainSettings(max_steps=1).to_dict()
    del saved["clip_norm"], saved["seed"]
    mine = TrainSettings(max_steps=1, clip_norm=1.0, seed=9, accumulation=2)
    assert mine.resume_conflicts(saved) == [("accumulation", 1, 2)]


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("compile_mode", "fast", "compile_mode must be one of default, reduce-overhead"),
        ("compile_mode", None, "compile_mode must be one of"),
        ("length_buckets", "yes", "length_buckets must be true or false, got 'yes'"),
        ("length_buckets", 1, "length_buckets must be true or false, got 1"),
    ],
)
def test_the_compile_mode_and_the_buckets_refuse_what_they_cannot_mean(
    name, value, message
):
    with pytest.raises(ValueError, match=f"^{message}"):
        TrainSettings(max_steps=1, **{name: value})


def test_a_compile_mode_without_compiling_is_refused_naming_both_flags():
    with pytest.raises(
        ValueError, match=r"--compile-mode\) reduce-overhead.*add --compile"
    ):
        TrainSettings(max_steps=1, compile_mode="reduce-overhead")
    for compile in (True, "auto"):
        assert TrainSettings(max_steps=1, compile=compile, compile_mode="max-autotune")


def test_the_compile_mode_may_change_on_resume_and_the_buckets_may_not():
    saved = TrainSettings(max_steps=1).to_dict()
    graphs = TrainSettings(max_steps=1, compile=True, compile_mode="reduce-overhead")
    assert graphs.resume_conflicts(saved) == []
    buckets = TrainSettings(max_steps=1, length_buckets=True)
    assert buckets.resume_conflicts(saved) == [("length_buckets", False, True)]
    # a checkpoint written before the setting existed trained without buckets
    older = {k: v for k, v in saved.items() if k != "length_buckets"}
    assert buckets.resume_conflicts(older) == [("length_buckets", False, True)]
    assert TrainSettings(max_steps=1).resume_conflicts(older) == []
