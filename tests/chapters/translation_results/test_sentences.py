"""Chapter 05's verdicts and their words: each verdict holds the numbers it rests on (a BLEU
difference inside the paired bootstrap's noise is never a difference), every phrase renders, a few
branches of wording read as they should, and the closing list quotes the numbers of chapter 00's
summary."""

import dataclasses
import math
import shutil
from pathlib import Path

import pytest

from annotated_transformer.book import summary
from annotated_transformer.chapters.translation_results import record, verdicts
from annotated_transformer.chapters.translation_results import sentences as describe
from annotated_transformer.chapters.translation_results.phrases import say
from annotated_transformer.chapters.wording import Phrases
from annotated_transformer.profiles import get_profile

COMMITTED = Path(__file__).resolve().parents[3] / "results" / "book_cpu"


def _decoding(beam_bleu: float, beyond: bool, p: float = 0.01):
    greedy = record.Decoding(
        sacrebleu=30.0, bleu_tokenized=30.1, decode_seconds=5.0, sacrebleu_ci95=1.5
    )
    beam = record.BeamDecoding(
        sacrebleu=beam_bleu, bleu_tokenized=beam_bleu + 0.1, decode_seconds=12.5,
        sacrebleu_ci95=1.5, beam_size=4, length_penalty_alpha=0.6,
        p_value_against_greedy=p, exceeds_noise=beyond,
    )  # fmt: skip
    return greedy, beam


# ------------------------------------------------------------------------------------------ verdicts
def test_the_beam_verdict_holds_its_gain_and_its_cost():
    found = verdicts.beam(*_decoding(31.2, True))
    assert found.gain == pytest.approx(1.2) and found.gap == pytest.approx(1.2)
    assert found.tokenized_gain == pytest.approx(1.2) and found.slower == 2.5
    assert found.exceeds_noise and found.p_value == 0.01
    fast = dataclasses.replace(_decoding(31.2, True)[0], decode_seconds=0.0)
    assert verdicts.beam(fast, _decoding(31.2, True)[1]).slower == 12.5 / 0.05


def _sweep(own_bleu, own_beyond, own_ppl, widest_ppl):
    rows = [
        (1, 7.0, 34.0, 0.0, math.nan, None),
        (2, 6.8, 35.5, 1.5, 0.002, True),
        (5, own_ppl, own_bleu, own_bleu - 34.0, 0.001 if own_beyond else 0.4, own_beyond),
        (10, widest_ppl, 34.3, 0.3, 0.5, False),
    ]
    return [
        record.AveragingRow(k=k, snapshots="s", ppl=ppl, bleu=bleu, ci95=1.5, minus_k1=d,
                            p_value=p, beyond_noise=beyond)
        for k, ppl, bleu, d, p, beyond in rows
    ]  # fmt: skip


def test_the_averaging_verdict_counts_the_averages_and_reads_the_perplexity():
    gain = verdicts.averaging(_sweep(37.0, True, 6.4, 6.8), 5)
    assert (gain.averages, gain.up, gain.down) == (3, 2, 0)
    assert gain.difference == 3.0 and gain.own.k == 5 and gain.widest.k == 10
    assert gain.perplexity == "raises_again"  # the widest average is worse than the own
    assert verdicts.averaging(_sweep(34.5, False, 6.4, 6.3), 5).perplexity is None
    worse = verdicts.averaging(_sweep(33.0, True, 7.5, 8.0), 5)
    assert worse.perplexity == "raises" and (worse.up, worse.down) == (1, 1)
    alone = verdicts.averaging(_sweep(37.0, True, 6.4, 6.8)[:1], 1)
    assert alone.averages == 0 and alone.perplexity is None


def test_the_bleus_verdict_is_exact_differences_of_one_set_of_outputs():
    close = verdicts.bleus(37.0, 37.0, 37.02, 12, 1000)
    assert close.close and close.gap == pytest.approx(0.02)
    apart = verdicts.bleus(27.0, 27.4, 28.3, 300, 3003)
    assert not apart.close and apart.gap == pytest.approx(1.3)
    assert apart.splitting == pytest.approx(0.9) and apart.paper_bleu == 27.3


def _cpu_rows(p: float, beyond: bool):
    return [
        {"name": "A", "change": "the recipe", "chosen": True, "valid_sacrebleu": 36.3,
         "ci95": 1.5, "p_value": None, "exceeds_noise": None, "valid_ppl": 7.9},
        {"name": "B", "change": "peak 3e-3", "chosen": False, "valid_sacrebleu": 35.8,
         "ci95": 1.5, "p_value": p, "exceeds_noise": beyond, "valid_ppl": 8.1},
    ]  # fmt: skip


def test_a_candidate_choice_holds_each_rival_s_difference_and_the_winners():
    found = verdicts.candidate_choice(_cpu_rows(0.01, True))
    (rival,) = found.rivals
    assert (found.name, found.score, found.winners) == ("A", 36.3, ())
    assert rival.difference == pytest.approx(-0.5) and not rival.higher
    assert rival.exceeds_noise and not rival.tied
    rows = _cpu_rows(0.01, True)
    rows[1]["valid_sacrebleu"] = 37.1  # a rival better beyond the noise
    assert verdicts.candidate_choice(rows).winners == ("B",)
    rows[1]["exceeds_noise"] = False  # better, but within the noise: no winner
    assert verdicts.candidate_choice(rows).winners == ()
    rows[1]["valid_sacrebleu"] = 36.299
    assert verdicts.candidate_choice(rows).rivals[0].tied


def test_the_decode_choice_counts_wins_and_the_chance_of_one():
    settings = {
        "paper": {"bleu": 36.3},
        "alpha 1.0": {"bleu": 36.7, "p_value": 0.007, "exceeds_noise": True},
        "beam 6": {"bleu": 35.9, "p_value": 0.02, "exceeds_noise": True},
        "average 3": {"bleu": 36.2, "p_value": 0.25, "exceeds_noise": False},
    }
    won = verdicts.decode_choice(settings, "paper", "alpha 1.0")
    assert (won.compared, won.up, won.down, won.within) == (3, 1, 1, 1)
    assert won.gain == pytest.approx(0.4) and won.p_value == 0.007
    assert won.by_chance == pytest.approx(0.15)
    kept = verdicts.decode_choice(settings, "paper", "paper")
    assert kept.gain is None and kept.p_value is None


def test_the_gpu_choice_ranks_by_perplexity_and_counts_the_overfitting_runs():
    rows = [
        {"name": "x", "shape": "4 x 256 / 1024", "best_ppl": 5.13, "best_epoch": 41,
         "last_ppl": 5.55, "last_epoch": 71},
        {"name": "y", "shape": "4 x 128 / 256", "best_ppl": 5.63, "best_epoch": 58,
         "last_ppl": 5.64, "last_epoch": 60},
    ]  # fmt: skip
    found = verdicts.gpu_choice(rows)
    assert (found.best, found.second, found.rising, found.runs) == ("x", "y", 1, 2)
    assert found.second_above == pytest.approx(5.63 / 5.13 - 1)
    alone = verdicts.gpu_choice(rows[:1])
    assert alone.second is None and alone.second_above is None


def _gpu(paired=True, beyond=True, d=1.5, label="gpu, 2.1M"):
    return record.GpuRun(
        label=label, short=label, sacrebleu=38.5, ci95=1.5, paper_way=1e17, counted=1e14,
        paired=paired, difference=d if paired else None, p_value=0.004 if beyond else 0.3,
        exceeds_noise=beyond if paired else None,
    )  # fmt: skip


def test_the_gpu_comparison_calls_selection_only_a_lead_beyond_the_noise():
    ahead = verdicts.gpu_comparison(_gpu())
    assert ahead.spread == 1000 and ahead.gap == 1.5 and not ahead.selected
    chosen = "gpu, earlier recipe chosen on test"
    assert verdicts.gpu_comparison(_gpu(label=chosen)).selected
    assert not verdicts.gpu_comparison(_gpu(beyond=False, label=chosen)).selected
    unpaired = verdicts.gpu_comparison(_gpu(paired=False, label=chosen))
    assert not unpaired.selected and unpaired.gap is None


def test_the_cost_verdicts_read_the_rate_and_the_ratio():
    cost = verdicts.cost(900.0, 2.8e14, 1.2e14, 1.2 / 2.8, "(measured here: fp32)")
    assert cost.measured and cost.rate == pytest.approx(2.8e14 / 900)
    assert not verdicts.cost(900.0, 2.8e14, 1.2e14, 0.4, "data-sheet peak").measured
    table2 = verdicts.table2(2.8e14, 7_577_600)
    assert table2.ratio == pytest.approx(3.3e18 / 2.8e14) and round(table2.orders) == 4
    assert table2.params_m == 7.5776 and table2.paper_params_m == 65


def test_the_recipe_verdicts_follow_the_numbers():
    recipe = verdicts.recipe_cost(
        9.4e17, 3.3e18, {"measured for base": 1.44, "assumed": 0.76}
    )
    assert recipe.hours == (("assumed", 0.76), ("measured", 1.44))  # fewest hours first
    assert recipe.share == pytest.approx(9.4e17 / 3.3e18) and recipe.steps == 100_000
    above = verdicts.recipe_check(8, [10.99, 11.03], 10.99, 37_000, 7.9)
    assert above.above_uniform and above.finite and above.uniform == math.log(37_000)
    below = verdicts.recipe_check(20, [10.9, math.nan], 9.5, 37_000, 30.0)
    assert not below.above_uniform and not below.finite and math.isnan(below.last)


# ------------------------------------------------------------------------------------------ the words
def test_a_change_within_the_noise_is_never_called_a_difference():
    within = describe.describe_beam(*_decoding(30.4, False, 0.3), 1000, "v")
    assert "cannot tell the two apart" in within and "points above" not in within
    tie = describe.describe_beam(*_decoding(29.999, False, 0.9), 1000, "v")
    assert "a change of 0.00 that lies within" in tie  # never "-0.00" (wording.signed)
    down = describe.describe_beam(*_decoding(28.9, True), 1000, "v")
    assert "1.10 points below it" in down and "probabilities are not BLEU" in down
    flat = describe.describe_averaging(_sweep(34.5, False, 6.4, 6.3), 5)
    assert "no gain the validation set can tell" in flat and "sacreBLEU above" not in flat
    rows = _cpu_rows(0.3, False)
    assert "B's score differs from it by -0.50" in describe.describe_cpu_choice(rows)
    rows[1]["valid_sacrebleu"] = 36.299  # a tie to two decimals reads +0.00, never -0.00
    assert "B's score matches it to two decimals" in describe.describe_budget_choice(
        rows, KIND
    )


KIND = "a CPU kind"


def test_the_budget_sentence_keeps_the_recipe_unless_a_rival_wins():
    kept = describe.describe_budget_choice(_cpu_rows(0.01, True), KIND)
    assert kept.startswith("The profile's recipe, A")
    assert kept.endswith(f"so {KIND} trains the profile's recipe too.")
    rows = _cpu_rows(0.01, True)
    rows[1]["valid_sacrebleu"] = 37.1
    beaten = describe.describe_budget_choice(rows, KIND)
    assert f"B beats it beyond the noise: {KIND} should train that recipe" in beaten
    rows.append(dict(rows[1], name="C"))
    assert "B and C beat it beyond the noise" in describe.describe_budget_choice(
        rows, KIND
    )


def test_the_plan_names_the_split_that_compares_and_the_one_scored():
    plan = describe.describe_plan(get_profile("cpu"), "cpu", 4)
    assert "compares decodings on every sentence of the multi30k validation split" in plan
    smoke = get_profile("smoke")
    first = f"the first {smoke.eval_max_sentences:,} sentences"
    assert first in describe.describe_plan(smoke, "cpu", 4)


class _Recording(Phrases):
    """The chapter's phrase table, noting each key it renders."""

    def __init__(self, table):
        super().__init__(table)
        self.rendered = set()

    def __call__(self, key, verdict=None, **fields):
        self.rendered.add(key)
        return super().__call__(key, verdict, **fields)


def test_every_phrase_renders_with_what_its_sentence_gives(monkeypatch):
    """Each template is rendered by some sentence: a phrase naming a field no verdict gives
    fails here, not on a page."""
    recording = _Recording(say.table)
    monkeypatch.setattr(describe, "say", recording)
    for args in [(31.2, True), (28.9, True), (30.4, False, 0.3)]:
        describe.describe_beam(*_decoding(*args), 10, "v")
    for args, k in [((37.0, True, 6.4, 6.8), 5), ((34.5, False, 6.4, 6.3), 5),
                    ((33.0, True, 7.5, 8.0), 5)]:  # fmt: skip
        describe.describe_averaging(_sweep(*args), k)
    describe.describe_averaging(_sweep(33.0, False, 6.4, 6.3), 10)
    describe.describe_averaging(_sweep(37.0, True, 6.4, 6.8)[:1], 1)
    for p in ("cpu", "smoke"):
        describe.describe_plan(get_profile(p), "cpu", 4)
    describe.describe_model(1, ["a", "b"], {"v": 1})
    for args in [(37.0, 37.0, 37.02, 12, 1000), (27.0, 27.4, 28.3, None, 3003)]:
        describe.describe_bleus(*args)
    for rows in [
        _cpu_rows(0.01, True),
        _cpu_rows(0.3, False),
        _cpu_rows(0.3, True)[:1],
    ]:
        describe.describe_cpu_choice(rows)
        describe.describe_budget_choice(rows, KIND)
    tied = _cpu_rows(0.3, False)
    tied[1]["valid_sacrebleu"] = 36.3
    describe.describe_cpu_choice(tied)
    better = _cpu_rows(0.01, True)
    better[1]["valid_sacrebleu"] = 37.1
    describe.describe_budget_choice(better, KIND)
    describe.describe_budget_choice(better + [dict(better[1], name="C")], KIND)
    settings = {"paper": {"bleu": 1.0}, "x": {"bleu": 2.0, "p_value": 0.01,
                                               "exceeds_noise": True}}  # fmt: skip
    describe.describe_decode_choice(settings, "paper", "x")
    describe.describe_decode_choice(settings, "paper", "paper")
    gpu_rows = [{"name": n, "shape": "s", "best_ppl": b, "best_epoch": 1, "last_ppl": last}
                for n, b, last in (("x", 5.0, 6.0), ("y", 5.5, 5.5))]  # fmt: skip
    describe.describe_gpu_choice(gpu_rows)
    for kw in [{}, {"d": -1.0}, {"beyond": False}, {"paired": False},
               {"label": "chosen on test"}]:  # fmt: skip
        describe.describe_gpu_comparison(_gpu(**kw), 10)
    for how in ("measured here", "data-sheet peak"):
        describe.describe_cost(900.0, 2.8e14, 1.2e14, 0.4, how)
    describe.describe_table2(2.8e14, 7_577_600)
    describe.describe_recipe_cost(9.4e17, 3.3e18, {"assumed": 0.76})
    describe.describe_recipe_check(8, [10.99, 11.03], 10.99, 37_000, 7.9)
    describe.describe_recipe_check(8, [10.99, math.nan], 9.0, 37_000, 7.9)
    describe.describe_result(37.0, 1.5, 37.02, 1000, "t")
    assert recording.rendered == set(say.table), set(say.table) - recording.rendered


# ------------------------------------------------------------------------------------------ committed
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
    found = record.read("cpu", cpu_root)
    text = describe.closing(found)
    assert text.count("\n- ") >= 7
    table = summary.summary_table("cpu", committed=(), root=cpu_root).set_index("claim")
    column = summary.profile_column("cpu")
    sacre = table.loc["sacreBLEU ± 95%", column]
    assert sacre.startswith(f"{found.sacrebleu:.1f}")
    assert f"{found.sacrebleu:.2f} ± {found.sacrebleu_ci95:.2f} sacreBLEU" in text
    tokenized = table.loc["tokenized BLEU (the paper's kind)", column]
    assert tokenized.startswith(f"{found.bleu_tokenized:.1f}")
    assert f"{found.bleu_tokenized:.2f} tokenized BLEU" in text
    flops = describe.flops_text(found.training_flops)
    assert table.loc["training cost (FLOPs, Table 2's way)", column].startswith(flops)
    assert f"the run cost {flops} FLOPs" in text
