"""Model configuration and the named presets of the paper (Table 3 and section 6.3)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..runtime.checks import check_types


@dataclass
class TransformerConfig:
    """Hyper-parameters of one Transformer; the special ids live here so a checkpoint is self-contained."""

    n_layers: int = 6
    d_model: int = 512
    d_ff: int = 2048
    n_heads: int = 8
    d_k: int | None = None  # None: d_model // n_heads (section 3.2.2)
    d_v: int | None = None
    dropout: float = 0.1
    label_smoothing: float = 0.1
    positional: str = "sinusoidal"  # or "learned" (Table 3 row E)
    # "post": LayerNorm(x + Sublayer(x)), the paper's (section 3.1). "pre": x + Sublayer(LayerNorm(x)) with
    # a final LayerNorm on each stack's output, the later choice (Xiong et al. 2020; the 2018/2022
    # Annotated Transformer) that trains without warm-up.
    norm_position: str = "post"
    max_len: int = 512
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3
    # Encoder and decoder depth may differ (None means n_layers for both); the warm-up of the
    # learning-rate schedule travels with the model so a checkpoint says how it was trained.
    n_encoder_layers: int | None = None
    n_decoder_layers: int | None = None
    warmup_steps: int = 4000
    name: str = field(default="custom", compare=False)

    def __post_init__(self) -> None:
        check_types(self)  # each field of its annotated type, before any rule reads it
        for fname in (
            "n_layers",
            "d_model",
            "d_ff",
            "n_heads",
            "max_len",
            "warmup_steps",
        ):
            value = getattr(self, fname)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"TransformerConfig.{fname} must be an integer >= 1, got {value!r}"
                )
        for fname in ("n_encoder_layers", "n_decoder_layers", "d_k", "d_v"):
            value = getattr(self, fname)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(
                    f"TransformerConfig.{fname} must be None or an integer >= 1, got {value!r}"
                )
        if self.d_k is None or self.d_v is None:
            if self.d_model % self.n_heads != 0:
                raise ValueError(
                    f"TransformerConfig.n_heads={self.n_heads} does not divide d_model={self.d_model}: "
                    "choose another n_heads or set d_k and d_v explicitly"
                )
        for fname in ("dropout", "label_smoothing"):
            value = getattr(self, fname)
            if not (0.0 <= float(value) < 1.0):
                raise ValueError(
                    f"TransformerConfig.{fname} must lie in [0, 1), got {value!r}"
                )
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(
                f"TransformerConfig.positional must be 'sinusoidal' or 'learned', got {self.positional!r}"
            )
        if self.norm_position not in ("post", "pre"):
            raise ValueError(
                f"TransformerConfig.norm_position must be 'post' (the paper's) or 'pre', "
                f"got {self.norm_position!r}"
            )
        ids = {
            "pad_id": self.pad_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "unk_id": self.unk_id,
        }
        for fname, value in ids.items():
            if not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"TransformerConfig.{fname} must be an integer >= 0, got {value!r}"
                )
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"TransformerConfig special ids must be distinct, got {ids}")

    @property
    def head_dim_k(self) -> int:
        return self.d_k if self.d_k is not None else self.d_model // self.n_heads

    @property
    def head_dim_v(self) -> int:
        return self.d_v if self.d_v is not None else self.d_model // self.n_heads

    @property
    def encoder_layers(self) -> int:
        return self.n_encoder_layers or self.n_layers

    @property
    def decoder_layers(self) -> int:
        return self.n_decoder_layers or self.n_layers

    def replace(self, **overrides) -> "TransformerConfig":
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TransformerConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown TransformerConfig fields: {sorted(unknown)}")
        return cls(**d)


# Table 3 of the paper: each row lists only what differs from base (what the paper measured for each
# row is `paper.TABLE3`).
_TABLE3_ROWS: dict[str, dict] = {
    "A1": dict(n_heads=1, d_k=512, d_v=512),
    "A2": dict(n_heads=4, d_k=128, d_v=128),
    "A3": dict(n_heads=16, d_k=32, d_v=32),
    "A4": dict(n_heads=32, d_k=16, d_v=16),
    "B1": dict(d_k=16),
    "B2": dict(d_k=32),
    "C1": dict(n_layers=2),
    "C2": dict(n_layers=4),
    "C3": dict(n_layers=8),
    "C4": dict(d_model=256, d_k=32, d_v=32),
    "C5": dict(d_model=1024, d_k=128, d_v=128),
    "C6": dict(d_ff=1024),
    "C7": dict(d_ff=4096),
    "D1": dict(dropout=0.0),
    "D2": dict(dropout=0.2),
    "D3": dict(label_smoothing=0.0),
    "D4": dict(label_smoothing=0.2),
    "E": dict(positional="learned"),
}

TABLE3_ROWS: tuple[str, ...] = tuple(_TABLE3_ROWS)  # the varied rows, A1 .. E
# Every row of Table 3 in the table's order: base, the varied rows, big.
TABLE3_ALL_ROWS: tuple[str, ...] = ("base", *TABLE3_ROWS, "big")

_PRESETS: dict[str, dict] = {
    "base": {},
    "big": dict(d_model=1024, d_ff=4096, n_heads=16, dropout=0.3),
    **_TABLE3_ROWS,
    # Section 6.3: 4 layers, d_model 1024 (d_ff and heads as in big).
    "parsing": dict(n_layers=4, d_model=1024, d_ff=4096, n_heads=16, dropout=0.3),
    # Small enough to train in seconds on a CPU; used by tests and the smoke profile.
    "tiny": dict(
        n_layers=2,
        d_model=64,
        d_ff=256,
        n_heads=4,
        dropout=0.1,
        max_len=256,
        warmup_steps=400,
    ),
}

PRESET_NAMES: tuple[str, ...] = tuple(_PRESETS)


def preset(name: str, **overrides) -> TransformerConfig:
    """A named configuration ("base", "big", a Table 3 row "A1".."E", "parsing", "tiny") with overrides."""
    if name not in _PRESETS:
        raise ValueError(
            f"unknown preset {name!r}; choose one of {', '.join(PRESET_NAMES)}"
        )
    fields = {f.name for f in dataclasses.fields(TransformerConfig)} - {"name"}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(
            f"model override {unknown[0]!r} is not a field of the model's configuration; "
            f"its fields: {', '.join(sorted(fields))}"
        )
    return TransformerConfig(**{**_PRESETS[name], "name": name, **overrides})
