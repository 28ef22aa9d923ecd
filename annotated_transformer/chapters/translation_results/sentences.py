"""Chapter 05's sentences: every sentence of the chapter whose words depend on a number, and the
closing list of what one run shows (`closing`), read from its results record
(`results/<profile>/translation.json`).

A difference between two BLEU scores is called a difference only when sacreBLEU's paired
bootstrap puts it beyond the resampling noise (p < 0.05); otherwise the sentence says the sentences
cannot tell the two apart. The comparisons that could choose a setting (greedy or beam, how many
snapshots to average) are on the validation split; the test set is scored once. Differences
between BLEUs of the same outputs (the two tokenizations) and between costs are exact, not
samples, and carry no interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...evaluation import paper
from ...evaluation.paper import PAPER_TARGET_TOKENS_PER_STEP
from ...profiles import get_profile
from ..wording import plus_minus, signed
from .recipe_choice import beyond_noise_above

# Section 5.1: "about 4.5 million sentence pairs" of WMT 2014 English-German.
WMT14_EN_DE_PAIRS = "4.5 million"


def flops_text(value: float) -> str:
    """3.3e18 as the paper writes it (two significant digits, no '+')."""
    return f"{value:.2g}".replace("e+", "e")


def _p(p: float) -> str:
    return f"p = {p:.3f}"


def _names(files: Sequence[str]) -> str:
    files = list(files)
    if len(files) == 1:
        return files[0]
    return f"the {len(files)} snapshots from {files[0]} to {files[-1]}"


# ------------------------------------------------------------------------------------------ opening
def describe_plan(profile, device, beam: int) -> str:
    """What the chapter translates under `profile`, in one sentence."""
    share = (
        f"the first {profile.eval_max_sentences:,} sentences"
        if profile.eval_max_sentences
        else "every sentence"
    )
    return (
        f"Under profile `{profile.name}` the chapter compares decodings on {share} of the "
        f"{profile.corpus} validation split ({profile.src_lang} to {profile.tgt_lang}), then "
        f"scores {share} of its test split with one setting, beam {beam} and length penalty "
        f"α = {profile.length_penalty_alpha:g}, on {device}."
    )


def describe_model(
    parameters: int, averaged_from: Sequence[str], sentences: Mapping[str, int]
):
    """The averaged model and the sentences it will translate ({split name: how many})."""
    sets = " and ".join(f"{n:,} sentences of `{name}`" for name, n in sentences.items())
    return (
        f"The model has {parameters:,} parameters, each the mean of {_names(averaged_from)}; "
        f"it will translate {sets}."
    )


# ------------------------------------------------------------------------------------------ recipes
def describe_cpu_choice(rows: Sequence[Mapping]) -> str:
    """The `cpu` sweep's verdict (`Evidence.cpu_rows`): the chosen candidate on validation and
    which others the paired bootstrap tells from it."""
    chosen = next(r for r in rows if r["chosen"])
    others = [r for r in rows if not r["chosen"]]
    text = (
        f"The chosen candidate, {chosen['name']} ({chosen['change']}), scores "
        f"{plus_minus(chosen['valid_sacrebleu'], chosen['ci95'])} sacreBLEU on validation"
    )
    if not others:
        return text + "; it had no rival."
    parts = []
    for r in others:
        d = r["valid_sacrebleu"] - chosen["valid_sacrebleu"]
        if r["exceeds_noise"]:
            parts.append(
                f"{r['name']} scores {abs(d):.2f} {'lower' if d < 0 else 'higher'}, beyond "
                f"the resampling noise ({_p(r['p_value'])})"
            )
        else:
            # "scores -0.06" would read as a score; the sign is the difference's
            differs = (
                f"differs from it by {d:+.2f}"
                if round(d, 2)
                else "matches it to two decimals"
            )
            parts.append(
                f"{r['name']}'s score {differs}, within the resampling noise "
                f"({_p(r['p_value'])}), so the validation set cannot tell it from the chosen one"
            )
    return text + "; " + "; ".join(parts) + "."


def describe_budget_choice(rows: Sequence[Mapping]) -> str:
    """The step-budget sweep's verdict (`BudgetSweep.rows`, the profile's recipe marked chosen):
    whether a rival beats the recipe beyond the noise, which would give the slow CPU kind a recipe
    of its own."""
    text = describe_cpu_choice(rows).replace(
        "The chosen candidate", "The profile's recipe"
    )
    winners = beyond_noise_above(rows)
    if winners:
        return text + (
            f" {' and '.join(winners)} beat{'s' if len(winners) == 1 else ''} it beyond the noise: "
            "the slow CPU kind should train that recipe instead."
        )
    return text + (
        " No rival beats it beyond the noise, so the `cpu` profile trains the same recipe on "
        "every CPU kind."
    )


def describe_decode_choice(settings: Mapping[str, Mapping], baseline: str, chosen: str):
    """The decoding grid's verdict: how many settings beat the paper's beyond the noise, which one
    the profile uses, and how much of that is selection among many comparisons."""
    base = settings[baseline]["bleu"]
    compared = {n: r for n, r in settings.items() if n != baseline}
    up = [n for n, r in compared.items() if r.get("exceeds_noise") and r["bleu"] > base]
    down = [n for n, r in compared.items() if r.get("exceeds_noise") and r["bleu"] < base]
    within = len(compared) - len(up) - len(down)
    text = (
        f"Of the {len(compared)} settings compared with the paper's ({baseline}, "
        f"{base:.2f} on validation), {len(up)} beat it beyond the resampling noise, "
        f"{len(down)} fall below it beyond the noise and {within} are within it. "
    )
    if chosen == baseline:
        text += "None wins, so the profile keeps the paper's setting. "
    else:
        row = settings[chosen]
        text += (
            f"The profile decodes with the best, {chosen} ({row['bleu'] - base:+.2f}, "
            f"{_p(row['p_value'])}). "
        )
    return text + (
        f"With {len(compared)} comparisons at the 5% level, about "
        f"{0.05 * len(compared):.1f} would pass by chance alone, so the winner's margin is "
        "partly selection: the test set, scored once with the chosen setting, is the honest "
        "measure."
    )


def describe_gpu_choice(rows: Sequence[Mapping]) -> str:
    """The `gpu` sweep's verdict: the lowest validation perplexity, the runner-up, and which runs
    were overfitting by their last epoch."""
    ranked = sorted(rows, key=lambda r: r["best_ppl"])
    best = ranked[0]
    text = (
        f"The lowest validation perplexity, {best['best_ppl']:.2f}, is {best['name']}'s "
        f"({best['shape']}) at epoch {best['best_epoch']}, where the `gpu` profile stops"
    )
    if len(ranked) > 1:
        second = ranked[1]
        text += (
            f"; the next, {second['name']}, reached {second['best_ppl']:.2f} "
            f"({second['best_ppl'] / best['best_ppl'] - 1:+.0%})"
        )
    rising = [r["name"] for r in rows if r["last_ppl"] > 1.05 * r["best_ppl"]]
    if rising:
        text += (
            f". {len(rising)} of {len(rows)} runs ended more than 5% above their lowest point "
            "(overfitting), which is why the profile stops at the lowest one"
        )
    return text + ". Each run is one seed, so these perplexities carry no interval."


# ------------------------------------------------------------------------------------------ decoding
def describe_beam(greedy: Mapping, beam: Mapping, sentences: int, split: str) -> str:
    """Beam search against greedy decoding (the record's "greedy" and "beam" entries) on
    `sentences` sentences of `split`."""
    gain = beam["sacrebleu"] - greedy["sacrebleu"]
    tokenized = beam["bleu_tokenized"] - greedy["bleu_tokenized"]
    slower = beam["decode_seconds"] / max(greedy["decode_seconds"], 0.05)
    scores = (
        f"{plus_minus(beam['sacrebleu'], beam['sacrebleu_ci95'])} sacreBLEU against greedy's "
        f"{plus_minus(greedy['sacrebleu'], greedy['sacrebleu_ci95'])}"
    )
    cost = f" It took {slower:.1f} times greedy's decoding time."
    where = f"on the {sentences:,} sentences of `{split}`"
    name = f"Beam search (beam {beam['beam_size']}, α = {beam['length_penalty_alpha']})"
    p = _p(beam["p_value_against_greedy"])
    if not beam["exceeds_noise"]:
        return (
            f"{name} scores {scores} {where}: a change of {signed(gain)} that lies within the "
            f"resampling noise ({p}), so these sentences cannot tell the two apart.{cost}"
        )
    if gain > 0:
        reason = (
            "keeping several hypotheses lets the search back out of an early word that "
            "leaves no good continuation"
        )
    else:
        reason = (
            "the search finds outputs the model scores higher but the references do not "
            "favour: the model's probabilities are not BLEU"
        )
    side = "above" if gain > 0 else "below"
    return (
        f"{name} scores {scores} {where}, {abs(gain):.2f} points {side} it "
        f"({tokenized:+.2f} tokenized) and beyond the resampling noise ({p}): {reason}.{cost}"
    )


def describe_averaging(rows: Sequence[Mapping], own_k: int) -> str:
    """The averaging sweep (the record's "averaging", on the validation split): the profile's
    average against the last snapshot, and how the other averages compare with it."""
    last = rows[0]
    own = next(r for r in rows if r["k"] == own_k)
    if own_k == 1:
        text = (
            "The profile averages nothing: its model is the last snapshot "
            f"({last['bleu']:.2f} on the validation split)."
        )
    else:
        d = own["bleu"] - last["bleu"]
        scores = (
            f"{plus_minus(own['bleu'], own['ci95'])} against "
            f"{plus_minus(last['bleu'], last['ci95'])}"
        )
        if own["beyond_noise"]:
            side = "above" if d > 0 else "below"
            verdict = f"{abs(d):.2f} sacreBLEU {side} it, beyond the resampling noise"
        else:
            verdict = "a change within the resampling noise, so no gain the validation set can tell"
        text = (
            f"On the validation split, averaging the newest {own_k} snapshots scores {scores} "
            f"for the last one alone, {verdict} ({_p(own['p_value'])}); perplexity goes from "
            f"{last['ppl']:.2f} to {own['ppl']:.2f}."
        )
    averages = [r for r in rows if r["k"] > 1]
    if len(averages) > 1:
        up = sum(bool(r["beyond_noise"]) and r["minus_k1"] > 0 for r in averages)
        down = sum(bool(r["beyond_noise"]) and r["minus_k1"] < 0 for r in averages)
        text += (
            f" Of the {len(averages)} averages, {up} score above the last snapshot beyond "
            f"the noise, {down} below it, and {len(averages) - up - down} within it."
        )
    widest = rows[-1]
    if own["ppl"] > last["ppl"]:
        text += (
            f" Here averaging raises the validation perplexity ({last['ppl']:.2f} for the last "
            f"snapshot, {widest['ppl']:.2f} for all {widest['k']}): the snapshots are far "
            "apart in a run that is still changing fast, so their mean is a worse model than "
            "the last of them."
        )
    elif widest["k"] > own_k and widest["ppl"] > own["ppl"]:
        text += (
            f" Averaging all {widest['k']} kept snapshots raises the validation perplexity "
            f"again, to {widest['ppl']:.2f}: the oldest of them are worse models of a run that was "
            "still improving, and they pull the mean back."
        )
    return text


def describe_bleus(
    sacre: float, unsplit: float, split: float, hyphenated: int | None, references: int
) -> str:
    """The paper's tokenized BLEU against sacreBLEU on the same outputs."""
    gap = split - sacre
    closely = "agree closely" if abs(gap) < 0.5 else f"differ by {gap:+.2f}"
    count = (
        f"{hyphenated:,} of {references:,} references hold a hyphen to split"
        if hyphenated is not None
        else "the references hold few hyphenated compounds"
    )
    return (
        f"On the same outputs the paper's tokenized BLEU reads {split:.2f} with compound "
        f"splitting and {unsplit:.2f} without, and sacreBLEU {sacre:.2f}: the two BLEUs "
        f"{closely}, because splitting changes the tokenized BLEU by {split - unsplit:+.2f} "
        f"({count}) and both use the "
        f"same 13a tokens. One set of outputs scored three ways, so these gaps are exact, "
        "not samples. On WMT14 news text, tokenized by Moses and full of compounds, the gap is "
        f"larger, so the paper's {paper.table2_row('Transformer (base)').bleu_en_de} cannot be "
        "read as a sacreBLEU score."
    )


# ------------------------------------------------------------------------------------------ cost
def describe_cost(metrics: Mapping) -> str:
    """The run's cost the paper's way and counted, and their ratio."""
    seconds = metrics["run"]["train_time_s"]
    rate = metrics["training_flops"] / seconds
    measured = "measured here" in metrics.get("training_flops_how", "")
    where = (
        "the rate measured for this CPU's matrix products"
        if measured
        else "the data-sheet peak"
    )
    share = metrics["model_flops_utilisation"]
    return (
        f"Priced the paper's way, {seconds:,.0f} s at {where} ({flops_text(rate)} FLOP/s), the run "
        f"cost {flops_text(metrics['training_flops'])} FLOPs; counted from the model it did "
        f"{flops_text(metrics['training_flops_counted'])}, so {share:.0%} of that rate went "
        "into the model's arithmetic and the rest into element-wise work, the optimizer, the "
        "data and Python."
    )


def describe_table2(metrics: Mapping) -> str:
    """The run against the paper's base model on Table 2's cost axis."""
    base = paper.table2_row("Transformer (base)")
    ratio = base.flops_en_de / metrics["training_flops"]
    return (
        f"Both priced Table 2's way, the run cost {flops_text(metrics['training_flops'])} FLOPs "
        f"against the base model's {flops_text(base.flops_en_de)}, {ratio:,.0f} times less "
        f"(about {math.log10(ratio):.0f} orders of magnitude): a model of "
        f"{metrics['parameters'] / 1e6:.1f}M parameters against "
        f"{paper.TABLE3['base'].params_m}M, trained on short captions rather than "
        f"{WMT14_EN_DE_PAIRS} news sentence pairs. Its BLEU is on another test set and does "
        "not compare with Table 2's."
    )


def describe_gpu_comparison(gpu: Mapping, sentences: int) -> str:
    """The committed `gpu` run beside this one (`GpuComparison.record()`)."""
    label = gpu["label"]
    spread = gpu["paper_way"] / gpu["counted"]
    cost = (
        f"Its two costs lie {spread:,.0f} times apart, because a small model keeps a tiny "
        "fraction of an H100's peak busy and the paper's way assumes all of it."
    )
    selected = (
        " Its recipe was chosen on the test score, so its lead is partly selection."
        if "chosen on test" in label
        else ""
    )
    if not gpu["paired"]:
        return (
            f"The committed `gpu` run ({label}) scores "
            f"{plus_minus(gpu['sacrebleu'], gpu['ci95'])} sacreBLEU on the whole test set; this "
            f"run translated {sentences:,} of its sentences, so the two are not compared. {cost}"
        )
    d = gpu["difference"]
    if gpu["exceeds_noise"]:
        side = "above" if d > 0 else "below"
        verdict = f"{abs(d):.2f} sacreBLEU {side} this run, beyond the resampling noise"
    else:
        verdict = (
            f"{d:+.2f} against this run, within the resampling noise (no difference)"
        )
        selected = ""
    return (
        f"On the same {sentences:,} sentences the committed `gpu` run ({label}) scores "
        f"{verdict} ({_p(gpu['p_value'])}).{selected} {cost}"
    )


def describe_recipe_cost(recipe: Mapping) -> str:
    """The `paper` recipe counted, against Table 2's figure, and on one H100 today."""
    base = paper.TRAINING["base"]
    share = recipe["counted_flops"] / recipe["table2_flops"]
    hours = sorted(recipe["h100_gpu_hours"].items(), key=lambda item: item[1])
    span = " and ".join(
        f"{h:.1f} hours at the {how.split()[0]} share of its peak" for how, h in hours
    )
    return (
        f"Counted, the paper's base recipe ({base.steps:,} steps of about "
        f"{PAPER_TARGET_TOKENS_PER_STEP:,} target tokens) is "
        f"{flops_text(recipe['counted_flops'])} FLOPs, {share:.0%} of Table 2's "
        f"{flops_text(recipe['table2_flops'])}: Table 2 prices every second of the P100s at "
        "their sustained rate, and the count leaves out element-wise work, the optimizer and "
        f"communication; one H100 would need {span}, against the paper's "
        f"{base.wall_time_h:g} hours on eight P100s."
    )


def describe_recipe_check(
    steps: int,
    losses: Sequence[float],
    valid_loss: float,
    vocab_size: int,
    seconds: float,
) -> str:
    """What the few steps of the paper's recipe show: that it runs, not that it learns."""
    uniform = math.log(vocab_size)
    side = "above" if valid_loss > uniform else "below"
    finite = all(math.isfinite(x) for x in list(losses) + [valid_loss])
    return (
        f"{steps} steps of the recipe on the WMT14 sample ran in {seconds:.0f} s with "
        f"{'finite' if finite else 'non-finite'} losses ({losses[0]:.3f} at the first step, "
        f"{losses[-1]:.3f} at the last, one batch each); the validation loss, "
        f"{valid_loss:.3f}, is {side} a uniform guess over {vocab_size:,} pieces "
        f"({uniform:.3f}): the warm-up keeps the learning rate tiny in the first steps, so the "
        "check shows that every piece of the recipe runs, not that it learns."
    )


# ------------------------------------------------------------------------------------------ closing
def describe_result(metrics: Mapping) -> str:
    """The chapter's headline: the averaged model's test scores."""
    return (
        f"The averaged model scores {plus_minus(metrics['sacrebleu'], metrics['sacrebleu_ci95'])} "
        f"sacreBLEU (95% bootstrap interval) and {metrics['bleu_tokenized']:.2f} "
        f"tokenized BLEU, the paper's kind, on {metrics['sentences']:,} sentences of "
        f"`{metrics['test_set']}`, against the paper's "
        f"{paper.table2_row('Transformer (base)').bleu_en_de} for the base model on WMT14 "
        "news, another test set."
    )


def closing(record: Mapping) -> str:
    """The chapter's closing list: one item per finding, from its results record
    (`results/<profile>/translation.json`, as `results.read_result` returns it)."""
    m = record["metrics"]
    own_k = len(m["averaged_checkpoints"])
    recipe = m["paper_recipe"]
    lines = [
        describe_result(m),
        describe_beam(m["greedy"], m["beam"], m["decoding_sentences"], m["decoding_set"]),
        describe_averaging(m["averaging"], own_k),
        describe_bleus(
            m["sacrebleu"],
            m["bleu_tokenized_without_compound_splitting"],
            m["bleu_tokenized"],
            m.get("references_with_hyphen"),
            m["sentences"],
        ),
        describe_cost(m),
        describe_table2(m),
    ]
    if m.get("gpu_comparison"):
        lines.append(describe_gpu_comparison(m["gpu_comparison"], m["sentences"]))
    lines.append(describe_recipe_cost(recipe))
    # records written before the check's vocabulary was recorded: the paper profile's BPE
    vocab = recipe.get("check_vocab_size") or get_profile("paper").vocab_size
    lines.append(
        describe_recipe_check(
            recipe["check_steps"],
            recipe["check_losses"],
            recipe["check_valid_loss"],
            vocab,
            recipe["check_seconds"],
        )
    )
    return "\n".join(f"- {line}" for line in lines)
