"""How chapter 05 says what it found: one template a verdict (`verdicts`), and the words around
them. Parts that `sentences` joins into one sentence are keyed `<verdict>.<part>`."""

from __future__ import annotations

from ..wording import Phrases

say = Phrases(
    {
        # the opening
        "plan": """Under profile `{name}` the chapter compares decodings on {share} of the
            {corpus} validation split ({src_lang} to {tgt_lang}), then scores {share} of its test
            split with one setting, beam {beam} and length penalty α = {alpha:g}, on
            {device}.""",
        "plan.first": "the first {first:,} sentences",
        "plan.every": "every sentence",
        "model": """The model has {parameters:,} parameters, each the mean of {averaged}; it
            will translate {sets}.""",
        "model.snapshots": "the {count} snapshots from {first} to {last}",
        "model.set": "{n:,} sentences of `{name}`",
        # the recipes
        "choice": "{subject}, {name} ({change}), scores {score} sacreBLEU on validation",
        "choice.candidate": "This sweep's pick",
        "choice.recipe": "The profile's recipe",
        "choice.no_rival": "; it had no rival.",
        "rival.lower": """{name} scores {gap:.2f} lower, beyond the resampling noise
            (p = {p_value:.3f})""",
        "rival.higher": """{name} scores {gap:.2f} higher, beyond the resampling noise
            (p = {p_value:.3f})""",
        "rival.within": """{name}'s score differs from it by {difference:+.2f}, within the
            resampling noise (p = {p_value:.3f}), so the validation set cannot tell it from the
            chosen one""",
        "rival.tied": """{name}'s score matches it to two decimals, within the resampling noise
            (p = {p_value:.3f}), so the validation set cannot tell it from the chosen one""",
        "budget.beaten_by_one": """{winners} beats it beyond the noise: {kind} should train
            that recipe instead.""",
        "budget.beaten_by_many": """{winners} beat it beyond the noise: {kind} should train
            that recipe instead.""",
        "budget.kept": """No rival beats it beyond the noise, so {kind} trains the profile's
            recipe too.""",
        "decode": """Of the {compared} settings compared with the paper's ({baseline},
            {base:.2f} on validation), {up} beat it beyond the resampling noise, {down} fall
            below it beyond the noise and {within} are within it.""",
        "decode.kept": "None wins, so the profile keeps the paper's setting.",
        "decode.chosen": """The profile decodes with the best, {chosen} ({gain:+.2f},
            p = {p_value:.3f}).""",
        "decode.chance": """With {compared} comparisons at the 5% level, about {by_chance:.1f}
            would pass by chance alone, so the winner's margin is partly selection: the test
            set, scored once with the chosen setting, is the honest measure.""",
        "gpu_choice": """The lowest validation perplexity, {best_ppl:.2f}, is {best}'s ({shape})
            at epoch {best_epoch}, where the `gpu` profile stops""",
        "gpu_choice.second": "; the next, {second}, reached {second_ppl:.2f} ({second_above:+.0%})",
        "gpu_choice.rising": """. {rising} of {runs} runs ended more than 5% above their lowest
            point (overfitting), which is why the profile stops at the lowest one""",
        "gpu_choice.seeds": ". Each run is one seed, so these perplexities carry no interval.",
        # decoding
        "beam.name": "Beam search (beam {beam_size}, α = {alpha})",
        "beam.where": "on the {sentences:,} sentences of `{split}`",
        "beam.within": """{name} scores {scores} {where}: a change of {signed_gain} that lies
            within the resampling noise (p = {p_value:.3f}), so these sentences cannot tell the
            two apart.""",
        "beam.above": """{name} scores {scores} {where}, {gap:.2f} points above it
            ({tokenized_gain:+.2f} tokenized) and beyond the resampling noise
            (p = {p_value:.3f}): keeping several hypotheses lets the search back out of an early
            word that leaves no good continuation.""",
        "beam.below": """{name} scores {scores} {where}, {gap:.2f} points below it
            ({tokenized_gain:+.2f} tokenized) and beyond the resampling noise
            (p = {p_value:.3f}): the search finds outputs the model scores higher but the
            references do not favour: the model's probabilities are not BLEU.""",
        "beam.time": "It took {slower:.1f} times greedy's decoding time.",
        "averaging.none": """The profile averages nothing: its model is the last snapshot
            ({bleu:.2f} on the validation split).""",
        "averaging": """On the validation split, averaging the newest {k} snapshots scores
            {own_score} against {last_score} for the last one alone, {finding}
            (p = {p_value:.3f}); perplexity goes from {last_ppl:.2f} to {own_ppl:.2f}.""",
        "averaging.above": "{gap:.2f} sacreBLEU above it, beyond the resampling noise",
        "averaging.below": "{gap:.2f} sacreBLEU below it, beyond the resampling noise",
        "averaging.within": """a change within the resampling noise, so no gain the validation
            set can tell""",
        "averaging.count": """Of the {averages} averages, {up} score above the last snapshot
            beyond the noise, {down} below it, and {within} within it.""",
        "averaging.raises": """Here averaging raises the validation perplexity ({last_ppl:.2f}
            for the last snapshot, {widest_ppl:.2f} for all {widest_k}): the snapshots are far
            apart in a run that is still changing fast, so their mean is a worse model than the
            last of them.""",
        "averaging.raises_again": """Averaging all {widest_k} kept snapshots raises the
            validation perplexity again, to {widest_ppl:.2f}: the oldest of them are worse models
            of a run that was still improving, and they pull the mean back.""",
        "bleus": """On the same outputs the paper's tokenized BLEU reads {split:.2f} with
            compound splitting and {unsplit:.2f} without, and sacreBLEU {sacre:.2f}: the two
            BLEUs {closely}, because splitting changes the tokenized BLEU by {splitting:+.2f}
            ({count}) and both use the same 13a tokens. One set of outputs scored three ways, so
            these gaps are exact, not samples. On WMT14 news text, tokenized by Moses and full of
            compounds, the gap is larger, so the paper's {paper_bleu} cannot be read as a
            sacreBLEU score.""",
        "bleus.close": "agree closely",
        "bleus.apart": "differ by {gap:+.2f}",
        "bleus.hyphens": "{hyphenated:,} of {references:,} references hold a hyphen to split",
        "bleus.few_hyphens": "the references hold few hyphenated compounds",
        # cost
        "cost": """Priced the paper's way, {seconds:,.0f} s at {where} ({rate} FLOP/s), the run
            cost {paper_way} FLOPs; counted from the model it did {counted}, so
            {utilisation:.0%} of that rate went into the model's arithmetic and the rest into
            element-wise work, the optimizer, the data and Python.""",
        "cost.measured": "the rate measured for this CPU's matrix products",
        "cost.peak": "the data-sheet peak",
        "table2": """Both priced Table 2's way, the run cost {paper_way} FLOPs against the base
            model's {base_flops}, {ratio:,.0f} times less (about {orders:.0f} orders of
            magnitude): a model of {params_m:.1f}M parameters against {paper_params_m}M, trained
            on short captions rather than {pairs} news sentence pairs. Its BLEU is on another
            test set and does not compare with Table 2's.""",
        "gpu.unpaired": """The committed `gpu` run ({label}) scores {score} sacreBLEU on the
            whole test set; this run translated {sentences:,} of its sentences, so the two are
            not compared.""",
        "gpu.paired": """On the same {sentences:,} sentences the committed `gpu` run ({label})
            scores {finding} (p = {p_value:.3f}).""",
        "gpu.above": "{gap:.2f} sacreBLEU above this run, beyond the resampling noise",
        "gpu.below": "{gap:.2f} sacreBLEU below this run, beyond the resampling noise",
        "gpu.within": """{difference:+.2f} against this run, within the resampling noise (no
            difference)""",
        "gpu.selected": """Its recipe was chosen on the test score, so its lead is partly
            selection.""",
        "gpu.costs": """Its two costs lie {spread:,.0f} times apart, because a small model keeps a
            tiny fraction of an H100's peak busy and the paper's way assumes all of it.""",
        "recipe_cost": """Counted, the paper's base recipe ({steps:,} steps of about
            {tokens_per_step:,} target tokens) is {counted} FLOPs, {share:.0%} of Table 2's
            {table2}: Table 2 prices every second of the P100s at their sustained rate, and the
            count leaves out element-wise work, the optimizer and communication; one H100 would
            need {span}, against the paper's {wall_time_h:g} hours on eight P100s.""",
        "recipe_cost.hours": "{hours:.1f} hours at the {how} share of its peak",
        "recipe_check": """{steps} steps of the recipe on the WMT14 sample ran in {seconds:.0f} s
            with {losses} losses ({first:.3f} at the first step, {last:.3f} at the last, one
            batch each); the validation loss, {valid_loss:.3f}, is {side} a uniform guess over
            {vocab_size:,} pieces ({uniform:.3f}): the warm-up keeps the learning rate tiny in
            the first steps, so the check shows that every piece of the recipe runs, not that it
            learns.""",
        "recipe_check.finite": "finite",
        "recipe_check.non_finite": "non-finite",
        "recipe_check.above": "above",
        "recipe_check.below": "below",
        # the headline
        "result": """The averaged model scores {score} sacreBLEU (95% bootstrap interval) and
            {bleu_tokenized:.2f} tokenized BLEU, the paper's kind, on {sentences:,} sentences of
            `{test_set}`, against the paper's {paper_bleu} for the base model on WMT14 news,
            another test set.""",
    }
)
