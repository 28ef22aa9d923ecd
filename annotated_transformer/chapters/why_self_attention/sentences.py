"""Chapter 03's sentences: its verdicts (`verdicts`) said with its phrase table (`phrases`).

Each function reads plain values (the chapter passes what it just computed, in the record's
types; `closing` passes the results record read back), so the page's sentences and its closing
section say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..wording import listed
from . import verdicts
from .phrases import say
from .record import SentenceLengths, Slopes, WhySelfAttentionRecord


def _share(x: float) -> str:
    """A share as a percentage to two decimals, whole ones without them: "95%", "99.37%"."""
    return f"{100 * x:.2f}%".replace(".00%", "%")


def _layers(kinds: Sequence[str]) -> str:
    return listed([say(f"layer.{k}") if f"layer.{k}" in say.table else k for k in kinds])


def describe_slopes(
    where: str, slopes: Mapping[str, Slopes], attention_memory_last: float | None = None
) -> str:
    """The fitted exponents of time against n and d beside Table 1's, and of self-attention's
    memory against n (`attention_memory_last`: between the two longest lengths, when given)."""
    found = verdicts.exponents(where, slopes, attention_memory_last)
    return say("exponents" if attention_memory_last is None else "exponents.last", found)


def describe_slope_order(slopes: Mapping[str, Slopes]) -> str:
    """Whether the measured exponents are ordered as Table 1's."""
    found = verdicts.slope_order(slopes)
    if found.holds:
        return say("order.holds")
    parts = []
    if found.slower_in_n:
        parts.append(say("order.n", layers=_layers(found.slower_in_n)))
    if found.faster_in_d:
        parts.append(say("order.d", layers=_layers(found.faster_in_d)))
    return say("order.missed", parts=" or ".join(parts))


def describe_crossover(
    where: str, batch: int, d: int, crossover_n: float | str | None, ns: Sequence[int]
) -> str:
    """Where self-attention's mixing step stops being faster than a recurrent layer's, measured
    at the lengths `ns`, against n = d in FLOPs (`verdicts.crossover`)."""
    found = verdicts.crossover(where, batch, d, crossover_n, ns)
    return say("crossover", found, measured=say(f"crossover.{found.found}", found))


def describe_lstm(
    lstm_crossover: int, d: int, lstm_per_position: float | None = None
) -> str:
    """Up to which length a full attention sub-layer (projections included) costs fewer FLOPs
    than an LSTM; `lstm_per_position`, when given, is the LSTM's FLOPs per position."""
    found = verdicts.lstm(lstm_crossover, d, lstm_per_position)
    twice = f" {say('lstm.twice', found)}" if found.twice else ""
    return say(
        "lstm" if found.per_position_d2 is None else "lstm.cost", found, twice=twice
    )


def describe_sentence_lengths(rows: Sequence[SentenceLengths], d_model: int) -> str:
    """Whether real sentences satisfy n < d, per corpus and language, against
    `verdicts.MOST_SENTENCES`."""
    found = verdicts.sentence_lengths(rows, d_model)
    if found.every_set:
        how_many = (
            say("lengths.every_sentence")
            if found.least == 1
            else say("lengths.or_more", least=_share(found.least))
        )
        return say("lengths.every_set", found, how_many=how_many)
    failing = "; ".join(
        say("lengths.failing", corpus=corpus, share=_share(share))
        for corpus, share in found.long
    )
    return say(
        "lengths.not_every_set_others" if found.short else "lengths.not_every_set",
        found,
        failing_sets=len(found.long),
        most=_share(found.most),
        failing=failing,
        others=listed(found.short),
    )


def describe_paths(
    max_path_length: Mapping[str, Mapping[int, int]], kernel_size: int
) -> str:
    """The maximum path lengths at the longest n computed, kind by kind (`max_path_length`:
    {kind: {n: length}})."""
    found = verdicts.path_lengths(max_path_length, kernel_size)
    lengths = ", ".join(say("paths.kind", kind=k, length=v) for k, v in found.lengths)
    return say("paths", found, lengths=lengths)


def closing(record: WhySelfAttentionRecord) -> str:
    """The chapter's closing section, "What this run shows", from its record as `record.read`
    returns it: the time exponents beside Table 1's and whether they are in its order, the path
    lengths, the crossover length, and whether real sentences satisfy n < d."""
    r = record
    crossover = r.sizes.crossover
    lines = [
        describe_slopes(r.device_name, r.slopes),
        describe_slope_order(r.slopes),
        describe_paths(r.max_path_length, r.kernel_size),
        describe_crossover(
            r.device_name, crossover.batch, r.crossover_d, r.crossover_n, crossover.ns
        ),
        describe_lstm(r.lstm_crossover_n_flops_with_projections, r.crossover_d),
        describe_sentence_lengths(r.sentence_lengths, r.d_model),
    ]
    return "\n".join(f"- {line}" for line in lines)
