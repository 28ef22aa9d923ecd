"""Chapter 05's tables and the steps behind them: the averaging sweep's frame, the points on
Table 2's axes, the paper recipe's cost and fields, and the recipe sweeps' tables, each from small
inputs whose answers are known."""

import math

import pandas as pd
import pytest

from annotated_transformer.chapters.translation_results import recipe_choice, tables
from annotated_transformer.chapters.translation_results import table2 as report
from annotated_transformer.evaluation import paper, results
from annotated_transformer.profiles import get_profile


def test_recipe_check_steps_default_by_profile():
    assert report.recipe_check_steps("smoke") == 2
    assert report.recipe_check_steps("cpu") == 8
    assert report.recipe_check_steps("gpu") == 20
    assert report.recipe_check_steps("cpu", 3) == 3


def test_sweep_frame_measures_every_average_from_the_last_snapshot():
    swept = {
        1: (["s3"], {"ppl": 7.0, "sacrebleu": 34.0}),
        3: (["s1", "s2", "s3"], {"ppl": 6.5, "sacrebleu": 36.0}),
    }
    tests = {
        "k=1": {"ci95": 1.5},
        "k=3": {"ci95": 1.4, "p_value": 0.002, "exceeds_noise": True},
    }
    frame = report.sweep_frame(swept, tests)
    assert frame.snapshots.tolist() == ["s3", "s1 .. s3"]
    assert frame.minus_k1.tolist() == [0.0, 2.0]
    assert frame.beyond_noise.tolist() == [None, True]
    shown = tables.sweep_table(frame)
    assert shown["sacreBLEU ± 95%"].tolist() == ["34.00 ± 1.50", "36.00 ± 1.40"]
    assert shown["validation perplexity"].tolist() == [7.0, 6.5]


def test_run_points_are_one_run_priced_two_ways():
    points = report.run_points("cpu, 7.6M", 37.0, 1.5, 2.8e14, 1.2e14)
    assert [p["system"] for p in points] == [
        "cpu, 7.6M (paper's way)",
        "cpu, 7.6M (counted)",
    ]
    assert [(p["run"], p["cost"]) for p in points] == [
        ("cpu, 7.6M", "paper's way"),
        ("cpu, 7.6M", "counted"),
    ]
    table2 = report.table2_points()
    assert "Transformer (base)" in table2.system.tolist()
    shown = tables.table2_table(table2, pd.DataFrame(points), "multi30k/test_2016_flickr")
    assert shown.iloc[-1].tolist() == [
        "cpu, 7.6M (counted)",
        "multi30k/test_2016_flickr",
        "37.00 ± 1.50 (sacreBLEU)",
        "1.2e14",
    ]
    assert shown.iloc[0]["BLEU"].endswith("(tokenized BLEU)")


def _cost():
    return report.RunCost(
        sustained=3.0e11, how="measured here", train_time_s=900.0, target_tokens=1_000_000,
        parameters=7_000_000, paper_way=2.7e14, counted=1.08e14, six_n=4.2e13,
    )  # fmt: skip


def test_cost_table_shows_each_way_and_the_utilisation():
    cost = _cost()
    assert cost.utilisation == pytest.approx(0.4)
    table = tables.cost_table(cost, "cpu").set_index("")["profile cpu"]
    assert table["counted / paper's way (model FLOPs utilisation)"] == "40.0%"
    assert table["counted: FLOPs per target token x target tokens"].endswith("= 1.1e14")


def test_recipe_cost_implies_the_p100_share_and_h100_hours():
    base = paper.TRAINING["base"]
    table2 = report.paper_way_flops(
        base.wall_time_h * 3600, 8, paper.TABLE2_SUSTAINED_FLOPS["P100"]
    )
    cost = report.RecipeCost(
        mean_src=30.0, mean_tgt=31.0, steps=100_000, tokens=2.5e9, counted=table2 / 4,
        table2=table2, h100_peak=1e15, fractions={"assumed": 0.25},
    )  # fmt: skip
    assert cost.implied_utilisation == pytest.approx(0.25)
    assert cost.hours()["assumed"] == pytest.approx(table2 / 4 / 2.5e14 / 3600)
    rows = tables.recipe_cost_table(cost).set_index("quantity")["value"]
    assert rows["implied P100 utilisation (counted / Table 2)"] == "25%"


def test_the_recipe_check_is_the_paper_recipe_with_a_small_model():
    paper_profile = get_profile("paper")
    check = report.recipe_check_profile(paper_profile, 3)
    assert check.max_steps == 3 and check.train_split == "train_sample"
    assert check.model_overrides == report.RECIPE_CHECK_MODEL
    for field in ("batch_tokens", "peak_lr", "warmup_steps", "adam_betas", "vocab_size"):
        assert getattr(check, field) == getattr(paper_profile, field)
    table = tables.paper_recipe_table(paper_profile).set_index("field")["paper profile"]
    assert set(report.PAPER_RECIPE_FIELDS) | {"model"} == set(table.index)


def test_the_recipe_table_says_unset_fields_and_overrides_in_words():
    table = tables.paper_recipe_table(get_profile("paper")).set_index("field")
    cells = table["paper profile"]
    assert not cells.str.contains(r"None|\{|\(\d|True|False").any()  # no Python reprs
    assert cells["peak_lr"].startswith("the paper's schedule")
    assert cells["model_overrides"] == "max_len 1024"
    assert cells["adam_betas"] == "0.9, 0.98" and cells["compile"] == "yes"
    assert tables.recipe_value("model_overrides", {}) == "none"
    assert tables.recipe_value("max_steps", None) == "no limit"


def test_recipe_check_log_has_reader_headers():
    check = report.RecipeCheck(
        steps=2, seconds=1.0, losses=[11.0, 10.9],
        log=[{"step": 1, "loss": 11.0, "nll": 10.9, "lr": 1e-7, "target_tokens": 100}],
        valid_loss=10.9, valid_pairs=64, vocab_size=37_000,
    )  # fmt: skip
    assert check.uniform_loss == pytest.approx(math.log(37_000))
    columns = tables.recipe_log_table(check).columns.tolist()
    assert columns == [
        "step",
        "smoothed loss",
        "NLL",
        "learning rate",
        "target tokens so far",
    ]
    assert set(tables.RECIPE_LOG_FORMATS) <= set(columns)


def test_compound_example_takes_the_first_hyphenated_reference():
    refs = ["Ein Hund.", "Ein Arbeits-Markt.", "Noch-eins."]
    frame = tables.compound_example(refs, str.upper, lambda t: t.replace("-", " - "))
    assert frame["one test reference"].tolist() == [
        "Ein Arbeits-Markt.",
        "EIN ARBEITS-MARKT.",
        "EIN ARBEITS - MARKT.",
    ]


# ------------------------------------------------------------------------------------------ sweeps
RESULTS = results.committed_root()
needs_sweeps = pytest.mark.skipif(RESULTS is None, reason="needs the clone's results/")


@needs_sweeps
def test_recipe_tables_mark_the_chosen_and_say_noise():
    cpu = recipe_choice.cpu_candidates(RESULTS)
    pick = recipe_choice.chosen_cpu(cpu)
    tests = {c.name: {"bleu": c.valid_sacrebleu, "ci95": 1.5} for c in cpu}
    for c in cpu:
        if c is not pick:
            tests[c.name] |= {"p_value": 0.3, "exceeds_noise": False}
    gpu = recipe_choice.gpu_candidates(RESULTS)
    evidence = recipe_choice.Evidence(
        cpu, pick, tests, recipe_choice.decode_choice(RESULTS), gpu,
        recipe_choice.chosen_gpu(gpu),
    )  # fmt: skip
    table = recipe_choice.cpu_table(evidence)
    chosen = table[table.candidate.str.endswith("(this sweep's pick)")]
    assert len(chosen) == 1 and chosen["against the pick"].iloc[0] == ""
    assert (table["against the pick"] == "p = 0.300, within noise").sum() == len(cpu) - 1
    decode = recipe_choice.decode_table(evidence.decoding)
    labels = decode["snapshots, beam, α"]
    assert labels.str.contains("(chosen)", regex=False).sum() == 1
    assert labels.str.contains("(the paper's)", regex=False).sum() == 1
    gpu_table = recipe_choice.gpu_table(evidence)
    assert gpu_table["gpu candidate"].str.endswith("(chosen)").sum() == 1
    rows = evidence.gpu_rows()
    assert [r["chosen"] for r in rows].count(True) == 1


@needs_sweeps
def test_budget_sweep_keeps_the_profile_recipe_unless_a_rival_wins_beyond_noise():
    folder = recipe_choice.STEP_BUDGET_SWEEP
    kind = recipe_choice.STEP_BUDGET_SWEEPS[folder]
    runs = recipe_choice.cpu_candidates(RESULTS, folder)
    recipe = recipe_choice.recipe_of(get_profile("cpu"))
    base = next(c for c in runs if c.recipe == recipe)
    tests = {c.name: {"bleu": c.valid_sacrebleu, "ci95": 1.5} for c in runs}
    rivals = [c for c in runs if c is not base]
    assert rivals, "the step-budget sweep has no rival to the recipe"
    for c in rivals:
        tests[c.name] |= {"p_value": 0.3, "exceeds_noise": False}
    sweep = recipe_choice.BudgetSweep(kind, runs, base, tests)
    assert sweep.winners == []
    table = recipe_choice.budget_table(sweep)
    assert "target tokens/s" not in table.columns
    assert table.candidate.str.endswith("(chosen)").sum() == 1
    # a rival better beyond the noise wins; one worse beyond it does not
    better, worse = rivals[0].name, rivals[-1].name
    tests[better] |= {"bleu": tests[base.name]["bleu"] + 1, "p_value": 0.01}
    tests[better]["exceeds_noise"] = True
    if worse != better:
        tests[worse] |= {"bleu": tests[base.name]["bleu"] - 1, "p_value": 0.01}
        tests[worse]["exceeds_noise"] = True
    assert recipe_choice.BudgetSweep(kind, runs, base, tests).winners == [better]
    # the profile's recipe beats the one a rival trained only when that rival lost beyond noise
    sweep = recipe_choice.BudgetSweep(kind, runs, base, tests)
    assert not sweep.beats(next(c for c in runs if c.name == better).recipe)
    assert sweep.beats(next(c for c in runs if c.name == worse).recipe) == (
        worse != better
    )
    assert not sweep.beats({"a recipe": "no candidate trained"})
