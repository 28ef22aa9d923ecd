"""How the `cpu` and `gpu` recipes were chosen: on validation figures only, from committed sweeps.

A recipe (model shape, batch, learning rate, how long to train) is a choice, and a choice made by
looking at the test set makes the test score optimistic. Both profiles' recipes are therefore picked
by the lowest validation perplexity or the highest validation BLEU of a sweep, and the test set is
scored once, for the recipe picked. The evidence is committed with the repository:

- `results/tuning_multi30k_cpu/valid_*.json` (with `valid_*.de`, the translations of the 1,014
  validation sentences): the `cpu` sweep, each candidate trained 15 minutes on 2 cores;
- `results/tuning_multi30k_avx2/valid_*.json` and `results/tuning_multi30k_amx/valid_*.json`: the
  `cpu` recipe against rivals at the step budget of the slowest CPU kind met (an AVX2-only AMD EPYC,
  2,074 steps of the recipe in its 15 minutes) and of the fastest (an Intel Xeon with AMX, 4,877),
  each candidate trained for the steps its own measured step time buys there
  (`scripts/cpu_step_budget_sweep.sh`);
- `results/gpu/logs/*_metrics.jsonl`: the `gpu` sweep's validation curves (every 250 steps).

This module reads them into tables, so that chapter 05 and the tests use one reading.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from ...model.config import preset
from ...runtime.records import read_json, read_lines

CPU_SWEEP = Path("tuning_multi30k_cpu")
STEP_BUDGET_SWEEP = Path("tuning_multi30k_avx2")
# Every step-budget sweep, with the CPU kind whose budget it trained at.
STEP_BUDGET_SWEEPS = {
    STEP_BUDGET_SWEEP: "an AVX2-only AMD EPYC (fp32, the slowest kind met)",
    Path("tuning_multi30k_amx"): "an Intel Xeon with AMX (bf16, the fastest kind met)",
}
GPU_LOGS = Path("gpu") / "logs"
# The gpu sweep's runs that compete (the others in logs/ repeat the chosen recipe of that day).
GPU_SWEEP = ("sweep_base6", "sweep_base6ff2048", "sweep_d256x4", "sweep_d128x4")
# The profile fields a recipe consists of (the rest, logging and snapshots, changes no result).
RECIPE_FIELDS = (
    "vocab_size",
    "preset",
    "model_overrides",
    "batch_tokens",
    "accumulation",
    "peak_lr",
    "warmup_steps",
    "dropout_from_epoch",
)
# What a recipe written before one of its fields existed trained with.
RECIPE_BEFORE = {"dropout_from_epoch": 0}


def shape(recipe: dict) -> str:
    """'layers x d_model / d_ff' of a recipe's model (its preset with its overrides)."""
    overrides = {
        k: v
        for k, v in recipe["model_overrides"].items()
        if k in ("n_layers", "d_model", "d_ff")
    }
    config = preset(recipe["preset"], **overrides)
    return f"{config.n_layers} x {config.d_model} / {config.d_ff}"


def recipe_of(profile) -> dict:
    """The recipe fields of a `Profile` (or of a profile record read from a log)."""
    if isinstance(profile, dict):
        return {
            field: profile.get(field, RECIPE_BEFORE.get(field)) for field in RECIPE_FIELDS
        }
    return {field: getattr(profile, field) for field in RECIPE_FIELDS}


# ------------------------------------------------------------------------------------------ cpu
@dataclass(frozen=True)
class CpuCandidate:
    name: str
    change: str  # what it changes, in words
    recipe: dict  # its RECIPE_FIELDS as trained
    steps: int
    epochs: float
    target_tokens_per_s: float
    precision: str
    valid_ppl: float
    valid_sacrebleu: float
    hypotheses: Path  # its translations of the validation split, one per line


def cpu_candidates(results: Path, sweep: Path = CPU_SWEEP) -> list[CpuCandidate]:
    """The candidates of a `cpu` sweep (by default the 15-minute one), by name."""
    out = []
    for path in sorted((results / sweep).glob("valid_*.json")):
        record = read_json(path, "result")
        measured = {
            f.name: record["metrics"][f.name]
            for f in fields(CpuCandidate)
            if f.name not in ("name", "hypotheses")  # the rest are its results file's
        }
        measured["recipe"] = recipe_of(measured["recipe"])
        out.append(
            CpuCandidate(
                name=record["name"].removeprefix("valid_"),
                hypotheses=path.with_suffix(".de"),
                **measured,
            )
        )
    return out


def chosen_cpu(candidates: list[CpuCandidate]) -> CpuCandidate:
    """The candidate with the highest validation BLEU (ties: the lower validation perplexity)."""
    if not candidates:
        raise ValueError("no cpu sweep candidates to choose from")
    return max(candidates, key=lambda c: (c.valid_sacrebleu, -c.valid_ppl))


DECODE_CHOICE = CPU_SWEEP / "decode_choice.json"
DECODE_FIELDS = ("average_last", "beam_size", "length_penalty_alpha")


@dataclass(frozen=True)
class DecodeChoice:
    """The `cpu` run's averaging and search settings, chosen on validation
    (scripts/cpu_decode_choice.py): a setting replaces the baseline (the paper's: the last 5
    snapshots, beam 4, alpha 0.6) only when it beats it beyond the paired bootstrap's noise."""

    baseline: str
    best: str
    settings: dict  # name -> {average_last, beam_size, length_penalty_alpha, bleu, ci95, p_value}

    @property
    def chosen(self) -> str:
        return (
            self.best if self.settings[self.best].get("exceeds_noise") else self.baseline
        )

    def fields(self, name: str | None = None) -> dict:
        row = self.settings[name or self.chosen]
        return {field: row[field] for field in DECODE_FIELDS}


def decode_choice(results: Path) -> DecodeChoice:
    record = read_json(results / DECODE_CHOICE, "result")["metrics"]
    return DecodeChoice(record["baseline"], record["best"], record["settings"])


# ------------------------------------------------------------------------------------------ gpu
@dataclass(frozen=True)
class GpuCandidate:
    name: str
    recipe: dict  # the profile fields it trained with (the log's start record)
    best_ppl: float  # the lowest validation perplexity of the run
    best_epoch: int  # the epoch it was reached at
    last_ppl: float
    last_epoch: int


def read_curve(path: Path) -> tuple[dict, list[dict]]:
    """A metrics log's recipe (its start record) and its validation records."""
    recipe, valid = {}, []
    for record in read_lines(path, "metrics_log"):
        if record.get("kind") == "start":
            recipe = record.get("recipe", {})
        elif record.get("kind") == "valid":
            valid.append(record)
    if not valid:
        raise ValueError(f"{path} holds no validation record")
    return recipe, valid


def gpu_candidates(results: Path, names=GPU_SWEEP) -> list[GpuCandidate]:
    out = []
    for name in names:
        recipe, valid = read_curve(results / GPU_LOGS / f"{name}_metrics.jsonl")
        best = min(valid, key=lambda r: r["ppl"])
        out.append(
            GpuCandidate(
                name=name,
                recipe=recipe,
                best_ppl=best["ppl"],
                best_epoch=best["epoch"],
                last_ppl=valid[-1]["ppl"],
                last_epoch=valid[-1]["epoch"],
            )
        )
    return out


def chosen_gpu(candidates: list[GpuCandidate]) -> GpuCandidate:
    """The run with the lowest validation perplexity; the profile trains it up to that epoch."""
    if not candidates:
        raise ValueError("no gpu sweep candidates to choose from")
    return min(candidates, key=lambda c: c.best_ppl)


# ------------------------------------------------------------------------------------------ chapter 05
def candidate_rows(
    candidates: list[CpuCandidate], pick: CpuCandidate, tests: dict
) -> list[dict]:
    """One dict per candidate of a `cpu` sweep: name, validation scores, the paired bootstrap's
    test against the chosen one (`tests`: paired_bootstrap's entries by name)."""
    return [
        {
            "name": c.name,
            "change": c.change,
            "chosen": c is pick,
            "valid_ppl": c.valid_ppl,
            "valid_sacrebleu": tests[c.name]["bleu"],
            "ci95": tests[c.name]["ci95"],
            "p_value": tests[c.name].get("p_value"),
            "exceeds_noise": tests[c.name].get("exceeds_noise"),
        }
        for c in candidates
    ]


@dataclass(frozen=True)
class BudgetSweep:
    """The `cpu` recipe against rivals at one CPU kind's step budget. A rival would give that kind
    a recipe of its own only by beating the profile's beyond the bootstrap's noise (as a decoding
    setting must beat the paper's); `pick` is the profile's recipe."""

    kind: str  # the CPU kind whose budget the sweep trained at, in words
    candidates: list[CpuCandidate]
    pick: CpuCandidate
    tests: dict  # name -> paired_bootstrap's entry, the profile's recipe first

    def rows(self) -> list[dict]:
        return candidate_rows(self.candidates, self.pick, self.tests)

    @property
    def winners(self) -> list[str]:
        """Rivals that beat the profile's recipe beyond the noise."""
        return beyond_noise_above(self.rows())

    def beats(self, recipe: dict) -> bool:
        """Whether the profile's recipe scores above the candidate trained with `recipe` beyond
        the noise (False when no candidate has it)."""
        names = {c.name for c in self.candidates if c.recipe == recipe}
        mine = self.tests[self.pick.name]["bleu"]
        return any(
            r["name"] in names and r["exceeds_noise"] and r["valid_sacrebleu"] < mine
            for r in self.rows()
        )


def beyond_noise_above(rows: list[dict]) -> list[str]:
    """The names of the rows (`candidate_rows`) that score above the chosen one beyond the noise."""
    chosen = next(r for r in rows if r["chosen"])
    return [
        r["name"]
        for r in rows
        if not r["chosen"]
        and r["exceeds_noise"]
        and r["valid_sacrebleu"] > chosen["valid_sacrebleu"]
    ]


def budget_sweep(
    results: Path, folder: Path, recipe: dict, references: list[str]
) -> BudgetSweep:
    """The step-budget sweep in `folder`, bootstrapped against its candidate with the profile's
    `recipe`."""
    runs = cpu_candidates(results, folder)
    baseline = [c for c in runs if c.recipe == recipe]
    if len(baseline) != 1:
        raise ValueError(
            f"{folder} needs exactly one candidate with the cpu profile's recipe, "
            f"found {len(baseline)}"
        )
    pick = baseline[0]
    kind = STEP_BUDGET_SWEEPS[folder]
    return BudgetSweep(kind, runs, pick, bootstrapped(runs, pick, references))


def bootstrapped(candidates: list[CpuCandidate], pick: CpuCandidate, references) -> dict:
    """sacreBLEU's paired bootstrap of every candidate's validation translations against
    `pick`'s (the first system)."""
    from ...evaluation.scoring import paired_bootstrap

    ordered = [pick] + [c for c in candidates if c is not pick]
    return paired_bootstrap(
        {c.name: c.hypotheses.read_text(encoding="utf-8").splitlines() for c in ordered},
        references,
    )


@dataclass(frozen=True)
class Evidence:
    """Both sweeps as chapter 05 shows them: the `cpu` candidates with sacreBLEU's paired
    bootstrap against the chosen one on the validation split, the chosen run's decoding grid,
    and the `gpu` candidates' validation curves."""

    cpu: list[CpuCandidate]
    cpu_pick: CpuCandidate
    cpu_tests: dict  # name -> paired_bootstrap's entry, the chosen one first
    decoding: DecodeChoice
    gpu: list[GpuCandidate]
    gpu_pick: GpuCandidate

    # the step-budget sweeps committed, one per CPU kind
    budgets: tuple[BudgetSweep, ...] = ()

    def cpu_rows(self) -> list[dict]:
        """One dict per `cpu` candidate: name, validation scores, the test against the chosen."""
        return candidate_rows(self.cpu, self.cpu_pick, self.cpu_tests)

    def gpu_rows(self) -> list[dict]:
        return [
            {
                "name": g.name,
                "chosen": g is self.gpu_pick,
                "shape": shape(g.recipe),
                "best_ppl": g.best_ppl,
                "best_epoch": g.best_epoch,
                "last_ppl": g.last_ppl,
                "last_epoch": g.last_epoch,
            }
            for g in self.gpu
        ]


def read_evidence(results: Path, data_dir=None) -> Evidence:
    """Read both sweeps, bootstrap the `cpu` candidates' validation translations, and check that
    the `cpu` and `gpu` profiles train and decode as their sweeps chose (ValueError if not)."""
    from ...data import load_parallel
    from ...profiles import get_profile

    cpu_runs = cpu_candidates(results)
    cpu_pick = chosen_cpu(cpu_runs)
    cpu = get_profile("cpu")
    choice = decode_choice(results)
    if {f: getattr(cpu, f) for f in DECODE_FIELDS} != choice.fields():
        raise ValueError("the cpu profile decodes with other settings than those chosen")
    gpu_runs = gpu_candidates(results)
    gpu_pick = chosen_gpu(gpu_runs)
    gpu = get_profile("gpu")
    if (
        recipe_of(gpu) != recipe_of(gpu_pick.recipe)
        or gpu.max_epochs != gpu_pick.best_epoch
    ):
        raise ValueError("the gpu profile is not the run chosen on validation")
    valid = load_parallel(
        cpu.corpus, cpu.valid_split, cpu.src_lang, cpu.tgt_lang, data_dir
    )
    tests = bootstrapped(cpu_runs, cpu_pick, valid.tgt)
    budgets = tuple(
        budget_sweep(results, folder, recipe_of(cpu), valid.tgt)
        for folder in STEP_BUDGET_SWEEPS
        if (results / folder).is_dir()
    )
    # The 15-minute sweep chose at the step of its day; a faster step may make another recipe
    # better, which a step-budget sweep then shows, and which no budget sweep may beat.
    if recipe_of(cpu) != cpu_pick.recipe and not any(
        sweep.beats(cpu_pick.recipe) for sweep in budgets
    ):
        raise ValueError(
            "the cpu profile is neither the candidate chosen on validation nor a recipe that "
            "beat it at a CPU kind's step budget"
        )
    for sweep in budgets:
        if sweep.winners:
            raise ValueError(
                f"{', '.join(sweep.winners)} beat the cpu recipe at the step budget of "
                f"{sweep.kind} beyond the noise: the profile should take it on that kind"
            )
    return Evidence(cpu_runs, cpu_pick, tests, choice, gpu_runs, gpu_pick, budgets)


def cpu_table(evidence: Evidence):
    """The 15-minute sweep's `cpu` candidates: what each changes, its validation scores and its
    test against the sweep's pick (a step-budget sweep may choose another recipe)."""
    return _sweep_table(
        evidence.cpu, evidence.cpu_rows(), "this sweep's pick", "against the pick"
    )


def budget_table(sweep: BudgetSweep):
    """The step-budget sweep as `cpu_table` shows a sweep, without the tokens/s (one thread beside
    other work, not the slow CPU's speed: the steps carry that)."""
    return _sweep_table(sweep.candidates, sweep.rows()).drop(columns="target tokens/s")


def _sweep_table(
    candidates: list[CpuCandidate],
    scored: list[dict],
    chosen: str = "chosen",
    against_column: str = "against the chosen",
):
    import pandas as pd

    by_name = {c.name: c for c in candidates}
    rows = []
    for r in scored:
        c = by_name[r["name"]]
        against = "" if r["chosen"] else (
            f"p = {r['p_value']:.3f}, " + ("beyond" if r["exceeds_noise"] else "within")
            + " noise"
        )  # fmt: skip
        rows.append(
            {
                "candidate": c.name + (f" ({chosen})" if r["chosen"] else ""),
                "change": c.change,
                "steps, epochs": f"{c.steps:,}, {c.epochs:.1f}",
                "target tokens/s": f"{c.target_tokens_per_s:,.0f}",
                "valid perplexity": f"{c.valid_ppl:.2f}",
                "valid sacreBLEU ± 95%": f"{r['valid_sacrebleu']:.2f} ± {r['ci95']:.2f}",
                against_column: against,
            }
        )
    return pd.DataFrame(rows)


def decode_table(choice: DecodeChoice):
    """The chosen `cpu` run's decoding grid on validation, each against the paper's setting."""
    import pandas as pd

    base = choice.settings[choice.baseline]["bleu"]
    rows = []
    for name, row in choice.settings.items():
        label = name.replace("average ", "").replace(", alpha", ", α")
        label += " (chosen)" if name == choice.chosen else ""
        label += " (the paper's)" if name == choice.baseline else ""
        against = "" if name == choice.baseline else (
            f"{row['bleu'] - base:+.2f}, p = {row['p_value']:.3f}"
        )  # fmt: skip
        rows.append(
            {
                "snapshots, beam, α": label,
                "valid sacreBLEU ± 95%": f"{row['bleu']:.2f} ± {row['ci95']:.2f}",
                "against the paper's": against,
            }
        )
    return pd.DataFrame(rows)


def gpu_table(evidence: Evidence):
    """The `gpu` candidates by their validation curves."""
    import pandas as pd

    by_name = {g.name: g for g in evidence.gpu}
    return pd.DataFrame(
        [
            {
                "gpu candidate": r["name"] + (" (chosen)" if r["chosen"] else ""),
                "layers x width / feed-forward": r["shape"],
                "peak lr, warm-up": f"{by_name[r['name']].recipe['peak_lr']:g}, "
                f"{by_name[r['name']].recipe['warmup_steps']:,}",
                "lowest valid perplexity (epoch)": f"{r['best_ppl']:.2f} ({r['best_epoch']})",
                "at its last epoch": f"{r['last_ppl']:.2f} ({r['last_epoch']})",
            }
            for r in evidence.gpu_rows()
        ]
    )
