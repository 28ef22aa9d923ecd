"""Chapter 07's tables (with reader-facing headers), charts and the test decodings of a trained
parser.

The sentences are in `sentences`; the training in `curve`; the results record and the committed
extended run (`extended.export`'s ``curves.json`` and `extended.score_test`'s ``test.json``) in
`record`.
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import pandas as pd
from nltk import Tree

from .curve import best_point, extended_summary, sentence_share
from .linearization import linearize
from .phrases import XX_VARIANT, interval, search_words, share_words
from .scoring import EVALB_CUTOFF
from .search import PAPER_BEAM, ParseRun, choose_search
from .training import report_parser

LE40 = f"F1, ≤{EVALB_CUTOFF} words"
WIDTH = 88  # characters of a printed line that fit the page's column


def wrapped(label: str, text: str, width: int = WIDTH) -> str:
    """`label` then `text`, wrapped at `width` with the continuation lines indented under it."""
    indent = " " * len(label)
    return textwrap.fill(
        text,
        width,
        initial_indent=label,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


# ----------------------------------------------------------------------------------- the data
def split_table(
    splits: Mapping[str, Sequence[Tree]], files: Mapping[str, list]
) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "split": name,
                "files": len(files[name]),
                "first file": files[name][0],
                "last file": files[name][-1],
                "trees": f"{len(trees):,}",
                "words": f"{sum(len(t.leaves()) for t in trees):,}",
            }
            for name, trees in splits.items()
        ]
    )


def model_table(config, paper, *, vocabulary: str, paper_vocabulary: str, trees: str,
                paper_trees: str, epochs: int) -> pd.DataFrame:  # fmt: skip
    """Our parser's configuration beside the paper's (`preset("parsing")`), as text."""
    rows = [
        ("layers (encoder and decoder)", config.n_layers, paper.n_layers),
        ("d_model", config.d_model, paper.d_model),
        ("d_ff", config.d_ff, paper.d_ff),
        ("heads", config.n_heads, paper.n_heads),
        ("dropout", config.dropout, paper.dropout),
        ("vocabulary", vocabulary, paper_vocabulary),
        ("training trees", trees, paper_trees),
        ("epochs", epochs, "not stated"),
    ]
    return pd.DataFrame(rows, columns=["setting", "ours", "paper"]).astype(str)


def mean_lengths(trees: Sequence[Tree]) -> tuple[float, float]:
    """(linearized symbols, words) a tree, on average."""
    return (
        statistics.mean(len(linearize(t).split()) for t in trees),
        statistics.mean(len(t.leaves()) for t in trees),
    )


# ------------------------------------------------------------------------------------ the curves
def run_label(run) -> str:
    """A live run's name in charts and tables."""
    if not run.tags:
        return f"{XX_VARIANT}, all the files"
    return f"{share_words(run.share)} of the files ({run.train_trees:,} trees)"


def live_points(
    runs: Mapping[float, object], variant
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(dev F1 by snapshot, dev loss by epoch) of the live runs, tags parser first."""
    ordered = [runs[s] for s in sorted(runs)] + [variant]
    f1 = [
        dict(run=run_label(r), epoch=p["epochs"], f1=p["f1"])
        for r in ordered
        for p in r.dev_f1
    ]
    loss = [
        dict(run=run_label(r), epoch=p["epochs"], nll=p["nll"])
        for r in ordered
        for p in r.dev_loss
    ]
    return pd.DataFrame(f1), pd.DataFrame(loss)


def extended_points(document: Mapping) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(
                run=f"{share_words(job['share'])} of the files ({job['train_trees']:,} trees)",
                epoch=p["epoch"],
                f1=p["f1"],
            )
            for job in sorted(document["jobs"], key=lambda j: j["share"])
            for p in job["curve"]
        ]
    )


def by_trees(
    runs: Mapping[float, object],
    document: Mapping | None,
    d_model: int,
    test: Mapping | None = None,
) -> pd.DataFrame:
    """Best dev F1 against training trees: the live shares, and the extended run's; with `test`
    (its test scores), the test F1 of each scored share beside them."""
    rows = [
        dict(
            run=f"this run (d_model {d_model})",
            trees=r.train_trees,
            f1=best_point(r.dev_f1)[0],
        )
        for _, r in sorted(runs.items())
    ]
    if document:
        rows += [
            dict(
                run=f"extended run (d_model {document['recipe']['d_model']})",
                trees=r["trees"],
                f1=r["best"],
            )
            for r in extended_summary(document)
        ]
        rows += [
            dict(
                run=f"extended run, test F1 (chosen on dev; d_model "
                f"{document['recipe']['d_model']})",
                trees=r["trees"],
                f1=r["test"]["test"]["f1"],
            )
            for r in extended_summary(document, test)
            if r["test"]
        ]
    return pd.DataFrame(rows)


def live_table(runs: Mapping[float, object], variant) -> pd.DataFrame:
    rows = []
    for r in [runs[s] for s in sorted(runs)] + [variant]:
        f1, at = best_point(r.dev_f1)
        rows.append(
            {
                "run": run_label(r),
                "epochs": f"{r.epochs:g}",
                "steps": f"{r.steps:,}",
                "seconds": f"{r.seconds:.0f}",
                "best dev F1": f"{f1:.1f}",
                "at epoch": f"{at:g}",
                "last dev F1": f"{r.dev_f1[-1]['f1']:.1f}",
                "last dev loss": f"{r.dev_loss[-1]['nll']:.3f}" if r.dev_loss else "",
            }
        )
    return pd.DataFrame(rows)


def _chosen_cell(job: Mapping | None) -> str:
    if not job:
        return ""
    chosen = job["chosen_on_dev"]
    model = "average" if chosen["snapshot"].endswith("average.pt") else "best epoch"
    return f"{model} (epoch {chosen['epoch']}), {search_words(chosen['beam_size'])}"


def extended_table(document: Mapping, test: Mapping | None = None) -> pd.DataFrame:
    """The extended run by share; `test` (its test scores, None before they exist) adds the test
    F1 with its interval and the model and search dev chose."""
    return pd.DataFrame(
        [
            {
                "share of the files": share_words(r["share"]),
                "trees": f"{r['trees']:,}",
                "epochs": r["epochs"],
                "best dev F1": f"{r['best']:.1f}",
                "at epoch": r["at"],
                "last dev F1": f"{r['last']:.1f}",
                "stopped rising": "yes" if r["stopped"] else "not yet",
                "chosen on dev": _chosen_cell(r["test"]),
                "test F1 [95% interval]": (
                    f"{r['test']['test']['f1']:.1f} {interval(r['test']['test']['f1_ci95'])}"
                    if r["test"]
                    else "not scored yet"
                ),
                f"test {LE40}": f"{r['test']['test']['f1_le40']:.1f}"
                if r["test"]
                else "",
            }
            for r in extended_summary(document, test)
        ]
    )


PAD = 0.05  # of an axis's span: the room left beyond the data at each end


def padded(values, *, log: bool = False, from_zero: bool = False) -> list[float]:
    """An axis domain `PAD` of the data's span beyond its ends (on a log axis, of the span of its
    logarithms), so that no line or point lies on the frame; `from_zero` starts it at 0."""
    low, high = float(min(values)), float(max(values))
    if log:
        ratio = (high / low) ** PAD if high > low else 1.25
        return [low / ratio, high * ratio]
    pad = (high - low) * PAD if high > low else max(abs(high) * PAD, 0.5)
    return [0.0 if from_zero else low - pad, high + pad]


def _scale(domain: list[float], log: bool = False) -> alt.Scale:
    return alt.Scale(domain=domain, nice=False, **({"type": "log"} if log else {}))


def _f1_panel(
    points: pd.DataFrame,
    floors: pd.DataFrame,
    x: str,
    heading: str,
    y_title: str = "dev F1 (greedy, constrained)",
    x_title: str = "epochs",
    log_x: bool = False,
):
    """F1 against `x`, the floors as dashed rules, both axes a little beyond the data."""
    f1 = list(points.f1) + list(floors.f1)
    y_scale = _scale(padded(f1, from_zero=True))
    lines = (
        alt.Chart(points)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                f"{x}:Q",
                title=x_title,
                scale=_scale(padded(points[x], log=log_x), log_x),
                # on a log axis, ticks at the sizes measured (its own ticks crowd)
                axis=alt.Axis(values=sorted(set(points[x])), format=",")
                if log_x
                else alt.Undefined,
            ),
            y=alt.Y("f1:Q", title=y_title, scale=y_scale),
            color=alt.Color("run:N", title=None, sort=None),
            tooltip=["run", x, alt.Tooltip("f1:Q", format=".1f")],
        )
    )
    rules = (
        alt.Chart(floors)
        .mark_rule(strokeDash=[4, 3], color="gray")
        .encode(
            y=alt.Y("f1:Q", scale=y_scale),
            tooltip=["floor", alt.Tooltip("f1:Q", format=".1f")],
        )
    )
    return (lines + rules).properties(width=250, height=190, title=heading)


def curve_charts(
    live_f1: pd.DataFrame,
    live_loss: pd.DataFrame,
    extended: pd.DataFrame | None,
    trees: pd.DataFrame,
    floors: Mapping[str, float],
) -> alt.VConcatChart:
    """Four panels, two a row, one legend under them: the live run and the extended run by epoch,
    best dev F1 by training trees, and the live run's dev loss. Dashed lines: the floors. Every
    axis ends a little beyond its data (`padded`), so no curve or point is cut at the frame."""
    rules = pd.DataFrame([dict(floor=k, f1=v) for k, v in floors.items()])
    top = [_f1_panel(live_f1, rules, "epoch", "This run: dev F1 by epoch")]
    if extended is not None and len(extended):
        top.append(_f1_panel(extended, rules, "epoch", "Extended run: dev F1 by epoch"))
    tested = trees.run.str.contains("test F1").any()
    sizes = _f1_panel(
        trees,
        rules,
        "trees",
        "Best dev F1 by training trees" + (", and test F1" if tested else ""),
        "F1 (dev, greedy; test where named)"
        if tested
        else "dev F1 (greedy, constrained)",
        x_title="training trees",
        log_x=True,
    )
    loss = (
        alt.Chart(live_loss)
        .mark_line(point=True)
        .encode(
            x=alt.X("epoch:Q", title="epochs", scale=_scale(padded(live_loss.epoch))),
            y=alt.Y(
                "nll:Q",
                title="dev loss per symbol (nats)",
                scale=_scale(padded(live_loss.nll)),
            ),
            color=alt.Color("run:N", title=None, sort=None),
            tooltip=["run", "epoch", alt.Tooltip("nll:Q", format=".3f")],
        )
        .properties(width=250, height=190, title="This run: dev loss")
    )
    grid = alt.vconcat(alt.hconcat(*top), alt.hconcat(sizes, loss))
    return grid.configure_legend(orient="bottom", columns=2, labelLimit=320)


def score_table(score) -> pd.DataFrame:
    """One `BracketScore` as a row: its bracket counts, precision, recall and F1."""
    return pd.DataFrame(
        [
            {
                "matched": score.matched,
                "gold brackets": score.gold,
                "parse brackets": score.test,
                "precision": f"{score.precision:.1f}",
                "recall": f"{score.recall:.1f}",
                "F1": f"{score.f1:.1f}",
            }
        ]
    )


# ---------------------------------------------------------------------------------- the searches
def search_table(dev_runs: Mapping[str, ParseRun]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "search": name,
                "dev F1": f"{r.score.f1:.1f}",
                "invalid trees": r.score.invalid,
                "exact trees": r.score.exact,
                "seconds": f"{r.seconds:.0f}",
            }
            for name, r in dev_runs.items()
        ]
    )


def decodings_on_test(chosen: ParseRun) -> tuple[dict, ...]:
    """The chosen search first, the other beam beside it, and the paper's beam unconstrained."""
    other = PAPER_BEAM if chosen.beam_size == 1 else 1
    return (
        dict(beam_size=chosen.beam_size, constrained=True),
        dict(beam_size=other, constrained=True),
        dict(beam_size=PAPER_BEAM, constrained=False),
    )


def read_parsed(results_dir: str | Path, report: Mapping) -> list[Tree]:
    """The first decoding's parses that `report_parser` wrote, one tree a line."""
    lines = (Path(results_dir) / report["files"]["predicted"]).read_text().splitlines()
    return [Tree.fromstring(line) for line in lines]


@dataclass
class Evaluated:
    """A parser's search chosen on dev and its test report (`report_parser`) with the parses."""

    dev_runs: dict[str, ParseRun]
    chosen: ParseRun
    report: dict
    parsed: list[Tree]

    @property
    def headline(self) -> dict:
        return self.report["decodings"][self.chosen.name]


def evaluate_chosen(
    model, vocabularies, data, dev_trees, results_dir, file_suffix: str
) -> Evaluated:
    """Choose the search on the dev trees and parse the test split once with it."""
    dev_runs, chosen = choose_search(model, vocabularies, dev_trees)
    report = report_parser(
        model,
        data,
        split="test",
        decodings=(dict(beam_size=chosen.beam_size, constrained=True),),
        results_dir=results_dir,
        file_suffix=file_suffix,
    )
    return Evaluated(dev_runs, chosen, report, read_parsed(results_dir, report))


def scores_table(
    decodings: Mapping[str, Mapping], baselines: Mapping[str, Mapping]
) -> pd.DataFrame:
    """Every test decoding, then the floors, with reader-facing headers."""
    rows = []
    for name, r in [*decodings.items(), *baselines.items()]:
        rows.append(
            {
                "parser": name,
                "F1": f"{r['f1']:.1f}",
                LE40: f"{r['f1_le40']:.1f}",
                "precision": f"{r['precision']:.1f}",
                "recall": f"{r['recall']:.1f}",
                "exact trees": r["exact"],
                "invalid trees": r.get("invalid", 0),
                "symbols a tree": f"{r['symbols_per_output']:.0f}"
                if "symbols_per_output" in r
                else "",
            }
        )
    return pd.DataFrame(rows)


def length_chart(named: Mapping[str, Mapping]) -> alt.Chart:
    """Test F1 by sentence length, one bar per parser (`named`: name -> a report's record)."""
    rows = [
        dict(words=words, parser=name, sentences=v["sentences"], f1=v["f1"])
        for name, r in named.items()
        for words, v in r["f1_by_length"].items()
    ]
    return (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            x=alt.X("words:N", sort=None, title="sentence length (words)"),
            xOffset=alt.XOffset("parser:N", sort=None),
            y=alt.Y("f1:Q", title="test F1"),
            color=alt.Color("parser:N", title=None, sort=None),
            tooltip=["words", "parser", "sentences", alt.Tooltip("f1:Q", format=".1f")],
        )
        .properties(width=520, height=220, title="Test F1 by sentence length")
        .configure_legend(orient="bottom", columns=2)
    )


def variant_table(
    rows: Sequence[tuple[str, Mapping, Mapping, Mapping, Mapping]],
) -> pd.DataFrame:
    """(name, dev runs, its side of the paired bootstrap, test headline, source_dependence)."""
    return pd.DataFrame(
        [
            {
                "word slots": name,
                "dev F1, greedy": f"{dev['greedy, constrained'].score.f1:.1f}",
                f"dev F1, beam {PAPER_BEAM}": f"{dev[f'beam {PAPER_BEAM}, constrained'].score.f1:.1f}",
                "test F1 [95% interval]": f"{side['f1']:.1f} {interval(side['ci95'])}",
                f"test {LE40}": f"{headline['f1_le40']:.1f}",
                "loss the sentence is worth": f"{sentence_share(reads):.0f}%",
            }
            for name, dev, side, headline, reads in rows
        ]
    )


# ------------------------------------------------------------------------------------- Table 4
def table4_frame(table4, ours: Sequence[tuple[str, str, Mapping]]) -> pd.DataFrame:
    """The paper's Table 4, then our rows (label, training, test headline)."""
    rows = [
        {"parser": r.parser, "training": r.training, "F1": f"{r.f1:.1f}", LE40: ""}
        for r in table4
    ]
    rows += [
        {
            "parser": label,
            "training": training,
            "F1": f"{h['f1']:.1f}",
            LE40: f"{h['f1_le40']:.1f}",
        }
        for label, training, h in ours
    ]
    return pd.DataFrame(rows)


def table4_chart(
    frame: pd.DataFrame, keep: Sequence[str], ours: Sequence[str]
) -> alt.Chart:
    """The rows of the `keep` trainings as bars, ours coloured apart from the paper's and others'."""
    data = frame[frame.training.isin(keep)].copy()
    data["f1"] = data["F1"].astype(float)
    data["who"] = [
        "ours"
        if p in ours
        else ("the paper" if p.startswith("Transformer") else "other parsers")
        for p in data.parser
    ]
    colors = alt.Scale(
        domain=["the paper", "other parsers", "ours"],
        range=["#4c78a8", "#bab0ac", "#f58518"],
    )
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("f1:Q", title="test F1", scale=alt.Scale(domain=[0, 100])),
            y=alt.Y("parser:N", sort=None, title=None, axis=alt.Axis(labelLimit=300)),
            color=alt.Color("who:N", title=None, scale=colors),
            tooltip=["parser", "training", alt.Tooltip("f1:Q", format=".1f")],
        )
        .properties(
            width=380, height=190, title="Table 4's WSJ-only parsers, and this run"
        )
        .configure_legend(orient="bottom")
    )
