"""The profiles themselves: `smoke`, `cpu`, `gpu`, `paper` and their variants.

Each value here was chosen on validation data; how, and on what evidence, is told in the results
folder named beside it (`results/tuning_multi30k_cpu.md`, `results/gpu/README.md`,
`results/tuning_table3_*/README.md`, `results/tuning_parser_cpu/README.md`), not here.
"""

from __future__ import annotations

from ..model.config import TABLE3_ALL_ROWS
from ..runtime.records import json_text, parse_json
from ..training.settings import TrainSettings
from .book_scales import BookScales, Table3Scale
from .parts import DataSettings, EvaluationSettings, ModelChoice
from .profile import FIELD_PART, Profile

# The Table 3 rows that cover the six findings of section 6.2 (chapter 06) for budgets short of
# all 20: depth (C1/C3) and width (C4/C5) for bigger-is-better; the feed-forward pair C6/C7 is
# the one the findings can spare.
TABLE3_CPU_ROWS = ("base", "A1", "A4", "B1", "C1", "C3", "C4", "C5", "D1", "D2", "E")

SMOKE = Profile(
    name="smoke",
    description="CI and tests: a tiny model on 2,000 Multi30k pairs, every chapter in minutes on 2 cores",
    book=BookScales(
        minutes=10,
        table3=Table3Scale(
            rows=("base", "A1", "C1"),
            epochs=1,
            seeds=2,
            width_divisor=8,
            depth_divisor=2,
            heads_divisor=4,
            batch_tokens=1024,
            warmup_steps=20,
            peak_lr=2e-3,
            overfit_epochs=2,
        ),
    ),
    data=DataSettings(max_train_pairs=2000, max_valid_pairs=200, vocab_size=1000),
    model=ModelChoice(preset="tiny", model_overrides=dict(dropout=0.1)),
    train=TrainSettings(
        name="smoke",
        batch_tokens=1024,
        peak_lr=2e-3,
        warmup_steps=50,
        max_steps=60,
        log_every=10,
        eval_every=30,
        eval_batch_tokens=2000,
        save_every_steps=20,
        keep_snapshots=3,
    ),
    evaluation=EvaluationSettings(average_last=2, beam_size=2, eval_max_sentences=32),
)

# Chosen on validation BLEU for 15 minutes on 2 cores (results/tuning_multi30k_cpu.md): 1,024-token
# batches; dropout 0.1 from the fifth epoch and none before, which the fastest CPU kind's budget
# needs and the slowest kind's leaves alone (results/tuning_multi30k_amx/, tuning_multi30k_avx2/);
# alpha 1.0 (results/tuning_multi30k_cpu/decode_choice.json); eager, as measured in
# results/benchmarks/cpu_compile.json.
CPU = Profile(
    name="cpu",
    description="a laptop or a 2-core machine: Multi30k EN->DE in 15 minutes of training",
    book=BookScales(
        minutes=55,
        # 11 rows x 2 seeds, one epoch, widths / 8, depths / 2, heads / 4, a 2,000-piece vocabulary;
        # dropout's rows also 10 epochs of a twentieth (results/tuning_table3_cpu/README.md).
        table3=Table3Scale(
            rows=TABLE3_CPU_ROWS,
            epochs=1,
            seeds=2,
            width_divisor=8,
            depth_divisor=2,
            heads_divisor=4,
            batch_tokens=1024,
            vocab_size=2000,
            warmup_steps=200,
            peak_lr=4e-3,
            overfit_share=20,
            overfit_epochs=10,
        ),
    ),
    data=DataSettings(vocab_size=8000),
    model=ModelChoice(
        preset="base",
        model_overrides=dict(
            n_layers=3, d_model=256, d_ff=1024, n_heads=4, dropout=0.1, max_len=256
        ),
    ),
    train=TrainSettings(
        name="cpu",
        batch_tokens=1024,
        accumulation=1,
        peak_lr=2e-3,
        warmup_steps=400,
        dropout_from_epoch=4,
        time_budget_minutes=15.0,
        compile=False,
        log_every=25,
        eval_every=300,
        eval_batch_tokens=3000,
        save_every_minutes=1.0,
        keep_snapshots=10,
    ),
    evaluation=EvaluationSettings(average_last=5, beam_size=4, length_penalty_alpha=1.0),
)

# Chosen on validation perplexity (results/gpu/README.md): 4+4 layers at d_model 256, stopped at
# epoch 41, the validation minimum; Table 3 sized on one H100 (results/gpu/book_calibration,
# results/tuning_table3_gpu/README.md).
GPU = Profile(
    name="gpu",
    description="one GPU or Colab: Multi30k EN->DE, 41 epochs (on an H100 6 minutes compiled; eager, as it trains, an estimated 4)",
    book=BookScales(
        minutes=30,
        # all 20 rows x 3 seeds at half the paper's widths and depths, 3 epochs, dropout's rows 30
        # epochs of a tenth, four processes sharing the GPU
        table3=Table3Scale(
            rows=TABLE3_ALL_ROWS,
            epochs=3,
            seeds=3,
            width_divisor=2,
            depth_divisor=2,
            warmup_steps=200,
            peak_lr=2e-3,
            overfit_epochs=30,
            accelerator_workers=4,
        ),
    ),
    data=DataSettings(vocab_size=8000),
    model=ModelChoice(
        preset="base",
        model_overrides=dict(
            n_layers=4, d_model=256, d_ff=1024, n_heads=4, dropout=0.3, max_len=256
        ),
    ),
    train=TrainSettings(
        name="gpu",
        batch_tokens=4096,  # 134 steps an epoch
        accumulation=1,
        peak_lr=2e-3,
        warmup_steps=1000,
        time_budget_minutes=10.0,
        max_epochs=41,
        precision="auto",
        # Eager: at 9.4M parameters compiling does not pay over 41 epochs. The compiled seed-1 run
        # reached step 1,000 at 197.5 s (142.8 s before step 50, compiling), eager the same
        # recipe's first 1,000 steps in 73.6 s beside two other runs on the GPU; between steps 250
        # and 1,000 both ran about 29 steps a second, and compiled ran 35 after. Eager: about
        # 200-225 s for the 5,412 steps against 326.5 s (results/gpu/README.md).
        compile=False,
        log_every=50,
        eval_every=250,
        eval_batch_tokens=20_000,
        save_every_steps=300,
        keep_snapshots=10,
    ),
    evaluation=EvaluationSettings(average_last=5),
)

# The paper's base model and schedule on WMT14 (sections 5 and 6.1): 8 ranks x one micro-batch of
# 3,584 padded slots ~ 25,000 tokens per side a step; on one GPU, --accumulation 8 takes the same.
PAPER = Profile(
    name="paper",
    description="8 GPUs with torchrun: WMT14 EN->DE, Transformer base with the paper's schedule (100k steps)",
    book=BookScales(
        minutes=4 * 24 * 60,
        # 100,000 steps of 25,000 tokens: about 20 epochs of WMT14
        table3=Table3Scale(rows=TABLE3_ALL_ROWS, epochs=20),
    ),
    data=DataSettings(
        corpus="wmt14",
        train_split="train",
        valid_split="newstest2013",
        test_split="newstest2014",
        vocab_size=37000,
    ),
    model=ModelChoice(preset="base", model_overrides=dict(max_len=1024)),
    train=TrainSettings(
        name="paper",
        batch_tokens=3584,
        accumulation=1,
        peak_lr=None,
        warmup_steps=4000,
        max_steps=100_000,
        precision="auto",
        compile=True,
        log_every=100,
        eval_every=2000,
        eval_batch_tokens=20_000,
        save_every_minutes=10.0,
        keep_snapshots=25,
    ),
    evaluation=EvaluationSettings(average_last=5),
)

PROFILES: dict[str, Profile] = {p.name: p for p in (SMOKE, CPU, GPU, PAPER)}
PROFILES["gpu-iwslt14"] = GPU.replace(
    name="gpu-iwslt14",
    description="one GPU: IWSLT14 DE->EN (fairseq's small-data recipe: 10k joint BPE, dropout 0.3); downloads the training text",
    corpus="iwslt14",
    src_lang="de",
    tgt_lang="en",
    valid_split="valid",
    test_split="test",
    vocab_size=10_000,
    model_overrides=dict(dropout=0.3, d_ff=1024, n_heads=4, max_len=512),
    batch_tokens=8192,
    peak_lr=5e-4,
    warmup_steps=4000,
    time_budget_minutes=None,
    max_steps=60_000,
    max_epochs=None,
    compile=True,  # 60,000 steps of a wider model: compiling pays here, unlike the gpu recipe
    save_every_steps=2000,
    keep_snapshots=10,
    average_last=5,
)
PROFILES["paper-big"] = PAPER.replace(
    name="paper-big",
    description="8 GPUs with torchrun: WMT14 EN->DE, Transformer big, 300k steps, average of the last 20 snapshots",
    preset="big",
    model_overrides=dict(max_len=1024),
    max_steps=300_000,
    keep_snapshots=20,
    average_last=20,
)

PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def get_profile(name: str, **overrides) -> Profile:
    """The profile called `name` with every override that is not None applied.

    Chapters pass their parameters cell straight through (`get_profile(profile, max_steps=max_steps)`),
    so a knob left at None keeps the profile's value.

    Raises:
        ValueError: an unknown profile, a field that does not exist, a value its field does not
            allow (`PROFILE_BOUNDS`: `max_steps=0`, `peak_lr=inf`, `corpus="bogus"` ...), or a model
            override that makes an invalid configuration (the config's own message).
    """
    if name not in PROFILES:
        raise ValueError(
            f"unknown profile {name!r}; choose one of {', '.join(PROFILE_NAMES)}"
        )
    known = set(FIELD_PART) | {"book", "threads"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(
            f"unknown profile fields {unknown}; known: {', '.join(sorted(known))}"
        )
    return PROFILES[name].replace(**{k: v for k, v in overrides.items() if v is not None})


def profile_from_record(values: dict) -> Profile:
    """The profile a stored record (a checkpoint's, a run's start record) describes; a book
    written by an older version takes today's scales of its name."""
    return Profile.from_dict(values, {name: p.book for name, p in PROFILES.items()})


def comparable_record(record: dict) -> dict:
    """A stored profile record (a run's start record, a checkpoint's), as today's code writes the
    same profile: fields added since it was written take their defaults, and tuples are lists, as
    in JSON. Two records of one profile compare equal whatever version wrote either; a record
    that no longer makes a profile is returned as JSON has it."""
    try:
        record = profile_from_record(record).to_dict()
    except (TypeError, ValueError, KeyError):
        pass
    return parse_json(json_text(record, "a profile record"), "a profile record")
