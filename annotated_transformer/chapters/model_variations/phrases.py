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
        # a budget and its findings counted (the closing section, section 6.4)
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
