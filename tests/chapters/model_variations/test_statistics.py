"""The verdict statistics of chapter 06 on numbers with known answers: Student-t quantiles, Holm's
correction, seed-paired intervals, the tie margin, and the rank correlation's bootstrap interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annotated_transformer.chapters.model_variations import statistics as f

ONE_HEAD = f.FINDINGS[0]
TIE = next(x for x in f.FINDINGS if x.kind == "tie")
BIGGER = next(x for x in f.FINDINGS if x.name == "bigger is better")


def by_seed(values) -> dict[int, float]:
    return {seed: float(v) for seed, v in enumerate(values, start=1)}


def one(finding, runs, corpus="full", **kw):
    """The verdict of `finding` alone (a family of its own comparisons)."""
    return f.assess([finding], {corpus: runs}, **kw)[0]


def test_t_quantiles_match_the_textbook_table():
    assert math.isclose(f.t_quantile(0.975, 1), 12.7062, abs_tol=1e-4)
    assert math.isclose(f.t_quantile(0.975, 2), 4.3027, abs_tol=1e-4)
    assert math.isclose(f.t_quantile(0.975, 30), 2.0423, abs_tol=1e-4)
    assert math.isclose(f.t_quantile(0.025, 5), -2.5706, abs_tol=1e-4)
    assert f.t_quantile(0.5, 3) == 0.0
    # df = 2 has a closed form: t = (2p - 1) sqrt(2 / (4p(1 - p)))
    p = 1 - 0.05 / 16
    assert math.isclose(
        f.t_quantile(p, 2), (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p))), rel_tol=1e-9
    )


def test_holm_steps_down_and_stops_at_the_first_failure():
    assert f.holm([0.01, 0.02, 0.03]) == [(True, 0.05 / 3), (True, 0.025), (True, 0.05)]
    # 0.01 <= 0.05/3 is rejected; 0.03 > 0.025 stops it; 0.04 keeps the failed step's level
    assert f.holm([0.01, 0.04, 0.03]) == [
        (True, 0.05 / 3),
        (False, 0.025),
        (False, 0.025),
    ]
    assert f.holm([0.2]) == [(False, 0.05)]


def test_paired_differences_are_log_ratios_over_common_seeds():
    pair = f.paired({1: 20.0, 2: 22.0, 3: 30.0}, {1: 10.0, 2: 11.0, 4: 9.0})
    assert pair.seeds == (1, 2) and pair.df == 1
    assert math.isclose(pair.mean, math.log(2))
    assert pair.se < 1e-12 and math.isclose(f.percent(pair.mean), 100.0)


def test_a_real_effect_holds_and_its_reverse_does_not():
    base = [50.0, 40.0, 45.0]  # seeds differ a lot; the pairing removes it
    worse = one(
        ONE_HEAD,
        {"A1": by_seed(np.multiply(base, [1.20, 1.22, 1.18])), "base": by_seed(base)},
    )
    assert worse["verdict"] == f.HOLDS
    (c,) = worse["comparisons"]
    assert c["interval_pct"][0] > 0 and math.isclose(c["difference_pct"], 20, abs_tol=0.2)
    better = one(
        ONE_HEAD,
        {"A1": by_seed(np.multiply(base, [0.80, 0.82, 0.78])), "base": by_seed(base)},
    )
    assert better["verdict"] == f.DOES_NOT_HOLD
    assert better["comparisons"][0]["interval_pct"][1] < 0


def test_no_effect_cannot_be_told():
    base = [50.0, 40.0, 45.0]
    noise = one(
        ONE_HEAD,
        {"A1": by_seed(np.multiply(base, [1.02, 0.97, 1.01])), "base": by_seed(base)},
    )
    assert noise["verdict"] == f.CANNOT_TELL
    low, high = noise["comparisons"][0]["interval_pct"]
    assert low < 0 < high


def test_missing_rows_and_single_seeds_cannot_be_told():
    missing = one(ONE_HEAD, {"base": by_seed([10.0, 11.0])})
    assert missing["verdict"] == f.CANNOT_TELL
    assert "A1" in missing["comparisons"][0]["reason"]
    single = one(ONE_HEAD, {"A1": {1: 20.0}, "base": {1: 10.0}})
    assert single["verdict"] == f.CANNOT_TELL
    assert "two common seeds" in single["comparisons"][0]["reason"]
    elsewhere = f.assess(
        [f.FINDINGS[4]], {"full": {"D1": {1: 9, 2: 9}, "base": {1: 10, 2: 10}}}
    )
    assert (
        elsewhere[0]["verdict"] == f.CANNOT_TELL
        and "small" in elsewhere[0]["comparisons"][0]["reason"]
    )


def test_tie_inside_the_margin_holds_and_far_outside_does_not():
    base = [50.0, 40.0, 45.0, 42.0]
    tie = one(
        TIE,
        {
            "E": by_seed(np.multiply(base, [1.001, 0.999, 1.0005, 1.0])),
            "base": by_seed(base),
        },
    )
    assert tie["verdict"] == f.HOLDS
    low, high = tie["comparisons"][0]["interval_pct"]
    assert -2 < low and high < 2
    apart = one(
        TIE,
        {
            "E": by_seed(np.multiply(base, [1.30, 1.31, 1.29, 1.30])),
            "base": by_seed(base),
        },
    )
    assert apart["verdict"] == f.DOES_NOT_HOLD
    assert apart["comparisons"][0]["interval_pct"][0] > 2
    # a difference of 1.5% +- 1.5%: neither inside nor outside the 2% margin for sure
    loose = one(
        TIE,
        {"E": by_seed(np.multiply(base, [1.0, 1.03, 1.0, 1.03])), "base": by_seed(base)},
    )
    assert loose["verdict"] == f.CANNOT_TELL


def test_a_finding_of_several_pairs_needs_them_all():
    base = by_seed([10.0, 11.0, 12.0])

    def scaled(r):
        return by_seed(np.multiply([10.0, 11.0, 12.0], [r, r * 1.01, r * 0.99]))

    good = {
        "C1": scaled(1.3),
        "C3": base,
        "C4": scaled(1.3),
        "C5": base,
        "C6": scaled(1.3),
        "C7": base,
    }
    assert one(BIGGER, good)["verdict"] == f.HOLDS
    mixed = {**good, "C1": scaled(0.7)}
    result = one(BIGGER, mixed)
    assert result["verdict"] == f.DOES_NOT_HOLD
    assert [c["verdict"] for c in result["comparisons"]] == [
        f.DOES_NOT_HOLD,
        f.HOLDS,
        f.HOLDS,
    ]
    assert one(BIGGER, {**good, "C7": scaled(1.3)})["verdict"] == f.CANNOT_TELL


def test_the_six_findings_are_one_family_of_eight_comparisons():
    rng = np.random.default_rng(0)
    runs = {row: by_seed(10 + rng.normal(0, 0.01, 3)) for row in f.finding_rows()}
    tenth = {
        row: by_seed(10 + rng.normal(0, 0.01, 3))
        for row in f.finding_rows(corpus="small")
    }
    result = f.assess(f.FINDINGS, {"full": runs, "small": tenth})
    levels = sorted(c["level"] for r in result for c in r["comparisons"])
    assert len(levels) == 8 and math.isclose(levels[0], 0.05 / 8)
    assert f.finding_rows(corpus="small") == ["D1", "base"]


def test_false_verdicts_are_rare_and_a_large_effect_is_found():
    rng = np.random.default_rng(1)
    decisive, found = 0, 0
    trials = 400
    for _ in range(trials):
        base = 40 * np.exp(rng.normal(0, 0.05, 3))
        same = base * np.exp(rng.normal(0, 0.02, 3))
        decisive += (
            one(ONE_HEAD, {"A1": by_seed(same), "base": by_seed(base)})["verdict"]
            != f.CANNOT_TELL
        )
        shifted = base * np.exp(
            0.2 + rng.normal(0, 0.02, 3)
        )  # 10 standard deviations of a pair
        found += (
            one(ONE_HEAD, {"A1": by_seed(shifted), "base": by_seed(base)})["verdict"]
            == f.HOLDS
        )
    assert decisive / trials < 0.09  # alpha = 0.05, with room for 400 trials' own noise
    assert found / trials > 0.9


def test_spearman_against_hand_computed_values():
    # ranks x: 1 2 3 4 5, y: 2 1 4 3 5 -> d^2 = 4 -> 1 - 6*4 / (5*24) = 0.8
    assert math.isclose(f.spearman([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]), 0.8)
    assert math.isclose(f.spearman([1, 2, 3], [3, 2, 1]), -1.0)
    # a tie: y ranks 1.5 1.5 3 -> Pearson of (1, 2, 3) and (1.5, 1.5, 3) = sqrt(3) / 2
    assert math.isclose(f.spearman([1, 2, 3], [5, 5, 9]), math.sqrt(3) / 2)


def test_spearman_bootstrap_interval():
    same = f.spearman_interval(range(13), range(13), samples=500)
    assert same["rho"] == 1.0 and same["low"] == same["high"] == 1.0
    rng = np.random.default_rng(2)
    unrelated = f.spearman_interval(rng.random(13), rng.random(13), samples=2000)
    assert unrelated["low"] < 0 < unrelated["high"]
    assert unrelated["samples"] + unrelated["dropped"] == 2000
    with pytest.raises(ValueError):
        f.spearman([1.0], [2.0])


def test_a_profile_that_trains_a_subset_reads_the_pairs_it_has():
    """C6/C7 left out (the cpu profile): bigger is better reads C1/C3 and C4/C5 alone, and the
    untrained pair neither joins the Holm family nor blocks the finding."""
    rng = np.random.default_rng(1)
    runs = {
        row: by_seed(10 + rng.normal(0, 0.01, 3))
        for row in f.finding_rows()
        if row not in ("C6", "C7")
    }
    runs |= {"C1": by_seed([13.0, 13.1, 12.9]), "C4": by_seed([13.0, 12.9, 13.2])}
    small = {row: by_seed(10 + rng.normal(0, 0.01, 3)) for row in ("D1", "base")}
    result = f.assess(f.FINDINGS, {"full": runs, "small": small})
    bigger = next(r for r in result if r["finding"] == "bigger is better")
    assert bigger["verdict"] == f.HOLDS
    untrained = [c for c in bigger["comparisons"] if not c["trained"]]
    assert [(c["first"], c["second"]) for c in untrained] == [("C6", "C7")]
    assert "not trained" in untrained[0]["reason"] and untrained[0]["level"] is None
    levels = sorted(c["level"] for r in result for c in r["comparisons"] if c["trained"])
    assert len(levels) == 7 and math.isclose(levels[0], 0.05 / 7)
    # a finding with no trained pair at all cannot be told, never holds by default
    alone = f.assess([ONE_HEAD], {"full": {"base": by_seed([10.0, 11.0, 12.0])}})[0]
    assert alone["verdict"] == f.CANNOT_TELL


# ------------------------------------------------------------------ the pooled (block) analysis
ROWS11 = ["base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E"]


def table(rng, effects=None, seeds=3, seed_sd=0.1, noise=0.03):
    """{row: {seed: ppl}} of 11 rows: shared seed effects (the batch order), row effects in log
    perplexity, independent noise per run."""
    effects = effects or {}
    blocks = rng.normal(0, seed_sd, seeds)
    return {
        row: by_seed(
            40 * np.exp(effects.get(row, 0.0) + blocks + rng.normal(0, noise, seeds))
        )
        for row in ROWS11
    }


def test_pooled_contrast_is_the_textbook_two_way_anova():
    rng = np.random.default_rng(3)
    runs = table(rng, {"B1": 0.1})
    y = np.log([[runs[r][s] for s in (1, 2, 3)] for r in ROWS11])
    residual = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    variance = (residual**2).sum() / ((11 - 1) * (3 - 1))
    model = f.BlockModel(runs)
    pair = model.contrast("B1", "base")
    assert model.df == 20 and pair.df == 20
    assert math.isclose(pair.mean, y[3].mean() - y[0].mean(), rel_tol=1e-9)
    assert math.isclose(pair.se, math.sqrt(2 * variance / 3), rel_tol=1e-9)
    assert math.isclose(model.fit.scale, variance, rel_tol=1e-9)


def test_two_rows_pooled_is_the_paired_analysis():
    runs = {"A1": by_seed([44.0, 41.0, 52.0]), "base": by_seed([40.0, 39.0, 45.0])}
    pooled, own = (
        f.BlockModel(runs).contrast("A1", "base"),
        f.paired(runs["A1"], runs["base"]),
    )
    assert pooled.df == own.df == 2
    assert math.isclose(pooled.mean, own.mean) and math.isclose(pooled.se, own.se)


def test_a_missing_run_leaves_an_unbalanced_table_that_still_fits():
    runs = table(np.random.default_rng(4))
    del runs["C3"][2]
    model = f.BlockModel(runs)
    assert model.df == 19
    pair = model.contrast("C1", "C3")
    assert pair.seeds == (1, 3) and math.isfinite(pair.se) and pair.se > 0


def test_pooling_finds_what_three_pairs_alone_cannot():
    # B1 10% worse in every seed, seeds far apart: two degrees of freedom cannot rule, twenty can.
    rng = np.random.default_rng(5)
    pooled = paired = 0
    trials = 100
    for _ in range(trials):
        runs = table(rng, {"B1": 0.1})
        family = {"full": runs}
        pooled += f.assess(f.FINDINGS[2:3], family)[0]["verdict"] == f.HOLDS
        paired += (
            f.assess(f.FINDINGS[2:3], family, method="paired")[0]["verdict"] == f.HOLDS
        )
    assert pooled / trials > 0.9 and paired / trials < 0.6


def test_false_verdicts_over_whole_tables_stay_below_alpha():
    # No row differs: over the whole family of the worse-kind findings, any verdict is false.
    rng = np.random.default_rng(6)
    worse = [x for x in f.FINDINGS if x.kind == "worse" and x.corpus == "full"]
    false = 0
    trials = 300
    for _ in range(trials):
        result = f.assess(worse, {"full": table(rng)})
        false += any(r["verdict"] != f.CANNOT_TELL for r in result)
    assert false / trials < 0.08  # familywise alpha 0.05, with room for 300 trials' noise


def test_an_effect_of_the_detectable_size_is_found_four_times_in_five():
    rng = np.random.default_rng(7)
    level = 0.05
    # The size from the true noise (0.03 a run), as `detectable` computes it from an estimate.
    truth = f.Contrast((1, 2, 3), 0.0, 0.03 * math.sqrt(2 / 3), 20)
    size = truth.detectable(level)
    found = 0
    trials = 1000
    for _ in range(trials):
        pair = f.BlockModel(table(rng, {"A1": size})).contrast("A1", "base")
        found += pair.p_above(0.0) < level / 2
    assert 0.74 < found / trials < 0.86


def test_assess_reports_the_detectable_difference_and_degrees_of_freedom():
    result = f.assess(f.FINDINGS, {"full": table(np.random.default_rng(8))})
    comparison = result[0]["comparisons"][0]
    assert comparison["df"] == 20 and result[0]["method"] == "pooled"
    assert comparison["detectable_pct"] > 0
