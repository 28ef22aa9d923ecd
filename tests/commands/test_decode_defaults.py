"""`translate` and `evaluate` decode alike: the checkpoint's profile's beam, length penalty and
batches, unless a flag says otherwise."""

import argparse

import pytest

from annotated_transformer.commands import evaluate, translate
from annotated_transformer.profiles import get_profile


def parsed(module, argv):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("profile", ["cpu", "gpu", "smoke"])
def test_translate_decodes_with_the_checkpoints_profile_by_default(profile):
    checkpoint = {"profile": get_profile(profile).to_dict()}
    args = parsed(translate, ["--checkpoint", "x.pt"])
    decoding = translate.decode_settings(checkpoint, args, "cpu")
    assert decoding == get_profile(profile).decode_settings("cpu")


def test_the_cpu_profiles_chosen_length_penalty_reaches_translate():
    # the cpu profile chose alpha 1.0 on validation, not the paper's 0.6
    checkpoint = {"profile": get_profile("cpu").to_dict()}
    args = parsed(translate, ["--checkpoint", "x.pt"])
    assert translate.decode_settings(checkpoint, args, "cpu").alpha == 1.0


def test_translate_flags_override_the_profiles_decoding():
    checkpoint = {"profile": get_profile("cpu").to_dict()}
    args = parsed(
        translate,
        ["--checkpoint", "x.pt", "--beam", "1", "--alpha", "0.6", "--batch-tokens", "99"],
    )
    decoding = translate.decode_settings(checkpoint, args, "cpu")
    assert (decoding.beam_size, decoding.alpha, decoding.batch_tokens) == (1, 0.6, 99)
    assert decoding.max_len_b == get_profile("cpu").max_len_b


@pytest.mark.parametrize("module", [translate, evaluate])
def test_no_decoding_flag_states_a_default_number_of_its_own(module):
    # a default written in the help would be a second source of truth beside the profile
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    for action in parser._actions:
        if action.dest in ("beam", "alpha", "max_len_b", "batch_tokens"):
            assert action.default is None, action.dest
            assert "0.6" not in (action.help or "") and ", 4)" not in (action.help or "")
