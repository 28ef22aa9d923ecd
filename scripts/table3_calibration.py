"""Choose Table 3's warm-up and peak rate on base, and check the deepest row trains with them.

    python scripts/table3_calibration.py --profile cpu --epochs 0.5 \
        --candidate 200:3e-3 --candidate 400:2e-3 --candidate 400:1e-3

trains base, C1 (the shallowest) and C3 (the deepest) with every candidate (warm-up steps:peak rate)
for a share of an epoch (or, from 1 up, that many whole epochs), one seed, two processes (on a GPU,
processes that share it: `--device cuda --workers 4`), and writes
results/tuning_table3_<profile>/calibration.json:
every run's curve and time, and the choice: the candidate with base's lowest validation perplexity
among those under which C3 ends no worse than C1 (depth must not be limited by trainability); when
none does, the candidate best for base if it is also best for C3.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer import pipeline  # noqa: E402
from annotated_transformer.chapters.model_variations import rows as variations  # noqa: E402
from annotated_transformer.evaluation import results  # noqa: E402
from annotated_transformer.profiles import get_profile  # noqa: E402
from annotated_transformer.runtime.devices import resolve_device  # noqa: E402

ROWS = ("base", "C1", "C3")
FIRST_RULE = (
    "base's lowest validation perplexity among the candidates under which C3 (the deepest row) "
    "ends no worse than C1 (the shallowest)"
)
SECOND_RULE = (
    "no candidate met the first rule (C3, the deepest row, ends no worse than C1 after the "
    "calibration's training); chosen instead: the candidate with the lowest perplexity of base that also gives "
    "C3 its lowest perplexity"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument(
        "--epochs",
        type=float,
        default=0.5,
        help="share of an epoch per run; 1 or more: that many whole epochs",
    )
    parser.add_argument("--candidate", action="append", required=True, help="WARMUP:PEAK")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--norm-position",
        choices=("post", "pre"),
        default="post",
        help="pre: a diagnostic with the norm before each sub-layer (not the paper's model), to see "
        "whether depth is limited by post-norm's start",
    )
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu (default), cuda, auto: where every run trains",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the results file (default results/tuning_table3_<profile>/calibration.json); "
        "an existing file is never replaced",
    )
    args = parser.parse_args()
    out = args.out or results.results_path("calibration", f"tuning_table3_{args.profile}")
    if out.exists():
        sys.exit(f"{out} exists: give --out a new file, or move the old one away first")

    base = get_profile(args.profile)
    book = base.book
    profile = base.replace(
        vocab_size=book.table3.vocab_size or base.vocab_size,
        batch_tokens=book.table3.batch_tokens or base.batch_tokens,
    )
    device = str(resolve_device(args.device))
    data = pipeline.prepare_data(profile, args.data_dir)
    whole = args.epochs >= 1
    if whole and args.epochs != int(args.epochs):
        sys.exit(f"--epochs {args.epochs}: from 1 up, give whole epochs")
    # a share of an epoch: that many pairs, once; from 1 up, every pair that many times
    pairs = len(data.train) if whole else max(1, round(len(data.train) * args.epochs))
    started = time.perf_counter()
    runs = []
    plan = []
    for candidate in args.candidate:
        warmup, peak = candidate.split(":")
        tried = profile.replace(
            book=dataclasses.replace(
                book,
                table3=dataclasses.replace(
                    book.table3, warmup_steps=int(warmup), peak_lr=float(peak)
                ),
            )
        )
        plan += [
            dict(
                row=row,
                seed=1,
                epochs=int(args.epochs) if whole else 1,
                train_pairs=None if whole else pairs,
                curve_points=4,
                corpus="full" if whole else "part",
                norm_position=args.norm_position,
                profile=tried,
            )
            for row in ROWS
        ]
    # every candidate's runs in one pool, so that the workers start once
    for run in variations.train_rows(
        plan, data, profile, workers=args.workers, data_dir=args.data_dir, device=device
    ):
        # base, C1 and C3 have base's width, so each trains at its candidate's own peak
        candidate = f"{run.warmup_steps}:{run.peak_lr:g}"
        runs.append(run.to_dict() | {"candidate": candidate})
        print(
            f"{candidate} {run.row}: ppl {run.ppl:.1f} in {run.train_s:.0f} s", flush=True
        )
    args.candidate = [
        f"{int(c.split(':')[0])}:{float(c.split(':')[1]):g}" for c in args.candidate
    ]
    by = {(r["candidate"], r["row"]): r["ppl"] for r in runs}
    met = [c for c in args.candidate if by[c, "C3"] <= by[c, "C1"]]
    best_base = min(args.candidate, key=lambda c: by[c, "base"])
    best_c3 = min(args.candidate, key=lambda c: by[c, "C3"])
    if met:
        chosen, rule = min(met, key=lambda c: by[c, "base"]), FIRST_RULE
    else:
        chosen, rule = (best_base if best_base == best_c3 else None), SECOND_RULE
    path = results.write_result(
        "calibration",
        {
            "runs": runs,
            "chosen": chosen,
            "rule": rule,
            "first_rule": FIRST_RULE,
            "share_of_epoch": args.epochs,
            "train_pairs": pairs,
            "workers": args.workers,
            "seconds_per_epoch": {
                row: round(
                    sum(r["train_s"] for r in runs if r["row"] == row)
                    / (len(args.candidate) * args.epochs),
                    1,
                )
                for row in ROWS
            },
        },
        profile=f"tuning_table3_{args.profile}",
        config={
            "profile": profile.to_dict(),
            "candidates": args.candidate,
            "norm_position": args.norm_position,
        },
        wall_time_s=round(time.perf_counter() - started, 1),
        device=device,
        path=out,
    )
    print(f"chosen: {chosen}; wrote {path}")
    assert all(math.isfinite(r["ppl"]) for r in runs)


if __name__ == "__main__":
    main()
