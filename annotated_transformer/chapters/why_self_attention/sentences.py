"""Chapter 03's sentences: Table 1's claims as one run measured them, in words.

Each function reads plain numbers (the chapter passes what it just computed; `closing` passes
the results record read back), so the page's sentences and its closing section say the same
thing. A verdict is said only when the numbers hold it: a time exponent is reported beside
Table 1's, and an ordering ("grows faster with the length") is claimed only when the measured
exponents are in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The share of test sentences shorter than d_model that the chapter requires of every corpus.
MOST_SENTENCES = 0.99
LAYER_NAMES = {
    "self-attention": "self-attention",
    "recurrent": "the recurrent layer",
    "convolutional": "the convolution",
}


def _slope(slopes: Mapping, kind: str, column: str) -> str:
    return f"{slopes[kind][column]:.2f}"


def describe_slopes(
    where: str, slopes: Mapping[str, Mapping[str, float]], attention_memory_last=None
) -> str:
    """The fitted exponents of time against n and d beside Table 1's, and of self-attention's
    memory against n (`attention_memory_last`: between the two longest lengths, when given).
    `slopes`: {kind: {"time_vs_n", "time_vs_d", "memory_vs_n", ...}}, as the record holds them."""
    s = slopes
    text = (
        f"Measured on {where}, the fitted exponents of time against n are "
        f"{_slope(s, 'self-attention', 'time_vs_n')} for self-attention (Table 1: 2), "
        f"{_slope(s, 'recurrent', 'time_vs_n')} for the recurrent layer (1) and "
        f"{_slope(s, 'convolutional', 'time_vs_n')} for the convolution (1); against d "
        f"they are {_slope(s, 'self-attention', 'time_vs_d')} (1), "
        f"{_slope(s, 'recurrent', 'time_vs_d')} (2) and "
        f"{_slope(s, 'convolutional', 'time_vs_d')} (2). The memory that self-attention "
        "keeps for its backward pass grows with exponent "
        f"{_slope(s, 'self-attention', 'memory_vs_n')} over the larger half of the lengths"
    )
    if attention_memory_last is None:
        return text + "."
    return text + f" and {attention_memory_last:.2f} between the two longest."


def _others(kinds: Sequence[str]) -> str:
    names = [LAYER_NAMES.get(k, k) for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def slope_verdict(slopes: Mapping[str, Mapping[str, float]]) -> str:
    """Whether the measured exponents are ordered as Table 1's: self-attention's time growing
    faster with n than the other layers', theirs faster with d than self-attention's."""
    others = [k for k in slopes if k != "self-attention"]
    attention = slopes["self-attention"]
    slower_in_n = [k for k in others if slopes[k]["time_vs_n"] >= attention["time_vs_n"]]
    faster_in_d = [k for k in others if slopes[k]["time_vs_d"] <= attention["time_vs_d"]]
    if not slower_in_n and not faster_in_d:
        return (
            "As Table 1 says, self-attention's time grows faster with the length than the "
            "other layers', and theirs faster with the width."
        )
    parts = []
    if slower_in_n:
        parts.append(
            f"self-attention's time growing faster with the length than that of "
            f"{_others(slower_in_n)}"
        )
    if faster_in_d:
        parts.append(
            f"the time of {_others(faster_in_d)} growing faster with the width than "
            "self-attention's"
        )
    return f"This run does not show {' or '.join(parts)}, as Table 1 has it."


def describe_crossover(
    where: str, batch: int, d: int, crossover_n, ns: Sequence[int]
) -> str:
    """Where self-attention's mixing step stops being faster than a recurrent layer's, measured
    at the lengths `ns`, against n = d in FLOPs. `crossover_n`: the length `table1.crossover`
    found, or None (or the record's "above N") when attention stays faster up to the longest;
    a crossover at the shortest length means attention was never the faster."""
    if crossover_n is None or isinstance(crossover_n, str):
        measured = (
            "self-attention's mixing step is the faster at every length measured, up to "
            f"{max(ns):,}"
        )
    elif crossover_n <= min(ns):
        measured = (
            "self-attention's mixing step is the slower already at the shortest length "
            f"measured, {min(ns):,}"
        )
    else:
        measured = f"the mixing steps take the same time at n = {crossover_n:,.0f}"
    return f"On {where}, with batch {batch}, {measured}, against $n = d = {d}$ in FLOPs."


def describe_lstm(
    lstm_crossover: int, d: int, lstm_per_position: float | None = None
) -> str:
    """Up to which length a full attention sub-layer (projections included) costs fewer FLOPs
    than an LSTM; `lstm_per_position`, when given, is the LSTM's FLOPs per position."""
    cost = (
        f"An LSTM costs ${lstm_per_position / d**2:.0f} d^2$ FLOPs per position, and the "
        if lstm_per_position is not None
        else "The "
    )
    twice = f" ($2d$ at $d = {d}$)" if lstm_crossover == 2 * d else ""
    return (
        f"{cost}full attention sub-layer, projections included, is cheaper in FLOPs than "
        f"an LSTM for every n below {lstm_crossover:,}{twice}."
    )


def _share(x: float) -> str:
    return f"{100 * x:.2f}%".replace(".00%", "%")


def describe_sentence_lengths(rows: Sequence[Mapping], d_model: int) -> str:
    """Whether real sentences satisfy n < d: per corpus and language (`rows`: corpus,
    sentences, median, longest, share_below_d), against `MOST_SENTENCES`."""
    short = [r for r in rows if r["share_below_d"] > MOST_SENTENCES]
    long = [r for r in rows if r["share_below_d"] <= MOST_SENTENCES]
    longest = max(rows, key=lambda r: r["longest"])
    if not long:
        least = min(r["share_below_d"] for r in rows)
        how_many = "every sentence is" if least == 1 else f"{_share(least)} or more are"
        return (
            f"Real sentences satisfy n < d: in each of the {len(rows)} test sets "
            f"{how_many} shorter than $d_\\text{{model}} = {d_model}$ subwords (the "
            f"longest, in {longest['corpus']}, has {longest['longest']:,})."
        )
    failing = "; ".join(f"{r['corpus']}: {_share(r['share_below_d'])}" for r in long)
    text = (
        f"Not every test set satisfies n < d: in {len(long)} of {len(rows)}, no more than "
        f"{_share(MOST_SENTENCES)} of the sentences are shorter than "
        f"$d_\\text{{model}} = {d_model}$ subwords ({failing})"
    )
    if short:
        text += f"; in {_others([r['corpus'] for r in short])} more are"
    return text + "."


def describe_paths(max_path_length: Mapping[str, Mapping], kernel_size: int) -> str:
    """The maximum path lengths at the longest n computed, kind by kind (`max_path_length`:
    {kind: {n: length}}, n as a number or, read back from JSON, as text)."""
    kinds = list(max_path_length)
    lengths = {k: {int(n): v for n, v in max_path_length[k].items()} for k in kinds}
    n = max(max(v) for v in lengths.values())
    listed = ", ".join(f"{lengths[k][n]:,} for {k}" for k in kinds if n in lengths[k])
    return (
        f"Counted on the graphs of positions at n = {n:,} (k = r = {kernel_size}), the "
        f"maximum path length is {listed}."
    )


def closing(record: Mapping) -> str:
    """The chapter's closing section, "What this run shows", from its results record as
    `record.read` returns it: the time exponents beside Table 1's and whether they are in its
    order, the path lengths, the crossover length, and whether real sentences satisfy n < d."""
    m = record["metrics"]
    crossover = m["sizes"]["crossover"]
    lines = [
        describe_slopes(m["device_name"], m["slopes"]),
        slope_verdict(m["slopes"]),
        describe_paths(m["max_path_length"], m["kernel_size"]),
        describe_crossover(
            m["device_name"],
            crossover["batch"],
            m["crossover_d"],
            m["crossover_n"],
            crossover["ns"],
        ),
        describe_lstm(m["lstm_crossover_n_flops_with_projections"], m["crossover_d"]),
        describe_sentence_lengths(m["sentence_lengths"], m.get("d_model", 512)),
    ]
    return "\n".join(f"- {line}" for line in lines)
