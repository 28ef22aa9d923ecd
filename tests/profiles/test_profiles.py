"""A profile is one record composed of its parts, each field declared once, read and written
flat as every checkpoint and results file holds it; records of older versions still load."""

import dataclasses
import json

import pytest

from annotated_transformer.profiles import (
    FIELD_PART,
    FLAT_ORDER,
    PROFILES,
    DataSettings,
    EvaluationSettings,
    ModelChoice,
    Profile,
    flat_fields,
    get_profile,
    profile_from_record,
)
from annotated_transformer.profiles.profile import PARTS
from annotated_transformer.training.settings import TrainSettings


def test_every_profile_builds_a_valid_model_config():
    for name in PROFILES:
        assert get_profile(name).model_config().max_len >= 256
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("laptop")
    with pytest.raises(ValueError, match="unknown profile fields"):
        get_profile("cpu", max_stpes=3)


def test_profile_overrides_apply_only_when_given():
    assert get_profile("cpu", max_steps=7, beam_size=None).max_steps == 7
    assert get_profile("cpu", beam_size=None).beam_size == PROFILES["cpu"].beam_size


def test_profile_round_trips_through_its_dict():
    for profile in PROFILES.values():
        assert Profile.from_dict(profile.to_dict()) == profile


def test_a_profile_recorded_by_an_older_version_still_loads():
    """Checkpoints keep the profile they trained under; a book field removed or added since must
    not make an older checkpoint unreadable (evaluate read such a checkpoint and failed)."""
    record = PROFILES["cpu"].to_dict()
    record["book"]["a_field_that_is_gone"] = 300
    assert profile_from_record(record) == PROFILES["cpu"]
    required = [
        f.name
        for f in dataclasses.fields(type(PROFILES["cpu"].book))
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    del record["book"][required[0]]  # a field added since the record was written
    assert profile_from_record(record).book == PROFILES["cpu"].book
    with pytest.raises(TypeError):
        Profile.from_dict(
            record
        )  # without today's catalogue, nothing to take the book from
    record["name"] = "no-such-profile"
    with pytest.raises(TypeError):
        profile_from_record(record)


def test_a_profile_recorded_before_table3_was_one_record_keeps_its_values():
    """A results file or checkpoint written before `Table3Scale` holds its fields as the book's
    `table3_<field>` keys, and (through JSON) its chapter sizes as lists where a record has tuples."""
    for profile in PROFILES.values():
        record = json.loads(json.dumps(profile.to_dict()))
        table3 = record["book"].pop("table3")
        record["book"].update({f"table3_{k}": v for k, v in table3.items()})
        record["book"]["table3_steps"] = 600  # a field gone since
        assert Profile.from_dict(record) == profile


def test_variants_keep_their_own_results_folder():
    assert get_profile("gpu-iwslt14").results_folder == "gpu-iwslt14"
    assert get_profile("paper-big").results_folder == "paper-big"


def test_every_field_is_declared_in_exactly_one_part():
    declared = [
        f.name
        for cls in PARTS.values()
        for f in dataclasses.fields(cls)
        if f.name != "name"
    ]
    assert len(declared) == len(set(declared)) == len(FIELD_PART)
    own = {"name", "description", "book", "threads"}
    assert set(FLAT_ORDER) == set(FIELD_PART) | own and not set(FIELD_PART) & own


def test_the_flat_record_keeps_its_order_and_its_fields():
    for profile in PROFILES.values():
        assert list(profile.to_dict()) == list(FLAT_ORDER)
    assert list(flat_fields()) == list(FLAT_ORDER)


def test_a_flat_field_reads_from_its_part_and_replace_changes_only_that_part():
    cpu = PROFILES["cpu"]
    assert cpu.max_steps is cpu.train.max_steps and cpu.vocab_size == cpu.data.vocab_size
    changed = cpu.replace(max_steps=100, beam_size=2, corpus="wmt14")
    assert (changed.train.max_steps, changed.evaluation.beam_size) == (100, 2)
    assert changed.data.corpus == "wmt14" and changed.model == cpu.model
    assert changed.book is cpu.book
    with pytest.raises(AttributeError, match="no field 'max_stpes'"):
        cpu.max_stpes  # noqa: B018


def test_the_trainer_reads_the_train_part_under_the_profiles_name():
    for name, profile in PROFILES.items():
        assert isinstance(profile.train_settings(), TrainSettings)
        assert profile.train_settings().name == name
    assert get_profile("cpu").replace(name="other").train_settings().name == "other"


def test_each_part_checks_its_own_fields():
    with pytest.raises(ValueError, match="vocab_size must be"):
        DataSettings(vocab_size=2)
    with pytest.raises(ValueError, match="unknown corpus|no corpus|corpus"):
        DataSettings(corpus="bogus")
    with pytest.raises(ValueError, match="beam_size must be"):
        EvaluationSettings(beam_size=0)
    with pytest.raises(ValueError, match="preset|no preset"):
        ModelChoice(preset="bogus").config(warmup_steps=10)


def test_averaging_more_snapshots_than_are_kept_is_refused_across_parts():
    with pytest.raises(ValueError, match="average_last .* is more than keep_snapshots"):
        get_profile("smoke", average_last=5)


def test_a_profile_from_flat_fields_refuses_an_unknown_one():
    with pytest.raises(TypeError, match="unknown profile fields"):
        Profile.flat(
            **{**PROFILES["smoke"].to_dict(), "book": PROFILES["smoke"].book, "x": 1}
        )


def test_every_committed_record_holds_a_profile_that_loads():
    """Results files written by the flat Profile of earlier versions read back as profiles."""
    from pathlib import Path

    loaded = 0
    for path in sorted(Path(__file__).resolve().parents[2].glob("results/*/*.json")):
        record = json.loads(path.read_text())
        stored = (
            (record.get("config") or {}).get("profile")
            if isinstance(record, dict)
            else None
        )
        if isinstance(stored, dict) and "book" in stored:
            profile_from_record(stored)
            loaded += 1
    assert loaded > 0
