"""Typed settings, checked at the door: every settings record (a model's config, a profile and its
parts, the decoding and training settings, a cached measurement) checks each field against its
own annotation when it is made (`runtime.checks.check_types`). Any values either make a record
whose fields have their annotated types, or are refused in one line naming a field: never a
TypeError from inside the record or, later, from torch."""

from __future__ import annotations

import dataclasses
import types
import typing

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from annotated_transformer import Transformer
from annotated_transformer.chapters.model import sizes as model_sizes
from annotated_transformer.model.config import TransformerConfig
from annotated_transformer.model.decoding import DecodeSettings
from annotated_transformer.profiles import (
    FIELD_PART,
    FLAT_ORDER,
    PROFILES,
    DataSettings,
    EvaluationSettings,
    ModelChoice,
    Profile,
    get_profile,
)
from annotated_transformer.runtime.checks import check_types
from annotated_transformer.runtime.compiling import CompileChoice, MeasuredCompile
from annotated_transformer.runtime.precision import MeasuredPrecision, PrecisionChoice
from annotated_transformer.training.settings import TrainSettings

SMOKE = get_profile("smoke")


def _chapter_sizes(profile_name: str) -> list:
    """The sizes records of every chapter that has some, under `profile_name`."""
    import importlib

    folders = (
        "attention",
        "model",
        "why_self_attention",
        "training",
        "constituency_parsing",
    )
    return [
        importlib.import_module(f"annotated_transformer.chapters.{f}.sizes").of(
            profile_name
        )
        for f in folders
    ]


def _valid_records() -> dict[str, object]:
    """One valid record of each kind; the properties change some of its fields."""
    records = {
        "TransformerConfig": TransformerConfig(),
        "DecodeSettings": DecodeSettings(),
        "TrainSettings": TrainSettings(max_steps=1),
        "DataSettings": DataSettings(),
        "EvaluationSettings": EvaluationSettings(),
        "ModelChoice": ModelChoice(),
        "BookScales": SMOKE.book,
        "Table3Scale": SMOKE.book.table3,
        "MeasuredPrecision": MeasuredPrecision("bf16", {"fp32": 2.0, "bf16": 1.0}),
        "MeasuredCompile": MeasuredCompile(
            {"eager": 1.0, "compiled": 0.5, "compile": 10.0}
        ),
        "PrecisionChoice": PrecisionChoice("fp32", "as asked"),
        "CompileChoice": CompileChoice(False, "as asked"),
    }
    for sizes in _chapter_sizes("smoke"):
        records[type(sizes).__name__] = sizes
        for value in vars(sizes).values():  # the records chapter 03's sizes hold
            if dataclasses.is_dataclass(value):
                records[type(value).__name__] = value
    return records


RECORDS = _valid_records()

# Values of every kind a caller could pass: the right type and the wrong one, numbers at and past
# every end, the words the records' choices take, strings that look like numbers.
WORDS = st.sampled_from(
    ["fp32", "bf16", "fp16", "auto", "default", "reduce-overhead", "post", "pre"]
    + ["sinusoidal", "learned", "wall", "cpu", "multi30k", "en", "de", "train", "base"]
    + ["tiny", "1", "0.5", "", "nan", "None", "True"]
)
ANY_VALUE = st.one_of(
    st.integers(min_value=-3, max_value=100),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    WORDS,
    st.text(max_size=4),
    st.lists(st.floats(0, 1), max_size=3),
    st.tuples(st.floats(0, 0.999), st.floats(0, 0.999)),
    st.tuples(st.integers(1, 64), st.integers(1, 64)),
    st.dictionaries(
        st.sampled_from(["fp32", "bf16", "eager"]), st.floats(0, 2), max_size=3
    ),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _fields(record) -> dict:
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def _of_type(annotation) -> st.SearchStrategy:
    """Values of the annotated type (any value for a record or `Any`)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    simple = {
        int: st.integers(min_value=-5, max_value=2**40),
        float: st.floats(allow_nan=True, allow_infinity=True),
        bool: st.booleans(),
        str: st.one_of(WORDS, st.text(max_size=4)),
        type(None): st.none(),
    }
    if annotation in simple:
        return simple[annotation]
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_of_type(arg) for arg in args])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(_of_type(args[0]), max_size=4).map(tuple)
    if origin is tuple:
        return st.tuples(*map(_of_type, args))
    if origin is dict:
        return st.dictionaries(_of_type(args[0]), _of_type(args[1]), max_size=3)
    return ANY_VALUE


def _valid(record, name: str) -> st.SearchStrategy:
    """The field's value in this record, or in the other profiles' records of its kind."""
    values = [getattr(record, name)]
    for profile in PROFILES.values():
        for other in (
            profile.train,
            profile.data,
            profile.evaluation,
            profile.book.table3,
            *_chapter_sizes(profile.name),
        ):
            if type(other) is type(record):
                values.append(getattr(other, name))
    return st.sampled_from(values)


def _changes(record) -> st.SearchStrategy[dict]:
    """One to three fields of `record`, each given any value, a value of its annotated type or
    another valid record's value."""
    hints = typing.get_type_hints(type(record))
    values = {
        f.name: st.one_of(ANY_VALUE, _of_type(hints[f.name]), _valid(record, f.name))
        for f in dataclasses.fields(record)
    }
    names = st.lists(st.sampled_from(sorted(values)), min_size=1, max_size=3, unique=True)
    return names.flatmap(
        lambda chosen: st.fixed_dictionaries({name: values[name] for name in chosen})
    )


def _has_type(value, annotation) -> bool:
    """The annotated types, told apart without `check_types` (for its primitive fields)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_has_type(value, a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is int:
        return type(value) is int
    if annotation is float:
        return type(value) in (int, float)
    if annotation in (str, bool):
        return type(value) is annotation
    return True


def _refused_in_one_line(error: BaseException, names) -> None:
    event("refused")
    message = str(error)
    assert isinstance(error, ValueError), f"{type(error).__name__}: {message}"
    assert "\n" not in message, message
    assert any(name in message for name in names), message


CHANGES = {kind: _changes(record) for kind, record in RECORDS.items()}


@pytest.mark.parametrize("kind", sorted(RECORDS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_values_make_a_typed_record_or_are_refused_in_one_line_naming_a_field(
    kind, data
):
    record = RECORDS[kind]
    cls = type(record)
    changes = data.draw(CHANGES[kind], label="changes")
    try:
        made = cls(**{**_fields(record), **changes})
    except Exception as error:  # noqa: BLE001 (the property is what was raised)
        _refused_in_one_line(error, [f.name for f in dataclasses.fields(cls)])
        return
    event("made")
    hints = typing.get_type_hints(cls)
    for name, value in _fields(made).items():
        assert _has_type(value, hints[name]), (name, value)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_flat_profile_fields_make_a_profile_or_are_refused_in_one_line(data):
    names = data.draw(
        st.lists(st.sampled_from(FLAT_ORDER), min_size=1, max_size=3, unique=True)
    )
    current = {**SMOKE.to_dict(), "book": SMOKE.book}
    changes = {
        name: data.draw(
            st.one_of(ANY_VALUE, st.just(current[name]), _of_type(FLAT_TYPES[name])),
            label=name,
        )
        for name in names
    }
    values = {**SMOKE.to_dict(), "book": SMOKE.book, **changes}
    try:
        made = Profile.flat(**values)
    except Exception as error:  # noqa: BLE001
        _refused_in_one_line(error, FLAT_ORDER)
        return
    event("made")
    for part in ("data", "model", "train", "evaluation"):
        check_types(getattr(made, part))


FLAT_TYPES = {
    **{
        name: typing.get_type_hints(type(getattr(SMOKE, part)))[name]
        for name, part in FIELD_PART.items()
    },
    **{
        name: typing.get_type_hints(Profile)[name]
        for name in ("name", "description", "book", "threads")
    },
}
SMALL = st.one_of(st.integers(min_value=1, max_value=4), ANY_VALUE)


@settings(max_examples=60, deadline=None)
@given(
    changes=st.fixed_dictionaries(
        {},
        optional={
            "n_layers": SMALL,
            "n_heads": SMALL,
            "d_k": st.one_of(st.none(), SMALL),
            "d_v": st.one_of(st.none(), SMALL),
            "dropout": ANY_VALUE,
            "label_smoothing": ANY_VALUE,
            "positional": ANY_VALUE,
            "norm_position": ANY_VALUE,
            "pad_id": ANY_VALUE,
        },
    )
)
def test_a_config_that_is_made_builds_a_model_that_runs(changes):
    """What the config lets through, torch takes: a small model is built and runs a batch."""
    small = dict(d_model=8, d_ff=16, n_heads=2, n_layers=1, max_len=16, warmup_steps=1)
    try:
        config = TransformerConfig(**{**small, **changes})
    except Exception as error:  # noqa: BLE001
        _refused_in_one_line(
            error, [f.name for f in dataclasses.fields(TransformerConfig)]
        )
        return
    event("made")
    vocab = max(config.pad_id, config.bos_id, config.eos_id, config.unk_id) + 4
    model = Transformer(config, vocab, vocab)
    tokens = torch.full((2, 3), config.unk_id)
    assert model(tokens, tokens).shape[0] == 2


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: TransformerConfig(dropout="0.1"),
            "TransformerConfig.dropout must be a number (int or float), got '0.1' (str)",
        ),
        (
            lambda: TransformerConfig(pad_id=True),
            "TransformerConfig.pad_id must be a whole number (int), got True (bool)",
        ),
        (
            lambda: TransformerConfig(positional=1),
            "TransformerConfig.positional must be a string, got 1 (int)",
        ),
        (
            lambda: DecodeSettings(alpha="0.6"),
            "alpha must be a number (int or float), got '0.6' (str)",
        ),
        (
            lambda: TrainSettings(max_steps=1, adam_betas=(0.9, "0.98")),
            "adam_betas must be two numbers (a tuple), got (0.9, '0.98') (tuple)",
        ),
        (
            lambda: TrainSettings(max_steps=1, name=3),
            "name must be a string, got 3 (int)",
        ),
        (
            lambda: ModelChoice(model_overrides="d_model=8"),
            "model_overrides must be a dict[str, Any], got 'd_model=8' (str)",
        ),
        (
            lambda: ModelChoice(model_overrides={1: 2}),
            "model_overrides must be a dict[str, Any], got {1: 2} (dict)",
        ),
        (
            lambda: DataSettings(corpus=5),
            "corpus must be a string, got 5 (int)",
        ),
        (
            lambda: EvaluationSettings(max_len_a="1"),
            "max_len_a must be a number (int or float), got '1' (str)",
        ),
        (
            lambda: SMOKE.replace(description=None),
            "description must be a string, got None (NoneType)",
        ),
        (
            lambda: dataclasses.replace(SMOKE.book.table3, rows=["A1"]),
            "book.table3.rows must be a tuple of strings, got ['A1'] (list)",
        ),
        (
            lambda: dataclasses.replace(model_sizes.of(SMOKE.name), shifts=(1, "2")),
            "ModelSizes.shifts must be a tuple of whole numbers, got (1, '2') (tuple)",
        ),
    ],
)
def test_a_wrong_type_is_one_line_naming_the_field_the_value_and_the_type(make, says):
    """Each of these was taken before and failed later (a string dropout in torch's dropout,
    True as a padding id, a string alpha in the length penalty), or raised a TypeError."""
    with pytest.raises(ValueError) as caught:
        make()
    message = str(caught.value)
    assert message.startswith(says) and "\n" not in message, message


def test_an_int_is_a_number_and_a_bool_is_not():
    assert TransformerConfig(dropout=0).dropout == 0
    assert DecodeSettings(alpha=1).alpha == 1
    with pytest.raises(ValueError, match="got False"):
        DecodeSettings(alpha=False)
