"""The repository's scripts (not a package) imported as modules, for tests of their functions."""

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType


@contextlib.contextmanager
def imported_script(path: Path) -> Iterator[ModuleType]:
    """`path` run as a module named after its file, registered in sys.modules while in use
    (dataclasses look their module up there) and removed after."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
