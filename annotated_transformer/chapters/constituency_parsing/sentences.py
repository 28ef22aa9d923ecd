"""Chapter 07's sentences, generated from the numbers a run records.

Every sentence of the chapter that depends on a number is written here, from plain values or the
package's records (`paired_f1_bootstrap` comparisons, `source_dependence`, `ShareRun`, the extended
run's ``curves.json`` and ``test.json``), so that a test can change the numbers and see the words
change. The two linearizations keep one name each: the *tags parser* writes each word's
part-of-speech tag in its slot, as the authors' code does; the *XX variant* writes ``XX``, as
Vinyals et al. did.

A margin is called a gain or a loss only when its 95% paired bootstrap interval excludes zero; when
the interval includes zero the sentence says the two cannot be told apart on these sentences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..wording import gap

TAGS_PARSER = "the tags parser"
XX_VARIANT = "the XX variant"
TAGS_WHAT = "part-of-speech tags in the word slots, as the authors' code writes them"
XX_WHAT = "`XX` in every word slot, the linearization of Vinyals et al."
SHARE_WORDS = {1.0: "all", 0.5: "half", 0.25: "a quarter"}
# A parser "barely reads its sentence" when another sentence of the same length costs it less than
# this share of its loss.
READS_LITTLE = 0.25


def share_words(share: float) -> str:
    """'all', 'half', 'a quarter', else '0.3' (of the training files)."""
    return SHARE_WORDS.get(float(share), f"{share:g}")


def upper_first(text: str) -> str:
    """`text` with its first letter capitalized, the rest as it is ('The XX variant')."""
    return text[:1].upper() + text[1:]


def listed(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def interval(ci: Sequence[float], signed: bool = False) -> str:
    low, high = ci
    return f"[{low:+.1f}, {high:+.1f}]" if signed else f"[{low:.1f}, {high:.1f}]"


def beyond_noise(comparison: Mapping) -> bool:
    """Whether the margin's 95% paired bootstrap interval excludes zero."""
    low, high = comparison["difference_ci95"]
    return low > 0 or high < 0


def margin(comparison: Mapping, what: str) -> str:
    """The second parser of a `paired_f1_bootstrap` comparison against the first, `what`:
    '6.6 points above the flat floor (10.6), beyond the resampling noise (...)', or, when the
    interval includes zero, 'not distinguishable from ...'."""
    d, base = comparison["difference"], comparison["first"]["f1"]
    span = interval(comparison["difference_ci95"], signed=True)
    side = "above" if d > 0 else "below"
    # the margin between the two scores as the page prints them (the second's is beside it)
    shown = gap(comparison["second"]["f1"], base)
    if beyond_noise(comparison):
        return (
            f"{shown} points {side} {what} ({base:.1f}), beyond the resampling noise "
            f"(the margin's 95% interval, {span}, excludes zero)"
        )
    here = f"{shown} points {side}" if float(shown) > 0 else "level"
    return (
        f"not distinguishable from {what} ({base:.1f}): {here} on these sentences, within "
        f"the resampling noise (the margin's 95% interval, {span}, includes zero)"
    )


def p_value(comparison: Mapping) -> str:
    """'p = 0.004', or 'p < 0.001: no resample of 2,000 reversed it' when none did."""
    if comparison["p_value"] > 0:
        return f"p = {comparison['p_value']:.3f}"
    samples = comparison["samples"]
    return f"p < {1 / samples:.2g}: no resample of {samples:,} reversed it"


# ------------------------------------------------------------------------------- the chapter's plan
def describe_plan(
    profile: str, epochs: int, device: str, shares: Sequence[float], variant: bool = True
) -> str:
    """What the live run trains under a profile."""
    files = listed([share_words(s) for s in sorted(shares)])
    one = len(shares) == 1
    return (
        f"Under the `{profile}` profile {TAGS_PARSER} trains {epochs} epochs on {device}, on "
        f"{files} of the training files"
        + (" (one run)" if one else f" ({len(shares)} runs)")
        + (f", and {XX_VARIANT} trains beside it on all of them." if variant else ".")
    )


def describe_round_trip(
    trees: int, tokens_per_word: float, longest_tokens: int, longest_words: int
) -> str:
    return (
        f"`linearize` agrees with the hand-written walk on all {trees:,} trees, and every "
        "tree comes back unchanged from its line. A linearized tree has a median of "
        f"{tokens_per_word:.1f} symbols per word; the longest has {longest_tokens:,} symbols "
        f"for {longest_words:,} words."
    )


def describe_model(
    parameters: int,
    unspelled: Mapping[str, int],
    target_symbols: float,
    source_words: float,
) -> str:
    """The parser's size, and what its target vocabulary cannot spell."""
    missed = listed([f"{n} {split}" for split, n in unspelled.items()])
    spells = (
        "every dev and test tree too"
        if not any(unspelled.values())
        else f"all but {missed} trees (a label or tag that training never uses)"
    )
    return (
        f"The model has {parameters / 1e6:.2f}M parameters. The target vocabulary of the "
        f"training trees spells all of them and {spells}. A target averages "
        f"{target_symbols:.0f} symbols against {source_words:.0f} words for its source."
    )


# ----------------------------------------------------------------------------------- the live run
def best_point(curve: Sequence[Mapping], key: str = "epochs") -> tuple[float, float]:
    """(best F1, the epoch it came at; the first one on a tie)."""
    best = max(curve, key=lambda p: p["f1"])
    return best["f1"], best[key]


def describe_training(runs: Sequence, variant, seconds: float, workers: int) -> str:
    """The live runs (`ShareRun`s of the tags parser, and the XX variant's): time, steps, best F1."""
    full = max(runs, key=lambda r: r.share)
    f1, at = best_point(full.dev_f1)
    xx_f1, xx_at = best_point(variant.dev_f1)
    count = len(runs) + 1
    return (
        f"{count} runs of {full.epochs:g} epochs took {seconds:.0f} s on {workers} "
        f"process{'es' if workers > 1 else ''} ({full.precision}). On all the training trees "
        f"{TAGS_PARSER} trained {full.steps:,} steps in {full.seconds:.0f} s; its best dev F1 "
        f"is {f1:.1f}, after {at:g} epoch{'s' if at != 1 else ''}, against {xx_f1:.1f} for "
        f"{XX_VARIANT} (after {xx_at:g})."
    )


def reads_little(reads: Mapping) -> bool:
    gain = reads["nll_other_sentence"] - reads["nll_own_sentence"]
    return gain < READS_LITTLE * reads["nll_other_sentence"]


def sentence_share(reads: Mapping) -> float:
    """The share of the loss (%) that the parser's own sentence is worth."""
    other = reads["nll_other_sentence"]
    return 100 * (other - reads["nll_own_sentence"]) / other


def describe_source_dependence(reads: Mapping) -> str:
    gain = reads["nll_other_sentence"] - reads["nll_own_sentence"]
    verdict = (
        "the parser has learned what trees of a given length look like far better than where "
        "this sentence's phrases begin and end. Matching word slots to source words, which "
        "decides every bracket's span, is the part that needs more trees and more training."
        if reads_little(reads)
        else "the parser reads its sentence."
    )
    return (
        f"Loss per symbol with the tree's own sentence **{reads['nll_own_sentence']:.3f}**, "
        f"with another sentence of the same length **{reads['nll_other_sentence']:.3f}** "
        f"({reads['trees_with_another_sentence']} of {reads['trees']} dev trees got another "
        f"sentence). The sentence is worth {gain:.3f} nats per symbol, "
        f"{sentence_share(reads):.0f}% of the loss: {verdict}"
    )


# ------------------------------------------------------------------------------ the extended run
def scored_jobs(test: Mapping | None) -> dict[float, Mapping]:
    """The extended run's test records by share (`parsing_extended.score_test`'s file; {} for
    None)."""
    return {float(j["share"]): j for j in test["jobs"]} if test else {}


def extended_summary(document: Mapping, test: Mapping | None = None) -> list[dict]:
    """One row per share of the extended run (`parsing_extended.export`), smallest share first:
    trees, epochs, best dev F1 and its epoch, last dev F1, whether the run's rule stopped it, and
    its test record (`test`'s, None where that share is not scored)."""
    stopped = {float(k): v for k, v in document.get("stopped", {}).items()}
    scored = scored_jobs(test)
    rows = []
    for job in sorted(document["jobs"], key=lambda j: j["share"]):
        f1, at = best_point(job["curve"], key="epoch")
        rows.append(
            dict(
                share=job["share"],
                trees=job["train_trees"],
                epochs=len(job["curve"]),
                best=f1,
                at=at,
                last=job["curve"][-1]["f1"],
                stopped=bool(stopped.get(float(job["share"]), False)),
                test=scored.get(float(job["share"])),
            )
        )
    return rows


def points_per_doubling(rows: Sequence[Mapping]) -> float | None:
    """Best dev F1 gained per doubling of the training trees, from the smallest share to the
    largest (None with fewer than two sizes)."""
    if len(rows) < 2 or rows[-1]["trees"] <= rows[0]["trees"]:
        return None
    return (rows[-1]["best"] - rows[0]["best"]) / math.log2(
        rows[-1]["trees"] / rows[0]["trees"]
    )


def describe_extended(
    document: Mapping,
    paper_f1: float,
    paper_trees: int,
    lead: str = "Best dev F1 of the extended run",
) -> str:
    """Best dev F1 per share, whether it has stopped rising, and where the paper's F1 lies."""
    rows = extended_summary(document)
    each = "; ".join(
        f"with {share_words(r['share'])} of the files ({r['trees']:,} trees) "
        f"{r['best']:.1f}, at epoch {r['at']} of {r['epochs']}"
        for r in rows
    )
    rule = f"no new best for {document.get('patience', 0.2):.0%} of its epochs"
    running = [r for r in rows if not r["stopped"]]
    if not running:
        state = f"Every share has stopped rising by the run's rule ({rule})."
    elif len(running) == len(rows):
        state = (
            f"No share has stopped rising yet by the run's rule ({rule}): these bests are "
            "lower bounds of what the recipe reaches."
        )
    else:
        names = listed([share_words(r["share"]) for r in running])
        state = (
            f"The jobs on {names} of the files have not stopped rising yet by the run's rule "
            f"({rule}): their bests are lower bounds."
        )
    top = rows[-1]
    rate = points_per_doubling(rows)
    where = (
        f"The paper's {paper_f1}, a test F1 on other sentences (WSJ section 23), lies "
        f"{gap(paper_f1, top['best'])} points above the best"
    )
    if running:
        # A rate per doubling from bests that are still rising would be read as a forecast.
        where += ", a best that is still rising"
    elif rate is not None and rate > 0 and paper_trees > top["trees"]:
        doublings = math.log2(paper_trees / top["trees"])
        where += (
            f". From the smallest share to all the files each doubling of the trees added "
            f"about {rate:.1f} points; at that rate the {doublings:.1f} doublings from "
            f"{top['trees']:,} to the paper's {paper_trees:,} trees would add some "
            f"{rate * doublings:.0f}, so more trees alone do not close the gap: the paper's "
            "model is also far larger and trained far longer"
        )
    elif rate is not None:
        where += ". More trees did not raise the best dev F1 here"
    return f"{lead}: {each}. {state} {where}."


SCORE_TEST_COMMAND = (
    "python -m annotated_transformer parser-curve --out runs/parser-extended --score-test"
)


def search_words(beam_size: int) -> str:
    return "greedy decoding" if beam_size == 1 else f"beam {beam_size}"


def chosen_words(job: Mapping) -> str:
    """Which model and search dev chose for a share (`score_test`'s record): 'the average of its
    snapshots of epochs 58 to 60 with beam 21' or 'its model of epoch 60 with greedy decoding'."""
    chosen = job["chosen_on_dev"]
    epochs = job["snapshots"][chosen["snapshot"]]["epochs"]
    model = (
        f"the average of its snapshots of epochs {epochs[0]} to {epochs[-1]}"
        if len(epochs) > 1
        else f"its model of epoch {epochs[-1]}"
    )
    return f"{model} with {search_words(chosen['beam_size'])}"


def describe_extended_test(
    test: Mapping | None,
    paper_f1: float,
    paper_trees: int,
    shares: Sequence[float] = (),
) -> str:
    """The extended run on the test sentences (`parsing_extended.score_test`'s file), largest
    share first: what dev chose among its two models and two searches, the test F1 with its
    interval (all sentences, and those of at most 40 words), the margin over the right-branching
    floor, and the paper's F1 against the largest share's; `shares` (the run's) not in the file
    are named as not scored yet. Says so plainly when there is no file."""
    if not test or not test.get("jobs"):
        return (
            "The extended run has not been scored on the test sentences yet. Once a share's job "
            "has stopped, `parser-curve --score-test` chooses on the dev trees between its best "
            f"epoch's model and the average of its snapshots up to it, and between greedy "
            f"decoding and beam 21, then parses the test sentences once with the choice "
            f"(`{SCORE_TEST_COMMAND}`); this page shows the score here."
        )
    jobs = sorted(test["jobs"], key=lambda j: -j["share"])
    parts = []
    for job in jobs:
        t, chosen = job["test"], job["chosen_on_dev"]
        others = [
            s["f1"]
            for snapshot, searches in job["dev"].items()
            for search, s in searches.items()
            if (snapshot, search) != (chosen["snapshot"], chosen["search"])
        ]
        low, high = t["f1_ci95"]
        over = job["against_floors"][job["right_branching_floor"]]
        parts.append(
            f"With {share_words(job['share'])} of the files ({job['train_trees']:,} trees, "
            f"{job['epochs_trained']} epochs) dev chose {chosen_words(job)} (dev F1 "
            f"{chosen['dev_f1']:.1f}, against {min(others):.1f} to {max(others):.1f} for the "
            f"other {len(others)} candidates); on the {t['sentences']} test sentences it scores "
            f"**{t['f1']:.1f} F1** (95% interval [{low:.1f}, {high:.1f}]), {t['f1_le40']:.1f} "
            f"on the {t['sentences_le40']} of at most 40 words: "
            f"{margin(over, 'the right-branching floor')}."
        )
    top = jobs[0]
    parts.append(
        f"The paper's {paper_f1} (WSJ section 23, about {paper_trees:,} training trees, "
        f"{paper_trees / top['train_trees']:.0f} times the {top['train_trees']:,} here) lies "
        f"{gap(paper_f1, top['test']['f1'])} points above the test F1 with "
        f"{share_words(top['share'])} of the files."
    )
    missing = [
        s for s in sorted(shares, reverse=True) if float(s) not in scored_jobs(test)
    ]
    if missing:
        names = listed([share_words(s) for s in missing])
        jobs_are = "The jobs on" if len(missing) > 1 else "The job on"
        parts.append(
            f"{jobs_are} {names} of the files {'are' if len(missing) > 1 else 'is'} not "
            "scored on test yet (`parser-curve --score-test` scores a share once its job has "
            "stopped)."
        )
    return "Scored once on the test sentences. " + " ".join(parts)


# ------------------------------------------------------------------------------------- the search
def search_profile(run, sentences: int | None = None) -> dict:
    """What a `ParseRun` writes: its name, beam, symbols and counted brackets a sentence, and its
    commonest root with the share of trees it roots."""
    import collections

    n = len(run.parses)
    root, count = collections.Counter(p.tree.label() for p in run.parses).most_common(1)[
        0
    ]
    return dict(
        name=run.name,
        beam_size=run.beam_size,
        symbols=sum(len(x.split()) for x in run.lines) / n,
        brackets=run.score.test / n,
        root=root,
        root_share=100 * count / n,
    )


def gold_profile(trees: Sequence, symbols: Sequence[int], brackets: int) -> dict:
    """The same numbers for the gold trees (`symbols`: each tree's linearized length)."""
    import collections

    n = len(trees)
    root, count = collections.Counter(t.label() for t in trees).most_common(1)[0]
    return dict(
        symbols=sum(symbols) / n,
        brackets=brackets / n,
        root=root,
        root_share=100 * count / n,
    )


def describe_searches(profiles: Sequence[Mapping], gold: Mapping) -> str:
    """What each search writes on the dev sentences, beside the gold trees; why a beam that writes
    short trees does."""
    each = "; ".join(
        f"{p['name']} writes {p['symbols']:.0f} symbols and {p['brackets']:.1f} counted brackets "
        f"a sentence, {p['root_share']:.0f}% of its trees rooted in {p['root']}"
        for p in profiles
    )
    text = (
        f"On the dev sentences {each}. The gold trees have {gold['symbols']:.0f} symbols and "
        f"{gold['brackets']:.1f} counted brackets a sentence, {gold['root_share']:.0f}% "
        f"rooted in {gold['root']}."
    )
    shortest = min(profiles, key=lambda p: p["symbols"])
    if shortest["beam_size"] > 1 and shortest["symbols"] < gold["symbols"]:
        text += (
            f" {upper_first(shortest['name'])} writes the shortest trees: a search that ranks "
            "whole outputs by their log-probability (alpha 0.3 barely offsets length) favours "
            "trees with few brackets, each of which costs probability."
        )
    return text


def describe_test(
    headline: Mapping,
    chosen: str,
    sentences: int,
    over_floor: Mapping,
    floor: str,
    unconstrained: Mapping,
    gold_symbols: float,
    cutoff: int = 40,
) -> str:
    """The test F1 of the chosen search, against the better floor, and the unconstrained beam."""
    return (
        f"On all {sentences} test sentences {TAGS_PARSER} scores **{headline['f1']:.1f} F1** "
        f"({chosen}), and {headline['f1_le40']:.1f} on the {headline['sentences_le40']} "
        f"sentences of at most {cutoff} words: {margin(over_floor, floor)}. Without the "
        f"constraint the paper's beam leaves {unconstrained['invalid']} of {sentences} outputs "
        f"that are no tree ({unconstrained['f1']:.1f} F1 after repair); its outputs average "
        f"{unconstrained['symbols_per_output']:.0f} symbols against {gold_symbols:.0f} for the "
        "gold trees."
    )


# ------------------------------------------------------------------------------------ the variant
def describe_variant(
    versus: Mapping, chosen: str, reads: Mapping, xx_reads: Mapping
) -> str:
    """The XX variant against the tags parser (`versus`: first the tags parser, second XX), and
    which of them reads its sentence."""
    tags_share, xx_share = sentence_share(reads), sentence_share(xx_reads)
    text = (
        f"On the {versus['sentences']} test sentences {XX_VARIANT} scores "
        f"**{versus['second']['f1']:.1f} F1** ({chosen}, chosen on dev): "
        f"{margin(versus, TAGS_PARSER)}, {p_value(versus)}. Another sentence of the same "
        f"length costs {XX_VARIANT} {xx_share:.0f}% of its loss, against {tags_share:.0f}% "
        f"for {TAGS_PARSER}: "
    )
    if tags_share > 2 * xx_share and beyond_noise(versus) and versus["difference"] < 0:
        return (
            text + "the tags make the parser read its sentence, and the brackets follow."
        )
    if tags_share > 2 * xx_share:
        return text + (
            "the tags make the parser read its sentence more, but its brackets are not "
            "measurably better for it on these sentences."
        )
    return text + "the tags alone do not make the parser read its sentence much more."


# ------------------------------------------------------------------------------ what the run shows
PAPER_TRAINING_TREES = 40_000  # "about 40K training sentences" of the WSJ (section 6.3)


def paper_model() -> str:
    """The paper's parser in words: 'a 4-layer model with d_model 1024'."""
    from ...model.config import preset

    paper = preset("parsing")
    return f"a {paper.n_layers}-layer model with d_model {paper.d_model}"


def describe_extended_closing(rows: Sequence[Mapping], paper_f1: float) -> str:
    """The extended run in one bullet (`record`'s ``extended_run`` rows): the largest share's best
    dev F1, whether its rule stopped it, and its test F1 once scored, against the paper's."""
    top = max(rows, key=lambda r: r["share"])
    state = (
        "its rule has stopped it"
        if top["stopped"]
        else "it is still rising by its rule, so that best is a lower bound"
    )
    text = (
        f"- **The extended run** ({TAGS_PARSER} trained until dev F1 stops rising, section 7.4): "
        f"with {share_words(top['share'])} of the files ({top['trees']:,} trees) its best dev "
        f"F1 is {top['best']:.1f}, at epoch {top['at']} of {top['epochs']}; {state}. "
    )
    if "test_f1" not in top:
        return text + (
            f"It has not been scored on the test sentences yet (`{SCORE_TEST_COMMAND}`)."
        )
    low, high = top["test_f1_ci95"]
    return text + (
        "Scored once on the test sentences with the model and search the development trees "
        f"chose, it reaches **{top['test_f1']:.1f} F1** (95% interval [{low:.1f}, "
        f"{high:.1f}]), {gap(paper_f1, top['test_f1'])} points below the paper's {paper_f1}."
    )


def closing(record: Mapping) -> str:
    """'What this run shows', as a list of short paragraphs in Markdown, from the chapter's record
    as read back (`record.read`): the tags parser's test F1 at the search chosen on the
    development trees, with its interval and its margins over the two floors; the paper; the XX
    variant against the tags parser; and the committed extended run, in one bullet, where the
    record holds one. The decoding it names is the one chosen on dev, whichever scored highest on
    test, and a margin is called a gain only beyond the resampling noise."""
    m = record["metrics"]
    floors = m["against_floors"]
    right = m.get("right_branching_floor") or next(
        name for name in floors if name.startswith("right-branching")
    )
    flat = next(name for name in floors if name.startswith("flat"))
    f1, (low, high), paper_f1 = m["f1"], m["f1_ci95"], m["paper_f1"]
    curves = m["learning_curve"]
    epochs = curves[max(curves, key=float)]["epochs"]
    versus = m["variant_xx"]["against_tags"]
    parts = [
        f"- **{upper_first(TAGS_PARSER)}** ({TAGS_WHAT}) scores **{f1:.1f} F1** on the "
        f"{m['test_sentences']} test sentences; resampling the sentences puts it between "
        f"{low:.1f} and {high:.1f} (95% bootstrap interval). It is "
        f"{margin(floors[right], 'the right-branching floor')}, and "
        f"{margin(floors[flat], 'the flat floor')}.",
        f"- **Against the paper.** The paper reports {paper_f1} on WSJ section 23 with about "
        f"{PAPER_TRAINING_TREES:,} training trees and {paper_model()}. This parser, "
        f"{m['params_m']:.1f}M parameters trained {epochs:g} epochs on {m['train_trees']:,} "
        f"trees, is {gap(paper_f1, f1)} points below it"
        + (
            f", and even the top of its interval ({high:.1f}) is far from it."
            if high < paper_f1
            else "."
        )
        + (
            " By the test of section 7.4 it barely reads its sentence yet."
            if reads_little(m["source_dependence"])
            else ""
        ),
        f"- **{upper_first(XX_VARIANT)}** ({XX_WHAT}) scores {versus['second']['f1']:.1f} F1 on "
        f"the same sentences: {margin(versus, TAGS_PARSER)}; paired bootstrap "
        f"{p_value(versus)}.",
    ]
    if m.get("extended_run"):
        parts.append(describe_extended_closing(m["extended_run"], paper_f1))
    return "\n".join(parts)
