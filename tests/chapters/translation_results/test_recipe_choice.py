"""The profiles train what their committed validation sweeps chose, and the choice rule reads
validation figures only."""

import dataclasses
from pathlib import Path

import pytest

from annotated_transformer.chapters.translation_results import recipe_choice
from annotated_transformer.evaluation import results
from annotated_transformer.profiles import get_profile

RESULTS = results.committed_root()
pytestmark = pytest.mark.skipif(RESULTS is None, reason="needs the clone's results/")


def test_the_cpu_profile_is_the_best_candidate_or_one_every_budget_sweep_trained():
    candidates = recipe_choice.cpu_candidates(RESULTS)
    assert len(candidates) >= 2
    chosen = recipe_choice.chosen_cpu(candidates)
    recipe = recipe_choice.recipe_of(get_profile("cpu"))
    if recipe != chosen.recipe:
        # a later recipe, trained at every CPU kind's step budget (`read_evidence` checks that it
        # beat the 15-minute sweep's choice at one and lost beyond the noise at none)
        for folder in recipe_choice.STEP_BUDGET_SWEEPS:
            trained = recipe_choice.cpu_candidates(RESULTS, folder)
            assert [c.recipe for c in trained].count(recipe) == 1, folder
    for c in candidates:
        assert c.hypotheses.is_file()
        assert len(c.hypotheses.read_text(encoding="utf-8").splitlines()) == 1014


def test_the_gpu_profile_is_the_run_with_the_lowest_validation_perplexity():
    chosen = recipe_choice.chosen_gpu(recipe_choice.gpu_candidates(RESULTS))
    gpu = get_profile("gpu")
    assert recipe_choice.recipe_of(gpu) == recipe_choice.recipe_of(chosen.recipe)
    assert gpu.max_epochs == chosen.best_epoch
    assert recipe_choice.shape(chosen.recipe) == "4 x 256 / 1024"


def test_the_rule_ignores_anything_but_validation():
    base = recipe_choice.cpu_candidates(RESULTS)[0]
    better = dataclasses.replace(base, name="x", valid_sacrebleu=base.valid_sacrebleu + 1)
    tie = dataclasses.replace(base, name="y", valid_ppl=base.valid_ppl - 1)
    assert recipe_choice.chosen_cpu([base, better]).name == "x"
    assert (
        recipe_choice.chosen_cpu([base, tie]).name == "y"
    )  # ties go to lower perplexity
    with pytest.raises(ValueError):
        recipe_choice.chosen_cpu([])
    assert isinstance(base.hypotheses, Path)


def test_the_cpu_profile_decodes_with_the_settings_chosen_on_validation():
    choice = recipe_choice.decode_choice(RESULTS)
    cpu = get_profile("cpu")
    assert {f: getattr(cpu, f) for f in recipe_choice.DECODE_FIELDS} == choice.fields()
    # the baseline is the paper's decoding, and the grid compared every setting with it
    assert choice.fields(choice.baseline) == {
        "average_last": 5,
        "beam_size": 4,
        "length_penalty_alpha": 0.6,
    }
    assert all(
        "p_value" in row
        for name, row in choice.settings.items()
        if name != choice.baseline
    )


def test_a_decoding_within_the_noise_leaves_the_baseline():
    choice = recipe_choice.decode_choice(RESULTS)
    settings = {name: dict(row) for name, row in choice.settings.items()}
    settings[choice.best]["exceeds_noise"] = False
    within = recipe_choice.DecodeChoice(choice.baseline, choice.best, settings)
    assert within.chosen == choice.baseline
