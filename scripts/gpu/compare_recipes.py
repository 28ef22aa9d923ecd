"""The committed Multi30k test2016 translations of the `gpu` recipe's H100 run, the earlier `gpu`
recipe's and the published `cpu` book run's, side by side: sacreBLEU with its 95% interval, and
each against the first by sacreBLEU's paired bootstrap on the same 1,000 sentences. Writes
results/gpu/compared_translations.json (results/gpu/README.md quotes it).

    AT_DATA_DIR=/path/to/data python scripts/gpu/compare_recipes.py
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from annotated_transformer.data import load_parallel  # noqa: E402
from annotated_transformer.evaluation.results import write_result  # noqa: E402
from annotated_transformer.evaluation.scoring import paired_bootstrap  # noqa: E402

SYSTEMS = {  # name: (its translations, the results record that scored them)
    "gpu recipe, seed 1 (4+4 x 256, 41 epochs, H100)": (
        "results/gpu/recipe/seed_1/test_translations.txt",
        "results/gpu/recipe_d256x4_seed1.json",
    ),
    "earlier gpu recipe, chosen on test (4+4 x 128, 100 epochs, H100)": (
        "results/gpu/logs/gpu_test2016_translations.de",
        "results/gpu/earlier_recipe_d128x4.json",
    ),
    "cpu book run (3+3 x 256, 15 minutes, 2 CPU cores)": (
        "results/book_cpu/test_translations.txt",
        "results/book_cpu/translation_multi30k_en_de.json",
    ),
}
N_SAMPLES = 1000

references = load_parallel("multi30k", "test", "en", "de", download=False).tgt
systems = {}
for name, (translations, _) in SYSTEMS.items():
    systems[name] = (ROOT / translations).read_text(encoding="utf-8").splitlines()
    if len(systems[name]) != len(references):
        raise SystemExit(
            f"{translations}: {len(systems[name])} lines, not {len(references)}"
        )
tests = paired_bootstrap(systems, references, n_samples=N_SAMPLES)
for name, (_, record) in SYSTEMS.items():  # the translations its record scored, no others
    scored = json.loads((ROOT / record).read_text(encoding="utf-8"))["metrics"][
        "sacrebleu"
    ]
    if abs(tests[name]["bleu"] - scored) >= 0.01:
        raise SystemExit(
            f"{name}: the translations score {tests[name]['bleu']}, its record {scored}"
        )
first = next(iter(systems))
metrics = {
    "what": "sacreBLEU on Multi30k test2016 (1,000 sentences) with its 95% bootstrap interval; "
    f"each system against {first!r} by sacreBLEU's paired bootstrap on the same sentences",
    "n_samples": N_SAMPLES,
    "systems": {
        name: {
            "translations": SYSTEMS[name][0],
            "record": SYSTEMS[name][1],
            **tests[name],
        }
        | (
            {
                "difference_from_first": round(
                    tests[name]["bleu"] - tests[first]["bleu"], 2
                )
            }
            if name != first
            else {}
        )
        for name in systems
    },
}
# A results record like the others in results/gpu/ (the summary reads every file there); its
# name matches none of the summary's patterns for a run (translation*, recipe_*).
path = write_result(
    "compared_translations",
    metrics,
    profile="gpu",
    device="cpu",
    config={"command": "python scripts/gpu/compare_recipes.py"},
)
print(path)
print(json.dumps(metrics["systems"], indent=1))
