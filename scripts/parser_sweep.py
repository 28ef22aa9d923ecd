"""One candidate of the parser's development sweep (chapter 07): train, then score on dev only.

    OMP_NUM_THREADS=1 python scripts/parser_sweep.py runs/parser/c --epochs 10 --d-model 256

Trains the parsing model (`chapters.constituency_parsing.curve.ParserRecipe`) on the Penn Treebank sample's
training files (or the first `--train-share` of them) for whole epochs, keeping a snapshot every
`--snapshot-epochs` epochs, scores every snapshot on the 273 development trees (greedy, constrained
to valid trees), then the average of the last snapshots greedy and with the paper's search (beam
21, alpha 0.3). It never reads the test files. Writes <run>/dev_curve.json; pick the candidate by
its dev F1 and copy its recipe into the profile's `ParsingSizes.recipe` (chapter 07's sizes).

The first two candidates (runs/parser/a and b, 2026-11-24) ran an earlier version of this script
that trained for a wall-clock budget instead of whole epochs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from annotated_transformer.chapters import constituency_parsing as parsing  # noqa: E402
from annotated_transformer.chapters.constituency_parsing import curve as parsing_curve  # noqa: E402
from annotated_transformer.data import treebank_zip_path  # noqa: E402
from annotated_transformer.runtime.devices import device_name, resolve_device  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=192)
    p.add_argument("--d-ff", type=int, default=None)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--peak-lr", type=float, default=None)
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--batch-tokens", type=int, default=2048)
    p.add_argument("--train-share", type=float, default=1.0)
    p.add_argument("--snapshot-epochs", type=int, default=2)
    p.add_argument("--average", type=int, default=3)
    p.add_argument("--precision", default="auto")
    p.add_argument("--beam", type=int, default=parsing.PAPER_BEAM)
    p.add_argument("--data-dir", default=None)
    p.add_argument(
        "--device",
        default="cpu",
        help="cpu (default), cuda, auto: where it trains and parses",
    )
    p.add_argument(
        "--tags",
        action="store_true",
        help="part-of-speech tags in the word slots, as the authors' code writes them "
        "(chapter 07's parser); without it, XX (the variant of Vinyals et al.)",
    )
    args = p.parse_args()
    if args.out.exists():
        sys.exit(f"{args.out} exists: give a new folder for this candidate")

    recipe = parsing_curve.ParserRecipe(
        n_layers=args.layers,
        d_model=args.d_model,
        d_ff=args.d_ff or 4 * args.d_model,
        n_heads=args.heads,
        dropout=args.dropout,
        label_smoothing=args.label_smoothing,
        batch_tokens=args.batch_tokens,
        warmup_steps=args.warmup,
        peak_lr=args.peak_lr,
        epochs=args.epochs,
        snapshot_epochs=args.snapshot_epochs,
        average_last=args.average,
        precision=args.precision,
        tags=args.tags,
    )
    device = str(resolve_device(args.device))
    files = parsing.read_treebank(treebank_zip_path(args.data_dir))
    split_files = parsing.split_by_file(files)

    def cleaned(ids):
        return [t for t in (parsing.clean_tree(x) for f in ids for x in files[f]) if t]

    train_by_file = [cleaned([f]) for f in split_files["train"]]
    dev = cleaned(split_files["dev"])
    started = time.perf_counter()
    run = parsing_curve.train_share(
        parsing_curve.first_share(train_by_file, args.train_share),
        dev,
        recipe,
        args.out,
        share=args.train_share,
        device=device,
    )
    for point in run.dev_f1:
        print(point, flush=True)
    model, vocabularies = parsing.load_parser(run.averaged, device)
    scored_runs, _ = parsing.choose_search(model, vocabularies, dev, beams=(1, args.beam))
    finals = {}
    for scored in scored_runs.values():
        finals[scored.name] = {
            **scored.score.to_dict(),
            "seconds": round(scored.seconds, 1),
        }
        print(
            scored.name, round(scored.score.f1, 2), f"{scored.seconds:.0f} s", flush=True
        )
    record = {
        "recipe": recipe.to_dict(),
        "train_share": args.train_share,
        **run.to_dict(),
        "dev": finals,
        "source_dependence": parsing_curve.source_dependence(model, vocabularies, dev),
        "seconds_in_all": round(time.perf_counter() - started, 1),
        "threads": torch.get_num_threads(),
        "device": device_name(device),
    }
    (args.out / "dev_curve.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
