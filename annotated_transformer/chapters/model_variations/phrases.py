"""How chapter 06 says what it found: one template a verdict (`findings`), the names of the six
findings and of their verdicts as a reader meets them, and the words around them."""

from __future__ import annotations

from ..wording import Phrases
from . import statistics as f

# The findings' names as a reader meets them (`statistics` keeps the short keys).
FINDING_WORDS = {
    "one head is worse": "One head is worse",
    "too many heads hurt": "Too many heads hurt",
    "small d_k hurts": "Small keys hurt",
    "bigger is better": "Bigger is better",
    "dropout helps": "Dropout helps",
    "learned and sinusoidal positions tie": "Learned and sinusoidal positions tie",
}
# A share of the training pairs in words (dropout's small corpus).
SHARE_WORDS = {
    2: "a half",
    3: "a third",
    4: "a quarter",
    5: "a fifth",
    10: "a tenth",
    20: "a twentieth",
}
# A verdict as a sentence says it of one finding, and of several.
VERDICT_ONE = {
    f.HOLDS: "holds",
    f.DOES_NOT_HOLD: "does not hold",
    f.CANNOT_TELL: "cannot be told",
}
VERDICT_MANY = {
    f.HOLDS: "hold",
    f.DOES_NOT_HOLD: "do not hold",
    f.CANNOT_TELL: "cannot be told",
}

say = Phrases(
    {
        # what this profile trains (section 6.1)
        "plan": """Under the `{profile}` profile this chapter trains {trained} rows
            ({rows}), each with {seeds} for {epochs} of the training split, and {overfit_rows}
            for {overfit_epochs} epochs of {share} of it. Every width of the paper's rows is
            divided by {width}, every depth by {depth} and every head count by {heads}; it runs
            on {device}.""",
        "rows.trained": "This profile trains {trained} of the {of} rows",
        "rows.unread.one": """. Of the rows the findings compare it leaves out {rows}, so the
            comparisons that need it are skipped""",
        "rows.unread.many": """. Of the rows the findings compare it leaves out {rows}, so the
            comparisons that need them are skipped""",
        "rows.all_compared": ", every row the six findings compare on the whole corpus",
        "rows.extra": "; it trains {rows} on the whole corpus for the table beside the paper's",
        "rows.others": ". It leaves out {rows}",
        "rows.others.also": ". It also leaves out {rows}",
        "rows.gpu": """; the `gpu` profile trains every row (dropout's finding is read on a small
            corpus, section 6.3).""",
        "base": """Base at this scale has {layers} in each stack, width {width}, feed-forward size
            {d_ff} and {heads} with keys of {d_k}: {params_m:.2f} million parameters with a
            {vocab:,}-piece vocabulary.""",
        # the calibration of warm-up and peak rate (section 6.2)
        "calibration": """Validation perplexity after {trained} for each candidate (written
            warm-up steps:peak rate). The calibration chose **{chosen}** ({provenance}); how it
            chose: {rule}. This profile trains every row with {warmup} warm-up steps and a peak
            rate of {peak:g}, on batches of {batch_tokens:,} tokens.""",
        "calibration.share": "{share:g} of an epoch",
        "calibration.epoch": "{share:g} epoch",
        "calibration.epochs": "{share:g} epochs",
        "calibration.none": """No calibration of this profile's warm-up ({warmup} steps) and peak
            rate ({peak:g}) is committed; the curves of C1 and C3 in section 6.3 show whether the
            deepest row trains.""",
        "calibration.other_batches": """The committed whole-epoch grid was run at other batches
            than this profile's; it is not shown. Rerun `scripts/table3_calibration.py --epochs 1`
            for this profile.""",
        "whole_epoch": """After a whole epoch with the norm after each sub-layer (the paper's
            post-norm) at {chosen}, base ends at {base:.1f}, C1 at {c1:.1f} and C3 at
            {c3:.1f}; base is best at {base_best_at}.""",
        "whole_epoch.deeper.one": """Only {deeper} ends C3 no worse than C1, with base at
            {base_deeper:.1f} at best: that rule would buy depth's order with models that
            learned less, so the choice stays with base's best.""",
        "whole_epoch.deeper.many": """Only {deeper} end C3 no worse than C1, with base at
            {base_deeper:.1f} at best: that rule would buy depth's order with models that
            learned less, so the choice stays with base's best.""",
        "whole_epoch.deeper.none": "No candidate ends C3 no worse than C1.",
        "whole_epoch.pre_norm": """With the norm before each sub-layer (pre-norm) at {chosen}:
            base {pre_base:.1f}, C1 {pre_c1:.1f}, C3 {pre_c3:.1f}.""",
        "whole_epoch.pre_norm.deeper": """There the deepest stack ends below the one-layer one,
            so at this budget the post-norm depth rows measure how fast a post-norm stack gets
            going rather than what depth buys ({provenance}).""",
        "whole_epoch.pre_norm.same": """Depth does not help there either at this budget
            ({provenance}).""",
        # the data and the training (section 6.2)
        "data": """The rows train on {train_pairs:,} pairs ({target_tokens:,} target subwords an
            epoch) in batches of about {batch_tokens:,} tokens; perplexity is measured on
            {valid_pairs:,} validation pairs and BLEU on {bleu_sentences:,} validation sentences.
            Dropout's small corpus is the first {overfit_pairs:,} training pairs.""",
        "training": """{runs} runs in {minutes:.1f} minutes on {processes}. A run on the whole
            corpus trained for {shortest_s:.0f} to {longest_s:.0f} seconds and translated the
            validation split in {mean_eval_s:.0f} seconds on average; the runs' times add up to
            {at_once:.1f} times the wall time.""",
        # dropout's small corpus (section 6.3)
        "overfit.falling": """{row} (dropout {dropout:g}) is still falling at its last epoch
            ({end_ppl:.1f})""",
        "overfit.rose": """{row} (dropout {dropout:g}) is lowest at epoch {low_epoch:g}
            ({low_ppl:.1f}) and ends {rise_pct:.1f}% above that""",
        "overfit.begun.one": "{rows} has begun to overfit.",
        "overfit.begun.many": "{rows} have begun to overfit.",
        "overfit.none": "No row has begun to overfit at this budget.",
        # the budgets and the curves (section 6.4)
        "budgets": """The tie's margin is ±{margin_pct:.1f}% of perplexity. At the longest budget
            ({label}): {counted}.""",
        "budgets.changed": "Verdicts that change between the budgets: {changed}.",
        "budgets.unchanged": "No verdict changes between the budgets.",
        "swaps": "Rows that swap order during training: {swapped}.",
        "swaps.pair": "{first} and {second} in epoch {epochs}",
        "swaps.none": "No comparison's rows swap order along the curves.",
        "swaps.looks": """Each budget is corrected for its own {compared} comparisons; reading
            three budgets is three looks at the same runs, so a verdict seen at one budget only
            deserves less weight than one seen at all three.""",
        # the extended run (section 6.4)
        "extended.plan": """This page's live run trained its rows for {live} of the whole
            corpus. The extended run trains the same rows{added}{missing} with the same settings
            and batches, toward {epochs} of the whole corpus{small}. The command keeps every
            finished epoch of every row and seed in its run folder and continues from there when
            run again on the same machine, so a run can be stopped and resumed as often as it
            takes; {source}""",
        "extended.added": "plus {rows}, which the live run leaves out,",
        "extended.missing": "except {rows},",
        "extended.small": "and {epochs} of dropout's small one",
        "extended.committed": """the run's results are committed, and this page reads them as
            they are without retraining. The command that made it:""",
        "extended.none": """none is committed for the `{profile}` profile yet (once one is, this
            page reads it as it is). A command that would make it:""",
        "extended.progress": """Every row and seed has finished {finished} of the run's {target}
            epochs{short}; written {written} on {machine}. {flattening}""",
        "extended.short": "(short of its target: what follows is read at the epochs it reached)",
        # BLEU (section 6.5) and the FLOPs (section 6.7)
        "bleu": """Greedy sacreBLEU on all {references:,} validation sentences lies between
            {low:.2f} and {high:.2f} over rows and seeds, each score with a 95% interval of
            ±{ci_low:.2f} to ±{ci_high:.2f}. Of the {compared} differences from base (rows ×
            seeds), {beyond} exceed the resampling noise, where chance alone (p < 0.05) would give
            about {expected:.1f}{reading}""",
        "bleu.separates": ".",
        "bleu.does_not_separate": ": at this budget BLEU does not separate the rows from base.",
        "flops": """This run trained {done:.2e} FLOPs in {minutes:.1f} minutes of wall time,
            {rate:.2e} FLOP/s per process.""",
        "flops.gpu": """At the rate measured on a GPU, the `gpu` profile's Table 3 ({rows} rows ×
            {seeds} seeds × {epochs}, and the overfitting runs) comes to {flops:.2e} FLOPs, about
            {minutes:.0f} minutes.""",
        # a finding at one budget (section 6.4's conclusion)
        "conclusion.budget": "*{name}*: {label}.",
        "conclusion.finding": "**{name}.**",
        "conclusion.run": "{title} it {sentence}",
        "finding.not_compared": "was not compared: {clauses}.",
        "finding.read": "{verdict_words}{because}: {clauses}.",
        "finding.because": "because of {aspects}",
        "finding.aspect": "{aspect} {verdict_words}: {clause}",
        "finding.aspect.untrained": "{aspect}: {clause}",
        "margin": "±{margin_pct:.0f}%",
        "clause.untrained": "{a} against {b} was not trained",
        "clause.reason": "{a} against {b}: {reason}",
        "clause.where": "{a} ends {change:.1f}% {side} {b} in perplexity",
        "clause.interval": "(interval {low:+.1f}% to {high:+.1f}%)",
        "clause.tie.holds": "{where} {interval}, inside the {margin} margin: a tie",
        "clause.tie.does_not_hold": """{where} {interval}, outside the {margin} margin: {first}
            did {better} than {second}""",
        "clause.tie.cannot_tell": """{where} {interval}; the interval reaches past the {margin}
            margin, so neither a tie nor a difference can be told""",
        "clause.worse.holds": "{where} {interval}, as in the paper",
        "clause.worse.does_not_hold": "{where} {interval}, the opposite of the paper",
        "clause.worse.cannot_tell": """{a} ends {change:.1f}% {side} {b}, within the noise: the
            interval {low:+.1f}% to {high:+.1f}% includes no change, and only a change of
            {detectable_pct:.1f}% or more would have been found four times in five""",
        "above": "above",
        "below": "below",
        "better": "better",
        "worse": "worse",
        # what the longer budget did to a finding
        "change.only_longer": "Only the longer run compares it.",
        "change.kept": "The longer budget left the verdict as it was ({after})",
        "change.changed": "The longer budget changed the verdict from {before} to {after}",
        "change.swapped": """{first} went from {before_pct:.1f}% {before_side} {second} to
            {after_pct:.1f}% {after_side} it""",
        "change.narrowed": """the gap between {first} and {second} narrowed from
            {before_pct:.1f}% to {after_pct:.1f}%""",
        "change.widened": """the gap between {first} and {second} widened from {before_pct:.1f}%
            to {after_pct:.1f}%""",
        "change.detectable": """, and the smallest change the runs could find from
            {before:.1f}% to {after:.1f}%""",
        # the notes beside a finding: dropout's small corpus, base's flattening, depth's overtaking
        "small.passed": """{row} was lowest at epoch {lowest} of {epochs} and ended
            {rise_pct:.1f}% above it""",
        "small.improving": "{row} was still improving at its last epoch ({epochs})",
        "small.note.one": """On the small corpus {turns}: it had begun to overfit, where dropout
            can help.""",
        "small.note.many": """On the small corpus {turns}: they had begun to overfit, where
            dropout can help.""",
        "small.note.none": """On the small corpus {turns}: no row had begun to overfit, so
            dropout had nothing to prevent yet.""",
        "flattening.flat": """{row}'s validation perplexity fell {fell_pct:.1f}% in epoch {epoch}
            ({before:.2f} to {after:.2f}); it first fell by less than 1% in epoch {flat_at}.""",
        "flattening.learning": """{row}'s validation perplexity fell {fell_pct:.1f}% in epoch
            {epoch} ({before:.2f} to {after:.2f}); it has not yet fallen by less than 1% in an
            epoch, so the rows are still learning.""",
        "overtake.for_good": """{second} overtook {first} for good in epoch {since:g}
            (perplexity {second_last:.1f} against {first_last:.1f} after {epochs}): the deeper
            stack starts slower and ends ahead.""",
        "overtake.behind": """After {epochs} {second} was still behind {first} (perplexity
            {second_last:.1f} against {first_last:.1f})""",
        "overtake.closing": """{behind}, but closing: its gap fell from {gap_first:.0f}% at epoch
            {first_epoch:g} to {gap_last:.0f}%, so the deeper stack was starting slower, not yet
            ending worse.""",
        "overtake.still": "{behind}.",
        # a budget and its findings counted (the closing section, section 6.4)
        "budget": "{full}; dropout rows: {small} on {share} of the pairs",
        "epochs.one": "{n:g} epoch",
        "epochs.many": "{n:g} epochs",
        "run.title": "After {epochs} ({name})",
        "count": "{n} {words}",
        "tally": "{title}, of the {findings} findings {groups}.",
        "tally.group": "{count} ({names})",
        "moved": "{finding} ({before} → {after})",
        "changed": "The longer budget changed {moved}.",
        "changed.none": "The longer budget changed no verdict.",
        # the rank correlation with the paper's perplexities (section 6.6)
        "correlation": """For {who}, Spearman's rank correlation with the paper's perplexities
            over {rows} rows is {rho}, 95% bootstrap interval {low} to {high} ({samples:,}
            resamples{dropped_words}): {reading}""",
        "correlation.dropped": ", {dropped} with one side constant dropped",
        "correlation.too_few": """too few rows to read an ordering from ({chance}; a reading
            needs {min_rows} or more).""",
        "correlation.chance.two": "two rows always rank one way or the other",
        "correlation.chance": """shuffled ranks of {rows} rows agree or disagree perfectly one
            time in {orderings}""",
        "correlation.excludes_zero": """the interval excludes zero, so the rows rank in the
            paper's order more than chance would.""",
        "correlation.includes_zero": """the interval includes zero, so the ordering of the rows
            says little about the paper's.""",
        "correlation.below_zero": """the interval lies below zero, so the rows rank against the
            paper's order.""",
    }
)
