"""Each chapter's sizes under every profile: the four profiles, their variants, nothing else."""

import dataclasses

import pytest

from annotated_transformer.chapters import sizes
from annotated_transformer.chapters.constituency_parsing import sizes as parsing_sizes
from annotated_transformer.profiles import PROFILE_NAMES


def test_every_profile_and_variant_has_sizes_and_a_variant_takes_its_profiles():
    for name in PROFILE_NAMES:
        assert parsing_sizes.of(name) is parsing_sizes.of(name.split("-")[0])
    assert parsing_sizes.of("gpu-iwslt14") is parsing_sizes.GPU


def test_a_profile_without_sizes_is_one_line_naming_the_profiles():
    with pytest.raises(KeyError) as caught:
        parsing_sizes.of("laptop")
    message = caught.value.args[0]
    assert "'laptop'" in message and "smoke, cpu, gpu, paper" in message
    assert "\n" not in message


def test_the_table_marks_this_runs_column_and_lists_every_field():
    table = parsing_sizes.table("cpu")
    assert list(table.columns) == ["knob", "smoke", "cpu (this run)", "gpu", "paper"]
    fields = [f.name for f in dataclasses.fields(parsing_sizes.ParsingSizes)]
    assert list(table["knob"]) == fields


def test_a_size_of_the_wrong_type_is_refused_when_made():
    with pytest.raises(ValueError, match="workers"):
        dataclasses.replace(parsing_sizes.CPU, workers="2")
    assert issubclass(parsing_sizes.ParsingSizes, sizes.Sizes)
