"""The paper's attention pictures (appendix, Figures 3-5) and an explorer, drawn from a checkpoint.

Every picture draws the weights `model.attention_maps` returns for one sentence, nothing
recomputed. The figures follow the paper's layout turned on its side (queries in a left column,
keys in a right one, a line per query-key pair, its opacity the weight), which keeps a long
sentence readable. The explorer is one Vega-Lite spec with dropdowns bound to parameters, so it
works in Jupyter, in Colab and in a static page with no kernel behind it.

Data layout. All heads of all layers of a 40-token sentence are tens of thousands of (query,
key) pairs, past altair's 5,000-row default and megabytes as JSON records. The explorer ships one
row per (kind, layer, head, query) holding that query's weights as an array of integers in
thousandths, and Vega's `flatten` transform unfolds only the rows the dropdowns selected; the
tokens travel once, in a small table that `lookup` joins for the tooltips.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import altair as alt
import numpy as np
import pandas as pd
import torch

from ...model.decoding import greedy_decode
from ...model.transformer import Transformer, attention_maps
from .head_scores import PUNCTUATION, SPECIAL_PIECES

KINDS = ("encoder", "decoder_self", "decoder_cross")
KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder_self": "decoder self-attention",
    "decoder_cross": "encoder-decoder attention",
}
FIGURES = ("3", "4", "5", "explorer")
_HEAD_COLOURS = "category10"


@dataclass
class SentenceAttention:
    """One sentence's attention: tokens on each side and weights (layers, heads, queries, keys) per kind."""

    source_tokens: list[str]
    target_tokens: list[str]  # the decoder's input: bos, then the translation
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def layers(self) -> int:
        return self.weights["encoder"].shape[0]

    @property
    def heads(self) -> int:
        return self.weights["encoder"].shape[1]

    def tokens(self, kind: str, side: str) -> list[str]:
        """Token labels of the queries (side="query") or keys (side="key") of `kind`."""
        if kind == "encoder" or (kind == "decoder_cross" and side == "key"):
            return self.source_tokens
        return self.target_tokens


def _pieces(tokenizer, ids: Sequence[int]) -> list[str]:
    return [tokenizer.id_to_piece(int(i)) for i in ids]


@torch.no_grad()
def sentence_attention(
    model: Transformer,
    tokenizer,
    sentence: str,
    translation: str | None = None,
    *,
    max_new_tokens: int = 64,
) -> SentenceAttention:
    """Attention of `model` on `sentence`: the source ends in eos as in training; the decoder reads
    bos plus `translation`'s pieces, or the greedy translation when none is given."""
    device = next(model.parameters()).device
    src_ids = tokenizer.encode(sentence) + [tokenizer.eos_id]
    if len(src_ids) < 2:
        raise ValueError("the sentence is empty: give at least one word")
    if len(src_ids) > model.config.max_len:
        raise ValueError(
            f"the sentence has {len(src_ids)} pieces; the model's positions hold {model.config.max_len}"
        )
    src = torch.tensor([src_ids], device=device)
    if translation is None:
        limit = min(max_new_tokens, 2 * len(src_ids) + 10)
        out = greedy_decode(model, src, limit)[0].tolist()
        tgt_ids = [t for t in out if t != tokenizer.pad_id]
        if tgt_ids[-1] == tokenizer.eos_id:  # the decoder's input stops before eos,
            tgt_ids = tgt_ids[:-1]  # as in teacher forcing
    else:
        tgt_ids = [tokenizer.bos_id] + tokenizer.encode(translation)
    tgt = torch.tensor([tgt_ids], device=device)
    maps = attention_maps(model, src, tgt)
    weights = {
        kind: torch.stack([m[0] for m in maps[kind]]).float().cpu().numpy()
        for kind in KINDS
    }
    return SentenceAttention(
        _pieces(tokenizer, src_ids), _pieces(tokenizer, tgt_ids), weights
    )


# ----------------------------------------------------------------------------------------------
# Per-head measures


def head_statistics(data: SentenceAttention) -> pd.DataFrame:
    """Per (kind, layer, head): mean entropy of the query rows in bits, and for self-attention the
    mean distance attended, sum_k w(q, k) |q - k| averaged over queries (in tokens). Kinds
    missing from `data.weights` (an encoder-only pass) are left out."""
    rows = []
    for kind in KINDS:
        if kind not in data.weights:
            continue
        w = data.weights[kind]  # (L, h, Q, K)
        entropy = -(w * np.log2(np.clip(w, 1e-12, None))).sum(-1).mean(-1)  # (L, h)
        q = np.arange(w.shape[2])[:, None]
        k = np.arange(w.shape[3])[None, :]
        distance = (
            (w * np.abs(q - k)).sum(-1).mean(-1)
            if kind != "decoder_cross"
            else np.full(entropy.shape, np.nan)
        )
        rows += [
            {
                "kind": kind,
                "layer": layer + 1,
                "head": head + 1,
                "entropy (bits)": float(entropy[layer, head]),
                "mean distance": float(distance[layer, head]),
            }
            for layer, head in np.ndindex(entropy.shape)
        ]
    return pd.DataFrame(rows)


# Vega's "viridis" scheme (d3's interpolateViridis, matplotlib's colormap) at 0, 0.1, ..., 1:
# enough to tell a cell's lightness, which decides the colour of the number written on it.
VIRIDIS = (
    "#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
    "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725",
)  # fmt: skip


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)


def apca_contrast(text: Sequence[float], background: Sequence[float]) -> float:
    """APCA's lightness contrast Lc (WCAG 3's draft method, version 0.0.98G) of `text` on
    `background`, sRGB 0-255 channels: about 0 to 106, negative for light text on dark.

    WCAG 2's luminance ratio prefers black on viridis's mid teals (5.5 against white's 3.8), where
    black numbers read poorly; APCA weighs the polarity and the lightness of each side as the eye
    does, and prefers white there (Lc 71 against 39), black from the greens on."""

    def screen_luminance(rgb: Sequence[float]) -> float:
        y = float(
            ((np.asarray(rgb, dtype=float) / 255) ** 2.4)
            @ [0.2126729, 0.7151522, 0.0721750]
        )
        return y + (0.022 - y) ** 1.414 if y < 0.022 else y  # the soft clamp near black

    y_text, y_back = screen_luminance(text), screen_luminance(background)
    if y_back > y_text:  # dark text on a lighter background
        s = (y_back**0.56 - y_text**0.57) * 1.14
        return 0.0 if s < 0.1 else (s - 0.027) * 100
    s = (y_back**0.65 - y_text**0.62) * 1.14
    return 0.0 if s > -0.1 else (s + 0.027) * 100


def viridis(t: float) -> np.ndarray:
    """The viridis colour at `t` in [0, 1], interpolated between the stops of `VIRIDIS`."""
    position = min(max(float(t), 0.0), 1.0) * (len(VIRIDIS) - 1)
    low = min(int(position), len(VIRIDIS) - 2)
    share = position - low
    return (1 - share) * _rgb(VIRIDIS[low]) + share * _rgb(VIRIDIS[low + 1])


def text_colour(background: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with `background` (`apca_contrast`)."""
    black = abs(apca_contrast((0, 0, 0), background))
    white = abs(apca_contrast((255, 255, 255), background))
    return "black" if black >= white else "white"


def head_statistics_chart(
    stats: pd.DataFrame, measure: str = "entropy (bits)"
) -> alt.Chart:
    """A layer-by-head grid of one measure for each kind of attention, its value written on each
    cell in black or white, whichever reads better on the cell's viridis colour."""
    data = stats.dropna(subset=[measure])
    domain = [float(data[measure].min()), float(data[measure].max())]
    span = (domain[1] - domain[0]) or 1.0
    data = data.assign(
        text_colour=[text_colour(viridis((v - domain[0]) / span)) for v in data[measure]]
    )
    base = (
        alt.Chart(data)
        .mark_rect()
        .encode(
            x=alt.X("head:O", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("layer:O"),
            color=alt.Color(
                f"{measure}:Q",
                scale=alt.Scale(scheme="viridis", domain=domain, nice=False, zero=False),
            ),
            tooltip=["kind", "layer", "head", alt.Tooltip(f"{measure}:Q", format=".2f")],
        )
        .properties(
            width=24 * int(data["head"].max()), height=24 * int(data["layer"].max())
        )
    )
    text = base.mark_text(fontSize=9).encode(
        text=alt.Text(f"{measure}:Q", format=".1f"),
        color=alt.condition(
            "datum.text_colour == 'black'", alt.value("black"), alt.value("white")
        ),
    )
    # each panel headed by its kind of attention in words, on two lines as narrow as its grid
    words = {kind: title.rsplit(" ", 1) for kind, title in KIND_TITLES.items()}
    header = alt.Header(labelExpr=f"{json.dumps(words)}[datum.value] || datum.value")
    return (base + text).facet(
        column=alt.Column("kind:N", title=None, sort=list(KINDS), header=header),
        title=f"{measure} per head",
    )


# ----------------------------------------------------------------------------------------------
# The paper's figures: lines from queries (left) to keys (right)


def _check_layer(data: SentenceAttention, layer: int) -> int:
    if not 1 <= layer <= data.layers:
        raise ValueError(f"no layer {layer}: the model has layers 1 to {data.layers}")
    return layer - 1


def _check_heads(data: SentenceAttention, heads: Sequence[int]) -> list[int]:
    bad = [h for h in heads if not 1 <= h <= data.heads]
    if bad:
        raise ValueError(f"no head {bad[0]}: the model has heads 1 to {data.heads}")
    return [h - 1 for h in heads]


def find_word(tokens: Sequence[str], word: str) -> int:
    """Index of the first piece of `word` in a sentence's pieces.

    A word is the run of pieces from one that starts with sentencepiece's "▁" to the next such
    piece; `word` matches it with surrounding punctuation ignored ("Law" matches "▁La", "w", ",").
    """
    wanted = word.strip().lstrip("▁")
    starts = [
        i
        for i, piece in enumerate(tokens)
        if piece.startswith("▁") or piece in SPECIAL_PIECES
    ] or [0]
    for n, i in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(tokens)
        text = "".join(tokens[i:end]).lstrip("▁")
        if wanted and (text == wanted or text.strip(PUNCTUATION) == wanted):
            return i
    shown = " ".join(t.lstrip("▁") for t in tokens)
    raise ValueError(f"the word {word!r} is not in the sentence's pieces: {shown}")


def _lines_frame(
    w: np.ndarray, heads: Sequence[int], queries: Sequence[int] | None, threshold: float
) -> pd.DataFrame:
    """(layer's) w: (h, Q, K) -> one row per drawn line."""
    qs = range(w.shape[1]) if queries is None else queries
    rows = [
        (head + 1, q, k, round(float(w[head, q, k]), 4))
        for head in heads
        for q in qs
        for k in range(w.shape[2])
        if float(w[head, q, k]) >= threshold
    ]
    return pd.DataFrame(rows, columns=["head", "query", "key", "weight"])


def lines_chart(
    w: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    heads: Sequence[int],
    *,
    queries: Sequence[int] | None = None,
    title: str = "",
    threshold: float = 0.02,
    width: int = 220,
) -> alt.LayerChart:
    """Lines from query tokens (left) to key tokens (right), one colour per head, opacity = weight.

    `w` is one layer's (heads, queries, keys) weights and `heads` are 0-based; lines under
    `threshold` are left out (they would be invisible and only weigh on the page).
    """
    n = max(len(query_tokens), len(key_tokens))
    rules = _rules(
        _lines_frame(w, heads, queries, threshold), n, "query", "key", ["head", "query"]
    )
    picked = set(queries) if queries is not None else set()
    return alt.layer(
        rules, *_token_columns(query_tokens, key_tokens, picked, n)
    ).properties(width=width, height=_ROW * n, **({"title": title} if title else {}))


# The lines run from the queries' column (x = 0) to the keys' (x = 1); the rows of words
# (pixels), and Figure 3's lines' width.
_X = alt.Scale(domain=[-0.55, 1.55])
_ROW = 16
_FIGURE3_STROKE = 2.0


def _y(n: int) -> alt.Scale:
    return alt.Scale(domain=[-0.5, n - 0.5])


def _rules(
    lines: pd.DataFrame, n: int, y: str, y2: str, tooltip: list, stroke: float = 2.0
) -> alt.Chart:
    """One line per row of `lines` from its query (`y`, left) to its key (`y2`, right), a
    colour per head, its opacity the weight."""
    return (
        alt.Chart(lines.assign(x=0, x2=1))
        .mark_rule(strokeWidth=stroke)
        .encode(
            x=alt.X("x:Q", scale=_X, axis=None),
            x2="x2:Q",
            y=alt.Y(f"{y}:Q", scale=_y(n), axis=None, sort="descending"),
            y2=f"{y2}:Q",
            color=alt.Color(
                "head:N",
                scale=alt.Scale(scheme=_HEAD_COLOURS),
                legend=alt.Legend(title="head"),
            ),
            opacity=alt.Opacity(
                "weight:Q", scale=alt.Scale(domain=[0, 1], range=[0, 1]), legend=None
            ),
            tooltip=[*tooltip, "key", alt.Tooltip("weight:Q", format=".3f")],
        )
    )


def _token_columns(
    query_tokens: Sequence[str], key_tokens: Sequence[str], picked: set[int], n: int
) -> tuple[alt.Chart, alt.Chart]:
    """The two columns of words the attention lines join: queries right-aligned on the left (the
    `picked` ones in red), keys left-aligned on the right; a piece that is only the word-start
    mark shows as the mark, not as nothing."""

    def words(tokens: Sequence[str], side: int) -> pd.DataFrame:
        frame = pd.DataFrame(
            {
                "i": range(len(tokens)),
                "token": [t.replace("▁", "") or "▁" for t in tokens],
                "x": side,
            }
        )
        if side == 0:
            frame["picked"] = [i in picked for i in range(len(tokens))]
        return frame

    def column(frame: pd.DataFrame, align: str, dx: int, **colour) -> alt.Chart:
        return (
            alt.Chart(frame)
            .mark_text(align=align, dx=dx)
            .encode(
                x=alt.X("x:Q", scale=_X),
                y=alt.Y("i:Q", scale=_y(n), sort="descending"),
                text="token:N",
                **colour,
            )
        )

    red = alt.condition("datum.picked", alt.value("#c00000"), alt.value("black"))
    return (
        column(words(query_tokens, 0), "right", -4, color=red),
        column(words(key_tokens, 1), "left", 4),
    )


def _layer_param(data: SentenceAttention, value: int) -> alt.Parameter:
    """A dropdown of the layers, named `layer` in the chart's expressions."""
    options = list(range(1, data.layers + 1))
    return alt.param(
        name="layer", value=value, bind=alt.binding_select(options=options, name="layer ")
    )


def _head_spacing(heads: int) -> float:
    """Pixels between two heads' lines to the same word: a line's width and two pixels between,
    closer only where many heads would spread over more than a row of words (8 heads: 1.9)."""
    return min(_FIGURE3_STROKE + 2.0, (_ROW - 1) / max(heads, 1))


def figure3(
    data: SentenceAttention,
    word: str,
    *,
    kind: str = "encoder",
    layer: int | None = None,
    heads: Sequence[int] | None = None,
) -> alt.Chart:
    """Figure 3: one query word's attention in every head of a layer, a colour per head; the layer
    is a dropdown (all layers ship, only this word's rows, so the page stays small)."""
    queries = data.tokens(kind, "query")
    keys = data.tokens(kind, "key")
    q = find_word(queries, word)
    layer_index = _check_layer(data, layer if layer is not None else data.layers)
    head_index = _check_heads(data, heads) if heads else list(range(data.heads))
    which = (
        "every head"
        if len(head_index) == data.heads
        else f"head{'s' if len(head_index) > 1 else ''} "
        + ", ".join(str(h + 1) for h in head_index)
    )
    lines = pd.concat(
        [
            _lines_frame(w, head_index, [q], threshold=0.0).assign(layer=li + 1)
            for li, w in enumerate(data.weights[kind])
        ],
        ignore_index=True,
    )
    # Each head's lines a few pixels above or below the others': heads that attend to the same
    # word would otherwise draw one line, the last head's hiding the others.
    slot = {h + 1: i - (len(head_index) - 1) / 2 for i, h in enumerate(head_index)}
    shift = lines["head"].map(slot) * _head_spacing(len(head_index)) / _ROW
    lines["y_query"], lines["y_key"] = lines["query"] + shift, lines["key"] + shift
    n = max(len(queries), len(keys))
    pick = _layer_param(data, layer_index + 1)
    rules = (
        _rules(lines, n, "y_query", "y_key", ["layer", "head"], _FIGURE3_STROKE)
        .transform_filter("datum.layer == layer")
        .add_params(pick)
    )
    return alt.layer(rules, *_token_columns(queries, keys, {q}, n)).properties(
        width=260,
        height=_ROW * n,
        title=f"Figure 3: attention of '{word}' in {which} ({KIND_TITLES[kind]})",
    )


def _two_heads(
    data: SentenceAttention,
    figure: int,
    kind: str,
    layer: int | None,
    heads: Sequence[int],
):
    """What Figures 4 and 5 both draw from: the checked layer (default the last) and two heads, the
    query and key tokens of `kind`, and that layer's weights (heads, queries, keys)."""
    if len(heads) != 2:
        raise ValueError(
            f"figure {figure} compares two heads, got {len(heads)}: pass --heads A B"
        )
    li = _check_layer(data, layer if layer is not None else data.layers)
    h = _check_heads(data, heads)
    queries, keys = data.tokens(kind, "query"), data.tokens(kind, "key")
    return li, h, queries, keys, data.weights[kind][li]


def figure4(
    data: SentenceAttention,
    word: str,
    *,
    kind: str = "encoder",
    layer: int | None = None,
    heads: Sequence[int] = (1, 2),
) -> alt.HConcatChart:
    """Figure 4: the full pattern of the first head, then one word's attention alone in two heads."""
    li, h, queries, keys, w = _two_heads(data, 4, kind, layer, heads)
    q = find_word(queries, word)
    full = lines_chart(
        w, queries, keys, [h[0]], title=f"layer {li + 1}, head {h[0] + 1}: every word"
    )
    alone = [
        lines_chart(
            w,
            queries,
            keys,
            [head],
            queries=[q],
            threshold=0.0,
            width=160,
            title=f"head {head + 1}: '{word}' only",
        )
        for head in h
    ]
    return (
        alt.hconcat(full, *alone)
        .resolve_scale(color="shared")
        .properties(title=f"Figure 4: {KIND_TITLES[kind]}, layer {li + 1}")
    )


def figure5(
    data: SentenceAttention,
    *,
    kind: str = "encoder",
    layer: int | None = None,
    heads: Sequence[int] = (1, 2),
) -> alt.HConcatChart:
    """Figure 5: two heads of one layer side by side, every word's attention."""
    li, h, queries, keys, w = _two_heads(data, 5, kind, layer, heads)
    panels = [
        lines_chart(w, queries, keys, [head], title=f"head {head + 1}") for head in h
    ]
    return (
        alt.hconcat(*panels)
        .resolve_scale(color="shared")
        .properties(title=f"Figure 5: two heads of layer {li + 1} ({KIND_TITLES[kind]})")
    )


# ----------------------------------------------------------------------------------------------
# The explorer


def explorer_tables(data: SentenceAttention) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, tokens): one row per (kind, layer, head, query) with the query's weights in thousandths
    as a list (`w`); and the tokens table keyed by side*1000 + position (side 0 source, 1 target)."""
    rows = []
    for k, kind in enumerate(KINDS):
        w = np.rint(data.weights[kind] * 1000).astype(int)  # (L, h, Q, K)
        rows += [
            {
                "k": k,
                "l": layer + 1,
                "h": head + 1,
                "q": q,
                "w": w[layer, head, q].tolist(),
            }
            for layer, head, q in np.ndindex(w.shape[:3])
        ]
    tokens = pd.DataFrame(
        [{"id": i, "t": t.replace("▁", "")} for i, t in enumerate(data.source_tokens)]
        + [
            {"id": 1000 + i, "t": t.replace("▁", "")}
            for i, t in enumerate(data.target_tokens)
        ]
    )
    return pd.DataFrame(rows), tokens


def explorer(data: SentenceAttention) -> alt.Chart:
    """Dropdowns for the kind of attention, the layer and the head (or all heads, a panel each);
    hover a cell for the query, the key and the weight."""
    rows, tokens = explorer_tables(data)
    source = json.dumps([t.replace("▁", "") for t in data.source_tokens])
    target = json.dumps([t.replace("▁", "") for t in data.target_tokens])
    kind = alt.param(
        name="kind",
        value=0,
        bind=alt.binding_select(
            options=[0, 1, 2], labels=[KIND_TITLES[k] for k in KINDS], name="attention "
        ),
    )
    layer = _layer_param(data, data.layers)
    head = alt.param(
        name="head",
        value=0,
        bind=alt.binding_select(
            options=[0, *range(1, data.heads + 1)],
            labels=["all", *map(str, range(1, data.heads + 1))],
            name="head ",
        ),
    )
    # Queries are source tokens for the encoder, target tokens for the decoder; keys are target
    # tokens only in decoder self-attention.
    chart = (
        alt.Chart(rows)
        .transform_filter(
            "datum.k == kind && datum.l == layer && (head == 0 || datum.h == head)"
        )
        .transform_flatten(["w"], ["w"])
        .transform_window(key="row_number()", groupby=["k", "l", "h", "q"])
        .transform_calculate(
            key="datum.key - 1",
            weight="datum.w / 1000",
            qid="(datum.k == 0 ? 0 : 1000) + datum.q",
            kid="(datum.k == 1 ? 1000 : 0) + datum.key - 1",
        )
        .transform_lookup(
            lookup="qid", from_=alt.LookupData(tokens, "id", ["t"]), as_=["query token"]
        )
        .transform_lookup(
            lookup="kid", from_=alt.LookupData(tokens, "id", ["t"]), as_=["key token"]
        )
        .mark_rect()
        .encode(
            x=alt.X(
                "key:O",
                title="key",
                axis=alt.Axis(
                    labelExpr=f"(kind == 1 ? {target} : {source})[datum.value]",
                    labelAngle=-60,
                ),
            ),
            y=alt.Y(
                "q:O",
                title="query",
                axis=alt.Axis(
                    labelExpr=f"(kind == 0 ? {source} : {target})[datum.value]"
                ),
            ),
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(range=["#ffffff", "#08306b"], domain=[0, 1]),
                title="weight",
            ),
            tooltip=[
                alt.Tooltip("h:Q", title="head"),
                "query token:N",
                "key token:N",
                alt.Tooltip("weight:Q", format=".3f"),
            ],
        )
        .properties(width=alt.Step(11), height=alt.Step(11))
        .add_params(kind, layer, head)
    )
    return chart.facet(facet=alt.Facet("h:N", title="head"), columns=2).properties(
        title="Attention explorer: pick the attention, the layer and a head"
    )


def build_figure(
    data: SentenceAttention,
    figure: str,
    *,
    word: str | None = None,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    kind: str = "encoder",
):
    """The chart of `figure` ("3", "4", "5" or "explorer") with the same checks the command makes."""
    if figure not in FIGURES:
        raise ValueError(f"unknown figure {figure!r}; choose one of {', '.join(FIGURES)}")
    if kind not in KINDS:
        raise ValueError(
            f"unknown attention kind {kind!r}; choose one of {', '.join(KINDS)}"
        )
    if figure == "explorer":
        return explorer(data)
    if layer is not None:
        _check_layer(data, layer)
    if heads:
        _check_heads(data, heads)
    if figure in ("3", "4") and word is None:
        raise ValueError(f"figure {figure} follows one word: pass --word")
    if figure == "3":
        return figure3(data, word, kind=kind, layer=layer, heads=heads)
    pair = tuple(heads) if heads else (1, min(2, data.heads))
    if figure == "4":
        return figure4(data, word, kind=kind, layer=layer, heads=pair)
    return figure5(data, kind=kind, layer=layer, heads=pair)


def spec_size(chart: alt.TopLevelMixin) -> int:
    """Bytes of the chart's compact JSON spec: what a page carries for it."""
    with alt.data_transformers.disable_max_rows():
        return len(json.dumps(chart.to_dict(), separators=(",", ":")).encode())
