"""`python -m annotated_transformer export-onnx`: a checkpoint as the files chapter 08's live page loads."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import pipeline
from ..runtime.collisions import check_outputs
from ..runtime.files import make_folder
from ..runtime.ownership import check_own_folder, relative_to_clone
from ..training.checkpoint import model_from_checkpoint
from ..web.onnx_export import export_onnx


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Export a trained checkpoint to ONNX for translation in a web page with onnxruntime-web:\n"
        "encoder.onnx, decoder.onnx (the whole prefix each step, greedy decoding), tokenizer.json (the\n"
        "sentencepiece pieces and scores) and model.json. Needs `pip install onnx`.\n\n"
        "  python -m annotated_transformer export-onnx --checkpoint runs/cpu/averaged.pt --out web-model/"
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="a .pt file written by `train` or `average`, or a run folder (the average of its "
        "last snapshots, as `evaluate` reads it)",
    )
    parser.add_argument(
        "--out",
        required=True,
        help="folder to write (created when missing): new, empty or an earlier export",
    )
    parser.add_argument(
        "--quantize",
        action="store_true",
        help="int8 weight matrices: about 4x smaller files; tokens may differ from PyTorch's",
    )


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file: name a folder")
    check_outputs(
        [], pipeline.checkpoint_inputs(args.checkpoint), folders=[("--out", out)]
    )
    # new, empty or an earlier export: never a folder of the user's files, nor one inside an
    # owned folder
    check_own_folder("--out", out, command="export-onnx")
    # a folder that cannot be made is named now, not after the export
    make_folder(out, "--out")
    try:
        import onnx  # noqa: F401  (torch's exporter needs it)
    except ImportError:
        raise OSError(
            "export-onnx needs the onnx package: pip install onnx onnxruntime"
        ) from None
    checkpoint, source = pipeline.load_for_evaluation(args.checkpoint)
    model_from_checkpoint(
        checkpoint, name=source
    )  # a checkpoint it cannot use, named now
    origin = {
        "path": relative_to_clone(args.checkpoint),
        "step": checkpoint.get("step"),
        "averaged_from": checkpoint.get("averaged_from"),
    }
    written = export_onnx(checkpoint, out, quantize=args.quantize, origin=origin)
    for path in written.values():
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    print(f"exported {source}")
    return 0
