"""Chapter 06's sentences about its run and its tables: each sentence changes with the numbers it
is made from, and the tables carry reader-facing headers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotated_transformer.chapters.model_variations import findings, tables
from annotated_transformer.chapters.model_variations import rows as variations
from annotated_transformer.chapters.model_variations import sentences as say
from annotated_transformer.chapters.model_variations import statistics as f


def test_the_plan_is_said_in_words():
    text = say.describe_plan(
        "cpu", ["base", "A1"], 2, 1, ["base", "D1"], 10, 20, (8, 2, 4), "cpu"
    )
    assert "trains 2 rows (base and A1), each with 2 seeds for 1 epoch" in text
    assert "base and D1 for 10 epochs of a twentieth of it" in text
    assert "divided by 8, every depth by 2 and every head count by 4" in text
    assert "with 1 seed for 2 epochs" in say.describe_plan(
        "x", ["base"], 1, 2, [], 1, 2, (1, 1, 1), "cpu"
    )


def test_rows_left_out_are_named_with_what_they_cost():
    everything = ["base", "A1", "B1", "C6"]
    assert findings.rows_trained(everything, everything, ["base", "A1"]) is None
    assert say.describe_rows_trained(everything, everything, ["base", "A1"]) == ""
    some = findings.rows_trained(["base", "A1", "C6"], everything, ["base", "A1", "B1"])
    assert some == findings.RowsTrained(3, 4, ("B1",), (), ("C6",))
    two = findings.rows_trained(["base"], everything, ["base", "A1", "B1"])
    assert (two.unread, two.others, two.extra) == (("A1", "B1"), ("C6",), ())
    said = say.describe_rows_trained(["base"], everything, ["base", "A1", "B1"])
    assert "leaves out A1 and B1, so the comparisons that need them are skipped" in said
    assert "It also leaves out C6;" in said
    enough = say.describe_rows_trained(["base", "A1"], everything, ["base", "A1"])
    assert enough.startswith(
        "This profile trains 2 of the 4 rows, every row the six findings compare on the "
        "whole corpus. It leaves out B1 and C6;"
    )


def _grid(c3_at_best):
    return pd.DataFrame(
        {"base": [20.0, 22.0], "C1": [25.0, 26.0], "C3": [c3_at_best, 24.0]},
        index=["200:0.004", "800:0.002"],
    )


def test_the_whole_epoch_grid_says_whether_depth_helps_in_pre_norm():
    record = {"provenance": {"device_name": "a CPU", "date": "2025-01-01"}}
    grid = _grid(30.0)
    pre = {"base": 18.0, "C1": 24.0, "C3": 17.0}
    found = findings.whole_epoch(grid, pre, "200:0.004")
    assert (found.deeper, found.base_deeper, found.base_best_at) == (
        ("800:0.002",),
        22.0,
        "200:0.004",
    )
    assert found.pre_norm_deeper_helps and (found.base, found.c3) == (20.0, 30.0)
    text = say.describe_whole_epoch(grid, pre, "200:0.004", record)
    assert "Only 800:0.002 ends C3 no worse than C1, with base at 22.0" in text
    assert "the deepest stack ends below the one-layer one" in text
    assert text.endswith("(measured on a CPU on 2025-01-01).")
    text = say.describe_whole_epoch(
        _grid(30.0).assign(C3=[30.0, 30.0]), pre | {"C3": 25.0}, "200:0.004", record
    )
    assert "No candidate ends C3 no worse than C1" in text
    assert "Depth does not help there either" in text


def test_training_time_is_said_from_the_runs():
    runs = pd.DataFrame(
        {
            "corpus": ["full", "full", "small"],
            "train_s": [60.0, 90.0, 30.0],
            "eval_s": [10.0, 20.0, 0.0],
        }
    )
    found = findings.training(runs, 120.0, 2)
    assert (found.runs, found.minutes, found.shortest_s, found.longest_s) == (
        3,
        2,
        60,
        90,
    )
    assert (found.mean_eval_s, found.at_once) == (15.0, 210 / 120)
    text = say.describe_training(runs, 120.0, 2)
    assert text.startswith("3 runs in 2.0 minutes on 2 processes")


def _small(curves):
    return pd.DataFrame(
        [
            dict(row=row, point=i, epoch=i + 1, ppl=p)
            for row, curve in curves.items()
            for i, p in enumerate(curve)
        ]
    )


def test_a_curve_has_begun_to_overfit_only_once_it_rose_from_its_lowest():
    ends = findings.overfitting(
        _small({"base": [9, 8, 7], "D1": [9, 6, 7.5]}),
        {"base": 0.1, "D1": 0.0, "D2": 0.2},
    )
    assert [(e.row, e.still_falling) for e in ends] == [("base", True), ("D1", False)]
    d1 = ends[1]
    assert (d1.low_epoch, d1.low_ppl, d1.end_ppl, d1.rise_pct) == (2, 6.0, 7.5, 25.0)


def test_overfitting_is_said_only_where_a_curve_rose():
    falling = say.describe_overfitting(_small({"base": [9, 8, 7]}), {"base": 0.1})
    assert "still falling at its last epoch (7.0)" in falling
    assert falling.endswith("No row has begun to overfit at this budget.")
    rising = say.describe_overfitting(
        _small({"base": [9, 8, 7], "D1": [9, 6, 7.5]}), {"base": 0.1, "D1": 0.0}
    )
    assert "D1 (dropout 0) is lowest at epoch 2 (6.0) and ends 25.0% above that" in rising
    assert rising.endswith("D1 has begun to overfit.")
    both = say.describe_overfitting(
        _small({"base": [9, 6, 7], "D1": [9, 6, 7.5]}), {"base": 0.1, "D1": 0.0}
    )
    assert both.endswith(". Base and D1 have begun to overfit.")  # a sentence's capital


def _runs(effects, seeds=(1, 2, 3)):
    rng = np.random.default_rng(0)
    rows = ["base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "E"]
    return {
        r: {s: float(30 * np.exp(effects.get(r, 0) + rng.normal(0, 0.01))) for s in seeds}
        for r in rows
    }


def test_the_budgets_say_which_verdicts_moved():
    early = {"label": "0.5 epochs", "findings": f.assess(f.FINDINGS, {"full": _runs({})})}
    late = {
        "label": "1 epoch",
        "findings": f.assess(f.FINDINGS, {"full": _runs({"A1": 0.3})}),
    }
    found = findings.budgets([early, late], 2.0)
    assert found.changed == ("one head is worse",) and found.label == "1 epoch"
    assert dict(found.counts)[f.HOLDS] == 1 and sum(n for _, n in found.counts) == 6
    assert findings.budgets([late, late], 2.0).changed == ()
    text = say.describe_budgets([early, late], 2.0)
    assert "At the longest budget (1 epoch): 1 holds, 0 do not hold" in text
    assert text.endswith("Verdicts that change between the budgets: one head is worse.")
    assert "No verdict changes" in say.describe_budgets([late, late], 2.0)


def test_swaps_and_the_price_of_three_looks():
    swaps = [("C1", "C3", [0.5]), ("A1", "base", [])]
    assert findings.swapped(swaps) == (("C1", "C3", (0.5,)),)
    text = say.describe_swaps([("C1", "C3", [0.5]), ("A1", "base", [])], 7)
    assert text.startswith(
        "Rows that swap order during training: C1 and C3 in epoch 0.5."
    )
    assert "its own 7 comparisons" in text
    assert say.describe_swaps([("A1", "base", [])], 7).startswith(
        "No comparison's rows swap"
    )


def test_extended_progress_says_whether_the_run_is_short_of_its_target():
    short = say.describe_extended_progress(6, 8, "2025-02-03T10:00", "a CPU", "")
    assert "6 of the run's 8 epochs (short of its target" in short
    assert "short of" not in say.describe_extended_progress(
        8, 8, "2025-02-03", "a CPU", ""
    )


def test_bleu_differences_are_weighed_against_chance():
    tests = pd.DataFrame(
        {
            "row": ["base", "A1", "base", "A1"],
            "bleu": [10.0, 9.0, 11.0, 8.5],
            "ci95": [0.5, 0.6, 0.5, 0.7],
            "exceeds_noise": [False, False, False, False],
        }
    )
    found = findings.bleu(tests, 1014)
    assert (found.low, found.high, found.ci_low, found.ci_high) == (8.5, 11.0, 0.5, 0.7)
    assert (found.compared, found.beyond, found.expected) == (2, 0, 0.1)
    assert not found.separates
    loud_found = findings.bleu(tests.assign(exceeds_noise=[False, True, False, True]), 1)
    assert loud_found.beyond == 2 and loud_found.separates
    quiet = say.describe_bleu(tests, 1014)
    assert "between 8.50 and 11.00" in quiet and "0 exceed the resampling noise" in quiet
    assert quiet.endswith("BLEU does not separate the rows from base.")
    loud = say.describe_bleu(tests.assign(exceeds_noise=[False, True, False, True]), 1014)
    assert "2 exceed" in loud and "does not separate" not in loud


def test_flops_mention_the_gpu_only_when_measured():
    alone = say.describe_flops(1.5e15, 12.0, 3e9, None)
    assert (
        alone
        == "This run trained 1.50e+15 FLOPs in 12.0 minutes of wall time, 3.00e+09 FLOP/s per process."
    )
    gpu = {"rows": 20, "seeds": 3, "epochs": 4, "flops": 2e17, "minutes": 42.0}
    assert (
        "(20 rows × 3 seeds × 4 epochs, and the overfitting runs) comes to 2.00e+17 FLOPs, about 42 minutes"
        in say.describe_flops(1.5e15, 12.0, 3e9, gpu)
    )


def test_rows_are_named_by_what_they_change():
    scale = variations.VariationScale(8, 2, 4)
    names = tables.row_names(scale, ["base", "A1", "C1", "E", "D1"])
    assert names["base"] == "base"
    assert names["C1"] == "C1 (1 layer)"
    assert names["E"] == "E (learned positions)"
    assert names["D1"] == "D1 (dropout 0)"
    assert names["A1"].startswith("A1 (1 head, keys and values of")
    assert tables.change_words({}) == "nothing (base)"
    assert tables.change_words({"d_k": 16, "d_v": 32}) == "keys of 16, values of 32"


def test_tables_have_reader_facing_headers():
    scale = variations.VariationScale(8, 2, 4)
    rows = ["base", "A1", "C1"]
    params = {"base": 2_000_000, "A1": 2_000_000, "C1": 1_000_000}
    config = tables.config_table(scale, rows, params)
    headers = list(config.columns) + list(tables.paper_changes(rows).columns)
    assert all("_" not in h for h in headers), headers
    tables.check_scaled(scale, rows, params)
    with pytest.raises(AssertionError):
        tables.check_scaled(scale, rows, params | {"C1": 3_000_000})  # C1 must be smaller


def test_comparison_cells_are_short_and_say_the_verdict():
    found = f.assess(f.FINDINGS, {"full": _runs({"A1": 0.3})})
    budget = {"full_epoch": 1, "small_epoch": 10, "findings": found}
    table = tables.comparison_table([budget])
    assert list(table.columns) == [
        "finding",
        "comparison",
        "1 epoch (dropout rows: 10 epochs)",
    ]
    cell = table.iloc[0, 2]
    assert cell.startswith("holds: +3") and "% to +" in cell
    assert table[table.comparison == "C6 vs C7"].iloc[0, 2] == "not trained here"
    assert tables.verdict_table([budget]).finding.tolist()[2] == "Small keys hurt"


def test_the_flops_table_says_its_runs_in_words():
    budget = pd.DataFrame(
        dict(
            profile=["cpu"],
            rows=[11],
            seeds=[2],
            epochs=[1],
            overfit_epochs=[10],
            flops=[1.23e15],
            flops_per_s=[3e9],
            minutes=[6.8],
            where=["this run"],
        )
    )
    table = tables.flops_table(budget)
    assert table.runs[0] == "11 rows × 2 seeds × 1 epoch, dropout's rows 10 epochs"
    assert all("_" not in c for c in table.columns)
    assert table["measured on"].tolist() == [
        "this run"
    ]  # the column, not DataFrame.where


def test_the_extended_verdict_table_keeps_doubling_budgets_and_the_last():
    from annotated_transformer.chapters.model_variations import tables as table3_tables

    def budgets(n):
        return [{"full_epoch": float(e), "small_epoch": 3.0 * e} for e in range(1, n + 1)]

    assert [b["full_epoch"] for b in table3_tables.doubling_budgets(budgets(12))] == [
        1,
        2,
        4,
        8,
        12,
    ]
    assert [b["full_epoch"] for b in table3_tables.doubling_budgets(budgets(8))] == [
        1,
        2,
        4,
        8,
    ]
    assert [b["full_epoch"] for b in table3_tables.doubling_budgets(budgets(1))] == [1]
    assert table3_tables.doubling_budgets([]) == []


def test_calibration_sentence_names_the_choice_then_how():
    record = {
        "metrics": {
            "share_of_epoch": 0.5,
            "chosen": "200:4e-3",
            "rule": "the lowest of base",
        },
        "provenance": {
            "device_name": "AMD EPYC",
            "date": "2026-11-24",
            "git_commit": "e14a79c0",
        },
    }
    text = say.describe_calibration(record, 200, 4e-3, 1024)
    assert (
        "The calibration chose **200:4e-3** (measured on AMD EPYC on 2026-11-24 at commit "
        "e14a79c); how it chose: the lowest of base. This profile trains every row with 200 "
        "warm-up steps and a peak rate of 0.004, on batches of 1,024 tokens."
    ) in text
    assert text.startswith("Validation perplexity after 0.5 of an epoch for each")
    record["metrics"]["share_of_epoch"] = 2.0  # whole epochs from 1 up
    text = say.describe_calibration(record, 200, 4e-3, 1024)
    assert text.startswith("Validation perplexity after 2 epochs for each")
    record["metrics"]["share_of_epoch"] = 1
    assert "after 1 epoch for each" in say.describe_calibration(record, 200, 4e-3, 1024)


def _extended_document(profile, rows, seeds=(1, 2, 3), full=12, small=80):
    jobs = [
        {"row": r, "seed": s, "corpus": "full", "curve": []} for r in rows for s in seeds
    ] + [{"row": "D1", "seed": s, "corpus": "small", "curve": []} for s in seeds]
    return {
        "identity": {"profile": profile},
        "targets": {"full": full, "small": small},
        "jobs": jobs,
    }


def _parsed(command: str):
    """The command as the shell would split it, parsed by the table3 command's own options."""
    import argparse
    import shlex

    from annotated_transformer.commands import table3

    words = shlex.split(command.replace("\\\n", " "))
    assert words[:4] == ["python", "-m", "annotated_transformer", "table3"]
    parser = argparse.ArgumentParser(exit_on_error=False)
    table3.add_arguments(parser)
    return parser.parse_args(words[4:])


def test_the_extended_plan_names_the_rows_it_adds_and_the_command_that_made_it():
    from annotated_transformer.chapters.model_variations import extended

    thirteen = extended.extended_rows()
    live = [r for r in thirteen if r not in ("C6", "C7")]
    found = findings.extended_plan(live, 1, _extended_document("cpu", thirteen))
    assert (found.added, found.missing, found.epochs, found.small_epochs) == (
        ("C6", "C7"),
        (),
        12,
        80,
    )
    assert found.committed and found.rows == tuple(thirteen)
    text = say.describe_extended_plan(live, 1, _extended_document("cpu", thirteen), "cpu")
    assert "live run trained its rows for 1 epoch" in text
    assert "the same rows plus C6 and C7, which the live run leaves out" in text
    assert (
        "toward 12 epochs of the whole corpus and 80 epochs of dropout's small one"
        in text
    )
    assert "The command that made it:" in text
    command = text.split("```bash\n")[1].split("\n```")[0]
    args = _parsed(command)
    assert (args.profile, args.epochs, args.small_epochs) == ("cpu", 12, 80)
    assert args.seeds == [1, 2, 3] and args.rows is None  # the thirteen: the default
    assert args.export == "results/table3_extended_cpu/runs.json"
    assert all(len(line) <= 90 for line in command.splitlines())


def test_a_gpu_plan_with_all_rows_and_none_committed_gives_a_command_for_all_of_them():
    from annotated_transformer.model.config import TABLE3_ALL_ROWS

    everything = list(TABLE3_ALL_ROWS)
    none = findings.extended_plan(everything, 3, None)
    assert (none.epochs, none.small_epochs, none.committed) == (12, None, False)
    assert findings.extended_plan(everything, 20, None).epochs == 80
    assert findings.extended_plan(everything, 0.5, None).epochs == 8  # the default
    text = say.describe_extended_plan(everything, 3, None, "gpu")
    assert "for 3 epochs" in text and "leaves out" not in text and "except" not in text
    assert (
        "toward 12 epochs" in text
    )  # four times the live run's, more than the default 8
    assert "none is committed for the `gpu` profile yet" in text
    assert "results are committed" not in text
    args = _parsed(text.split("```bash\n")[1].split("\n```")[0])
    assert args.profile == "gpu" and args.rows == everything and args.epochs == 12
    # a long live run still gets a command for more epochs than it trained
    assert "toward 80 epochs" in say.describe_extended_plan(everything, 20, None, "paper")
    # a committed run of fewer rows than the live run says which it lacks
    fewer = say.describe_extended_plan(
        everything, 3, _extended_document("gpu", everything[:-1]), "gpu"
    )
    assert "the same rows except big," in fewer
