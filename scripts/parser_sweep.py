"""One candidate of the parser's development sweep (chapter 07): train, then score on dev only.

    OMP_NUM_THREADS=1 python scripts/parser_sweep.py runs/parser/a --minutes 10 --d-model 256

Trains the parsing model on the Penn Treebank sample's training files (or the first `--train-share`
of them) for a wall-clock budget, keeping a snapshot about every `--snapshot-epochs` epochs, then
scores every snapshot on the 273 development trees (greedy, constrained to valid trees) and the
average of the last snapshots with the paper's search (beam 21, alpha 0.3). It never reads the test
files. Writes <run>/dev_curve.json; pick the candidate by its dev F1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from annotated_transformer.data import treebank_zip_path  # noqa: E402
from annotated_transformer.experiments import parsing  # noqa: E402
from annotated_transformer.model.config import preset  # noqa: E402
from annotated_transformer.training.checkpoint import (  # noqa: E402
    average_checkpoints,
    list_snapshots,
    load_checkpoint,
)
from annotated_transformer.training.settings import TrainSettings  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--d-ff", type=int, default=None)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--peak-lr", type=float, default=None)
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--batch-tokens", type=int, default=2048)
    p.add_argument("--train-share", type=float, default=1.0)
    p.add_argument("--tags", action="store_true")
    p.add_argument("--snapshot-epochs", type=float, default=2.0)
    p.add_argument("--average", type=int, default=3)
    p.add_argument("--precision", default="auto")
    p.add_argument("--beam", type=int, default=21)
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()

    files = parsing.read_treebank(treebank_zip_path(args.data_dir))
    split_files = parsing.split_by_file(files)
    train_files = split_files["train"]
    train_files = train_files[: max(1, round(len(train_files) * args.train_share))]

    def cleaned(ids):
        return [t for t in (parsing.clean_tree(x) for f in ids for x in files[f]) if t]

    data = parsing.ParsingData.from_splits(
        {"train": cleaned(train_files), "dev": cleaned(split_files["dev"])},
        tags=args.tags,
    )
    train_symbols = sum(
        len(parsing.linearize(t, tags=args.tags).split()) + 1 for t in data.trees["train"]
    )
    steps_per_epoch = max(1, math.ceil(train_symbols / args.batch_tokens))
    config = preset(
        "parsing",
        n_layers=args.layers,
        d_model=args.d_model,
        d_ff=args.d_ff or 4 * args.d_model,
        n_heads=args.heads,
        dropout=args.dropout,
        label_smoothing=args.label_smoothing,
        max_len=parsing.parser_max_len(data),
        warmup_steps=args.warmup,
    )
    settings = TrainSettings(
        name=args.out.name,
        batch_tokens=args.batch_tokens,
        peak_lr=args.peak_lr,
        warmup_steps=args.warmup,
        time_budget_minutes=args.minutes,
        precision=args.precision,
        log_every=50,
        eval_every=max(1, round(steps_per_epoch * args.snapshot_epochs)),
        save_every_steps=max(1, round(steps_per_epoch * args.snapshot_epochs)),
        keep_snapshots=1000,
    )
    started = time.perf_counter()
    fitted = parsing.train_parser(config, data, settings, args.out)
    train_s = time.perf_counter() - started
    steps = fitted.result.progress.step
    epochs = fitted.trainer.epochs_done()
    print(f"{steps} steps, {epochs:.1f} epochs in {train_s:.0f} s", flush=True)

    dev = data.trees["dev"]
    curve = []
    for path in list_snapshots(args.out):
        model, vocab = parsing.load_parser(load_checkpoint(path))
        run = parsing.evaluate_parser(model, vocab, dev, beam_size=1)
        step = int(path.stem.split("_")[1])
        curve.append(
            {
                "step": step,
                "epochs": round(epochs * step / steps, 2),
                "f1_greedy": run.score.f1,
            }
        )
        print(curve[-1], flush=True)
    chosen = list_snapshots(args.out)[-args.average :]
    model, vocab = parsing.load_parser(average_checkpoints(chosen))
    finals = {}
    for beam in (1, args.beam):
        run = parsing.evaluate_parser(model, vocab, dev, beam_size=beam)
        finals[run.name] = {**run.score.to_dict(), "seconds": round(run.seconds, 1)}
        print(run.name, round(run.score.f1, 2), f"{run.seconds:.0f} s", flush=True)
    record = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "train_trees": len(data.trees["train"]),
        "steps": steps,
        "epochs": round(epochs, 2),
        "train_seconds": round(train_s, 1),
        "dev_nll": fitted.result.valid.get("nll") if fitted.result.valid else None,
        "curve": curve,
        "averaged": [p.name for p in chosen],
        "dev": finals,
        "threads": torch.get_num_threads(),
    }
    (args.out / "dev_curve.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
