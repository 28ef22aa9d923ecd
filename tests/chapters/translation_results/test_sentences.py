"""Chapter 05's sentences: each changes with the numbers it reads, a BLEU difference inside the
paired bootstrap's noise is never called a difference, and the closing list quotes the numbers of
chapter 00's summary."""

import math
import shutil
from pathlib import Path

import pytest

from annotated_transformer.book import summary
from annotated_transformer.chapters.translation_results import sentences as describe
from annotated_transformer.evaluation import results

COMMITTED = Path(__file__).resolve().parents[3] / "results" / "book_cpu"


def _decoding(beam_bleu: float, beyond: bool, p: float = 0.01):
    greedy = {
        "sacrebleu": 30.0,
        "bleu_tokenized": 30.1,
        "decode_seconds": 5.0,
        "sacrebleu_ci95": 1.5,
    }
    beam = {
        "sacrebleu": beam_bleu,
        "bleu_tokenized": beam_bleu + 0.1,
        "decode_seconds": 12.5,
        "sacrebleu_ci95": 1.5,
        "beam_size": 4,
        "length_penalty_alpha": 0.6,
        "p_value_against_greedy": p,
        "exceeds_noise": beyond,
    }
    return greedy, beam


def test_beam_sentence_names_a_difference_only_beyond_the_noise():
    up = describe.describe_beam(*_decoding(31.2, True), 1000, "multi30k/val")
    assert "on the 1,000 sentences of `multi30k/val`" in up
    assert "1.20 points above it" in up and "back out of an early word" in up
    assert up.endswith("It took 2.5 times greedy's decoding time.")
    assert "p = 0.010" in up
    down = describe.describe_beam(*_decoding(28.9, True), 1000, "v")
    assert "1.10 points below it" in down and "probabilities are not BLEU" in down
    within = describe.describe_beam(*_decoding(30.4, False, 0.3), 1000, "v")
    assert (
        "within the resampling noise" in within and "cannot tell the two apart" in within
    )
    assert "points above" not in within and "back out" not in within
    tie = describe.describe_beam(*_decoding(29.999, False, 0.9), 1000, "v")
    assert "a change of 0.00 that lies within" in tie  # never "-0.00" (wording.signed)


def _sweep(own_bleu, own_beyond, own_ppl, widest_ppl):
    return [
        {"k": 1, "ppl": 7.0, "bleu": 34.0, "ci95": 1.5, "minus_k1": 0.0,
         "p_value": math.nan, "beyond_noise": None},
        {"k": 2, "ppl": 6.8, "bleu": 35.5, "ci95": 1.5, "minus_k1": 1.5,
         "p_value": 0.002, "beyond_noise": True},
        {"k": 5, "ppl": own_ppl, "bleu": own_bleu, "ci95": 1.5,
         "minus_k1": own_bleu - 34.0, "p_value": 0.001 if own_beyond else 0.4,
         "beyond_noise": own_beyond},
        {"k": 10, "ppl": widest_ppl, "bleu": 34.3, "ci95": 1.5, "minus_k1": 0.3,
         "p_value": 0.5, "beyond_noise": False},
    ]  # fmt: skip


def test_averaging_sentence_follows_the_bootstrap_and_the_perplexity():
    gain = describe.describe_averaging(_sweep(37.0, True, 6.4, 6.8), 5)
    assert "3.00 sacreBLEU above it, beyond the resampling noise" in gain
    assert (
        "2 score above the last snapshot beyond the noise, 0 below it, and 1 within"
        in gain
    )
    assert gain.startswith("On the validation split, averaging the newest 5")
    assert "raises the validation perplexity again, to 6.80" in gain
    within = describe.describe_averaging(_sweep(34.5, False, 6.4, 6.3), 5)
    assert "no gain the validation set can tell" in within
    assert "sacreBLEU above" not in within
    assert (
        "raises the validation perplexity" not in within
    )  # the widest is the best model here
    worse = describe.describe_averaging(_sweep(33.0, True, 7.5, 8.0), 5)
    assert "1.00 sacreBLEU below it" in worse and "Here averaging raises" in worse
    alone = describe.describe_averaging(_sweep(37.0, True, 6.4, 6.8)[:1], 1)
    assert alone.startswith("The profile averages nothing")
    assert "(34.00 on the validation split)" in alone


def test_plan_names_the_split_that_compares_and_the_one_scored():
    from annotated_transformer.profiles import get_profile

    plan = describe.describe_plan(get_profile("cpu"), "cpu", 4)
    assert "compares decodings on every sentence of the multi30k validation split" in plan
    assert "scores every sentence of its test split with one setting, beam 4" in plan


def test_bleu_sentence_says_how_far_the_two_bleus_are_apart():
    close = describe.describe_bleus(37.0, 37.0, 37.02, 12, 1000)
    assert "agree closely" in close and "+0.02" in close and "12 of 1,000" in close
    apart = describe.describe_bleus(27.0, 27.4, 28.3, 300, 3003)
    assert "differ by +1.30" in apart and "+0.90" in apart
    unknown = describe.describe_bleus(37.0, 37.0, 37.02, None, 1000)
    assert "few hyphenated compounds" in unknown


def _cpu_rows(p: float, beyond: bool):
    return [
        {"name": "A", "change": "the recipe", "chosen": True, "valid_sacrebleu": 36.3,
         "ci95": 1.5, "p_value": None, "exceeds_noise": None, "valid_ppl": 7.9},
        {"name": "B", "change": "peak 3e-3", "chosen": False, "valid_sacrebleu": 35.8,
         "ci95": 1.5, "p_value": p, "exceeds_noise": beyond, "valid_ppl": 8.1},
    ]  # fmt: skip


def test_cpu_choice_sentence_separates_noise_from_a_loss():
    beyond = describe.describe_cpu_choice(_cpu_rows(0.01, True))
    assert "B scores 0.50 lower, beyond the resampling noise (p = 0.010)" in beyond
    within = describe.describe_cpu_choice(_cpu_rows(0.3, False))
    assert (
        "B's score differs from it by -0.50, within the resampling noise (p = 0.300)"
        in within
    )
    assert "cannot tell it" in within
    assert "lower" not in within


def test_budget_choice_keeps_the_recipe_unless_a_rival_wins_beyond_noise():
    kept = describe.describe_budget_choice(_cpu_rows(0.01, True))
    assert kept.startswith("The profile's recipe, A")
    assert "same recipe on every CPU kind" in kept
    rows = _cpu_rows(0.01, True)
    rows[1]["valid_sacrebleu"] = 37.1  # a rival better beyond the noise
    beaten = describe.describe_budget_choice(rows)
    assert "B scores 0.80 higher, beyond the resampling noise" in beaten
    assert "B beats it beyond the noise" in beaten and "every CPU kind" not in beaten
    rows[1]["exceeds_noise"] = False  # better, but within the noise: the recipe stays
    assert "every CPU kind" in describe.describe_budget_choice(rows)
    rows[1]["valid_sacrebleu"] = 36.299  # a tie to two decimals reads +0.00, never -0.00
    assert "B's score matches it to two decimals" in describe.describe_budget_choice(rows)


def test_decode_choice_sentence_counts_wins_and_the_chance_of_one():
    settings = {
        "paper": {"bleu": 36.3},
        "alpha 1.0": {"bleu": 36.7, "p_value": 0.007, "exceeds_noise": True},
        "beam 6": {"bleu": 35.9, "p_value": 0.02, "exceeds_noise": True},
        "average 3": {"bleu": 36.2, "p_value": 0.25, "exceeds_noise": False},
    }
    won = describe.describe_decode_choice(settings, "paper", "alpha 1.0")
    assert "1 beat it beyond the resampling noise, 1 fall below" in won
    assert "decodes with the best, alpha 1.0 (+0.40, p = 0.007)" in won
    assert "With 3 comparisons at the 5% level, about 0.2 would pass by chance" in won
    settings["alpha 1.0"]["exceeds_noise"] = False
    kept = describe.describe_decode_choice(settings, "paper", "paper")
    assert "None wins" in kept and "0 beat it" in kept


def test_gpu_choice_sentence_counts_the_overfitting_runs():
    rows = [
        {"name": "x", "shape": "4 x 256 / 1024", "best_ppl": 5.13, "best_epoch": 41,
         "last_ppl": 5.55, "last_epoch": 71},
        {"name": "y", "shape": "4 x 128 / 256", "best_ppl": 5.63, "best_epoch": 58,
         "last_ppl": 5.64, "last_epoch": 60},
    ]  # fmt: skip
    text = describe.describe_gpu_choice(rows)
    assert "5.13, is x's" in text and "5.63 (+10%)" in text
    assert "1 of 2 runs ended more than 5% above" in text
    rows[0]["last_ppl"] = 5.2
    assert "overfitting" not in describe.describe_gpu_choice(rows)


def _gpu(paired=True, beyond=True, d=1.5, label="gpu, 2.1M"):
    return {"label": label, "sacrebleu": 38.5, "ci95": 1.5, "paper_way": 1e17,
            "counted": 1e14, "paired": paired, "difference": d if paired else None,
            "p_value": 0.004 if beyond else 0.3,
            "exceeds_noise": beyond if paired else None}  # fmt: skip


def test_gpu_comparison_sentence_pairs_only_the_same_sentences():
    ahead = describe.describe_gpu_comparison(_gpu(), 1000)
    assert "1.50 sacreBLEU above this run, beyond the resampling noise" in ahead
    assert "1,000 times apart" in ahead
    within = describe.describe_gpu_comparison(_gpu(beyond=False, d=0.4), 1000)
    assert "within the resampling noise (no difference)" in within
    chosen = describe.describe_gpu_comparison(
        _gpu(label="gpu, earlier recipe chosen on test"), 1000
    )
    assert "partly selection" in chosen
    unpaired = describe.describe_gpu_comparison(_gpu(paired=False), 32)
    assert "not compared" in unpaired and "38.50 ± 1.50" in unpaired


def test_cost_sentences_read_the_record():
    metrics = {
        "training_flops": 2.8e14, "training_flops_counted": 1.2e14,
        "training_flops_how": "paper's way: ... (measured here: fp32 ...)",
        "model_flops_utilisation": 1.2 / 2.8, "parameters": 7_577_600,
        "run": {"train_time_s": 900.0},
    }  # fmt: skip
    cost = describe.describe_cost(metrics)
    assert "2.8e14 FLOPs" in cost and "1.2e14" in cost and "43%" in cost
    assert "measured for this CPU" in cost
    metrics["training_flops_how"] = "data-sheet peak of H100"
    assert "data-sheet peak" in describe.describe_cost(metrics)
    table2 = describe.describe_table2(metrics)
    assert "11,786 times less" in table2 and "about 4 orders" in table2


def test_recipe_sentences_follow_the_numbers():
    recipe = {"counted_flops": 9.4e17, "table2_flops": 3.3e18,
              "h100_gpu_hours": {"assumed": 0.76, "measured for base": 1.44}}  # fmt: skip
    text = describe.describe_recipe_cost(recipe)
    assert "9.4e17 FLOPs, 28% of Table 2's 3.3e18" in text
    assert (
        "0.8 hours at the assumed share" in text and "1.4 hours at the measured" in text
    )
    above = describe.describe_recipe_check(8, [10.99, 11.03], 10.99, 37_000, 7.9)
    assert "above a uniform guess over 37,000 pieces (10.519)" in above
    below = describe.describe_recipe_check(20, [10.9, 9.0], 9.5, 37_000, 30.0)
    assert "is below a uniform guess" in below


@pytest.fixture(scope="module")
def cpu_root(tmp_path_factory) -> Path:
    if not (COMMITTED / "translation.json").is_file():
        pytest.skip("no committed results/book_cpu/translation.json")
    root = tmp_path_factory.mktemp("results")
    (root / "cpu").mkdir()
    for name in ("translation.json", "training.json"):
        shutil.copy(COMMITTED / name, root / "cpu" / name)
    return root


def test_closing_list_quotes_the_summary_s_numbers(cpu_root):
    record = results.read_result("translation", "cpu", cpu_root)
    text = describe.closing(record)
    metrics = record["metrics"]
    assert text.count("\n- ") >= 7
    table = summary.summary_table("cpu", committed=(), root=cpu_root).set_index("claim")
    column = summary.profile_column("cpu")
    sacre = table.loc["sacreBLEU ± 95%", column]
    assert sacre.startswith(f"{metrics['sacrebleu']:.1f}")
    assert (
        f"{metrics['sacrebleu']:.2f} ± {metrics['sacrebleu_ci95']:.2f} sacreBLEU" in text
    )
    tokenized = table.loc["tokenized BLEU (the paper's kind)", column]
    assert tokenized.startswith(f"{metrics['bleu_tokenized']:.1f}")
    assert f"{metrics['bleu_tokenized']:.2f} tokenized BLEU" in text
    flops = describe.flops_text(metrics["training_flops"])
    assert table.loc["training cost (FLOPs, Table 2's way)", column].startswith(flops)
    assert f"the run cost {flops} FLOPs" in text
