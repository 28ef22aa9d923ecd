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
# # Attention visualizations
#
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/08_attention_visualizations.ipynb)
#
# ```{note}
# This chapter is a placeholder: its content arrives with the **attention-figures** issue. The
# cells below only read the run's parameters, so the book runner and the tests treat it like any
# other chapter.
# ```
#
# What the trained heads look at, drawn again from a model this book trained. It follows the
# appendix of the paper, Figures 3 to 5. When written, it will show:
#
# - Figure 3: attention from one word to a distant one (a long-distance dependency), one colour
#   per head;
# - Figure 4: two heads that resolve an anaphora, sharply;
# - Figure 5: heads of one layer whose patterns follow the structure of the sentence, each with
#   its own job;
# - an interactive explorer over layers and heads, and the export of every figure to HTML, SVG and
#   PNG with `python -m annotated_transformer attention`.
#
# It will write exported figures and no summary numbers, which the introduction's reproduction
# summary reads.

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
checkpoint = None  # None: the checkpoint chapter 04 trained under this profile

# %%
settings = get_profile(profile)
print(f"under profile {settings.name!r} this chapter will read the {settings.preset!r} model trained on {settings.corpus}"
      + (f" from {checkpoint}" if checkpoint else ""))
