"""Chapter 06's committed runs read again with each analysis of `chapters.model_variations.statistics`.

    python scripts/table3_reanalysis.py results/book_cpu/model_variations_3seeds.json \
        results/book_cpu/model_variations_seeds4.json --out results/book_cpu/table3_reanalysis.json

For each results file and budget (a quarter, half and all of each run, read from its curves), the
verdicts under the seed-paired analysis (the one the runs were written with, checked to reproduce
their committed verdicts) and under the pooled block model, with every comparison's interval and
detectable change; then how often two files (two seed sets) agree under each analysis. Retrains
nothing and never replaces an existing file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotated_transformer.chapters.model_variations import statistics as findings  # noqa: E402
from annotated_transformer.runtime.files import atomic_write_text  # noqa: E402

# (share of the run, index of the full-corpus curve point, of the small-corpus one): the chapter's
# budgets under the cpu profile (4 points an epoch, 10 small epochs).
BUDGETS = ((0.25, 0, 1), (0.5, 1, 4), (1.0, 3, 9))


def reread(path: Path) -> list[dict]:
    metrics = json.loads(path.read_text())["metrics"]
    out = []
    for i, (share, full_point, small_point) in enumerate(BUDGETS):
        ppl = {
            "full": {
                r: {int(s): c[full_point]["ppl"] for s, c in v["curves"].items()}
                for r, v in metrics["rows"].items()
            },
            "small": {
                r: {int(s): c[small_point]["ppl"] for s, c in v["curves"].items()}
                for r, v in metrics["overfit"].items()
            },
        }
        by_method = {
            m: findings.assess(findings.FINDINGS, ppl, method=m) for m in findings.METHODS
        }
        committed = [x["verdict"] for x in metrics["verdicts"][i]["findings"]]
        if [x["verdict"] for x in by_method["paired"]] != committed:
            raise SystemExit(
                f"{path}: the paired analysis does not reproduce budget {share}"
            )
        out.append(
            {"share": share, "label": metrics["verdicts"][i]["label"], **by_method}
        )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path, nargs="+")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.out.exists():
        sys.exit(f"{args.out} exists: give a new path")
    files = {str(path): reread(path) for path in args.results}
    agreement = {}
    if len(files) == 2:
        a, b = files.values()
        for m in findings.METHODS:
            pairs = [
                (x["verdict"], y["verdict"])
                for ba, bb in zip(a, b)
                for x, y in zip(ba[m], bb[m])
            ]
            agreement[m] = {"agree": sum(x == y for x, y in pairs), "of": len(pairs)}
    atomic_write_text(
        args.out, json.dumps({"files": files, "agreement": agreement}, indent=1)
    )
    for m, count in agreement.items():
        print(
            f"{m}: {count['agree']} of {count['of']} verdicts agree between the two files"
        )


if __name__ == "__main__":
    main()
