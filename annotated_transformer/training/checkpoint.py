"""Checkpoints: atomic writes, exact-resume state, and averaging of the last k (paper section 6.1).

Two kinds of file, both self-contained (config and tokenizer inside, so `translate` needs nothing else):

- the *resume* checkpoint (`last.pt`): model, optimizer, scheduler, every RNG state and the position in
  the data, so an interrupted run continues bit for bit;
- *snapshots* (`checkpoints/step_00001234.pt`): model weights only, written every few minutes or steps,
  which `average_checkpoints` merges as the paper did for its reported models (last 5 for base, 20 for big).

Every write goes to a temporary file in the same folder and is moved into place with `os.replace`, so a
crash mid-write (power cut, out of disk, Ctrl-C twice) leaves the previous file intact.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch

from ..data.tokenizer import Tokenizer
from ..model.config import TransformerConfig
from ..model.transformer import Transformer
from ..runtime.compiling import failure_summary
from ..runtime.files import remove_file, save_torch
from .settings import FIXED_ON_RESUME

CHECKPOINT_FORMAT = 1
RESUME_NAME = "last.pt"
SNAPSHOT_DIR = "checkpoints"
_SNAPSHOT_PATTERN = re.compile(r"^step_(\d+)\.pt$")


class CheckpointError(ValueError):
    """A file that should be a checkpoint of this package cannot be used as one."""


# ------------------------------------------------------------------------------------------ writing
def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """torch.save through `files.save_torch`: readers see the old file or the new one, never half."""
    return save_torch(path, obj)


def load_checkpoint(
    path: str | os.PathLike,
    map_location: str | torch.device = "cpu",
    *,
    mmap: bool = False,
) -> dict:
    """Read a checkpoint written by this module, with a clear message for a missing or foreign file.

    A folder means its resume checkpoint (`last.pt`). `mmap=True` maps the tensors instead of
    reading them, for a look at a big checkpoint's settings.
    """
    path = Path(path)
    if path.is_dir():
        resume = path / RESUME_NAME
        if not resume.is_file():
            raise FileNotFoundError(
                f"{path} is a folder without {RESUME_NAME}: pass a .pt file or a training --out folder"
            )
        path = resume
    if not path.is_file():
        raise FileNotFoundError(
            f"no checkpoint at {path}: train one with `python -m annotated_transformer train` first"
        )
    # weights_only: a checkpoint holds tensors, numbers, strings and bytes only, so no code runs on load.
    try:
        state = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as error:  # torch raises RuntimeError, EOFError, UnpicklingError, ... for a damaged file
        raise CheckpointError(
            f"{path} is not a readable checkpoint ({failure_summary(error)}): it is damaged, "
            "truncated or not a file this package wrote; use another snapshot (checkpoints/step_*.pt) or retrain"
        ) from error
    if (
        not isinstance(state, dict)
        or state.get("format") != CHECKPOINT_FORMAT
        or "model" not in state
    ):
        raise CheckpointError(
            f"{path} is not a checkpoint of this package (format {CHECKPOINT_FORMAT}); was it written by `train`?"
        )
    # a mapped look reads settings only; whoever uses the weights loads them whole
    if not mmap:
        check_finite_weights(state["model"], path)
    return state


def check_finite_weights(weights, path: str | os.PathLike) -> None:
    """One CheckpointError naming `path` and the first floating tensor of `weights` (a state dict)
    that holds NaN or inf: such weights decode to empty lines or fail deep in beam search, so
    they are refused where a checkpoint is loaded for use (the optimizer state is left alone)."""
    if not isinstance(weights, dict):
        raise CheckpointError(
            f"{path} holds no model weights (its 'model' is a {type(weights).__name__}): "
            "was it written by `train`?"
        )
    for name, tensor in weights.items():
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            continue
        if bool(torch.isfinite(tensor).all()):
            continue
        what = "NaN" if bool(torch.isnan(tensor).any()) else "inf"
        raise CheckpointError(
            f"{path}: weight {name} holds {what}: the run diverged before this checkpoint was "
            "written; average earlier snapshots (checkpoints/step_*.pt) or retrain"
        )


# ------------------------------------------------------------------------------------------ RNG
def capture_rng_state() -> dict:
    """Every random generator a training step may touch, in a form torch.load(weights_only=True) accepts."""
    np_kind, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": _to_plain(random.getstate()),
        "numpy": {
            "kind": np_kind,
            "keys": torch.from_numpy(np_keys.astype(np.int64)),
            "pos": int(np_pos),
            "has_gauss": int(np_has_gauss),
            "gauss": float(np_gauss),
        },
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Put back what `capture_rng_state` saved (a CUDA state is restored only where CUDA is present)."""
    torch.set_rng_state(state["torch"])
    random.setstate(_to_tuple(state["python"]))
    np_state = state["numpy"]
    np.random.set_state(
        (
            np_state["kind"],
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["gauss"],
        )
    )
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_plain(value):
    return [_to_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _to_tuple(value):
    return tuple(_to_tuple(v) for v in value) if isinstance(value, list) else value


# ------------------------------------------------------------------------------------------ snapshots
def snapshot_path(out_dir: str | os.PathLike, step: int) -> Path:
    return Path(out_dir) / SNAPSHOT_DIR / f"step_{step:08d}.pt"


def list_snapshots(out_dir: str | os.PathLike) -> list[Path]:
    """Snapshots under `out_dir/checkpoints/` (or `out_dir` itself), oldest first by step."""
    folder = Path(out_dir)
    if (folder / SNAPSHOT_DIR).is_dir():
        folder = folder / SNAPSHOT_DIR
    found = [
        (int(m.group(1)), p)
        for p in folder.glob("step_*.pt")
        if (m := _SNAPSHOT_PATTERN.match(p.name))
    ]
    return [p for _, p in sorted(found)]


def prune_snapshots(out_dir: str | os.PathLike, keep: int) -> list[Path]:
    """Delete all but the newest `keep` snapshots; returns what was deleted."""
    snapshots = list_snapshots(out_dir)
    doomed = snapshots[:-keep] if keep > 0 else snapshots
    for path in doomed:
        remove_file(path)
    return doomed


# ------------------------------------------------------------------------------------------ averaging
def average_state_dicts(
    state_dicts: Iterable[dict[str, torch.Tensor]],
) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors (summed in float64 so 20 checkpoints lose nothing);
    integer tensors (counters, buffers) are taken from the last state dict."""
    total: dict[str, torch.Tensor] = {}
    last: dict[str, torch.Tensor] = {}
    count = 0
    for state in state_dicts:
        if count and state.keys() != last.keys():
            missing = sorted(set(last) ^ set(state))
            raise ValueError(
                f"cannot average checkpoints of different models: keys differ ({missing[:5]} ...)"
            )
        for name, tensor in state.items():
            if tensor.is_floating_point():
                acc = tensor.detach().to(torch.float64)
                total[name] = acc.clone() if count == 0 else total[name].add_(acc)
        last = state
        count += 1
    if count == 0:
        raise ValueError("no checkpoints to average")
    return {
        name: (total[name] / count).to(tensor.dtype)
        if tensor.is_floating_point()
        else tensor.clone()
        for name, tensor in last.items()
    }


def average_checkpoints(paths: Iterable[str | os.PathLike]) -> dict:
    """One checkpoint whose weights are the mean of `paths`' weights (section 6.1); the config, tokenizer and
    step come from the newest one (the highest step, whatever the order given), and `averaged_from`
    records the inputs oldest first. Snapshots of two runs (another model, tokenizer, seed, batches
    or schedule) are refused."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no checkpoints to average: train longer, or lower --last")
    # oldest first by the step each records (a stable sort: equal steps keep the order given)
    loaded = sorted(
        ((p, load_checkpoint(p)) for p in paths), key=lambda item: _step_of(item[1])
    )
    paths, checkpoints = [p for p, _ in loaded], [c for _, c in loaded]
    newest = checkpoints[-1]
    for path, checkpoint in zip(paths, checkpoints):
        for key, what in (
            ("config", "model configuration"),
            ("vocab", "vocabulary size"),
            ("tokenizer", "tokenizer"),
        ):
            if checkpoint.get(key) != newest.get(key):
                raise ValueError(
                    f"{path} has another {what} than {paths[-1]}: average snapshots of one run only"
                )
        for field in ("train_pairs", *FIXED_ON_RESUME):
            theirs, ours = _run_fact(checkpoint, field), _run_fact(newest, field)
            if theirs != ours:
                raise ValueError(
                    f"{path} is a snapshot of another run than {paths[-1]} ({field} "
                    f"{theirs!r} against {ours!r}): average snapshots of one run only"
                )
    merged = {
        key: value
        for key, value in newest.items()
        if key not in ("optimizer", "scheduler", "scaler", "rng", "model")
    }
    merged["model"] = average_state_dicts(c["model"] for c in checkpoints)
    merged["averaged_from"] = [p.name for p in paths]
    return merged


def _step_of(checkpoint: dict) -> int:
    """The step a checkpoint records; -1 for one that records none (it sorts oldest)."""
    step = checkpoint.get("step")
    return step if isinstance(step, int) else -1


def _run_fact(checkpoint: dict, field: str):
    """What a snapshot records of its run that no resume may change (`FIXED_ON_RESUME`: the seed,
    the batches, the schedule) or the training pairs it read; None when it records none."""
    if field == "train_pairs":
        return checkpoint.get("train_pairs")
    value = (checkpoint.get("settings") or {}).get(field)
    return list(value) if isinstance(value, tuple) else value


def average_last(out_dir: str | os.PathLike, k: int) -> tuple[dict, list[Path]]:
    """Average the newest `k` snapshots of a training folder; returns (checkpoint, the paths used)."""
    snapshots = list_snapshots(out_dir)
    if not snapshots:
        raise FileNotFoundError(
            f"no snapshots (checkpoints/step_*.pt) under {out_dir}: is it a `train --out` folder?"
        )
    chosen = snapshots[-k:]
    return average_checkpoints(chosen), chosen


# ------------------------------------------------------------------------------------------ the format
def snapshot_of(model: Transformer, tokenizer, *, step: int, **extra) -> dict:
    """The one writer of the checkpoint format: a model's weights with everything needed to use them
    alone (its config, vocabulary sizes and tokenizer), the step, and `extra` facts (the training
    settings, the profile). `model_from_checkpoint` is its one reader."""
    return {
        "format": CHECKPOINT_FORMAT,
        "kind": "snapshot",
        "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "config": model.config.to_dict(),
        "vocab": {
            "src_vocab_size": model.src_embed.num_embeddings,
            "tgt_vocab_size": model.tgt_embed.num_embeddings,
            "share_embeddings": model.share_embeddings,
        },
        # None, not b"": torch pickles empty bytes as a call that weights_only loading refuses.
        "tokenizer": (tokenizer.to_bytes() or None) if tokenizer is not None else None,
        **extra,
        "step": step,
    }


def model_from_checkpoint(
    checkpoint: dict | str | os.PathLike,
    device: str | torch.device = "cpu",
    *,
    name: str | None = None,
):
    """(model in eval mode, tokenizer) rebuilt from a checkpoint alone.

    `name` says which checkpoint in errors (default: the path, or "the checkpoint").

    Raises:
        CheckpointError: the checkpoint lacks its config, vocabulary sizes or tokenizer (a
            synthetic run's, the copy task's), or its tokenizer does not fit its embeddings.
    """
    if not isinstance(checkpoint, dict):
        name = name or str(checkpoint)
        checkpoint = load_checkpoint(checkpoint)
    name = name or "the checkpoint"
    config, vocab = checkpoint.get("config"), checkpoint.get("vocab")
    if not isinstance(config, dict) or not isinstance(vocab, dict):
        raise CheckpointError(
            f"{name} has no model configuration or vocabulary sizes: use a checkpoint that "
            "`train` or `average` wrote"
        )
    if not checkpoint.get("tokenizer"):
        raise CheckpointError(
            f"{name} holds no tokenizer (a synthetic run's or the copy task's model): translation "
            "needs a checkpoint of a translation run (`train`)"
        )
    try:
        tokenizer = Tokenizer.from_bytes(checkpoint["tokenizer"])
    # sentencepiece raises RuntimeError, or ValueError for its ids
    except Exception as error:
        raise CheckpointError(
            f"{name} holds no readable sentencepiece tokenizer ({type(error).__name__}): "
            "translation needs a checkpoint of a translation run (`train`)"
        ) from error
    sizes = {vocab.get("src_vocab_size"), vocab.get("tgt_vocab_size")}
    if sizes != {tokenizer.vocab_size}:
        raise CheckpointError(
            f"{name} holds a tokenizer of {tokenizer.vocab_size} pieces for embeddings of "
            f"{' and '.join(map(str, sorted(sizes, key=str)))}: it was saved with another run's "
            "tokenizer; use the run's own checkpoint"
        )
    try:
        config = TransformerConfig.from_dict(config)
        model = Transformer(
            config,
            vocab["src_vocab_size"],
            vocab["tgt_vocab_size"],
            share_embeddings=vocab["share_embeddings"],
        )
        model.load_state_dict(checkpoint["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"{name}: its weights do not fit its configuration ({failure_summary(error)}): it is not a "
            "checkpoint this package wrote, or it was edited"
        ) from error
    return model.to(device).eval(), tokenizer
