"""No output overwrites an input: every command names what it reads and what it writes, and this
module refuses, in one line and before any work, an output that is one of its inputs.

Paths are compared after following symlinks (`translate --output link` where the link points at
the input is the input), and an output folder the command fills or replaces may not hold an input
(`export-onnx --out` the run folder it exports). Two outputs of one command may not be one file
either (evaluate's `--hypotheses` on its own results file).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

# (what the path is, e.g. "--output", and the path)
Named = tuple[str, "str | os.PathLike | None"]


def real_path(path: str | os.PathLike) -> Path:
    """`path` after `~` and every symlink on the way: how two names of one file compare."""
    return Path(os.path.realpath(Path(path).expanduser()))


def check_outputs(
    outputs: Iterable[Named],
    inputs: Iterable[Named],
    *,
    folders: Iterable[Named] = (),
) -> None:
    """Raise ValueError when an output file is an input, or an output folder holds one.

    outputs: files the command writes; inputs: files (or folders) it reads; folders: folders it
    writes into or replaces. A None path is skipped (an option not given).
    """
    outputs = [(name, real_path(p)) for name, p in outputs if p is not None]
    inputs = [(name, Path(p), real_path(p)) for name, p in inputs if p is not None]
    folders = [(name, real_path(p)) for name, p in folders if p is not None]
    for out_name, out in outputs:
        for in_name, given, real in inputs:
            if out == real:
                raise ValueError(
                    f"{out_name} {out} is {in_name} {given}, which this command reads: writing it "
                    "would replace the input; name another file"
                )
    for out_name, folder in folders:
        for in_name, given, real in inputs:
            if real == folder or real.is_relative_to(folder):
                raise ValueError(
                    f"{out_name} {folder} holds {in_name} {given}, which this command reads: "
                    "name another folder for the output"
                )
    seen: dict[Path, str] = {}
    for out_name, out in outputs:
        if out in seen:
            raise ValueError(
                f"{out_name} and {seen[out]} are the same file {out}: name two files"
            )
        seen[out] = out_name
