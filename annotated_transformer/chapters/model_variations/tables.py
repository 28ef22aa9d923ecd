"""Chapter 06's bookkeeping: the tables it shows and the frames its charts and verdicts read.

Nothing here decides a verdict (that is `statistics` and `findings`) or writes a sentence
(`sentences`, with `phrases`): these functions turn the rows' configurations, the runs' curves and scores into
data frames with reader-facing column names, so that the chapter's cells stay a few lines each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ...evaluation import paper
from . import rows as variations
from . import sentences
from . import statistics as f
from . import verdicts as report


def change_words(change: Mapping) -> str:
    """What a row changes, in words: {"n_heads": 1, "d_k": 512, "d_v": 512} -> "1 head, keys and
    values of 512"; {} -> "nothing (base)"."""
    parts = []
    for field, value in change.items():
        if field == "n_layers":
            parts.append(f"{value} layer{'' if value == 1 else 's'}")
        elif field == "d_model":
            parts.append(f"width {value}")
        elif field == "d_ff":
            parts.append(f"feed-forward size {value}")
        elif field == "n_heads":
            parts.append(f"{value} head{'' if value == 1 else 's'}")
        elif field == "d_k" and change.get("d_v") == value:
            parts.append(f"keys and values of {value}")
        elif field == "d_v" and change.get("d_k") == value:
            continue
        elif field in ("d_k", "d_v"):
            parts.append(f"{'keys' if field == 'd_k' else 'values'} of {value}")
        elif field == "positional":
            parts.append(f"{value} positions")
        else:  # dropout, label smoothing
            parts.append(f"{field.replace('_', ' ')} {value:g}")
    return ", ".join(parts) or "nothing (base)"


def paper_changes(rows: Sequence[str]) -> pd.DataFrame:
    """Each row of the paper's Table 3 and what it changes from the paper's base."""
    return pd.DataFrame(
        {
            "row": list(rows),
            "what it changes from base": [
                change_words(variations.changes(r)) for r in rows
            ],
        }
    )


def row_names(scale: variations.VariationScale, rows: Sequence[str]) -> dict[str, str]:
    """{row: "C1 (1 layer)"}: each row with what it changes at this scale, for sentences."""
    return {
        r: r
        if r == "base"
        else f"{r} ({change_words(variations.scaled_changes(r, scale))})"
        for r in rows
    }


def parameters(
    scale: variations.VariationScale, rows: Sequence[str], vocab_size: int, max_len: int
) -> dict[str, int]:
    """{row: parameter count} of each row at this scale, embeddings shared as the runs share them."""
    from ...model.transformer import Transformer, count_parameters

    counts = {}
    for row in rows:
        config = scale.config(row, max_len=max_len)
        counts[row] = count_parameters(
            Transformer(config, vocab_size, vocab_size, share_embeddings=True)
        )
    return counts


def config_table(
    scale: variations.VariationScale, rows: Sequence[str], params: Mapping[str, int]
) -> pd.DataFrame:
    """Each row's configuration at this scale, its parameters and the paper's (millions); key and
    value sizes share a column ("32", or "16/32" where they differ)."""
    records = []
    for row in rows:
        c = scale.config(row)
        records.append(
            {
                "row": row,
                "layers": c.n_layers,
                "width": c.d_model,
                "feed-forward": c.d_ff,
                "heads": c.n_heads,
                "key / value size": f"{c.d_k}" if c.d_k == c.d_v else f"{c.d_k}/{c.d_v}",
                "dropout": c.dropout,
                "label smoothing": c.label_smoothing,
                "positions": c.positional,
                "params (M)": params[row] / 1e6,
                "paper (M)": paper.TABLE3[row].params_m,
            }
        )
    return pd.DataFrame(records)


def check_scaled(
    scale: variations.VariationScale, rows: Sequence[str], params: Mapping[str, int]
) -> None:
    """Raise AssertionError unless every row keeps what the paper's row does relative to base: no
    head narrower than `MIN_HEAD_DIM`, A1 one head as wide as the model, A2-A4 h * d_k = d_model,
    B1 and B2 the paper's share of base's key size, and parameters moving the paper's way."""
    base = scale.config("base")
    for row in rows:
        c = scale.config(row)
        assert min(c.d_k, c.d_v) >= variations.MIN_HEAD_DIM, row
        if row == "A1":
            assert c.n_heads == 1 and c.d_k == base.d_model, row
        if row in ("A2", "A3", "A4"):
            assert c.n_heads * c.d_k == base.d_model == c.d_model, row
        if row in ("B1", "B2"):
            ratio = variations.paper_config(row).d_k / variations.paper_config("base").d_k
            assert c.d_k == ratio * base.d_k, row
        theirs, base_theirs = paper.TABLE3[row].params_m, paper.TABLE3["base"].params_m
        if row != "base" and theirs is not None and theirs != base_theirs:
            assert (params[row] > params["base"]) == (theirs > base_theirs), row


# ------------------------------------------------------------------------------ the runs and plan
def plan_runs(
    rows: Sequence[str],
    seeds: Sequence[int],
    epochs: int,
    curve_points: int,
    overfit_rows: Sequence[str],
    overfit_epochs: int,
    overfit_pairs: int,
    cost=None,
) -> list[dict]:
    """Every (row, seed) on the whole corpus (with BLEU), and dropout's rows on the small corpus,
    dearest first by `cost(job)` (its training FLOPs) so that the last runs to finish are short."""
    plan = [
        dict(row=r, seed=s, epochs=epochs, curve_points=curve_points, bleu=True)
        for s in seeds
        for r in rows
    ]
    plan += [
        dict(
            row=r,
            seed=s,
            epochs=overfit_epochs,
            corpus="small",
            train_pairs=overfit_pairs,
            curve_points=overfit_epochs,
        )
        for s in seeds
        for r in overfit_rows
    ]
    return sorted(plan, key=lambda job: -cost(job)) if cost else plan


def curve_points(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run and curve point: row, seed, point index, nominal epoch and validation perplexity."""
    points = [
        dict(
            row=run.row,
            seed=run.seed,
            point=i,
            epoch=round(run.epochs * (i + 1) / len(run.curve), 3),
            ppl=point["ppl"],
        )
        for run in runs.itertuples()
        for i, point in enumerate(run.curve)
    ]
    return pd.DataFrame(points, columns=["row", "seed", "point", "epoch", "ppl"])


def mean_curve(points: pd.DataFrame) -> pd.DataFrame:
    """The geometric mean over seeds at each curve point (columns row, point, epoch, ppl)."""
    return (
        points.assign(log_ppl=np.log(points.ppl))
        .groupby(["row", "point", "epoch"], as_index=False)
        .log_ppl.mean()
        .assign(ppl=lambda d: np.exp(d.log_ppl))
    )


def per_epoch(curves: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """{row: [mean perplexity after epoch 1, 2, ...]} as a frame with columns row, epoch, ppl."""
    return pd.DataFrame(
        [
            dict(row=row, epoch=i + 1, ppl=ppl)
            for row, curve in curves.items()
            for i, ppl in enumerate(curve)
        ],
        columns=["row", "epoch", "ppl"],
    )


def ppl_at(points: pd.DataFrame, fraction: float, n_points: int) -> tuple[dict, float]:
    """`{row: {seed: ppl}}` at the curve point `fraction` of the way through, and its epoch."""
    part = points[points.point == max(0, round(n_points * fraction) - 1)]
    by_row = {
        row: {int(s): float(p) for s, p in zip(g.seed, g.ppl)}
        for row, g in part.groupby("row")
    }
    return by_row, float(part.epoch.iloc[0])


def live_budgets(
    full: pd.DataFrame,
    small: pd.DataFrame,
    fractions: Sequence[float],
    full_points: int,
    small_points: int,
    share: int,
) -> list[dict]:
    """The six findings read at each share of the runs' training (`fractions`), from the curve
    points of the whole corpus (`full`) and of dropout's small corpus (`small`): {"label",
    "full_epoch", "small_epoch", "findings"} per budget."""
    out = []
    for fraction in fractions:
        full_ppl, full_epoch = ppl_at(full, fraction, full_points)
        small_ppl, small_epoch = ppl_at(small, fraction, small_points)
        out.append(
            dict(
                label=report.budget_label(full_epoch, small_epoch, share),
                full_epoch=full_epoch,
                small_epoch=small_epoch,
                findings=f.assess(f.FINDINGS, {"full": full_ppl, "small": small_ppl}),
            )
        )
    return out


def order_changes(points: pd.DataFrame, first: str, second: str) -> list[float]:
    """The epochs at which the mean curves of `first` and `second` swap order."""
    curve = mean_curve(points[points.row.isin([first, second])])
    wide = curve.pivot(index="epoch", columns="row", values="ppl").sort_index()
    sign = np.sign(wide[first] - wide[second])
    return [float(e) for e, a, b in zip(wide.index[1:], sign[:-1], sign[1:]) if a != b]


def swaps(points_of: Mapping[str, pd.DataFrame]) -> list[tuple[str, str, list[float]]]:
    """(first, second, epochs at which they swap order) for every comparison whose rows both ran."""
    return [
        (a, b, order_changes(points_of[x.corpus], a, b))
        for x in f.FINDINGS
        for a, b in x.pairs
        if {a, b} <= set(points_of[x.corpus].row)
    ]


# ------------------------------------------------------------------------------ verdict tables
def short_label(budget: Mapping) -> str:
    """A budget as a column header: "1 epoch (dropout rows: 10 epochs)", the dropout rows' epochs
    being of their small share of the pairs."""
    n, m = budget["full_epoch"], budget["small_epoch"]
    return f"{n:g} epoch{'' if n == 1 else 's'} (dropout rows: {m:g} epoch{'' if m == 1 else 's'})"


def doubling_budgets(budgets: Sequence[Mapping]) -> list[Mapping]:
    """The budgets of 1, 2, 4, 8... full epochs and the last one: a verdict table with a column per
    epoch of a 12-epoch run is wider than the page, and doubling budgets show the trend."""
    if not budgets:
        return []
    kept = [b for b in budgets[:-1] if math.log2(b["full_epoch"]).is_integer()]
    return kept + [budgets[-1]]


def verdict_table(budgets: Sequence[Mapping]) -> pd.DataFrame:
    """Each finding's verdict at each budget (columns: the budgets' short labels)."""
    return pd.DataFrame(
        [
            {"finding": report.finding_name(x.name)}
            | {short_label(b): b["findings"][i]["verdict"] for b in budgets}
            for i, x in enumerate(f.FINDINGS)
        ]
    )


def comparison_cell(comparison: Mapping) -> str:
    """A comparison's verdict, change and interval at its Holm level: "holds: +14.8% (+5.6% to
    +24.7%, 99.0%)"."""
    c = comparison
    if not c["trained"]:
        return "not trained here"
    if c["difference_pct"] is None:
        return c["reason"]
    low, high = c["interval_pct"]
    level = 100 * (1 - c["level"])
    return f"{c['verdict']}: {c['difference_pct']:+.1f}% ({low:+.1f}% to {high:+.1f}%, {level:.1f}%)"


def comparison_table(budgets: Sequence[Mapping]) -> pd.DataFrame:
    """Every comparison at every budget: the verdict, change, interval and its confidence."""
    return pd.DataFrame(
        [
            {"finding": report.finding_name(x.name), "comparison": f"{a} vs {b}"}
            | {
                short_label(bud): comparison_cell(bud["findings"][i]["comparisons"][j])
                for bud in budgets
            }
            for i, x in enumerate(f.FINDINGS)
            for j, (a, b) in enumerate(x.pairs)
        ]
    )


# ------------------------------------------------------------------------------ beside Table 3
def bleu_tests(
    translations: Mapping[tuple[str, int], Sequence[str]],
    references: Sequence[str],
    seeds: Sequence[int],
    rows: Sequence[str],
) -> pd.DataFrame:
    """Per seed and row: BLEU, its 95% half-interval and whether it differs from base of the same
    seed beyond sacreBLEU's paired bootstrap noise (columns seed, row, bleu, ci95, exceeds_noise)."""
    from ...evaluation.scoring import paired_bootstrap

    order = ["base"] + [r for r in rows if r != "base"]
    return pd.DataFrame(
        [
            dict(seed=seed, row=row, **result)
            for seed in seeds
            for row, result in paired_bootstrap(
                {row: translations[row, seed] for row in order}, references
            ).items()
        ]
    )


def seed_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """The geometric mean of `values` and its Student-t interval over seeds (log scale)."""
    logs = np.log(np.asarray(values, dtype=float))
    half = (
        f.t_quantile(1 - (1 - confidence) / 2, len(logs) - 1)
        * logs.std(ddof=1)
        / math.sqrt(len(logs))
    )
    mean = logs.mean()
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def beside_table3(
    rows: Sequence[str],
    final_ppl: Mapping[str, Mapping[int, float]],
    tests: pd.DataFrame,
    params: Mapping[str, int],
) -> pd.DataFrame:
    """Per row: perplexity (geometric mean over seeds) and its interval, BLEU per seed and its
    difference from base, whether each seed's difference exceeds the noise, parameters, and the
    paper's perplexity, BLEU and parameters."""
    base_bleu = tests[tests.row == "base"].sort_values("seed").bleu.to_numpy()
    table = []
    for row in rows:
        ppl, low, high = seed_interval(list(final_ppl[row].values()))
        mine = tests[tests.row == row].sort_values("seed")
        minus = mine.bleu.to_numpy() - base_bleu
        table.append(
            dict(
                row=row,
                ppl=ppl,
                ppl_low=low,
                ppl_high=high,
                bleu=mine.bleu.mean(),
                bleu_seeds=mine.bleu.tolist(),
                bleu_ci95_seeds=mine.ci95.tolist(),
                bleu_minus_base=float(minus.mean()),
                bleu_minus_base_seeds=minus.tolist(),
                beyond=None
                if row == "base"
                else mine.exceeds_noise.astype(bool).tolist(),
                params=params[row],
                paper_ppl=paper.TABLE3[row].ppl,
                paper_bleu=paper.TABLE3[row].bleu,
                paper_params_m=paper.TABLE3[row].params_m,
            )
        )
    return pd.DataFrame(table)


def perplexity_table(table: pd.DataFrame) -> pd.DataFrame:
    """The perplexity half of "beside Table 3", with reader-facing headers, numbers as text."""
    return pd.DataFrame(
        {
            "row": table.row,
            "perplexity": [f"{p:.2f}" for p in table.ppl],
            "95% interval over seeds": [
                f"{lo:.2f} to {hi:.2f}" for lo, hi in zip(table.ppl_low, table.ppl_high)
            ],
            "the paper's": [f"{p:.2f}" for p in table.paper_ppl],
            "parameters (M)": [f"{p / 1e6:.2f}" for p in table.params],
            "the paper's (M)": [
                "" if p is None or pd.isna(p) else f"{p:.0f}"
                for p in table.paper_params_m
            ],
        }
    )


def bleu_table(table: pd.DataFrame) -> pd.DataFrame:
    """The BLEU half of "beside Table 3": the mean, each seed's score and 95% half-interval, in how
    many seeds the row differs from base beyond the noise, and the paper's."""
    return pd.DataFrame(
        {
            "row": table.row,
            "BLEU": [f"{b:.2f}" for b in table.bleu],
            "each seed (± 95%)": [
                ", ".join(f"{b:.2f} ± {c:.2f}" for b, c in zip(bs, cs))
                for bs, cs in zip(table.bleu_seeds, table.bleu_ci95_seeds)
            ],
            "beyond the noise of base": [
                "" if b is None else f"{sum(b)} of {len(b)} seeds" for b in table.beyond
            ],
            "the paper's": [f"{b:.1f}" for b in table.paper_bleu],
        }
    )


PPL, BLEU = "perplexity (lower is better)", "BLEU (higher is better)"


def differences(
    table: pd.DataFrame, final_ppl: Mapping[str, Mapping[int, float]]
) -> pd.DataFrame:
    """Each row's difference from base, ours beside the paper's: perplexity in percent (with the
    95% interval of the pooled block model that section 6.4's verdicts read, before Holm's
    correction; a row's own seeds alone give a far wider one, 1 degree of freedom with 2 seeds),
    BLEU in points (with the range over seeds; `faded` where a seed is within the noise of base).
    The frame `figures.table3_differences_chart` draws."""
    base = paper.TABLE3["base"]
    model = f.BlockModel(final_ppl)
    out = []
    for r in table.itertuples():
        if r.row == "base":
            continue
        pair = model.contrast(r.row, "base")
        low, high = pair.interval(0.95)
        out += [
            dict(
                row=r.row,
                metric=PPL,
                who="ours",
                diff=f.percent(pair.mean),
                low=f.percent(low),
                high=f.percent(high),
            ),
            dict(
                row=r.row,
                metric=PPL,
                who="paper",
                diff=100 * (r.paper_ppl / base.ppl - 1),
            ),
            dict(
                row=r.row,
                metric=BLEU,
                who="ours",
                diff=r.bleu_minus_base,
                faded=not all(r.beyond),
                low=min(r.bleu_minus_base_seeds),
                high=max(r.bleu_minus_base_seeds),
            ),
            dict(row=r.row, metric=BLEU, who="paper", diff=r.paper_bleu - base.bleu),
        ]
    return pd.DataFrame(out)


def extended_correlation(budget: Mapping) -> dict:
    """Spearman's correlation (with its bootstrap interval) of an extended-run budget's
    geometric-mean perplexities with the paper's, over the rows it trained."""
    ppl = budget["ppl"]["full"]
    rows = list(ppl)
    mean = [math.exp(np.mean(np.log(list(ppl[r].values())))) for r in rows]
    return f.spearman_interval(mean, [paper.TABLE3[r].ppl for r in rows])


# ------------------------------------------------------------------------------ cost
def table3_flops(
    profile_name: str,
    tokens_per_epoch: float,
    src_tgt: tuple[float, float],
    overfit_rows: Sequence[str],
) -> dict:
    """The training FLOPs of profile `profile_name`'s chapter 06: every row and seed on the whole
    corpus, and the overfitting runs on its small share."""
    from ...model import flops
    from ...profiles import get_profile

    p = get_profile(profile_name)
    t = p.book.table3
    s = variations.scale_of(p)
    vocab = t.vocab_size or p.vocab_size

    def per_token(row: str) -> float:
        return flops.training_flops_per_target_token(s.config(row), vocab, *src_tgt)

    rows_total = sum(per_token(r) for r in t.rows) * t.epochs
    overfit = sum(per_token(r) for r in overfit_rows) * t.overfit_epochs
    total = t.seeds * tokens_per_epoch * (rows_total + overfit / t.overfit_share)
    return dict(
        profile=profile_name,
        rows=len(t.rows),
        seeds=t.seeds,
        epochs=t.epochs,
        overfit_epochs=t.overfit_epochs,
        flops=total,
    )


def flops_table(budget: pd.DataFrame) -> pd.DataFrame:
    """The FLOPs arithmetic with reader-facing headers."""
    return pd.DataFrame(
        {
            "profile": budget.profile,
            "runs": [
                f"{r} rows × {s} seeds × {report.epochs_words(e)}, dropout's rows "
                f"{report.epochs_words(o)}"
                for r, s, e, o in zip(
                    budget.rows, budget.seeds, budget.epochs, budget.overfit_epochs
                )
            ],
            "training FLOPs": [f"{x:.1e}" for x in budget.flops],
            # the rate of every process together, and the FLOPs at that rate alone: a run's wall
            # time adds validation, start-up and waiting (section 6.7's sentence gives it)
            "FLOP/s, all processes": [f"{x:.1e}" for x in budget.flops_per_s],
            "minutes at that rate": [f"{x:.1f}" for x in budget.minutes],
            "measured on": budget["where"],  # (budget.where is the DataFrame method)
        }
    )


def flops_budget(
    profile_name: str,
    tokens_per_epoch: float,
    src_tgt: tuple[float, float],
    overfit_rows: Sequence[str],
    achieved: float,
    workers: int,
    train_pairs: int,
    gpu_record: Mapping | None = None,
) -> pd.DataFrame:
    """The FLOPs arithmetic of section 6.7: this profile's Table 3 (`table3_flops`) at the rate
    this run `achieved` per process times its `workers`, and, beside it unless this is the `gpu`
    profile, the `gpu` profile's at the rate its own recipe's run (`gpu_record`, the results
    record of that run, None when there is none) achieved; its corpus's mean lengths follow this
    corpus's from the tokens it trained on per epoch (`train_pairs`: this corpus's pairs). Columns
    profile, rows, seeds, epochs, overfit_epochs, flops, flops_per_s, where, minutes."""
    from ...evaluation.results import describe_provenance

    mean_src, mean_tgt = src_tgt
    rows = [
        table3_flops(profile_name, tokens_per_epoch, src_tgt, overfit_rows)
        | dict(
            flops_per_s=achieved * workers,
            where=f"this run, {workers} process{'es' * (workers != 1)}",
        )
    ]
    if gpu_record and profile_name != "gpu":
        g = gpu_record["metrics"]
        gpu_tokens = g["target_tokens"] / g["epochs"]
        gpu_lengths = (
            mean_src / mean_tgt * gpu_tokens / train_pairs,
            gpu_tokens / train_pairs,
        )
        rows.append(
            table3_flops("gpu", gpu_tokens, gpu_lengths, overfit_rows)
            | dict(
                flops_per_s=g["training_flops"] / g["train_time_s"],
                where="the gpu recipe's run: " + describe_provenance(gpu_record),
            )
        )
    budget = pd.DataFrame(rows)
    budget["minutes"] = budget.flops / budget.flops_per_s / 60
    return budget


# ------------------------------------------------------------------------------ the findings said
def by_point(mean: pd.DataFrame) -> dict[str, list[float]]:
    """{row: its mean curve's perplexities in the order of its points} (`mean_curve`'s frame)."""
    return {row: list(g.sort_values("point").ppl) for row, g in mean.groupby("row")}


def findings_said(
    budgets: Sequence[Mapping],
    small_mean: pd.DataFrame,
    full_mean: pd.DataFrame,
    extended_run: Mapping | None = None,
    extended_budgets: Sequence[Mapping] = (),
) -> tuple[list[dict], list[dict]]:
    """The runs `sentences.conclusion` puts in words, and a note per finding and run: this run's
    longest budget ("this run") and, with a committed extended run, its longest ("the extended
    run"); for each, whether dropout's rows had begun to overfit (D1 and base on the small
    corpus) and whether the deeper C3 had overtaken C1."""
    said = [dict(name="this run", **budgets[-1])]
    notes = [
        {
            "dropout helps": sentences.overfit_note(by_point(small_mean), ("D1", "base")),
            "bigger is better": sentences.overtake_note(
                by_point(full_mean), "C1", "C3", sorted(full_mean.epoch.unique())
            ),
        }
    ]
    if extended_budgets:
        last = extended_budgets[-1]
        said.append(dict(name="the extended run", **last))
        small = report.mean_curves(extended_run, "small")
        small = {r: c[: last["small_epoch"]] for r, c in small.items()}
        notes.append(
            {
                "dropout helps": sentences.overfit_note(small, ("D1", "base")),
                "bigger is better": sentences.overtake_note(
                    report.mean_curves(extended_run), "C1", "C3"
                ),
            }
        )
    return said, notes
