"""Chapter 05's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`), and
the closing list of what one run shows (`closing`), read from its results record
(`results/<profile>/translation.json`).

Each function reads plain numbers or the record's parts (the chapter passes what it just
computed; `closing` passes the record read back), so the page's sentences and its closing section
say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...profiles import get_profile
from ..wording import listed, plus_minus, signed
from . import verdicts
from .phrases import say
from .record import AveragingRow, BeamDecoding, Decoding, GpuRun, TranslationRecord


def flops_text(value: float) -> str:
    """3.3e18 as the paper writes it (two significant digits, no '+')."""
    return f"{value:.2g}".replace("e+", "e")


# ------------------------------------------------------------------------------------------ opening
def describe_plan(profile, device, beam: int) -> str:
    """What the chapter translates under `profile`, in one sentence."""
    found = verdicts.plan(profile, device, beam)
    share = say("plan.first", found) if found.first else say("plan.every")
    return say("plan", found, share=share)


def describe_model(
    parameters: int, averaged_from: Sequence[str], sentences: Mapping[str, int]
) -> str:
    """The averaged model and the sentences it will translate ({split name: how many})."""
    files = list(averaged_from)
    averaged = (
        files[0]
        if len(files) == 1
        else say("model.snapshots", count=len(files), first=files[0], last=files[-1])
    )
    sets = listed([say("model.set", n=n, name=name) for name, n in sentences.items()])
    return say("model", parameters=parameters, averaged=averaged, sets=sets)


# ------------------------------------------------------------------------------------------ recipes
def _rival(rival: verdicts.Rival) -> str:
    if rival.exceeds_noise:
        return say("rival.higher" if rival.higher else "rival.lower", rival)
    return say("rival.tied" if rival.tied else "rival.within", rival)


def _choice(found: verdicts.CandidateChoice, subject: str) -> str:
    text = say(
        "choice",
        found,
        subject=say(subject),
        score=plus_minus(found.score, found.ci95),
    )
    if not found.rivals:
        return text + say("choice.no_rival")
    return text + "; " + "; ".join(_rival(r) for r in found.rivals) + "."


def describe_cpu_choice(rows: Sequence[Mapping]) -> str:
    """The `cpu` sweep's verdict (`Evidence.cpu_rows`): the chosen candidate on validation and
    which others the paired bootstrap tells from it."""
    return _choice(verdicts.candidate_choice(rows), "choice.candidate")


def describe_budget_choice(rows: Sequence[Mapping], kind: str) -> str:
    """A step-budget sweep's verdict (`BudgetSweep.rows`, the profile's recipe marked chosen):
    whether a rival beats the recipe beyond the noise, which would give `kind` (the CPU kind whose
    budget it is) a recipe of its own."""
    found = verdicts.candidate_choice(rows)
    text = _choice(found, "choice.recipe")
    if not found.winners:
        return text + " " + say("budget.kept", kind=kind)
    key = "budget.beaten_by_one" if len(found.winners) == 1 else "budget.beaten_by_many"
    return text + " " + say(key, winners=listed(found.winners), kind=kind)


def describe_decode_choice(
    settings: Mapping[str, Mapping], baseline: str, chosen: str
) -> str:
    """The decoding grid's verdict: how many settings beat the paper's beyond the noise, which one
    the profile uses, and how much of that is selection among many comparisons."""
    found = verdicts.decode_choice(settings, baseline, chosen)
    choice = say("decode.kept" if found.gain is None else "decode.chosen", found)
    return " ".join([say("decode", found), choice, say("decode.chance", found)])


def describe_gpu_choice(rows: Sequence[Mapping]) -> str:
    """The `gpu` sweep's verdict: the lowest validation perplexity, the runner-up, and which runs
    were overfitting by their last epoch."""
    found = verdicts.gpu_choice(rows)
    text = say("gpu_choice", found)
    if found.second is not None:
        text += say("gpu_choice.second", found)
    if found.rising:
        text += say("gpu_choice.rising", found)
    return text + say("gpu_choice.seeds")


# ------------------------------------------------------------------------------------------ decoding
def describe_beam(
    greedy: Decoding, beam: BeamDecoding, sentences: int, split: str
) -> str:
    """Beam search against greedy decoding (the record's `greedy` and `beam`) on `sentences`
    sentences of `split`."""
    found = verdicts.beam(greedy, beam)
    scores = (
        f"{plus_minus(beam.sacrebleu, beam.sacrebleu_ci95)} sacreBLEU against greedy's "
        f"{plus_minus(greedy.sacrebleu, greedy.sacrebleu_ci95)}"
    )
    if not found.exceeds_noise:
        key = "beam.within"
    else:
        key = "beam.above" if found.gain > 0 else "beam.below"
    text = say(
        key,
        found,
        name=say("beam.name", found),
        scores=scores,
        where=say("beam.where", sentences=sentences, split=split),
        signed_gain=signed(found.gain),
    )
    return text + " " + say("beam.time", found)


def describe_averaging(rows: Sequence[AveragingRow], own_k: int) -> str:
    """The averaging sweep (the record's `averaging`, on the validation split): the profile's
    average against the last snapshot, and how the other averages compare with it."""
    found = verdicts.averaging(rows, own_k)
    own, last, widest = found.own, found.last, found.widest
    if own_k == 1:
        parts = [say("averaging.none", bleu=last.bleu)]
    else:
        if own.beyond_noise:
            side = "averaging.above" if found.difference > 0 else "averaging.below"
            finding = say(side, gap=abs(found.difference))
        else:
            finding = say("averaging.within")
        parts = [
            say(
                "averaging",
                k=own_k,
                own_score=plus_minus(own.bleu, own.ci95),
                last_score=plus_minus(last.bleu, last.ci95),
                finding=finding,
                p_value=own.p_value,
                last_ppl=last.ppl,
                own_ppl=own.ppl,
            )
        ]
    if found.averages > 1:
        within = found.averages - found.up - found.down
        parts.append(say("averaging.count", found, within=within))
    if found.perplexity:
        parts.append(
            say(
                f"averaging.{found.perplexity}",
                last_ppl=last.ppl,
                widest_ppl=widest.ppl,
                widest_k=widest.k,
            )
        )
    return " ".join(parts)


def describe_bleus(
    sacre: float, unsplit: float, split: float, hyphenated: int | None, references: int
) -> str:
    """The paper's tokenized BLEU against sacreBLEU on the same outputs."""
    found = verdicts.bleus(sacre, unsplit, split, hyphenated, references)
    count = (
        say("bleus.hyphens", found)
        if found.hyphenated is not None
        else say("bleus.few_hyphens")
    )
    closely = say("bleus.close" if found.close else "bleus.apart", found)
    return say("bleus", found, closely=closely, count=count)


# ------------------------------------------------------------------------------------------ cost
def describe_cost(
    seconds: float, paper_way: float, counted: float, utilisation: float, how: str
) -> str:
    """The run's cost the paper's way (`seconds` at the rate `how` names) and counted, and their
    ratio."""
    found = verdicts.cost(seconds, paper_way, counted, utilisation, how)
    return say(
        "cost",
        found,
        where=say("cost.measured" if found.measured else "cost.peak"),
        rate=flops_text(found.rate),
        paper_way=flops_text(found.paper_way),
        counted=flops_text(found.counted),
    )


def describe_table2(paper_way: float, parameters: int) -> str:
    """The run against the paper's base model on Table 2's cost axis."""
    found = verdicts.table2(paper_way, parameters)
    return say(
        "table2",
        found,
        paper_way=flops_text(found.paper_way),
        base_flops=flops_text(found.base_flops),
    )


def describe_gpu_comparison(gpu: GpuRun, sentences: int) -> str:
    """The committed `gpu` run beside this one (the record's `gpu_comparison`)."""
    found = verdicts.gpu_comparison(gpu)
    costs = say("gpu.costs", found)
    if not found.paired:
        score = plus_minus(found.sacrebleu, found.ci95)
        return " ".join(
            [say("gpu.unpaired", found, score=score, sentences=sentences), costs]
        )
    if found.exceeds_noise:
        finding = say("gpu.above" if found.difference > 0 else "gpu.below", found)
    else:
        finding = say("gpu.within", found)
    parts = [say("gpu.paired", found, finding=finding, sentences=sentences)]
    if found.selected:
        parts.append(say("gpu.selected"))
    return " ".join(parts + [costs])


def describe_recipe_cost(
    counted_flops: float, table2_flops: float, h100_gpu_hours: Mapping[str, float]
) -> str:
    """The `paper` recipe counted (the record's `paper_recipe` fields of the same names), against
    Table 2's figure, and on one H100 today."""
    found = verdicts.recipe_cost(counted_flops, table2_flops, h100_gpu_hours)
    span = listed([say("recipe_cost.hours", hours=h, how=how) for how, h in found.hours])
    return say(
        "recipe_cost",
        found,
        counted=flops_text(found.counted),
        table2=flops_text(found.table2),
        span=span,
    )


def describe_recipe_check(
    steps: int,
    losses: Sequence[float],
    valid_loss: float,
    vocab_size: int,
    seconds: float,
) -> str:
    """What the few steps of the paper's recipe show: that it runs, not that it learns."""
    found = verdicts.recipe_check(steps, losses, valid_loss, vocab_size, seconds)
    return say(
        "recipe_check",
        found,
        losses=say("recipe_check.finite" if found.finite else "recipe_check.non_finite"),
        side=say("recipe_check.above" if found.above_uniform else "recipe_check.below"),
    )


# ------------------------------------------------------------------------------------------ closing
def describe_result(
    sacrebleu: float,
    sacrebleu_ci95: float | None,
    bleu_tokenized: float,
    sentences: int,
    test_set: str,
) -> str:
    """The chapter's headline: the averaged model's test scores."""
    return say(
        "result",
        score=plus_minus(sacrebleu, sacrebleu_ci95),
        bleu_tokenized=bleu_tokenized,
        sentences=sentences,
        test_set=test_set,
        paper_bleu=verdicts.paper_base_bleu(),
    )


def closing(record: TranslationRecord) -> str:
    """The chapter's closing list: one item per finding, from its results record as `record.read`
    returns it."""
    r = record
    recipe = r.paper_recipe
    lines = [
        describe_result(
            r.sacrebleu, r.sacrebleu_ci95, r.bleu_tokenized, r.sentences, r.test_set
        ),
        describe_beam(r.greedy, r.beam, r.decoding_sentences, r.decoding_set),
        describe_averaging(r.averaging, len(r.averaged_checkpoints)),
        describe_bleus(
            r.sacrebleu,
            r.bleu_tokenized_without_compound_splitting,
            r.bleu_tokenized,
            r.references_with_hyphen,
            r.sentences,
        ),
        describe_cost(
            r.run.train_time_s,
            r.training_flops,
            r.training_flops_counted,
            r.model_flops_utilisation,
            r.training_flops_how,
        ),
        describe_table2(r.training_flops, r.parameters),
    ]
    if r.gpu_comparison:
        lines.append(describe_gpu_comparison(r.gpu_comparison, r.sentences))
    lines.append(
        describe_recipe_cost(
            recipe.counted_flops, recipe.table2_flops, recipe.h100_gpu_hours
        )
    )
    # records written before the check's vocabulary was recorded: the paper profile's BPE
    vocab = recipe.check_vocab_size or get_profile("paper").vocab_size
    lines.append(
        describe_recipe_check(
            recipe.check_steps,
            recipe.check_losses,
            recipe.check_valid_loss,
            vocab,
            recipe.check_seconds,
        )
    )
    return "\n".join(f"- {line}" for line in lines)
