"""The four run profiles of the book (smoke, cpu, gpu, paper) and the knobs each one sets.

A chapter's `parameters` cell names a profile; `profile_settings(profile)` turns it into concrete
defaults, so one notebook runs in seconds under CI and for days on eight GPUs without edits.
Chapters may override any knob from their parameters cell (None keeps the profile's value).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

PROFILE_NAMES: tuple[str, ...] = ("smoke", "cpu", "gpu", "paper")


@dataclass(frozen=True)
class ProfileSettings:
    """Scale of one run of the book. Fields are defaults; chapters read what they need.

    Attributes:
        name: the profile's name.
        description: where it runs and what for, shown in the introduction.
        preset: model preset for translation runs (see `annotated_transformer.config.preset`).
        dataset: translation corpus ("multi30k", "iwslt14", "wmt14").
        max_steps: optimizer steps of the main training run.
        batch_tokens: target tokens per optimizer step (after gradient accumulation).
        max_train_sentences: cap on training pairs (None: the whole corpus).
        eval_sentences: sentences decoded for BLEU (None: the whole test set).
        beam_size: beam width for translation (section 6.1 uses 4).
        variation_rows: Table 3 rows trained by chapter 06.
        variation_steps: optimizer steps per Table 3 row.
        parsing_steps: optimizer steps of the parsing model (chapter 07).
        time_budget_s: what the whole book should take under this profile, in seconds.
    """

    name: str
    description: str
    preset: str
    dataset: str
    max_steps: int
    batch_tokens: int
    max_train_sentences: int | None
    eval_sentences: int | None
    beam_size: int
    variation_rows: tuple[str, ...]
    variation_steps: int
    parsing_steps: int
    time_budget_s: float
    extra: dict = field(default_factory=dict)

    def replace(self, **overrides) -> "ProfileSettings":
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_ALL_ROWS = ("base", "A1", "A2", "A3", "A4", "B1", "B2", "C1", "C2", "C3", "C4", "C5", "C6", "C7",
             "D1", "D2", "D3", "D4", "E", "big")

PROFILES: dict[str, ProfileSettings] = {
    "smoke": ProfileSettings(
        name="smoke",
        description="CI and tests: every chapter end to end on tiny settings (whole book <= 10 min on 2 cores)",
        preset="tiny", dataset="multi30k", max_steps=20, batch_tokens=1024,
        max_train_sentences=2000, eval_sentences=16, beam_size=2,
        variation_rows=("base", "A1", "C1"), variation_steps=5, parsing_steps=10,
        time_budget_s=600,
    ),
    "cpu": ProfileSettings(
        name="cpu",
        description="a laptop: real Multi30k EN->DE training, Table 3 rows at tiny scale (whole book <= 30 min on 2 cores)",
        preset="tiny", dataset="multi30k", max_steps=1500, batch_tokens=4096,
        max_train_sentences=None, eval_sentences=500, beam_size=4,
        variation_rows=_ALL_ROWS, variation_steps=150, parsing_steps=600,
        time_budget_s=1800,
    ),
    "gpu": ProfileSettings(
        name="gpu",
        description="one GPU or Colab: Multi30k and IWSLT14 to convergence, Table 3 rows at IWSLT scale (hours, resumable)",
        preset="base", dataset="iwslt14", max_steps=40_000, batch_tokens=25_000,
        max_train_sentences=None, eval_sentences=None, beam_size=4,
        variation_rows=_ALL_ROWS, variation_steps=20_000, parsing_steps=20_000,
        time_budget_s=12 * 3600,
    ),
    "paper": ProfileSettings(
        name="paper",
        description="8 GPUs with torchrun: WMT14 EN-DE base and big with the paper's schedule (12 h / 3.5 days on P100s)",
        preset="base", dataset="wmt14", max_steps=100_000, batch_tokens=25_000,
        max_train_sentences=None, eval_sentences=None, beam_size=4,
        variation_rows=_ALL_ROWS, variation_steps=100_000, parsing_steps=100_000,
        time_budget_s=4 * 24 * 3600,
    ),
}


def profile_settings(profile: str, **overrides) -> ProfileSettings:
    """The settings of `profile`, with every override that is not None applied.

    Chapters pass their parameters cell straight through, e.g.
    `profile_settings(profile, max_steps=max_steps)`: a None knob keeps the profile's default.

    Raises:
        ValueError: for an unknown profile or an override that is not a field.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
    settings = PROFILES[profile]
    known = {f.name for f in dataclasses.fields(ProfileSettings)} - {"name", "description"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"profile_settings got unknown knobs {unknown}; known: {', '.join(sorted(known))}")
    return settings.replace(**{k: v for k, v in overrides.items() if v is not None})


def resolve_device(device: str = "auto") -> str:
    """"auto" becomes "cuda" when a GPU is visible, else "cpu"; anything else passes through."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
