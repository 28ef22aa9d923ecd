"""Training recipes: every default of `train`, `translate` and `evaluate`, chosen by one word (the profile).

A recipe says what to train (corpus, direction, BPE size, model size), how (batch tokens, accumulation,
learning rate, warm-up, dropout, label smoothing, precision) and for how long (steps, epochs or minutes),
and how to evaluate (beam, length penalty, checkpoint averaging). `--profile` picks a recipe; any other
flag overrides one field of it.

- smoke: seconds on a CPU; proves the pipeline end to end (tests, CI).
- cpu:   Multi30k EN->DE in 15 minutes on a 2-core CPU; the best recipe found by the tuning runs in
         results/tuning_multi30k_cpu.md.
- gpu:   Multi30k EN->DE on one GPU (about 10 minutes on an H100), and `iwslt14` / `wmt14` variants.
- paper: WMT14 EN->DE, the base model with the paper's schedule (section 5.3) on 8 GPUs with torchrun;
         `paper-big` for the big model.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..config import TransformerConfig, preset


@dataclass(frozen=True)
class TrainingRecipe:
    """Everything a training run needs besides where the data is and where to write.

    Learning rate: the paper's schedule (section 5.3) is lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5);
    `peak_lr` rescales that curve so its top (at step == warmup_steps) is the given rate, and None keeps the
    paper's own scale (7.0e-4 for base with 4000 warm-up steps).
    """

    profile: str
    description: str
    # data
    corpus: str = "multi30k"
    src_lang: str = "en"
    tgt_lang: str = "de"
    train_split: str = "train"
    valid_split: str = "valid"
    test_split: str = "test"
    max_train_pairs: int | None = None  # None: the whole training split
    max_valid_pairs: int | None = None  # None: the whole validation split (its loss is measured every eval_every)
    max_sentence_words: int | None = 250  # pairs longer than this (either side, in words) are skipped
    vocab_size: int = 8000
    # model
    preset: str = "base"
    model_overrides: dict = field(default_factory=dict)
    # batching: `batch_tokens` padded target (and source) slots per micro-batch; each optimizer step takes
    # `accumulation` micro-batches per rank, so a step sees about batch_tokens * accumulation * world_size tokens.
    batch_tokens: int = 4096
    accumulation: int = 1
    # optimisation (section 5.3)
    peak_lr: float | None = None
    warmup_steps: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    clip_norm: float | None = None  # the paper clips nothing
    # length of training: whichever limit comes first (None: no limit of that kind)
    max_steps: int | None = None
    max_epochs: int | None = None
    time_budget_minutes: float | None = None
    # "wall": minutes on the clock. "cpu": CPU time of this process divided by its threads, i.e. the wall
    # time the run would take alone on that many cores: fair on a machine shared with other jobs.
    budget_clock: str = "wall"
    # engineering
    precision: str = "auto"  # "auto": bf16 where the hardware has it, else fp32; or "bf16", "fp32"
    compile: bool = False
    threads: int | None = None  # CPU threads for torch (None: torch's default, one per core)
    seed: int = 1
    log_every: int = 50
    eval_every: int = 500  # steps between validation loss measurements (0: only at the end)
    save_every_steps: int | None = None  # snapshot for averaging every so many steps
    save_every_minutes: float | None = 10.0  # ... or minutes (section 6.1: every 10 minutes)
    keep_snapshots: int = 20
    # evaluation (section 6.1)
    average_last: int = 5
    beam_size: int = 4
    length_penalty: float = 0.6
    max_len_a: float = 1.0
    max_len_b: int = 50
    eval_batch_tokens: int = 4000
    eval_max_sentences: int | None = None

    def model_config(self) -> TransformerConfig:
        """The model configuration: the named preset with this recipe's overrides."""
        return preset(self.preset, **{"warmup_steps": self.warmup_steps, **self.model_overrides})

    def replace(self, **overrides) -> "TrainingRecipe":
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainingRecipe":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in values.items() if k in known}
        if "adam_betas" in values:
            values["adam_betas"] = tuple(values["adam_betas"])
        return cls(**values)


# The cpu recipe is the best of the tuning runs in results/tuning_multi30k_cpu.md (2-core CPU, 15 minutes).
# Dropout 0: in 3.5-4 epochs nothing overfits yet, and dropout cost 20% of the tokens/s (r2 vs r3 there).
_CPU_MODEL = dict(n_layers=3, d_model=256, d_ff=1024, n_heads=4, dropout=0.0, max_len=256)

RECIPES: dict[str, TrainingRecipe] = {
    "smoke": TrainingRecipe(
        profile="smoke",
        description="seconds on a CPU: a tiny model on 2,000 Multi30k pairs, to prove the pipeline end to end",
        max_train_pairs=2000, max_valid_pairs=200, vocab_size=1000, preset="tiny",
        model_overrides=dict(dropout=0.1), batch_tokens=1024, peak_lr=2e-3, warmup_steps=50,
        max_steps=60, log_every=10, eval_every=30, save_every_steps=20, save_every_minutes=None,
        keep_snapshots=3, average_last=2, beam_size=2, eval_max_sentences=32, eval_batch_tokens=2000,
    ),
    "cpu": TrainingRecipe(
        profile="cpu",
        description="Multi30k EN->DE in 15 minutes on a 2-core CPU (goal: sacreBLEU >= 33 on test2016 flickr)",
        vocab_size=8000, preset="base", model_overrides=_CPU_MODEL,
        # 1,024-token batches: twice the updates of 2,048 in the same 15 minutes, the biggest single gain.
        batch_tokens=1024, accumulation=1, peak_lr=2e-3, warmup_steps=400,
        time_budget_minutes=15.0, log_every=25, eval_every=300,
        save_every_steps=None, save_every_minutes=1.0, keep_snapshots=10, average_last=5,
        beam_size=4, eval_batch_tokens=3000,
    ),
    "gpu": TrainingRecipe(
        profile="gpu",
        description="Multi30k EN->DE on one GPU, about 7 minutes on an H100 (goal: sacreBLEU >= 38 on test2016)",
        # The "Transformer-tiny" shape that small-data studies of Multi30k found best (4+4 layers, d_model 128,
        # d_ff 256, 4 heads, dropout 0.3): in a sweep on one H100 it beat d_model 256 (38.8) and two d_model 512
        # models (20.0, 24.7: they overfit 29k pairs) with 39.2 sacreBLEU after 6 minutes (results/gpu/).
        # 134 steps per epoch at 4k tokens; 100 epochs take about 6.5 minutes on an H100.
        vocab_size=8000, preset="base",
        model_overrides=dict(n_layers=4, d_model=128, d_ff=256, n_heads=4, dropout=0.3, max_len=256),
        batch_tokens=4096, accumulation=1, peak_lr=5e-3, warmup_steps=2000,
        time_budget_minutes=10.0, max_epochs=100, log_every=50, eval_every=250,
        save_every_steps=300, save_every_minutes=None, keep_snapshots=10, average_last=5,
        precision="auto", compile=True, eval_batch_tokens=20_000,
    ),
    "paper": TrainingRecipe(
        profile="paper",
        description="WMT14 EN->DE, Transformer base with the paper's schedule: 100k steps of ~25k+25k tokens on 8 GPUs",
        corpus="wmt14", train_split="train", valid_split="newstest2013", test_split="newstest2014",
        vocab_size=37000, preset="base", model_overrides=dict(max_len=1024),
        # 8 ranks x 1 micro-batch of 3,584 padded slots ~ 25,000 real tokens per side per step (section 5.1);
        # on one GPU use --accumulation 8 for the same steps.
        batch_tokens=3584, accumulation=1, peak_lr=None, warmup_steps=4000,
        max_steps=100_000, log_every=100, eval_every=2000,
        save_every_steps=None, save_every_minutes=10.0, keep_snapshots=25, average_last=5,
        precision="auto", compile=True, eval_batch_tokens=20_000,
    ),
}
# Variants named after their corpus or model; `--profile` accepts these names too.
RECIPES["gpu-iwslt14"] = RECIPES["gpu"].replace(
    profile="gpu-iwslt14",
    description="IWSLT14 DE->EN on one GPU (fairseq's small-data recipe: 10k joint BPE, dropout 0.3); needs the training text",
    corpus="iwslt14", src_lang="de", tgt_lang="en", valid_split="valid", test_split="test", vocab_size=10_000,
    model_overrides=dict(dropout=0.3, d_ff=1024, n_heads=4, max_len=512), batch_tokens=8192, peak_lr=5e-4,
    warmup_steps=4000, time_budget_minutes=None, max_steps=60_000, max_epochs=None,
    save_every_steps=2000, keep_snapshots=10, average_last=5,
)
RECIPES["paper-big"] = RECIPES["paper"].replace(
    profile="paper-big",
    description="WMT14 EN->DE, Transformer big: 300k steps on 8 GPUs, average of the last 20 snapshots (section 6.1)",
    preset="big", model_overrides=dict(max_len=1024), max_steps=300_000, average_last=20,
)

PROFILE_CHOICES: tuple[str, ...] = tuple(RECIPES)


def recipe_for(profile: str, **overrides) -> TrainingRecipe:
    """The recipe of `profile` with every override that is not None applied."""
    if profile not in RECIPES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_CHOICES)}")
    known = {f.name for f in dataclasses.fields(TrainingRecipe)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown recipe fields {unknown}; known: {', '.join(sorted(known))}")
    return RECIPES[profile].replace(**{k: v for k, v in overrides.items() if v is not None})
