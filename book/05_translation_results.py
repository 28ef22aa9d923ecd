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
# # Translation results
#
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/05_translation_results.ipynb)
#
# ```{note}
# This chapter is a placeholder: its content arrives with the **translation-results** issue. The
# cells below only read the run's parameters, so the book runner and the tests treat it like any
# other chapter.
# ```
#
# Turning the trained model into translations, and scoring them the way the paper did and the way
# one should today. It follows section 6.1 and Table 2 of the paper. When written, it will show:
#
# - greedy decoding against beam search with beam 4 and the length penalty of {cite:t}`wu2016gnmt`
#   (alpha 0.6), both on the KV cache;
# - averaging the last checkpoints, as the paper did for its reported models;
# - BLEU {cite:p}`papineni2002bleu` twice: sacreBLEU with its signature
#   {cite:p}`post2018sacrebleu`, and the paper's tokenized BLEU with compound splitting, saying
#   which is which;
# - the training cost in FLOPs and the model FLOPs utilisation, set beside Table 2.
#
# It will write `results/<profile>/translation.json` (`bleu_tokenized`, `sacrebleu`,
# `training_flops`), which the introduction's reproduction summary reads.

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
max_steps = None  # None keeps the profile's default (of the model trained in chapter 04)
data_dir = None  # None: $AT_DATA_DIR, then a download
beam_size = None  # None: the profile's beam (4 outside the smoke profile)

# %%
settings = get_profile(profile, max_steps=max_steps, beam_size=beam_size)
print(f"under profile {settings.name!r} this chapter will translate "
      f"{settings.eval_max_sentences or 'all'} test sentences of {settings.corpus} with beam {settings.beam_size}")
