# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Training
#
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/04_training.ipynb)
#
# ```{note}
# This chapter is a placeholder: its content arrives with the **training** issue. The cells below
# only read the run's parameters, so the book runner and the tests treat it like any other
# chapter.
# ```
#
# How the paper trained its models, rebuilt piece by piece and then run for real. It follows
# section 5 of the paper. When written, it will show:
#
# - a shared byte-pair vocabulary for both languages, trained with sentencepiece
#   {cite:p}`sennrich2016bpe,kudo2018sentencepiece`;
# - batches filled by token count from length buckets, as in section 5.1, with the padding
#   fraction they leave;
# - the learning-rate schedule of section 5.3 (linear warm-up, then inverse square root decay),
#   plotted for several model widths and warm-up lengths;
# - label smoothing (section 5.4) {cite:p}`szegedy2016labelsmoothing`: the smoothed target
#   distribution as a picture, and what it does to the loss;
# - the copy task, a synthetic check that the model learns at all, in seconds on a CPU;
# - the real training run at the profile's scale (Multi30k on a CPU, IWSLT14 on one GPU, WMT14 on
#   eight), with loss curves, tokens per second and model FLOPs utilisation; it resumes from its
#   last checkpoint.
#
# It will write `results/<profile>/training.json` (including `step_time_s`, compared with the
# paper's 0.4 s per step in the summary table), which the introduction's reproduction summary
# reads.

# %% tags=["hide-input"]
# Colab or a fresh environment: install the package when it is missing. In a clone, use the
# clone's package (the book runner and `pip install -e .` make this a no-op).
import importlib.util
import pathlib
import subprocess
import sys

if importlib.util.find_spec("annotated_transformer") is None:
    clone = pathlib.Path.cwd().parent
    if (clone / "annotated_transformer").is_dir():
        sys.path.insert(0, str(clone))
    else:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q",
                               "annotated-transformer @ git+https://github.com/annotated-transformer/annotated-transformer@main"])

# %%
from annotated_transformer.devices import resolve_device
from annotated_transformer.profiles import get_profile

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # "auto" picks CUDA when a GPU is visible
max_steps = None  # None keeps the profile's default
data_dir = None  # None: $AT_DATA_DIR, then a download

# %%
settings = get_profile(profile, max_steps=max_steps)
budget = [f"{settings.max_steps} steps"] if settings.max_steps else []
budget += [f"{settings.max_epochs} epochs"] if settings.max_epochs else []
budget += [f"{settings.time_budget_minutes:g} minutes"] if settings.time_budget_minutes else []
print(f"under profile {settings.name!r} this chapter will train the {settings.preset!r} preset "
      f"({settings.model_overrides}) on {settings.corpus} {settings.src_lang}->{settings.tgt_lang} for "
      f"{' or '.join(budget)}, whichever comes first, with batches of about {settings.batch_tokens} tokens, "
      f"on {resolve_device(device)}")
