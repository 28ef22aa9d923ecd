"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), fast and verified."""

import warnings

from .model import *  # noqa: F403 (the public names are the model's: model/__init__.py)
from .model import __all__ as __all__

# In a kernel without ipywidgets (papermill, the built site) tqdm.auto falls back to its text bar, which
# is what those pages should show; its warning about the missing widget would only clutter them.
warnings.filterwarnings("ignore", message="IProgress not found")

__version__ = "0.1.0"
