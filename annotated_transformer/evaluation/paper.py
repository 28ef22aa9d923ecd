"""The numbers "Attention Is All You Need" (Vaswani et al., 2017) reports, typed once from the paper.

Chapters, the reproduction summary and the tests compare measurements with these; keeping them in
one place means a typo is fixed once and no module holds a second copy that could drift. Rows are
frozen dataclasses, so a chapter cannot change the paper's numbers by accident. A cell the paper
leaves empty is None. What the models are (widths, depths, dropout of each Table 3 row) is
architecture and lives in `model/config.py`; only what the paper measured lives here.
"""

from __future__ import annotations

from dataclasses import dataclass

# ----------------------------------------------------------------------------------------------
# Table 1 (section 4): cost of one layer for n positions of width d


@dataclass(frozen=True)
class Table1Row:
    """One layer type as Table 1 prints it, and the exponents of n and d in its complexity column."""

    complexity: str
    sequential: str
    path: str
    n_exponent: int
    d_exponent: int


# k: kernel size of a convolution; r: neighbourhood of restricted self-attention.
TABLE1: dict[str, Table1Row] = {
    "self-attention": Table1Row("O(n^2 d)", "O(1)", "O(1)", n_exponent=2, d_exponent=1),
    "recurrent": Table1Row("O(n d^2)", "O(n)", "O(n)", n_exponent=1, d_exponent=2),
    "convolutional": Table1Row(
        "O(k n d^2)", "O(1)", "O(log_k n)", n_exponent=1, d_exponent=2
    ),
    "restricted self-attention": Table1Row(
        "O(r n d)", "O(1)", "O(n/r)", n_exponent=1, d_exponent=1
    ),
}


# ----------------------------------------------------------------------------------------------
# Section 5.2: hardware and training time


@dataclass(frozen=True)
class TrainingRun:
    """How long a model of the paper trained on one machine with `TRAINING_HARDWARE`."""

    step_time_s: float
    steps: int
    wall_time_h: float


TRAINING_HARDWARE = "8 NVIDIA P100"
TRAINING: dict[str, TrainingRun] = {
    "base": TrainingRun(step_time_s=0.4, steps=100_000, wall_time_h=12.0),
    "big": TrainingRun(step_time_s=1.0, steps=300_000, wall_time_h=3.5 * 24),
}


# ----------------------------------------------------------------------------------------------
# Table 2 (section 6.1): BLEU on newstest2014 and training cost


@dataclass(frozen=True)
class Table2Row:
    """One system of Table 2: tokenized BLEU and training FLOPs per language pair (None: not reported)."""

    model: str
    ensemble: bool
    bleu_en_de: float | None
    bleu_en_fr: float | None
    flops_en_de: float | None
    flops_en_fr: float | None


TABLE2: tuple[Table2Row, ...] = (
    Table2Row("ByteNet", False, 23.75, None, None, None),
    Table2Row("Deep-Att + PosUnk", False, None, 39.2, None, 1.0e20),
    Table2Row("GNMT + RL", False, 24.6, 39.92, 2.3e19, 1.4e20),
    Table2Row("ConvS2S", False, 25.16, 40.46, 9.6e18, 1.5e20),
    Table2Row("MoE", False, 26.03, 40.56, 2.0e19, 1.2e20),
    Table2Row("Deep-Att + PosUnk", True, None, 40.4, None, 8.0e20),
    Table2Row("GNMT + RL", True, 26.30, 41.16, 1.8e20, 1.1e21),
    Table2Row("ConvS2S", True, 26.36, 41.29, 7.7e19, 1.2e21),
    Table2Row("Transformer (base)", False, 27.3, 38.1, 3.3e18, 3.3e18),
    Table2Row("Transformer (big)", False, 28.4, 41.8, 2.3e19, 2.3e19),
)

# Table 2's cost estimate: training time x GPUs x these sustained single-precision FLOP/s per GPU.
TABLE2_SUSTAINED_FLOPS: dict[str, float] = {
    "K80": 2.8e12,
    "K40": 3.7e12,
    "M40": 6.0e12,
    "P100": 9.5e12,
}


def table2_row(model: str) -> Table2Row:
    """The Table 2 row of the single model `model` ("Transformer (base)", "ConvS2S", ...)."""
    for row in TABLE2:
        if row.model == model and not row.ensemble:
            return row
    raise KeyError(f"no row {model!r} in Table 2")


# ----------------------------------------------------------------------------------------------
# Table 3 (section 6.2): variations of the base model, EN-DE dev set newstest2013


@dataclass(frozen=True)
class Table3Row:
    """Dev perplexity (per word-piece), dev BLEU and parameters in millions (None: not reported)."""

    ppl: float
    bleu: float
    params_m: int | None


# Keyed like the presets of `model/config.py`: "base", "A1".."A4", "B1", "B2", "C1".."C7", "D1".."D4", "E", "big".
TABLE3: dict[str, Table3Row] = {
    "base": Table3Row(4.92, 25.8, 65),
    "A1": Table3Row(5.29, 24.9, None),
    "A2": Table3Row(5.00, 25.5, None),
    "A3": Table3Row(4.91, 25.8, None),
    "A4": Table3Row(5.01, 25.4, None),
    "B1": Table3Row(5.16, 25.1, 58),
    "B2": Table3Row(5.01, 25.4, 60),
    "C1": Table3Row(6.11, 23.7, 36),
    "C2": Table3Row(5.19, 25.3, 50),
    "C3": Table3Row(4.88, 25.5, 80),
    "C4": Table3Row(5.75, 24.5, 28),
    "C5": Table3Row(4.66, 26.0, 168),
    "C6": Table3Row(5.12, 25.4, 53),
    "C7": Table3Row(4.75, 26.2, 90),
    "D1": Table3Row(5.77, 24.6, None),
    "D2": Table3Row(4.95, 25.5, None),
    "D3": Table3Row(4.67, 25.3, None),
    "D4": Table3Row(5.47, 25.7, None),
    "E": Table3Row(4.92, 25.7, None),
    "big": Table3Row(4.33, 26.4, 213),
}


# ----------------------------------------------------------------------------------------------
# Table 4 (section 6.3): English constituency parsing, WSJ section 23


@dataclass(frozen=True)
class Table4Row:
    """One parser of Table 4, how it was trained, and its F1."""

    parser: str
    training: str
    f1: float


WSJ_ONLY = "WSJ only, discriminative"
SEMI_SUPERVISED = "semi-supervised"

TABLE4: tuple[Table4Row, ...] = (
    Table4Row("Vinyals & Kaiser et al. 2014", WSJ_ONLY, 88.3),
    Table4Row("Petrov et al. 2006", WSJ_ONLY, 90.4),
    Table4Row("Zhu et al. 2013", WSJ_ONLY, 90.4),
    Table4Row("Dyer et al. 2016", WSJ_ONLY, 91.7),
    Table4Row("Transformer (4 layers)", WSJ_ONLY, 91.3),
    Table4Row("Zhu et al. 2013", SEMI_SUPERVISED, 91.3),
    Table4Row("Huang & Harper 2009", SEMI_SUPERVISED, 91.3),
    Table4Row("McClosky et al. 2006", SEMI_SUPERVISED, 92.1),
    Table4Row("Vinyals & Kaiser et al. 2014", SEMI_SUPERVISED, 92.1),
    Table4Row("Transformer (4 layers)", SEMI_SUPERVISED, 92.7),
    Table4Row("Luong et al. 2015", "multi-task", 93.0),
    Table4Row("Dyer et al. 2016", "generative", 93.3),
)


def table4_row(parser: str, training: str) -> Table4Row:
    """The Table 4 row of `parser` trained as `training` (`WSJ_ONLY`, `SEMI_SUPERVISED`, ...)."""
    for row in TABLE4:
        if row.parser == parser and row.training == training:
            return row
    raise KeyError(f"no row {parser!r} ({training}) in Table 4")


# Section 5.1: each training batch held about 25,000 source and 25,000 target tokens.
PAPER_TARGET_TOKENS_PER_STEP = 25_000
