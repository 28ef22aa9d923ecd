"""How chapter 07 says what it found: one template a verdict (`verdicts`), the words around them,
and the chapter's few words for a share of the files, a search and an interval.

The two linearizations keep one name each: *the tags parser* writes each word's part-of-speech
tag in its slot, as the authors' code does; *the XX variant* writes ``XX``, as Vinyals et al. did.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..wording import Phrases

XX_VARIANT = "the XX variant"  # as the report's tables name it
SHARE_WORDS = {1.0: "all", 0.5: "half", 0.25: "a quarter"}
SCORE_TEST_COMMAND = (
    "python -m annotated_transformer parser-curve --out runs/parser-extended --score-test"
)


def share_words(share: float) -> str:
    """'all', 'half', 'a quarter', else '0.3' (of the training files)."""
    return SHARE_WORDS.get(float(share), f"{share:g}")


def search_words(beam_size: int) -> str:
    """'greedy decoding' or 'beam 21'."""
    return "greedy decoding" if beam_size == 1 else f"beam {beam_size}"


def interval(ci: Sequence[float]) -> str:
    """'[47.2, 54.2]'."""
    low, high = ci
    return f"[{low:.1f}, {high:.1f}]"


say = Phrases(
    {
        # a paired bootstrap's margin (verdicts.Margin), of the second parser against `what`
        "margin.beyond": """{points:.1f} points {side} {what} ({base:.1f}), beyond the
            resampling noise (the margin's 95% interval, [{low:+.1f}, {high:+.1f}], excludes
            zero)""",
        "margin.within": """not distinguishable from {what} ({base:.1f}): {here} on these
            sentences, within the resampling noise (the margin's 95% interval, [{low:+.1f},
            {high:+.1f}], includes zero)""",
        "margin.apart": "{points:.1f} points {side}",
        "margin.level": "level",
        "side.above": "above",
        "side.below": "below",
        "p.value": "p = {p_value:.3f}",
        "p.none_reversed": "p < {bound:.2g}: no resample of {samples:,} reversed it",
        # the chapter's plan
        "plan": """Under the `{profile}` profile the tags parser trains {epochs} epochs on
            {device}, on {files} of the training files ({runs}){ending}""",
        "plan.one_run": "one run",
        "plan.runs": "{runs} runs",
        "plan.with_variant": ", and the XX variant trains beside it on all of them.",
        "plan.alone": ".",
        "round_trip": """`linearize` agrees with the hand-written walk on all {trees:,} trees,
            and every tree comes back unchanged from its line. A linearized tree has a median of
            {tokens_per_word:.1f} symbols per word; the longest has {longest_tokens:,} symbols
            for {longest_words:,} words.""",
        "model": """The model has {parameters_m:.2f}M parameters. The target vocabulary of the
            training trees writes all of them and {writes}. A target averages
            {target_symbols:.0f} symbols against {source_words:.0f} words for its source.""",
        "model.writes_all": "every dev and test tree too",
        "model.misses": """all but {missed} trees (a label or tag that training never
            uses)""",
        "model.missed": "{n} {split}",
        # the live runs
        "training": """{runs} runs of {epochs:g} epochs took {seconds:.0f} s on {processes}
            ({precision}). On all the training trees the tags parser trained {steps:,} steps in
            {full_seconds:.0f} s; its best dev F1 is {best:.1f}, after {after}, against
            {xx_best:.1f} for the XX variant (after {xx_at:g}).""",
        "epochs.one": "{at:g} epoch",
        "epochs.many": "{at:g} epochs",
        "reading": """Loss per symbol with the tree's own sentence **{own:.3f}**, with another
            sentence of the same length **{other:.3f}** ({trees_with_another} of {trees} dev
            trees got another sentence). The sentence is worth {worth:.3f} nats per symbol,
            {share:.0f}% of the loss: {conclusion}""",
        "reading.little": """the parser has learned what trees of a given length look like far
            better than where this sentence's phrases begin and end. Matching word slots to
            source words, which decides every bracket's span, is the part that needs more
            trees and more training.""",
        "reading.reads": "the parser reads its sentence.",
        # the extended run (verdicts.Extended)
        "extended": "{lead}: {each}. {state} {where}.",
        "extended.lead": "Best dev F1 of the extended run",
        "extended.share": """with {files} of the files ({trees:,} trees) {best:.1f}, at epoch
            {at} of {epochs}""",
        "extended.rule": "no new best for {patience:.0%} of its epochs",
        "extended.all_stopped": "Every share has stopped rising by the run's rule ({rule}).",
        "extended.none_stopped": """No share has stopped rising yet by the run's rule ({rule}):
            these bests are lower bounds of what the recipe reaches.""",
        "extended.some_stopped": """The jobs on {names} of the files have not stopped rising
            yet by the run's rule ({rule}): their bests are lower bounds.""",
        "extended.paper": """The paper's {paper_f1}, a test F1 on other sentences (WSJ section
            23), lies {paper_above:.1f} points above the best""",
        # said after extended.paper, without a space
        "extended.still_rising": ", a best that is still rising",
        "extended.projection": """. From the smallest share to all the files each doubling of
            the trees added about {rate:.1f} points; at that rate the {doublings:.1f} doublings
            from {top_trees:,} to the paper's {paper_trees:,} trees would add some
            {added:.0f}, so more trees alone do not close the gap: the paper's model is also far
            larger and trained far longer""",
        "extended.no_rise": ". More trees did not raise the best dev F1 here",
        # the extended run on test (verdicts.ExtendedTest)
        "extended_test.none": """The extended run has not been scored on the test sentences
            yet. Once a share's job has stopped, `parser-curve --score-test` chooses on the dev
            trees between its best epoch's model and the average of its snapshots up to it, and
            between greedy decoding and beam 21, then parses the test sentences once with the
            choice (`{command}`); this page shows the score here.""",
        "extended_test": "Scored once on the test sentences. {parts}",
        "extended_test.share": """With {files} of the files ({trees:,} trees, {epochs} epochs)
            dev chose {chosen} (dev F1 {dev_f1:.1f}, against {others_low:.1f} to
            {others_high:.1f} for the other {others} candidates); on the {sentences} test
            sentences it scores **{f1:.1f} F1** (95% interval [{low:.1f}, {high:.1f}]),
            {f1_le40:.1f} on the {sentences_le40} of at most 40 words: {over}.""",
        "chosen.averaged": """the average of its snapshots of epochs {first} to {last} with
            {search}""",
        "chosen.one": "its model of epoch {last} with {search}",
        "extended_test.paper": """The paper's {paper_f1} (WSJ section 23, about
            {paper_trees:,} training trees, {times_the_trees:.0f} times the {top_trees:,} here)
            lies {paper_above:.1f} points above the test F1 with {files} of the files.""",
        "extended_test.missing_one": """The job on {names} of the files is not scored on test
            yet (`parser-curve --score-test` scores a share once its job has stopped).""",
        "extended_test.missing_many": """The jobs on {names} of the files are not scored on
            test yet (`parser-curve --score-test` scores a share once its job has stopped).""",
        # the search (verdicts.Searches)
        "searches": """On the dev sentences {each}. The gold trees have {symbols:.0f} symbols
            and {brackets:.1f} counted brackets a sentence, {root_share:.0f}% rooted in
            {root}.""",
        "searches.each": """{name} writes {symbols:.0f} symbols and {brackets:.1f} counted
            brackets a sentence, {root_share:.0f}% of its trees rooted in {root}""",
        "searches.short_beam": """{name} writes the shortest trees: a search that ranks whole
            outputs by their log-probability (alpha 0.3 barely offsets length) favours trees
            with few brackets, each of which costs probability.""",
        # the test
        "test": """On all {sentences} test sentences the tags parser scores **{f1:.1f} F1**
            ({chosen}), and {f1_le40:.1f} on the {sentences_le40} sentences of at most {cutoff}
            words: {over}. Without the constraint the paper's beam leaves {invalid} of
            {sentences} outputs that are no tree ({unconstrained_f1:.1f} F1 after repair); its
            outputs average {symbols:.0f} symbols against {gold_symbols:.0f} for the gold
            trees.""",
        # the variant (verdicts.Variant)
        "variant": """On the {sentences} test sentences the XX variant scores **{f1:.1f} F1**
            ({chosen}, chosen on dev): {over}, {p}. Another sentence of the same length costs
            the XX variant {xx_share:.0f}% of its loss, against {tags_share:.0f}% for the tags
            parser: {conclusion}""",
        "variant.tags_read": """the tags make the parser read its sentence, and the brackets
            follow.""",
        "variant.tags_read_more": """the tags make the parser read its sentence more, but its
            brackets are not measurably better for it on these sentences.""",
        "variant.tags_alone": """the tags alone do not make the parser read its sentence much
            more.""",
        # what the run shows (verdicts.Closing)
        "closing.headline": """- **The tags parser** (part-of-speech tags in the word slots,
            as the authors' code writes them) scores **{f1:.1f} F1** on the {sentences} test
            sentences; resampling the sentences puts it between {low:.1f} and {high:.1f} (95%
            bootstrap interval). It is {over_right}, and {over_flat}.""",
        "closing.paper": """- **Against the paper.** The paper reports {paper_f1} on WSJ
            section 23 with about {paper_trees:,} training trees and {paper_model}. This parser,
            {params_m:.1f}M parameters trained {epochs:g} epochs on {trees:,} trees, is
            {below:.1f} points below it""",
        # said after closing.paper, without a space
        "closing.paper.far": ", and even the top of its interval ({top:.1f}) is far from it.",
        "closing.paper.near": ".",
        "closing.paper.reads_little": "By the test of section 7.4 it barely reads its sentence yet.",
        "paper_model": "a {n_layers}-layer model with d_model {d_model}",
        "closing.variant": """- **The XX variant** (`XX` in every word slot, the linearization
            of Vinyals et al.) scores {f1:.1f} F1 on the same sentences: {over}; paired
            bootstrap {p}.""",
        "closing.extended": """- **The extended run** (the tags parser trained until dev F1
            stops rising, section 7.4): with {files} of the files ({trees:,} trees) its best dev
            F1 is {best:.1f}, at epoch {at} of {epochs}; {state}. {scored}""",
        "closing.extended.stopped": "its rule has stopped it",
        "closing.extended.rising": """it is still rising by its rule, so that best is a lower
            bound""",
        "closing.extended.unscored": """It has not been scored on the test sentences yet
            (`{command}`).""",
        "closing.extended.scored": """Scored once on the test sentences with the model and
            search the development trees chose, it reaches **{test_f1:.1f} F1** (95% interval
            [{low:.1f}, {high:.1f}]), {paper_above:.1f} points below the paper's
            {paper_f1}.""",
    }
)
