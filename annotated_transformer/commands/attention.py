"""`python -m annotated_transformer attention`: the paper's Figures 3-5 or the explorer for any sentence,
exported offline as HTML (Vega inlined), SVG or PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import pipeline
from ..chapters.attention_visualizations import head_scores as findings
from ..chapters.attention_visualizations.figures import (
    FIGURES,
    KINDS,
    build_figure,
    sentence_attention,
)
from ..data import load_parallel
from ..data.textfiles import text_lines
from ..runtime.collisions import check_outputs
from ..runtime.files import atomic_write_bytes, scratch_folder
from ..runtime.ownership import check_output
from ..training.checkpoint import model_from_checkpoint
from ..viz import export
from ..viz.display import export_format
from .arguments import positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Draw a trained model's attention on one sentence (paper appendix, Figures 3-5) or write the\n"
        "explorer (every kind, layer and head behind dropdowns). Layers and heads count from 1.\n\n"
        "  python -m annotated_transformer attention --checkpoint runs/cpu/averaged.pt \\\n"
        "      --sentence 'A man in a blue shirt is playing a guitar.' --figure 3 --word guitar --out fig3.html\n"
        "  python -m annotated_transformer attention --checkpoint runs/cpu/averaged.pt \\\n"
        "      --sentence 'Two dogs run.' --figure 5 --layer 2 --heads 1 4 --out fig5.png\n"
        "  python -m annotated_transformer attention --checkpoint runs/cpu/averaged.pt \\\n"
        "      --sentence 'A man walks his dog.' --figure 4 --head best-anaphora --out fig4.html"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file written by `train` or `average`, or a run folder (the average of its "
        "last snapshots, as `evaluate` reads it)",
    )
    parser.add_argument(
        "--sentence", required=True, help="the English sentence to encode"
    )
    parser.add_argument(
        "--figure", required=True, choices=FIGURES, help="3, 4, 5 or explorer"
    )
    parser.add_argument("--word", default=None, help="the query word of figures 3 and 4")
    parser.add_argument(
        "--layer",
        type=positive_int,
        default=None,
        help="layer to draw (default: the last)",
    )
    parser.add_argument(
        "--heads",
        type=positive_int,
        nargs="+",
        default=None,
        help="heads to draw: any for figure 3, two for figures 4 and 5",
    )
    parser.add_argument(
        "--head",
        choices=[f"best-{p}" for p in findings.PHENOMENA],
        default=None,
        help="pick the layer and heads by their encoder score for a pronoun's antecedent "
        "(best-anaphora) or a verb's distant complement (best-dependency) over the sentences "
        "of --score-on; without --word, the sentence's own pronoun or verb is followed",
    )
    parser.add_argument(
        "--score-on",
        default=None,
        help="text file of English sentences, one a line, that --head scores heads on "
        "(default: the Multi30k test2016 captions)",
    )
    parser.add_argument(
        "--kind", choices=KINDS, default="encoder", help="attention drawn by figures 3-5"
    )
    parser.add_argument(
        "--translation",
        default=None,
        help="German the decoder reads (default: the model's own greedy translation)",
    )
    parser.add_argument("--out", required=True, help="file to write: .html, .svg or .png")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    fmt = export_format(out, f"--out {out}")
    check_outputs(
        [("--out", out)],
        [("--score-on", args.score_on), *pipeline.checkpoint_inputs(args.checkpoint)],
    )
    check_output("--out", out, command="attention")
    checkpoint, source = pipeline.load_for_evaluation(args.checkpoint)
    model, tokenizer = model_from_checkpoint(checkpoint, "cpu", name=source)
    data = sentence_attention(model, tokenizer, args.sentence, args.translation)
    layer, heads, word = args.layer, args.heads, args.word
    if args.head is not None:
        layer, heads, word = pick_heads(args, model, tokenizer, data)
    chart = build_figure(
        data,
        args.figure,
        word=word,
        layer=layer,
        heads=heads,
        kind=args.kind,
    )
    # Drawn in a scratch folder, then staged into place under the name the user gave.
    with scratch_folder("at-attention-") as scratch:
        written = export(chart, Path(scratch) / "figure", formats=[fmt])[fmt]
        atomic_write_bytes(out, written.read_bytes())
    print(f"wrote {out} ({out.stat().st_size:,} bytes) from {source}")
    return 0


def pick_heads(args: argparse.Namespace, model, tokenizer, data) -> tuple:
    """(layer, heads, word) for --head best-<phenomenon>: the heads that show it over the
    scoring sentences (or the best one), two for figures 4 and 5."""
    if args.layer is not None or args.heads:
        raise ValueError(
            "--head picks the layer and the heads: leave out --layer and --heads"
        )
    if args.kind != "encoder":
        raise ValueError("--head scores encoder self-attention: leave --kind at encoder")
    phenomenon = args.head.removeprefix("best-")
    if args.score_on:
        sentences = [line.strip() for line in text_lines(args.score_on) if line.strip()]
    else:
        sentences = load_parallel("multi30k", "test", "en", "de").src
    encoded = findings.encoder_attention(model, tokenizer, sentences)
    scores = findings.head_scores(findings.collect_pairs(encoded, phenomenon))
    layer, heads = findings.layer_heads(scores, at_least=1 if args.figure == "3" else 2)
    if args.figure in ("4", "5"):
        heads = heads[:2]
    word = args.word or findings.query_word(data.source_tokens, phenomenon)
    if word is None and args.figure in ("3", "4"):
        raise ValueError(
            f"the heuristic finds no {phenomenon} pair in the sentence: pass --word"
        )
    shown = scores.set_index(["layer", "head"])
    print(
        f"{args.head} over {int(scores['sentences'].iloc[0])} sentences: layer {layer}, "
        + ", ".join(
            f"head {h} (ratio {shown.loc[(layer, h), 'ratio']:.2f}, interval "
            f"{shown.loc[(layer, h), 'low']:.2f}-{shown.loc[(layer, h), 'high']:.2f})"
            for h in heads
        )
    )
    return layer, heads, word
