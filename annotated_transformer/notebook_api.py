"""A trained model in a notebook, in four calls: `load` it, `translate` sentences, read a
sentence's `attention` (every layer and head) and draw one head with `attention_chart`, a chart
that draws offline. The package's top re-exports them: `from annotated_transformer import load`.

Each call is a thin door onto the package's own machinery: `load` reads a checkpoint as every
command does (`training.checkpoint`), `translate` decodes with `evaluation.scoring.translate` and
the checkpoint's profile's beam, `attention` is `chapters.attention_visualizations.figures.sentence_attention`
and the charts are `viz`'s. Pictures need the `charts` extra (altair, vl-convert-python,
pandas); nothing here imports them until a picture is asked for.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from . import pipeline
from .evaluation import scoring
from .model.config import TransformerConfig
from .model.decoding import DecodeSettings
from .runtime.devices import resolve_device
from .runtime.files import atomic_write_bytes, scratch_folder
from .training import derived
from .training.checkpoint import RESUME_NAME, load_checkpoint, model_from_checkpoint
from .training.run_folder import AVERAGED_NAME

__all__ = [
    "AttentionChart",
    "TrainedModel",
    "attention",
    "attention_chart",
    "load",
    "translate",
]

# The kinds of attention as a reader names them, and as `attention_maps` keys them.
KIND_NAMES = {
    "encoder": "encoder",
    "decoder": "decoder_self",
    "cross": "decoder_cross",
    "decoder_self": "decoder_self",
    "decoder_cross": "decoder_cross",
}
CHART_STYLES = ("heatmap", "lines")

# Which extra brings a module the pictures import.
_EXTRA_OF = {"altair": "charts", "vl_convert": "charts", "pandas": "charts"}


# ------------------------------------------------------------------------------------------ loading
@dataclass(frozen=True)
class TrainedModel:
    """A trained Transformer with what it needs to translate: `model` (in eval mode on its
    device), `tokenizer`, `config` (its `TransformerConfig`), `path` (the checkpoint file read)
    and `decoding` (its profile's beam, length penalty and batches, as `evaluate` decodes).

    >>> trained = load("runs/cpu")
    >>> trained.config.n_layers >= 1 and trained.path.suffix == ".pt"
    True
    """

    model: Any
    tokenizer: Any
    config: TransformerConfig
    path: Path
    decoding: DecodeSettings
    description: str = ""

    def __repr__(self) -> str:
        c = self.config
        return (
            f"TrainedModel({str(self.path)!r}: {self.description}; {c.n_layers} layers x "
            f"{c.n_heads} heads, d_model {c.d_model}; beam {self.decoding.beam_size})"
        )


def checkpoint_file(path: str | os.PathLike) -> Path:
    """The checkpoint `load` reads for `path`: a file as it is; a run folder's `averaged.pt`
    (the mean of its last snapshots) while it still averages the run's last snapshots, else its
    `last.pt`. One-line errors for anything else.

    >>> checkpoint_file("runs/cpu").name in ("averaged.pt", "last.pt")
    True
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(
            f"no run folder or checkpoint at {path}: pass a `train --out` folder or a .pt file"
        )
    if not path.is_dir():
        raise ValueError(f"{path} is neither a run folder nor a checkpoint file")
    averaged, resume = path / AVERAGED_NAME, path / RESUME_NAME
    if averaged.is_file():
        if averaged not in derived.stale_files(path):
            return averaged
        newest = f", or load {resume} for the newest weights" if resume.is_file() else ""
        raise ValueError(
            f"{averaged} no longer averages the run's last snapshots: refresh it with "
            f"`python -m annotated_transformer average --run {path}`{newest}"
        )
    if resume.is_file():
        return resume
    raise FileNotFoundError(
        f"{path} is a folder without {AVERAGED_NAME} or {RESUME_NAME}: pass a `train --out` "
        "folder or a .pt file"
    )


def load(path: str | os.PathLike, device: str = "cpu") -> TrainedModel:
    """A trained model from a run folder (its `averaged.pt`, else its `last.pt`) or a
    checkpoint file that `train` or `average` wrote, on `device` ("cpu", "cuda", "auto").

    >>> trained = load("runs/cpu")
    >>> trained.model.training
    False
    """
    file = checkpoint_file(path)
    checkpoint = load_checkpoint(file)
    derived.check_current(file, checkpoint)
    where = resolve_device(device)
    model, tokenizer = model_from_checkpoint(checkpoint, where, name=str(file))
    profile, _ = pipeline.checkpoint_profile(checkpoint, source=str(file))
    return TrainedModel(
        model=model,
        tokenizer=tokenizer,
        config=model.config,
        path=file,
        decoding=profile.decode_settings(str(where)),
        description=pipeline.what_it_translates(checkpoint),
    )


# ------------------------------------------------------------------------------------------ translating
def translate(
    trained: TrainedModel,
    sentences: str | Iterable[str],
    *,
    beam_size: int | None = None,
    progress: bool = False,
    **changes,
) -> list[str] | str:
    """Translations of `sentences` in their order, decoded in batches of similar length; one
    string in, one string out.

    Beam search with the checkpoint's profile's beam and length penalty, as `evaluate` decodes;
    `beam_size=1` is greedy decoding. Other keywords change single fields of `trained.decoding`
    (`alpha`, `max_len_a`, `max_len_b`, `batch_tokens`, `precision`). Beam search allows
    each sentence its own output length, as alone; greedy decoding allows every sentence of a
    batch the longest source's, so a translation that never ends runs longer in a batch.

    >>> trained = load("runs/cpu")
    >>> german = translate(trained, ["Two dogs run through the snow.", "A man sings."])
    >>> len(german), isinstance(translate(trained, "A man sings.", beam_size=1), str)
    (2, True)
    """
    if beam_size is not None:
        changes["beam_size"] = beam_size
    one = isinstance(sentences, str)
    settings = trained.decoding.replace(**changes)
    out = scoring.translate(
        trained.model,
        trained.tokenizer,
        [sentences] if one else sentences,
        settings,
        progress=progress,
    )
    return out[0] if one else out


# ------------------------------------------------------------------------------------------ attention
def _picture_modules(what: str):
    """The attention figures module, with one ImportError naming the extra when a picture's
    libraries are missing."""
    try:
        from .chapters.attention_visualizations import figures
    except ModuleNotFoundError as error:
        top = (error.name or "").split(".")[0]
        if top not in _EXTRA_OF:
            raise
        raise ImportError(
            f"{what} needs {top} (pip install 'annotated-transformer[{_EXTRA_OF[top]}]')"
        ) from error
    return figures


def attention(trained: TrainedModel, sentence: str, target: str | None = None):
    """The attention of every layer and head on `sentence` and its translation: a
    `SentenceAttention` with `source_tokens`, `target_tokens` (bos, then the translation's
    pieces) and `weights`, one (layers, heads, queries, keys) array per kind ("encoder",
    "decoder_self", "decoder_cross").

    The decoder reads `target`, or the model's greedy translation when none is given (as the
    `attention` command draws; pass `target=translate(trained, sentence)` for the beam's).

    >>> trained = load("runs/cpu")
    >>> seen = attention(trained, "Two dogs run through the snow.")
    >>> seen.weights["encoder"].shape[:2] == (trained.config.n_layers, trained.config.n_heads)
    True
    """
    figures = _picture_modules("attention")
    return figures.sentence_attention(trained.model, trained.tokenizer, sentence, target)


@dataclass(frozen=True)
class AttentionChart:
    """A chart that draws offline: shown in Jupyter with Vega, Vega-Lite and Vega-Embed inlined
    (no CDN), and saved as a self-contained .html, an .svg or a .png. `chart` is the altair
    chart, to change or combine as any other.

    >>> chart = attention_chart(load("runs/cpu"), "Two dogs run.", kind="cross", layer=1, head=2)
    >>> chart.save("cross.html").name
    'cross.html'
    """

    chart: Any

    def save(self, path: str | os.PathLike, *, scale: float = 2.0) -> Path:
        """Write the chart to `path` as its suffix says: .html (self-contained), .svg or .png
        (at `scale` times the chart's size); returns the path."""
        from .viz.display import export, export_format

        path = Path(path)
        fmt = export_format(path)
        # Drawn in a scratch folder, then moved into place whole under the name given.
        with scratch_folder("at-chart-") as scratch:
            written = export(self.chart, Path(scratch) / "chart", [fmt], scale=scale)[fmt]
            atomic_write_bytes(path, written.read_bytes())
        return path

    def to_dict(self) -> dict:
        """The chart's Vega-Lite spec, its data inline."""
        from .viz.display import chart_spec

        return chart_spec(self.chart)

    def to_html(self) -> str:
        """The chart as one self-contained HTML page (what `save` writes for .html)."""
        import altair as alt

        with alt.data_transformers.disable_max_rows():
            return self.chart.to_html(inline=True)

    def _repr_html_(self) -> str:
        # In a frame of its own: the page's scripts and styles stay out of the notebook's, and
        # the frame grows to the drawn chart once Vega has drawn it.
        page, end, rest = self.to_html().rpartition("</body>")
        framed = page + _FIT_FRAME + end + rest if end else rest + _FIT_FRAME
        height = _height_guess(self.to_dict())
        return (
            f'<iframe srcdoc="{html.escape(framed, quote=True)}" title="attention chart" '
            f'style="width:100%;height:{height}px;border:none" loading="eager"></iframe>'
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/html": self._repr_html_(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        title = self.to_dict().get("title")
        if isinstance(title, dict):
            title = title.get("text")
        return f"<AttentionChart{': ' + str(title) if title else ''}>"


# Sizes the frame to the page once it has drawn (a srcdoc frame shares the notebook's origin).
_FIT_FRAME = """<script>
(() => {
  const frame = window.frameElement;
  if (!frame) return;
  document.body.style.margin = "0";
  // the body's own height: the document's would never fall below the frame's first guess
  const fit = () => { frame.style.height = Math.ceil(document.body.scrollHeight) + 8 + "px"; };
  new ResizeObserver(fit).observe(document.body);
})();
</script>
"""


def _height_guess(spec: dict) -> int:
    """The frame's height before the chart has drawn: the spec's own height and room for the
    title, the axes and their labels."""
    height = spec.get("height")
    return (height if isinstance(height, int) else 300) + 160


def attention_chart(
    trained: TrainedModel,
    sentence: str,
    kind: str = "encoder",
    layer: int | None = None,
    head: int = 1,
    *,
    target: str | None = None,
    style: str = "heatmap",
) -> AttentionChart:
    """One head's attention on `sentence`, as a chart that draws offline (`AttentionChart`).

    `kind` is "encoder" (self-attention over the source), "decoder" (over the translation so
    far) or "cross" (the translation's queries on the source's keys); `layer` (default: the
    last) and `head` count from 1. `style` "heatmap" draws a cell per query and key, "lines"
    the paper's Figures 3-5 layout (queries left, keys right, a line per pair). The decoder
    reads `target` or the greedy translation, as in `attention`.

    >>> trained = load("runs/cpu")
    >>> chart = attention_chart(trained, "Two dogs run.", kind="decoder", layer=1, head=1)
    >>> chart.save("decoder.svg").suffix
    '.svg'
    """
    if kind not in KIND_NAMES:
        raise ValueError(
            f"unknown attention kind {kind!r}; choose encoder, decoder or cross"
        )
    if style not in CHART_STYLES:
        raise ValueError(f"unknown style {style!r}; choose {' or '.join(CHART_STYLES)}")
    figures = _picture_modules("attention_chart")
    from .viz.charts import heatmap

    data = attention(trained, sentence, target)
    kind = KIND_NAMES[kind]
    li = figures._check_layer(data, layer if layer is not None else data.layers)
    (hi,) = figures._check_heads(data, [head])
    weights = data.weights[kind][li]  # (heads, queries, keys)
    queries, keys = data.tokens(kind, "query"), data.tokens(kind, "key")
    title = f"{figures.KIND_TITLES[kind]}, layer {li + 1}, head {hi + 1}"
    if style == "lines":
        return AttentionChart(
            figures.lines_chart(weights, queries, keys, [hi], title=title)
        )
    shown = [[t.replace("▁", "") or "▁" for t in side] for side in (keys, queries)]
    return AttentionChart(
        heatmap(
            weights[hi],
            x_labels=shown[0],
            y_labels=shown[1],
            title=title,
            x_title="key",
            y_title="query",
            value_title="weight",
            domain=(0.0, 1.0),
        )
    )
