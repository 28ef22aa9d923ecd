"""Chapter 05's tables, as a reader sees them: reader-facing headers, intervals beside scores, and
one quantity a row where the values are long, so that every table fits the book's column.

The numbers come from `table2` (the run, the averaging sweep, the cost, the paper's recipe) and
from the chapter's decoding; the sentences that read them are in `sentences`, and the committed
runs the chapter shows are found by `record`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from .sentences import flops_text, plus_minus
from .table2 import (
    PAPER_RECIPE_FIELDS,
    FinishedRun,
    RecipeCheck,
    RecipeCost,
    RunCost,
)


def run_table(run: FinishedRun, folder: str, origin: str, name: str):
    """The finished run chapter 04 left, one quantity a row; `origin` says whose it is."""
    return pd.DataFrame(
        [
            ("run folder", f"{folder}/ ({origin})"),
            ("steps, stopped by", f"{run.steps:,}, {run.stopped_by.replace('_', ' ')}"),
            (
                "training time",
                f"{run.train_time_s:,.1f} s on {run.device} ({run.precision})",
            ),
            ("target tokens trained on", f"{run.target_tokens:,}"),
            ("snapshots kept", ", ".join(run.snapshots)),
        ],
        columns=["", f"profile {name}"],
    )


def cache_table(rows: Sequence[Mapping], sentences: int) -> pd.DataFrame:
    """Beam search's seconds with and without the key-value cache (`time_cache`'s rows)."""
    return pd.DataFrame(
        [
            {"decoder": r["decoder"], "seconds": r["seconds"], "sentences": sentences}
            for r in rows
        ]
    )


def decoding_table(decoded: Mapping[str, Mapping], intervals: Mapping, sentences: int):
    """Greedy decoding against beam search: sacreBLEU with its interval, the tokenized BLEU, the
    decoding time and the speed."""
    return pd.DataFrame(
        [
            {
                "decoding": name,
                "sacreBLEU ± 95%": plus_minus(s["sacrebleu"], intervals[name]["ci95"]),
                "tokenized BLEU": s["bleu_tokenized"],
                "decode seconds": s["decode_seconds"],
                "sentences per s": sentences / max(s["decode_seconds"], 0.05),
            }
            for name, s in decoded.items()
        ]
    )


DECODING_FORMATS = {
    "tokenized BLEU": "{:.2f}",
    "decode seconds": "{:.1f}",
    "sentences per s": "{:.1f}",
}


def agreement_table(run_scores: Mapping, same: bool, beamed: Mapping) -> pd.DataFrame:
    """The run's own results file beside this chapter's decoding of the same averaged model."""
    theirs = f"{run_scores['sacrebleu']:.2f}" if same else "another run's file, or none"
    return pd.DataFrame(
        [
            {"scored by": "pipeline.run (chapter 04)", "sacreBLEU": theirs},
            {"scored by": "this chapter", "sacreBLEU": f"{beamed['sacrebleu']:.2f}"},
        ]
    )


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """The averaging sweep (`sweep_frame`, on the validation split) with headers in words."""
    return pd.DataFrame(
        {
            "k": sweep.k,
            "snapshots": sweep.snapshots,
            "validation perplexity": sweep.ppl,
            "sacreBLEU ± 95%": [plus_minus(b, c) for b, c in zip(sweep.bleu, sweep.ci95)],
            "minus k = 1": sweep.minus_k1,
            "p against k = 1": sweep.p_value,
            # k = 1 is the reference itself: no comparison, shown as a dash
            "beyond the noise": [
                None if b is None or b != b else ("yes" if b else "no")
                for b in sweep.beyond_noise
            ],
        }
    )


SWEEP_FORMATS = {
    "validation perplexity": "{:.2f}",
    "minus k = 1": "{:+.2f}",
    "p against k = 1": "{:.3f}",
}


def bleu_table(sacre: Mapping, unsplit: Mapping, split: Mapping) -> pd.DataFrame:
    """The three BLEUs of the same outputs, each with the signature that defines it."""
    return pd.DataFrame(
        [
            {"BLEU": name, "score": s["score"], "signature": s["signature"]}
            for name, s in (
                ("sacreBLEU", sacre),
                ("tokenized, no compound splitting", unsplit),
                ("tokenized with compound splitting (the paper's)", split),
            )
        ]
    )


def compound_example(references: Sequence[str], tokenize, split) -> pd.DataFrame:
    """The first reference with a hyphen (else the first), as written, as 13a tokens, and with its
    compounds split: `tokenize` and `split` are the scorer's functions."""
    example = next((r for r in references if "-" in r), references[0])
    tokens = tokenize(example)
    return pd.DataFrame(
        [
            ("reference", example),
            ("13a tokens", tokens),
            ("compounds split", split(tokens)),
        ],
        columns=["", "one test reference"],
    )


def samples_table(sources, references, decoded: Mapping[str, Mapping], n: int = 6):
    """The first `n` sentences: source, reference, and each decoding's translation."""
    return pd.DataFrame(
        [
            {"source": sources[i], "reference": references[i]}
            | {name: scores["hypotheses"][i] for name, scores in decoded.items()}
            for i in range(min(n, len(sources)))
        ]
    )


def cost_table(cost: RunCost, name: str) -> pd.DataFrame:
    """The run's cost the paper's way, counted, and by the 6N rule, one quantity a row."""
    tokens = cost.target_tokens
    return pd.DataFrame(
        [
            ("sustained FLOP/s of the device", f"{cost.sustained:.3g} ({cost.how})"),
            (
                "the paper's way: time x devices x sustained FLOP/s",
                f"{cost.train_time_s:,.1f} s x 1 x {cost.sustained:.3g} = "
                f"{flops_text(cost.paper_way)}",
            ),
            (
                "counted: FLOPs per target token x target tokens",
                f"{cost.counted / tokens:,.0f} x {tokens:,} = {flops_text(cost.counted)}",
            ),
            (
                "6N rule: 6 x parameters x target tokens",
                f"6 x {cost.parameters:,} x {tokens:,} = {flops_text(cost.six_n)}",
            ),
            (
                "counted / paper's way (model FLOPs utilisation)",
                f"{cost.utilisation:.1%}",
            ),
        ],
        columns=["", f"profile {name}"],
    )


def table2_table(paper_points: pd.DataFrame, ours: pd.DataFrame, test_name: str):
    """The chart's points as a table: system, test set, which BLEU, the score and the cost."""
    both = pd.concat(
        [
            paper_points.assign(test_set="WMT14 newstest2014", kind="tokenized BLEU"),
            ours.assign(test_set=test_name, kind="sacreBLEU"),
        ],
        ignore_index=True,
    )
    ci95 = both["ci95"] if "ci95" in both else pd.Series(None, index=both.index)
    return pd.DataFrame(
        {
            "system": both.system,
            "test set": both.test_set,
            "BLEU": [
                f"{plus_minus(b, c, 2 if pd.notna(c) else 1)} ({kind})"
                for b, c, kind in zip(both.bleu, ci95, both.kind)
            ],
            "training FLOPs": [flops_text(x) for x in both.training_flops],
        }
    )


# What an unset field of the `paper` profile means, in words (a table cell never reads "None").
RECIPE_NONE_WORDS = {
    "peak_lr": "the paper's schedule (no peak set: d_model^-0.5 x the warm-up curve)",
    "max_steps": "no limit",
}
RECIPE_WORDS = {"precision": {"auto": "auto (bf16 or fp16 on a GPU, fp32 on a CPU)"}}


def recipe_value(name: str, value) -> str:
    """One field of a profile as a reader reads it: words for an unset field, "max_len 1024" for
    a dictionary of overrides, "0.9, 0.98" for a pair, yes or no for a switch."""
    if value is None:
        return RECIPE_NONE_WORDS.get(name, "none")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} {recipe_value(k, v)}" for k, v in value.items()) or "none"
    if isinstance(value, (tuple, list)):
        return ", ".join(recipe_value(name, v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return RECIPE_WORDS.get(name, {}).get(value, str(value))


def paper_recipe_table(paper_profile) -> pd.DataFrame:
    """The `paper` profile field by field (`recipe_value`'s words), and its model in one row."""
    c = paper_profile.model_config()
    rows = [
        (name, recipe_value(name, getattr(paper_profile, name)))
        for name in PAPER_RECIPE_FIELDS
    ]
    rows.append(
        (
            "model",
            f"{c.n_layers} layers, d_model {c.d_model}, d_ff {c.d_ff}, {c.n_heads} heads, "
            f"dropout {c.dropout}, label smoothing {c.label_smoothing}",
        )
    )
    return pd.DataFrame(rows, columns=["field", "paper profile"])


def recipe_cost_table(cost: RecipeCost) -> pd.DataFrame:
    """What the recipe costs, counted, beside Table 2's figure, and on one H100."""
    hours = cost.hours()
    rows = [
        (
            "mean source / target length (subwords + specials), WMT14 sample",
            f"{cost.mean_src:.1f} / {cost.mean_tgt:.1f}",
        ),
        (
            "training FLOPs per target token (base, counted)",
            f"{cost.counted / cost.tokens:,.0f}",
        ),
        (
            f"{cost.steps:,} steps x {PAPER_TARGET_TOKENS_PER_STEP:,} target tokens",
            f"{flops_text(cost.counted)} FLOPs counted",
        ),
        ("Table 2 (12 h x 8 P100 x 9.5 TFLOP/s)", f"{flops_text(cost.table2)} FLOPs"),
        (
            "implied P100 utilisation (counted / Table 2)",
            f"{cost.implied_utilisation:.0%}",
        ),
    ]
    rows += [
        (
            f"one H100 (bf16 peak {cost.h100_peak / 1e12:.0f} TFLOP/s) at {f:.1%} of peak, {how}",
            f"{hours[how]:.2f} GPU-hours",
        )
        for how, f in cost.fractions.items()
    ]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def recipe_log_table(check: RecipeCheck) -> pd.DataFrame:
    """The check's training log: step, loss, NLL, the learning rate the step used, target tokens so far."""
    return pd.DataFrame(check.log).rename(
        columns={"loss": "smoothed loss", "nll": "NLL", "lr": "learning rate",
                 "target_tokens": "target tokens so far"}
    )  # fmt: skip


RECIPE_LOG_FORMATS = {
    "smoothed loss": "{:.3f}",
    "NLL": "{:.3f}",
    "learning rate": "{:.2e}",
    "target tokens so far": "{:,}",
}


def paper_results_table(records: Mapping[str, Mapping]) -> pd.DataFrame | None:
    """The `paper` profile's committed results ({file: record}), or None when there are none."""
    from ...evaluation import results

    rows = [
        {
            "results file": f"paper/{name}.json",
            "tokenized BLEU": record["metrics"].get("bleu_tokenized"),
            "sacreBLEU": record["metrics"].get("sacrebleu"),
            "training FLOPs": record["metrics"].get("training_flops"),
            "measured": results.describe_provenance(record),
        }
        for name, record in records.items()
    ]
    return pd.DataFrame(rows) if rows else None
