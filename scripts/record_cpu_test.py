"""File a `cpu` run's test2016 score under the decoding chosen on validation, beside its earlier one.

    python scripts/record_cpu_test.py runs/sweep22/A test_A_alpha1 --before results/tuning_multi30k_cpu/test_A.de

reads the run folder's `evaluate` file (run with the profile's decoding) and the translations it
wrote (`--hypotheses <run>.alpha1.test.de` by convention, or `--hypotheses`), compares them with
the translations of the same model under the earlier decoding (`--before`) by sacreBLEU's paired
bootstrap, and writes results/tuning_multi30k_cpu/<name>.json and <name>.de. The decoding was
chosen on validation (decode_choice.json); this is its one look at the test set.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer.chapters.translation_results.recipe_choice import CPU_SWEEP  # noqa: E402
from annotated_transformer.data.reading import load_parallel  # noqa: E402
from annotated_transformer.evaluation.results import check_replaceable, write_result  # noqa: E402
from annotated_transformer.evaluation.scoring import paired_bootstrap  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("name")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--hypotheses", type=Path, default=None)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    scored = json.loads((args.run / "evaluation_multi30k_test.json").read_text("utf-8"))
    m = scored["metrics"]
    hypotheses = args.hypotheses or args.run.parent / f"{args.run.name}.alpha1.test.de"
    test = load_parallel(
        "multi30k", m["test_set"].split("/")[1], "en", "de", args.data_dir
    )
    now = hypotheses.read_text("utf-8").splitlines()
    before = args.before.read_text("utf-8").splitlines()
    compared = paired_bootstrap({"before": before, "now": now}, test.tgt)
    if abs(compared["now"]["bleu"] - m["sacrebleu"]) > 0.01:
        raise SystemExit(
            f"{hypotheses} scores {compared['now']['bleu']} but the run's evaluate file says "
            f"{m['sacrebleu']}: they are not the same decoding; rerun evaluate with --hypotheses"
        )
    metrics = {
        **m,
        "sacrebleu_ci95": compared["now"]["ci95"],
        "before": {
            "translations": str(args.before),
            "sacrebleu": compared["before"]["bleu"],
            "ci95": compared["before"]["ci95"],
        },
        "p_value_against_before": compared["now"]["p_value"],
        "decoding_chosen_by": "results/tuning_multi30k_cpu/decode_choice.json (validation)",
    }
    target = REPO / "results" / CPU_SWEEP / f"{args.name}.json"
    check_replaceable(target, args.run)
    write_result(
        args.name,
        metrics,
        profile="cpu",
        config=scored.get("config"),
        device="cpu",
        path=target,
        run_folder=args.run,
    )
    shutil.copyfile(hypotheses, target.with_suffix(".de"))
    print(
        f"{target}: {m['sacrebleu']} +- {compared['now']['ci95']} (before {compared['before']['bleu']}, p = {compared['now']['p_value']})"
    )


if __name__ == "__main__":
    main()
