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
# # Model variations
#
# [Open in Colab](https://colab.research.google.com/github/annotated-transformer/annotated-transformer/blob/main/book/06_model_variations.ipynb)
#
# ```{note}
# This chapter is a placeholder: its content arrives with the **model-variations** issue. The
# cells below only read the run's parameters, so the book runner and the tests treat it like any
# other chapter.
# ```
#
# Which design choices matter: every row of Table 3, trained at the profile's scale. It follows
# section 6.2 and Table 3 of the paper. When written, it will show:
#
# - each variation of Table 3 (heads and key size, depth, width, feed-forward size, dropout, label
#   smoothing, learned positions, the big model), built from the package's presets;
# - perplexity per subword, BLEU and parameter count for every row, in a table beside the paper's
#   numbers;
# - charts of the trends the paper reports (one head is worse, too many heads hurt, smaller keys
#   hurt, bigger is better, dropout helps), and whether our small-scale runs show them.
#
# It will write `results/<profile>/model_variations.json` (`rows.<row>.ppl`, `rows.<row>.bleu`,
# `rows.<row>.params_m`, `rows.<row>.bleu_minus_base`), which the introduction's reproduction
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
max_steps = None  # None keeps the profile's default
data_dir = None  # None: $AT_DATA_DIR, then a download
variation_steps = None  # None: the profile's steps per Table 3 row

# %%
settings = get_profile(profile, max_steps=max_steps)
rows, steps_per_row = settings.book.table3_rows, variation_steps or settings.book.table3_steps
print(f"under profile {settings.name!r} this chapter will train {len(rows)} rows ({', '.join(rows)}) "
      f"for {steps_per_row} steps each")
