"""The Transformer of "Attention Is All You Need" (Vaswani et al., 2017), fast and verified."""

import os as _os
import warnings as _warnings

from .model import *  # noqa: F403 (the model's public names: model/__init__.py)
from .model import __all__ as _model_names

# oneDNN builds a bf16 matmul kernel for each shape it meets and by default keeps the last 1,024. A
# token-batched run meets a few hundred batch shapes again and again, a few thousand kernels: with
# the default it builds them again all run long (benchmarks/bench_kernel_cache.py). The size is read
# at oneDNN's first kernel, not at import, so it is set where the package starts; a size of your own
# in the environment is kept.
ONEDNN_KERNEL_CACHE = 16384
_os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(ONEDNN_KERNEL_CACHE))

# A notebook's first calls (notebook_api.py): load a trained model, translate, draw attention.
# They are imported on first use, so `import annotated_transformer` stays the model alone.
_NOTEBOOK_NAMES = (
    "AttentionChart",
    "TrainedModel",
    "attention",
    "attention_chart",
    "load",
    "translate",
)

__all__ = [*_model_names, *_NOTEBOOK_NAMES]


def __getattr__(name):
    if name in _NOTEBOOK_NAMES:
        from . import notebook_api

        return getattr(notebook_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    public = {name for name in globals() if not name.startswith("_")}
    return sorted({*public, *_NOTEBOOK_NAMES, "__version__"})


# In a kernel without ipywidgets (papermill, the built site) tqdm.auto falls back to its text bar, which
# is what those pages should show; its warning about the missing widget would only clutter them.
_warnings.filterwarnings("ignore", message="IProgress not found")

__version__ = "0.1.0"
