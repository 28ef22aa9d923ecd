"""Choose the `cpu` profile's decoding and averaging settings on the validation split only.

    python scripts/cpu_decode_choice.py runs/sweep22/A

A trained run folder is scored on `multi30k/val` (1,014 pairs) under a small grid: how many of its
last snapshots to average, the beam width and the length penalty. Every setting is compared with
the profile's own (sacreBLEU's paired bootstrap on the same sentences), and the grid is written to
results/tuning_multi30k_cpu/decode_choice.json. The test set is not read. A setting is worth
adopting only when it beats the profile's beyond the bootstrap's noise; the rest is reported as a
tie.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer import pipeline  # noqa: E402
from annotated_transformer.chapters.translation_results.recipe_choice import CPU_SWEEP  # noqa: E402
from annotated_transformer.data.reading import load_parallel  # noqa: E402
from annotated_transformer.evaluation.results import check_replaceable, write_result  # noqa: E402
from annotated_transformer.evaluation.scoring import paired_bootstrap  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `train --profile cpu` run folder")
    parser.add_argument("--average", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--beam", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--alpha", type=float, nargs="+", default=[0.6, 1.0])
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    target = REPO / "results" / CPU_SWEEP / "decode_choice.json"
    check_replaceable(target, args.run)

    systems: dict[str, list[str]] = {}
    settings: dict[str, dict] = {}
    default_name = None
    references = None
    started = time.perf_counter()
    for k in args.average:
        checkpoint, source = pipeline.load_for_evaluation(args.run, k)
        profile, _ = pipeline.checkpoint_profile(checkpoint, None, source)
        for beam in args.beam:
            for alpha in args.alpha:
                name = f"average {k}, beam {beam}, alpha {alpha}"
                tried = profile.replace(beam_size=beam, length_penalty_alpha=alpha)
                scores = pipeline.evaluate(
                    checkpoint, tried, data_dir=args.data_dir, split="val"
                )
                systems[name] = scores["hypotheses"]
                settings[name] = {
                    "average_last": k,
                    "beam_size": beam,
                    "length_penalty_alpha": alpha,
                    "sacrebleu": scores["sacrebleu"],
                    "decode_seconds": scores.get("decode_seconds"),
                }
                is_default = (
                    k == profile.average_last
                    and beam == profile.beam_size
                    and alpha == profile.length_penalty_alpha
                )
                if is_default:
                    default_name = name
                print(f"{name}: valid sacreBLEU {scores['sacrebleu']}", flush=True)
    if default_name is None:
        raise SystemExit("the grid must hold the profile's own setting, the baseline")
    test = load_parallel(
        profile.corpus, "val", profile.src_lang, profile.tgt_lang, args.data_dir
    )
    references = test.tgt
    ordered = {default_name: systems[default_name]}
    ordered.update({n: h for n, h in systems.items() if n != default_name})
    compared = paired_bootstrap(ordered, references)
    for name, row in compared.items():
        settings[name].update(row)
    best = max(settings, key=lambda n: settings[n]["sacrebleu"])
    metrics = {
        "run": str(args.run),
        "split": "multi30k/val",
        "baseline": default_name,
        "best": best,
        "best_exceeds_noise": bool(settings[best].get("exceeds_noise", False)),
        "settings": settings,
    }
    write_result(
        "decode_choice",
        metrics,
        profile="cpu",
        config=checkpoint.get("config"),
        wall_time_s=round(time.perf_counter() - started, 1),
        device="cpu",
        path=target,
        run_folder=args.run,
    )
    for name, row in settings.items():
        mark = " (profile)" if name == default_name else ""
        print(
            f"{name}{mark}: {row['sacrebleu']} +- {row.get('ci95')}"
            f" p={row.get('p_value', '-')}"
        )
    print(f"{target}: best {best}")


if __name__ == "__main__":
    main()
