"""Translation in a static web page: onnxruntime-web's files, the exported model, and the page's widget.

onnxruntime-web comes from the npm registry without npm: the package's tarball is downloaded once,
checked against the registry's published sha512 (pinned below, so a changed file is refused), and
only the WebAssembly runtime is kept (`ort.wasm.min.js`, its `.mjs` loader and the `.wasm` binary,
about 14 MB) under `.cache/onnxruntime-web-<version>/` in the clone. Offline and without that
folder, `onnxruntime_web_files` says how to get it.

In a built site the runtime and the model sit in `live/` at the site's root, and the widget
itself is `_static/live-translate.js`: a sentencepiece BPE encoder over the exported
pieces and scores, greedy decoding with the encoder and decoder graphs, and a Vega-Lite heatmap of
the encoder-decoder attention.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import tarfile
import urllib.request
from pathlib import Path

from ..runtime.files import (
    PACKAGE_DIR,
    atomic_write_bytes,
    atomic_write_text,
    clone_root,
    copy_file_as_is,
    copy_tree,
    ensure_folder,
    make_world_readable,
    staged_tree,
)
from ..runtime.ownership import BESIDE
from ..runtime.records import RecordError, read_record

ORT_WEB_VERSION = "1.30.0"
# The registry's dist.integrity for that version (`npm view onnxruntime-web@1.30.0 dist.integrity`).
ORT_WEB_INTEGRITY = "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ=="
ORT_WEB_URL = (
    f"https://registry.npmjs.org/onnxruntime-web/-/onnxruntime-web-{ORT_WEB_VERSION}.tgz"
)
# The WebAssembly backend only (no WebGPU or WebGL builds): one script, its loader and the binary.
ORT_WEB_FILES = (
    "ort.wasm.min.js",
    "ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm",
)

SCRIPT_NAME = "live-translate.js"  # in the site's _static
# The runtime and the model go to the site's root folder `live/` (through `_extra`), not to
# `_static`: Jupyter Book puts every .js under _static into every page's head.
SITE_LIVE = "live"
SITE_RUNTIME = "onnxruntime-web"  # under live/
SITE_MODEL = "model"  # under live/
# Chapter 08's exports of the book's run, in `exports_dir(<run folder>)`: float32, int8, and the
# one the site serves, the one chapter 08 chose (`choose_export`); without a choice newer than the
# float32 export the site serves that.
FLOAT32_EXPORT = "web"
INT8_EXPORT = "web-int8"
LIVE_EXPORT = "web-live"


def exports_dir(run_dir: str | os.PathLike) -> Path:
    """Where chapter 08 writes its ONNX exports of the book's run folder `run_dir`: beside it,
    never in it (only chapter 04 writes the run folder), as `<run folder>-onnx/`, the place
    `export-onnx` names for an --out that lies inside a run folder."""
    run_dir = Path(run_dir)
    return run_dir.with_name(f"{run_dir.name}-{BESIDE['export-onnx']}")


def _repo_root() -> Path:
    """The clone, or for an installed copy the folder the package is installed in."""
    return clone_root() or PACKAGE_DIR.parent


def ort_cache_dir() -> Path:
    return Path(
        os.environ.get("AT_ORT_WEB_DIR")
        or _repo_root() / ".cache" / f"onnxruntime-web-{ORT_WEB_VERSION}"
    )


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def onnxruntime_web_files(download: bool = True) -> Path:
    """The folder holding ORT_WEB_FILES, downloaded and checked on first use."""
    folder = ort_cache_dir()
    if all((folder / name).is_file() for name in ORT_WEB_FILES):
        return folder
    if not download:
        raise FileNotFoundError(
            f"onnxruntime-web {ORT_WEB_VERSION} is not in {folder}: run scripts/setup.sh "
            "(or fetch it with annotated_transformer.web.live_page.onnxruntime_web_files())"
        )
    try:
        with urllib.request.urlopen(ORT_WEB_URL, timeout=60) as response:
            data = response.read()
    except OSError as error:
        raise OSError(
            f"onnxruntime-web {ORT_WEB_VERSION} is not in {folder} and could not be downloaded from "
            f"{ORT_WEB_URL} ({error}): connect to the network once, or copy the files "
            f"{', '.join(ORT_WEB_FILES)} of that npm package there"
        ) from None
    if _integrity(data) != ORT_WEB_INTEGRITY:
        raise OSError(
            f"{ORT_WEB_URL} does not match the pinned sha512 ({ORT_WEB_INTEGRITY[:24]}...): "
            "refusing to use it"
        )
    ensure_folder(folder)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for name in ORT_WEB_FILES:
            member = archive.extractfile(f"package/dist/{name}")
            if member is None:
                raise OSError(f"{ORT_WEB_URL} has no dist/{name}")
            atomic_write_bytes(folder / name, member.read())
    atomic_write_text(
        folder / "VERSION",
        f"onnxruntime-web {ORT_WEB_VERSION} (MIT license), from {ORT_WEB_URL}\n"
        f"{ORT_WEB_INTEGRITY}\n",
    )
    return folder


def stage_live_assets(
    static_dir: str | os.PathLike,
    live_dir: str | os.PathLike,
    model_dir: str | os.PathLike | None,
    *,
    download: bool = True,
) -> dict[str, int]:
    """Copy the widget's script into `static_dir`, and onnxruntime-web and (when given) an
    `export_onnx` folder into `live_dir`; returns the bytes of each part, what a reader downloads.
    An export whose model.json the page could not use is a RecordError, and nothing is copied."""
    if model_dir is not None:
        read_record(Path(model_dir) / "model.json", "onnx_model")
    static, live = Path(static_dir), Path(live_dir)
    ensure_folder(static)
    copy_file_as_is(_repo_root() / "_static" / SCRIPT_NAME, static / SCRIPT_NAME)
    runtime = live / SITE_RUNTIME
    ensure_folder(runtime)
    source = onnxruntime_web_files(download=download)
    for name in (*ORT_WEB_FILES, "VERSION"):
        if (source / name).is_file():
            copy_file_as_is(source / name, runtime / name)
    sizes = {
        "script": (static / SCRIPT_NAME).stat().st_size,
        "onnxruntime-web": sum((runtime / n).stat().st_size for n in ORT_WEB_FILES),
    }
    if model_dir is not None:
        target = live / SITE_MODEL
        copy_tree(model_dir, target)
        make_world_readable(target)
        sizes["model"] = sum(p.stat().st_size for p in target.iterdir())
    return sizes


def widget_html(
    static_url: str = "../_static",
    live_url: str = f"../{SITE_LIVE}",
    example: str = "A man in a blue shirt is playing a guitar.",
) -> str:
    """The page's translation box; `static_url` and `live_url` are the site's `_static` and
    `live` folders seen from the page."""
    static_url = html.escape(static_url.rstrip("/"))
    live_url = html.escape(live_url.rstrip("/"))
    return (
        f'<div class="at-live" data-model="{live_url}/{SITE_MODEL}/" '
        f'data-runtime="{live_url}/{SITE_RUNTIME}/">'
        f'<input class="at-live-input" type="text" size="60" value="{html.escape(example)}" '
        'aria-label="English sentence">'
        '<button class="at-live-go" type="button">Translate</button>'
        '<div class="at-live-status">the model loads when you ask for your first '
        "translation</div>"
        '<div class="at-live-output" lang="de"></div>'
        '<div class="at-live-chart"></div></div>\n'
        f'<script src="{static_url}/{SCRIPT_NAME}"></script>'
    )


def choose_export(comparison: dict[str, dict]) -> str:
    """Which export the live page serves, from `paired_bootstrap` of the float32 and int8 exports'
    translations of the validation captions (float32 first; a choice is not made on test): "int8"
    when its BLEU lies within the 95% bootstrap interval of the float32 export's, else "float32". The int8 weights are a quarter of the download; a
    reader should get them only when the loss they cost cannot be told from noise."""
    if list(comparison)[:1] != ["float32"] or "int8" not in comparison:
        raise ValueError(
            f"a comparison of 'float32' (first) and 'int8' is needed, got {list(comparison)}"
        )
    full, small = comparison["float32"], comparison["int8"]
    within = abs(small["bleu"] - full["mean"]) <= full["ci95"]
    return "int8" if within else "float32"


def publish_choice(chosen: str | os.PathLike, exports: str | os.PathLike) -> Path:
    """Copy the export chapter 08 chose (a folder written by `export_onnx`) to
    `exports`/LIVE_EXPORT (`exports`: the folder `exports_dir` names), where the site build looks
    first. The copy replaces the previous choice in one step and gets
    fresh times, so it is newer than the float32 export it was chosen beside; a later float32
    export (a run that failed before choosing) makes it stale, and the site then serves that."""
    target = Path(exports) / LIVE_EXPORT
    with staged_tree(target) as stage:
        copy_tree(chosen, stage, fresh_times=True)
    return target


def _older(live: Path, plain: Path) -> bool:
    """True when the float32 export in `plain` was written after the live choice in `live`."""
    model = plain / "model.json"
    return (
        model.is_file() and model.stat().st_mtime > (live / "model.json").stat().st_mtime
    )


def stage_for_site(stage_dir: str | os.PathLike, exports: str | os.PathLike) -> list[str]:
    """Put chapter 08's live translation into a staged site: the export that chapter chose in
    `exports` (`exports_dir` of the book's run folder), onnxruntime-web and the widget's script.
    Returns notes for the build's log (what was copied and its size, or why the page's widget
    will not load)."""
    exports = Path(exports)
    export = exports / LIVE_EXPORT
    if not (export / "model.json").is_file() or _older(export, exports / FLOAT32_EXPORT):
        export = exports / FLOAT32_EXPORT
    if not (export / "model.json").is_file():
        return [
            f"live translation: no export in {export} (chapter 08 writes it under this profile); "
            "the page's widget will say it cannot load its model"
        ]
    try:
        # the export's description, checked before anything is staged: the page's widget cannot
        # load a model whose model.json lacks a field it reads
        weights = read_record(export / "model.json", "onnx_model")["weights"]
        sizes = stage_live_assets(
            Path(stage_dir) / "_static", Path(stage_dir) / "_extra" / SITE_LIVE, export
        )
    except (OSError, RecordError) as error:
        return [f"live translation left out of the site: {error}"]
    total = sum(sizes.values())
    return [
        f"live translation ({weights} weights): {total / 1e6:.1f} MB in _static and {SITE_LIVE}/ ("
        + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in sizes.items())
        + ")"
    ]
