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
# # English constituency parsing
#
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/07_constituency_parsing.ipynb)
#
# ```{note}
# This chapter is a placeholder: its content arrives with the **constituency-parsing** issue. The
# cells below only read the run's parameters, so the book runner and the tests treat it like any
# other chapter.
# ```
#
# Does the same architecture, barely tuned, parse English? The paper says yes; this chapter checks
# on the Penn Treebank sample. It follows section 6.3 and Table 4 of the paper. When written, it
# will show:
#
# - linearised parse trees as target sequences {cite:p}`vinyals2015grammar`, from the Penn
#   Treebank sample {cite:p}`marcus1993ptb`;
# - the parsing model of section 6.3 (4 layers, d_model 1024) scaled to the profile;
# - decoding with beam 21, length penalty alpha 0.3 and outputs up to the input length plus 300;
# - labelled bracket F1, set beside Table 4.
#
# It will write `results/<profile>/constituency_parsing.json` (`f1`), which the introduction's
# reproduction summary reads.

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
parsing_steps = None  # None: the profile's training steps for the parser

# %%
settings = get_profile(profile, max_steps=max_steps)
print(f"under profile {settings.name!r} this chapter will train the parser for "
      f"{parsing_steps or settings.book.parsing_steps} steps")
