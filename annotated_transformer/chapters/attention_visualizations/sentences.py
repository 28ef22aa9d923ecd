"""Chapter 08's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`), and
`closing`, the chapter's "What this run shows", read from its results record (`record.read`).

A sentence that names a head takes it from `head_scores.passing_heads`, the rows the chapter's
per-head tables mark "yes": no sentence names a head that fails the test, however high its
ratio, and when no head passes, the sentence says so and names none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..wording import plural
from . import verdicts
from .exports import GreedyPaths
from .head_scores import APART_SE, DrawnHeads, Example, PairSamples
from .phrases import PHENOMENON_WORDS, agree, say
from .record import AttentionFiguresRecord


def _lie(n: int) -> str:
    return say("table.lie", heads=plural(n, "head"), lies=agree("lies", n))


def _none_passes(found: verdicts.HeadTable, query: str, key: str) -> str:
    """No head passes: how many fail which half of the test, with no head named."""
    even, other = found.above_even, found.above_other
    text = say("table.none", heads=found.heads, query=query, keyword=key)
    if not even and not other:
        return text + say("table.none.neither")
    if even and other:
        return text + say("table.none.both", found, even=_lie(even), keyword=key)
    if even:
        return text + say("table.none.even", even=_lie(even), keyword=key)
    return text + say("table.none.other", other=_lie(other), keyword=key)


def describe(scores: pd.DataFrame, query: str, key: str) -> str:
    """What the per-head table shows: the heads that pass (`passing_heads`) with their numbers,
    or that none does; how many heads put clearly less than an even spread; and, for the first
    head that passes, what the same key words draw from the average query."""
    found = verdicts.head_table(scores)
    if found.passing:
        verdict = say(
            "table.passing",
            heads=found.heads,
            count=len(found.passing),
            puts=agree("puts", len(found.passing)),
            query=query,
            keyword=key,
            named="; ".join(say("table.head", h) for h in found.passing),
        )
    else:
        verdict = _none_passes(found, query, key)
    after = ""
    if found.below:
        below = say(
            "table.below",
            heads=plural(found.below, "head"),
            puts=agree("puts", found.below),
        )
        after += " " + below
    if found.passing:
        after += " " + say("table.control", found.passing[0], query=query)
    return say("table", found, finding=verdict, after=after)


def describe_drawn(drawn: DrawnHeads, case: Example) -> str:
    """The line under Figure 3 or 4: the drawn case, named by a head only when that head passes
    the test; with none passing, the figure's heads are the last layer's, and the weight is
    their mean."""
    found = verdicts.drawn(drawn, case)
    if found.head is not None:
        beside = (
            say("drawn.beside", others=plural(found.others, "head"))
            if found.others
            else ""
        )
        return say("drawn.passing", found, beside=beside)
    which = (
        say("drawn.every_head")
        if len(found.heads) > 2
        else say("drawn.heads", heads=" and ".join(map(str, found.heads)))
    )
    return say("drawn.none", found, which=which)


def describe_samples(
    captions: int, with_pronoun: int, samples: dict[str, PairSamples]
) -> str:
    """How many captions the two heuristics find pairs in."""
    found = verdicts.samples(captions, with_pronoun, samples)
    return say("samples", found, holds=agree("holds", found.with_pronoun))


def describe_layers(heads: pd.DataFrame, even_bits: float) -> str:
    """Figure 5's point, read off the per-head table: do a layer's heads spread differently?"""
    found = verdicts.layers(heads, even_bits)
    text = say(
        "layers", found, spreads=" ".join(say("layers.one", s) for s in found.spreads)
    )
    if not found.apart:
        return text + " " + say("layers.none_apart", apart_se=APART_SE)
    if len(found.apart) == found.layers:
        where = say("layers.every")
    else:
        where = say(
            "layers.some.many" if len(found.apart) > 1 else "layers.some.one",
            apart=", ".join(map(str, found.apart)),
        )
    return text + " " + say("layers.apart", where=where, apart_se=APART_SE)


def describe_exports(
    bleu: Mapping, same: int, captions: int, sizes: Mapping, served: str, split: str
) -> str:
    """The int8 export against the float32 one on `captions` captions of `split` (validation:
    the comparison chooses what the page serves): BLEU with the interval, and which one the page
    serves (int8 only when its BLEU lies inside float32's interval)."""
    found = verdicts.exports(bleu, same, captions, sizes, served, split)
    where = say("exports.inside" if found.inside else "exports.outside")
    return say("exports", found, where=where)


def describe_greedy_paths(paths: GreedyPaths) -> str:
    """The float32 export's greedy score beside chapter 05's greedy decoding of the same model
    and captions (`exports.compare_greedy`), and why they differ, from the counts."""
    found = verdicts.greedy(paths)
    text = say("greedy", paths)
    if not paths.differ:
        return text + " " + say("greedy.same")
    why = []
    if found.unfinished:
        why.append(
            say(
                "greedy.unfinished",
                unfinished=found.unfinished,
                stops=agree("stops", found.unfinished),
            )
        )
    rest = found.rest
    if rest:
        if found.unfinished:
            subject = say(
                "greedy.the_other_one" if rest == 1 else "greedy.the_other", rest=rest
            )
        else:
            subject = say("greedy.it" if rest == 1 else "greedy.all")
        they_part = say("greedy.it_parts" if rest == 1 else "greedy.they_part")
        why.append(say("greedy.near_tie", subject=subject, they_part=they_part))
    differ = say(
        "greedy.differ",
        paths,
        differs=agree("differs", paths.differ),
        reasons="; ".join(why),
    )
    return text + " " + differ


def describe_gpu_book(record: AttentionFiguresRecord | None, profile_name: str) -> str:
    """The `gpu` model's heads (end of section 8.7): the committed `gpu` book's chapter 08
    (`record.committed_gpu`), or where it will appear."""
    if profile_name == "gpu":
        return say("gpu.this")
    if record is None:
        return say("gpu.missing")
    lines = [_findings_line(record, name) for name in PHENOMENON_WORDS]
    return say("gpu.found", lines=" ".join(lines))


def _findings_line(record: AttentionFiguresRecord, name: str) -> str:
    """One phenomenon over the test captions, the heads named from `passing_heads` only."""
    query, key = PHENOMENON_WORDS[name]
    held = record.findings[name]
    found = verdicts.heads_found(held.sentences, held.heads)
    if not found.passing:
        return say("finding.none", found, query=query, keyword=key)
    return say(
        "finding.passing",
        found,
        count=len(found.passing),
        puts=agree("puts", len(found.passing)),
        query=query,
        keyword=key,
        named="; ".join(say("finding.head", h) for h in found.passing),
    )


def closing(record: AttentionFiguresRecord) -> str:
    """Chapter 08's "What this run shows", from its results record as `record.read` returns
    it: one line per finding, every head named from `passing_heads`."""
    r = record
    lines = [_findings_line(r, name) for name in PHENOMENON_WORDS]
    spread = verdicts.spread(r.encoder_heads_test)
    point = say("spread.holds" if spread.apart else "spread.missing")
    lines.append(say("spread", spread, point=point))
    lines.append(say("share", r.figure3_share_on_more_difficult))
    live = r.onnx_int8
    sizes = {"float32": r.onnx_model_bytes, "int8": live.bytes}
    lines.append(
        describe_exports(
            live.bleu,
            live.same_translations,
            live.captions,
            sizes,
            live.served,
            live.split,
        )
    )
    if r.greedy_paths:
        lines.append(describe_greedy_paths(r.greedy_paths))
    return "\n".join(f"- {line}" for line in lines)
