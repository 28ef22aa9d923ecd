"""File one candidate of the `cpu` validation sweep (scripts/cpu_sweep.sh) with the repository's results.

    python scripts/record_cpu_candidate.py runs/sweep/B "peak 3e-3"

reads the run folder's metrics.jsonl (its settings, last training record, last validation) and its
`evaluate --split val` file, and writes results/tuning_multi30k_cpu/valid_<name>.json with provenance
and valid_<name>.de, its translations of the validation split. Refuses to replace a file it did not
write (a committed candidate): pick another name.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer.chapters.translation_results.recipe_choice import (  # noqa: E402
    CPU_SWEEP,
    recipe_of,
)
from annotated_transformer.evaluation.results import check_replaceable, write_result  # noqa: E402


def epochs(records: list[dict]) -> float:
    """Epochs trained, the last one by its share of steps (read from the logged epoch numbers,
    which are logged every few steps: good to about 1%)."""
    train = [r for r in records if r["kind"] == "train"]
    first_of = {}
    for r in train:
        first_of.setdefault(r["epoch"], r["step"])
    last = train[-1]
    if last["epoch"] == 0:
        return 0.0  # less than one epoch: its length is unknown from the log
    per_epoch = first_of[1]
    return last["epoch"] + (last["step"] - first_of[last["epoch"]]) / per_epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the candidate's run folder")
    parser.add_argument("change", help="what it changes from the cpu recipe, in words")
    parser.add_argument(
        "--folder",
        default=str(CPU_SWEEP),
        help="the results folder of its sweep (default: %(default)s; the step-budget sweep of "
        "scripts/cpu_step_budget_sweep.sh files into tuning_multi30k_avx2)",
    )
    parser.add_argument(
        "--budget", help="how its training length was set, in words (a step-budget sweep)"
    )
    args = parser.parse_args()
    name = args.run.name
    records = [
        json.loads(line)
        for line in (args.run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    start = next(r for r in records if r["kind"] == "start")
    last = [r for r in records if r["kind"] == "train"][-1]
    valid = [r for r in records if r["kind"] == "valid"][-1]
    scored = json.loads(
        (args.run / "evaluation_multi30k_val.json").read_text(encoding="utf-8")
    )
    hypotheses = args.run.parent / f"{name}.val.de"
    recorded = start["profile"]
    recipe = recipe_of(recorded)
    metrics = {
        "change": args.change,
        "recipe": recipe,
        "steps": last["step"],
        "epochs": round(epochs(records), 2),
        "train_time_s": last["train_time_s"],
        "target_tokens": last["target_tokens"],
        "target_tokens_per_s": round(last["target_tokens"] / last["train_time_s"], 1),
        "precision": start["precision"],
        "valid_ppl": round(valid["ppl"], 3),
        "valid_ppl_step": valid["step"],
        "valid_sacrebleu": scored["metrics"]["sacrebleu"],
        "valid_bleu_tokenized": scored["metrics"].get("bleu_tokenized"),
        "valid_set": scored["metrics"].get("test_set"),
        "checkpoint": scored["metrics"].get("checkpoint"),
    }
    if args.budget:
        metrics["budget"] = args.budget
    folder = REPO / "results" / args.folder
    target = folder / f"valid_{name}.json"
    check_replaceable(target, args.run)
    write_result(
        f"valid_{name}",
        metrics,
        profile="cpu",
        config=recorded,
        wall_time_s=last["train_time_s"],
        device="cpu",
        path=target,
        run_folder=args.run,
    )
    shutil.copyfile(hypotheses, target.with_suffix(".de"))
    print(
        f"{target}: {metrics['steps']} steps, valid sacreBLEU {metrics['valid_sacrebleu']}"
    )


if __name__ == "__main__":
    main()
