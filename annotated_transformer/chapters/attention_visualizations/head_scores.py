"""Figures 3 and 4 as measurements: does any encoder head carry the paper's phenomena on captions?

A picture of one sentence shows what a head did there; it cannot say whether the head does it
as a rule. Here each phenomenon is a word pair found by a stated heuristic in every sentence of
a corpus (a pronoun and its antecedent for Figure 4, a verb and the head noun of its distant
complement for Figure 3), and each head is scored by the weight its query word puts on the key
word, beside what an even spread over the sentence would give. Sentences are the resampling
unit of the bootstrap, since the pairs of one sentence share its attention.

Word pieces: a word is the run of pieces from one starting with "▁" to the next; its pieces
without a letter or digit (punctuation glued to it, a bare "▁") are left out. A pair's weight
sums over the key word's pieces and averages over the query word's pieces, so it is the share
of one query piece's attention that lands on the key word; its even-spread baseline is the
number of key pieces over the number of keys the query sees (every source piece, `</s>` too).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...model.transformer import Transformer, attention_maps
from ...runtime.progress import progress_bar

SPECIAL_PIECES = ("<s>", "</s>", "<pad>", "<unk>")
PUNCTUATION = ".,;:!?'\"()-"

# ----------------------------------------------------------------------------------------------
# Word lists for the heuristics. Small on purpose: they cover the nouns and verbs that captions
# use most, and a word outside them is simply not counted.

MALE = frozenset(
    "man boy guy father dad son brother husband gentleman grandfather groom uncle "
    "fisherman policeman fireman businessman cowboy".split()
)
FEMALE = frozenset(
    "woman girl lady mother mom daughter sister wife bride grandmother aunt "
    "actress waitress policewoman businesswoman ballerina".split()
)
PERSON = frozenset(
    "person child kid baby toddler infant teenager teen adult player worker skier "
    "surfer rider biker cyclist climber dancer musician singer student athlete runner "
    "swimmer skateboarder snowboarder performer artist chef cook officer soldier "
    "guitarist drummer boxer wrestler goalie pitcher batter catcher vendor shopper "
    "tourist doctor nurse teacher individual youngster blond blonde".split()
)
ANIMAL = frozenset(
    "dog cat horse bird puppy cow bull animal duck sheep goat camel elephant pony "
    "poodle terrier retriever dolphin fish monkey bear lion deer calf pig chicken "
    "rooster ox mule donkey beagle collie greyhound dachshund husky".split()
)
COLLECTIVE = frozenset("people family group team crowd couple children men women".split())
_IRREGULAR_PLURALS = {"child": "children", "man": "men", "woman": "women"}


def _plural(noun: str) -> str:
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


PLURAL = COLLECTIVE | frozenset(_plural(n) for n in MALE | FEMALE | PERSON | ANIMAL)

# Pronoun -> the noun classes it can refer to (number and gender agree; "it" only to animals,
# since a caption's "it" is as often an object or the weather).
PRONOUNS = {
    **dict.fromkeys(("his", "he", "him"), MALE | PERSON),
    **dict.fromkeys(("her", "she"), FEMALE | PERSON),
    **dict.fromkeys(("its", "it"), ANIMAL),
    **dict.fromkeys(("their", "they", "them"), PLURAL),
}

DETERMINERS = frozenset(
    "a an the this that these those his her its their my your our some any another "
    "each every one two three four five six several many few other".split()
)
PREPOSITIONS = frozenset(
    "in on at with of to for from into onto through across down up over under near "
    "by behind along around past toward towards beside between inside outside off "
    "out about against during atop underneath beneath above below among".split()
)
BOUNDARIES = frozenset(
    "and or but while as who that which where when is are was were has have".split()
)
# Caption verbs in the finite forms captions use ("a man walks", "two men walk").
FINITE_VERBS = frozenset(
    "play plays walk walks run runs sit sits stand stands hold holds wear wears ride "
    "rides jump jumps look looks watch watches climb climbs throw throws carry carries "
    "push pushes pull pulls kick kicks catch catches eat eats drink drinks read reads "
    "use uses perform performs cook cooks paint paints sing sings dance dances swim "
    "swims wave waves hug hugs kiss kisses prepare prepares take takes make makes cut "
    "cuts grab grabs lift lifts lean leans lie lies lay lays sleep sleeps skate skates "
    "surf surfs drive drives fix fixes clean cleans build builds sell sells buy buys "
    "show shows point points pose poses wait waits sweep sweeps fly flies hit hits "
    "chase chases cross crosses enjoy enjoys hang hangs leap leaps dive dives".split()
)
# -ing words that are nouns, adjectives or prepositions in captions, not verbs.
ING_NOUNS = frozenset(
    "clothing building buildings something anything nothing everything ceiling wedding "
    "evening morning ring king thing things string spring swing sling wing during "
    "railing awning sibling pudding earring stuffing frosting icing lightning bedding "
    "parking setting ceiling living dining sing bring".split()
)


def normalise(word: str) -> str:
    """Lower case, surrounding punctuation and a possessive 's removed: "Man's," -> "man"."""
    word = word.lower().strip(PUNCTUATION)
    if word.endswith("'s"):
        word = word[:-2]
    return word.strip(PUNCTUATION)


def anaphora_pairs(words: Sequence[str]) -> list[tuple[int, int]]:
    """(pronoun, antecedent) word indices: for each pronoun of `PRONOUNS`, the nearest preceding
    noun that agrees with it in number and gender (a person or animal noun from the lists)."""
    norm = [normalise(w) for w in words]
    pairs = []
    for i, word in enumerate(norm):
        agree = PRONOUNS.get(word)
        if agree is None:
            continue
        for j in range(i - 1, -1, -1):
            if norm[j] in agree:
                pairs.append((i, j))
                break
    return pairs


def is_verb(norm: Sequence[str], i: int) -> bool:
    """A caption verb: an -ing form or a listed finite form, not right after a determiner
    ("a painting", "a climbing wall", "a watch" are not verbs)."""
    word = norm[i]
    if i > 0 and norm[i - 1] in DETERMINERS:
        return False
    if word.endswith("ing") and len(word) >= 5 and word.isalpha():
        return word not in ING_NOUNS
    return word in FINITE_VERBS


def dependency_pairs(
    words: Sequence[str], *, min_distance: int = 3, max_phrase: int = 5
) -> list[tuple[int, int]]:
    """(verb, complement head) word indices, at least `min_distance` words apart.

    After a verb (`is_verb`) come at most two prepositions or particles ("to" only before a
    determiner, so "trying to catch" is not a phrase), then a noun phrase: the words up to the
    next preposition, conjunction, verb or a word ending in punctuation, at most `max_phrase`
    words. English noun phrases end in their head, so the phrase's last word is the head
    ("is running on lush green grass" -> "running", "grass"), except that a closing -ed
    participle passes the head to the word before it. A determiner, a pronoun or a listed -ing
    noun as the head discards the pair.
    """
    norm = [normalise(w) for w in words]
    ends_phrase = [
        w.rstrip("'\")").endswith((",", ".", ";", ":", "!", "?")) for w in words
    ]
    pairs = []
    for v in range(len(norm)):
        if not is_verb(norm, v) or ends_phrase[v]:
            continue
        j, closed = v + 1, False
        for _ in range(2):
            if j < len(norm) and norm[j] in PREPOSITIONS:
                if norm[j] == "to" and (
                    j + 1 >= len(norm) or norm[j + 1] not in DETERMINERS
                ):
                    break
                j += 1
                if ends_phrase[j - 1]:  # "jumps up." ends the clause: no complement
                    closed = True
                    break
        if closed:
            continue
        head, ended = None, False
        for k in range(j, min(len(norm), j + max_phrase)):
            if norm[k] in PREPOSITIONS or norm[k] in BOUNDARIES or is_verb(norm, k):
                # "a red and blue guitar": a conjunction not followed by a new noun phrase
                # may join adjectives, so the word before it need not be the head.
                ended = not (
                    norm[k] in ("and", "or")
                    and (k + 1 >= len(norm) or norm[k + 1] not in DETERMINERS)
                )
                break
            head = k
            if ends_phrase[k] or k == len(norm) - 1:
                ended = True
                break
        if not ended:  # longer than max_phrase: its last word need not be its head
            continue
        # A participle closing the phrase modifies the noun before it ("a woman dressed in").
        while (
            head is not None
            and head > j
            and norm[head].endswith("ed")
            and len(norm[head]) > 4
        ):
            head -= 1
        if head is None or not norm[head].isalpha():
            continue
        if norm[head] in DETERMINERS or norm[head] in PRONOUNS or norm[head] in ING_NOUNS:
            continue
        if head - v >= min_distance:
            pairs.append((v, head))
    return pairs


PHENOMENA: dict[str, Callable[[Sequence[str]], list[tuple[int, int]]]] = {
    "anaphora": anaphora_pairs,
    "dependency": dependency_pairs,
}


# ----------------------------------------------------------------------------------------------
# Pieces, words and encoder attention


def words_of(pieces: Sequence[str]) -> tuple[list[str], list[list[int]]]:
    """The whitespace words of a sentence's pieces and, per word, the indices of its pieces that
    hold a letter or digit (special pieces such as `</s>` belong to no word)."""
    words, spans = [], []
    for i, piece in enumerate(pieces):
        if piece in SPECIAL_PIECES:
            continue
        if piece.startswith("▁") or not words:
            words.append("")
            spans.append([])
        words[-1] += piece.lstrip("▁") if piece.startswith("▁") else piece
        if any(c.isalnum() for c in piece):
            spans[-1].append(i)
    return words, spans


@dataclass
class EncodedSentence:
    """One sentence's source pieces and its encoder self-attention (layers, heads, keys, keys)."""

    text: str
    pieces: list[str]
    weights: np.ndarray


@torch.no_grad()
def encoder_attention(
    model: Transformer,
    tokenizer,
    sentences: Sequence[str],
    *,
    batch_size: int = 64,
    desc: str = "encoder attention",
) -> list[EncodedSentence]:
    """Encoder self-attention of each sentence (source ending in `</s>`, as in training).

    Sentences go through in padded batches: padding keys get no weight, so each sentence's
    weights are those it gets alone; the decoder is not run.
    """
    device = next(model.parameters()).device
    encoded = []
    batches = range(0, len(sentences), batch_size)
    for start in progress_bar(batches, desc=desc, unit="batch"):
        texts = list(sentences[start : start + batch_size])
        ids = [
            tokenizer.encode(t)[: model.config.max_len - 1] + [tokenizer.eos_id]
            for t in texts
        ]
        width = max(map(len, ids))
        src = torch.tensor(
            [row + [tokenizer.pad_id] * (width - len(row)) for row in ids], device=device
        )
        maps = attention_maps(model, src)["encoder"]
        stacked = torch.stack(maps, dim=1).float().cpu().numpy()  # (B, L, h, S, S)
        for b, (text, row) in enumerate(zip(texts, ids)):
            n = len(row)
            pieces = [tokenizer.id_to_piece(int(i)) for i in row]
            encoded.append(EncodedSentence(text, pieces, stacked[b, :, :, :n, :n].copy()))
    return encoded


def pair_weight(
    weights: np.ndarray, query_pieces: Sequence[int], key_pieces: Sequence[int]
) -> tuple[np.ndarray, float]:
    """(weight per (layer, head), even-spread baseline) of one word pair in (L, h, Q, K) weights:
    the sum over the key word's pieces of the mean over the query word's pieces, and
    len(key_pieces) / K."""
    block = weights[:, :, list(query_pieces)][:, :, :, list(key_pieces)]
    return block.sum(-1).mean(-1), len(key_pieces) / weights.shape[-1]


@dataclass
class PairSamples:
    """Per sentence where the heuristic found a pair: the mean weight over its pairs per
    (layer, head), the same key words' mean weight from every query piece (a head that looks at
    such words from anywhere scores there too), the mean baseline, and the pairs as (sentence,
    query word, key word)."""

    phenomenon: str
    weights: np.ndarray  # (sentences, L, h)
    control: (
        np.ndarray
    )  # (sentences, L, h): the key word's weight from every query, averaged
    baselines: np.ndarray  # (sentences,)
    sentences: list[int]  # index into the encoded list
    pairs: list[tuple[int, int, int]]
    searched: int  # sentences looked at

    @property
    def layers(self) -> int:
        return self.weights.shape[1]

    @property
    def heads(self) -> int:
        return self.weights.shape[2]


def collect_pairs(encoded: Sequence[EncodedSentence], phenomenon: str) -> PairSamples:
    """Find the phenomenon's word pairs in every sentence and score each with `pair_weight`."""
    finder = PHENOMENA[phenomenon]
    weights, control, baselines, sentences, pairs = [], [], [], [], []
    for s, one in enumerate(encoded):
        words, spans = words_of(one.pieces)
        found = [(q, k) for q, k in finder(words) if spans[q] and spans[k]]
        if not found:
            continue
        scored = [pair_weight(one.weights, spans[q], spans[k]) for q, k in found]
        weights.append(np.mean([w for w, _ in scored], axis=0))
        every = range(one.weights.shape[2])
        control.append(
            np.mean(
                [pair_weight(one.weights, every, spans[k])[0] for _, k in found], axis=0
            )
        )
        baselines.append(float(np.mean([b for _, b in scored])))
        sentences.append(s)
        pairs += [(s, q, k) for q, k in found]
    if not sentences:
        raise ValueError(f"no sentence holds a {phenomenon} pair the heuristic can find")
    return PairSamples(
        phenomenon,
        np.stack(weights),
        np.stack(control),
        np.array(baselines),
        sentences,
        pairs,
        len(encoded),
    )


# ----------------------------------------------------------------------------------------------
# Per-head scores


def head_scores(
    samples: PairSamples,
    *,
    level: float | None = None,
    resamples: int = 4000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (layer, head): mean weight, the key words' mean weight from every word, the
    mean baseline, the ratio of weight to baseline and a percentile bootstrap interval of the
    ratio at `level`, resampling sentences; likewise the ratio of weight to the from-every-word
    control. `shows` is True where both intervals lie above 1: the query word singles out its
    key word beyond an even spread *and* beyond what any word of the caption gives that key (a
    head that looks at the first noun from everywhere passes the first test, not the second).
    The default level, 1 - 0.05 / heads (Bonferroni), keeps the chance that any head of the
    model is named by luck under 5%; `resamples` grows so that each tail rests on at least 50
    draws."""
    n = len(samples.sentences)
    flat = samples.weights.reshape(n, -1).astype(np.float64)  # (n, L*h)
    base = samples.baselines.astype(np.float64)
    control = samples.control.reshape(n, -1).astype(np.float64)
    if level is None:
        level = 1 - 0.05 / flat.shape[1]
    tail = (1 - level) / 2
    resamples = max(resamples, math.ceil(50 / tail))
    rng = np.random.default_rng(seed)
    ratios, over_control = [], []
    for start in range(0, resamples, 1000):
        counts = rng.multinomial(n, np.full(n, 1 / n), size=min(1000, resamples - start))
        drawn = counts @ flat
        ratios.append(drawn / (counts @ base)[:, None])
        over_control.append(drawn / np.maximum(counts @ control, 1e-12))
    ratios, over_control = np.concatenate(ratios), np.concatenate(over_control)
    low, high = np.quantile(ratios, [tail, 1 - tail], axis=0)
    control_low = np.quantile(over_control, tail, axis=0)
    weight, baseline = flat.mean(0), float(base.mean())
    every = control.mean(0)
    layer, head = np.divmod(np.arange(flat.shape[1]), samples.heads)
    return pd.DataFrame(
        {
            "layer": layer + 1,
            "head": head + 1,
            "sentences": n,
            "pairs": len(samples.pairs),
            "weight": weight,
            "from every word": every,
            "even spread": baseline,
            "ratio": weight / baseline,
            "low": low,
            "high": high,
            "over every word": weight / np.maximum(every, 1e-12),
            "over every word low": control_low,
            "shows": (low > 1) & (control_low > 1),
        }
    )


def passing_heads(scores: pd.DataFrame) -> pd.DataFrame:
    """The heads that show the phenomenon (`shows`: both intervals above 1), best ratio first.

    The one selection of the chapter: the table marks these rows, and every sentence that names
    a head takes it from here, so no sentence names a head the table does not mark (the
    best-scoring head among them only when it passes)."""
    return scores[scores["shows"].astype(bool)].sort_values("ratio", ascending=False)


def top_heads(scores: pd.DataFrame) -> list[tuple[int, int]]:
    """(layer, head) of the heads that show the phenomenon (`passing_heads`), best ratio first;
    the single best head when none does."""
    chosen = passing_heads(scores)
    if chosen.empty:
        chosen = scores.sort_values("ratio", ascending=False).head(1)
    return [(int(r.layer), int(r.head)) for r in chosen.itertuples()]


def layer_heads(scores: pd.DataFrame, at_least: int = 1) -> tuple[int, list[int]]:
    """The best-scoring head's layer and the heads of that layer to draw: those that show the
    phenomenon, best first, filled up with the next-best heads of the layer to `at_least`
    (the `attention --head best-...` command's choice, which prints every ratio it draws)."""
    layer = top_heads(scores)[0][0]
    ranked = scores[scores["layer"] == layer].sort_values("ratio", ascending=False)
    shown = [int(h) for h in passing_heads(ranked)["head"]]
    rest = [int(h) for h in ranked["head"] if int(h) not in shown]
    return layer, (shown + rest)[: max(at_least, len(shown))]


@dataclass(frozen=True)
class DrawnHeads:
    """What a figure of the chapter draws: a layer, its heads, and which of them pass the test
    (`passing_heads`; empty when no head of the model does)."""

    layer: int
    heads: list[int]
    passing: list[int]


def figure_heads(scores: pd.DataFrame, count: int | None = None) -> DrawnHeads:
    """The layer and heads a figure draws. With heads passing: the layer of the first of them,
    its passing heads best first, filled up with the layer's next heads by ratio to `count`
    (cut to `count` when given). With none: the last layer's first `count` heads (every head
    without `count`), as the paper's Figure 3 draws every head of a layer, so the figure singles
    out no head the test did not."""
    passing = passing_heads(scores)
    if passing.empty:
        layer = int(scores["layer"].max())
        heads = sorted(int(h) for h in scores[scores["layer"] == layer]["head"])
        return DrawnHeads(layer, heads[:count] if count else heads, [])
    layer, heads = layer_heads(scores, at_least=count or 1)
    heads = heads[:count] if count else heads
    shown = [int(h) for h in passing[passing["layer"] == layer]["head"]]
    return DrawnHeads(layer, heads, [h for h in heads if h in shown])


def query_word(pieces: Sequence[str], phenomenon: str) -> str | None:
    """The query word of the phenomenon's first pair in one sentence's pieces, if any."""
    words, spans = words_of(pieces)
    found = [(q, k) for q, k in PHENOMENA[phenomenon](words) if spans[q] and spans[k]]
    return words[found[0][0]].strip(PUNCTUATION) if found else None


@dataclass
class Example:
    """One pair drawn for a head: the sentence, its query and key words, and the head's weight
    on the pair beside the even spread."""

    sentence: int
    text: str
    query: str
    key: str
    weight: float
    baseline: float


def example(
    samples: PairSamples,
    encoded: Sequence[EncodedSentence],
    layer: int,
    heads: int | Sequence[int],
    *,
    max_words: int = 14,
) -> Example:
    """The pair on which the heads (layer, heads) put the most weight beyond its baseline (one
    head's weight, or the mean over several heads'), among sentences of at most `max_words`
    words whose query word is the first word of that spelling (so `find_word` follows the same
    word): the clearest case, not a typical one."""
    index = [h - 1 for h in ([heads] if isinstance(heads, int) else heads)]
    best, best_gain = None, -math.inf
    for s, q, k in samples.pairs:
        words, spans = words_of(encoded[s].pieces)
        if (
            len(words) > max_words
            or [normalise(w) for w in words].index(normalise(words[q])) != q
        ):
            continue
        w, b = pair_weight(encoded[s].weights, spans[q], spans[k])
        weight = float(w[layer - 1, index].mean())
        if weight - b > best_gain:
            best_gain = weight - b
            best = Example(
                s,
                encoded[s].text,
                words[q].strip(PUNCTUATION),
                words[k].strip(PUNCTUATION),
                weight,
                b,
            )
    if best is None:
        raise ValueError("no short sentence with a usable pair")
    return best


# ------------------------------------------------------------------------------ chapter 08's tables
SCORE_FORMATS = {
    "weight": "{:.3f}",
    "from every word": "{:.3f}",
    "even spread": "{:.3f}",
    "ratio": "{:.2f}",
    "over every word": "{:.2f}",
    "over every word low": "{:.2f}",
}


def score_table(table: pd.DataFrame) -> pd.DataFrame:
    """The per-head table as the chapter shows it: weights, the even spread, the ratio and its
    interval, the ratio over every word and its lower end, and "yes" on the rows of
    `passing_heads`, the heads the chapter's sentences may name."""
    passing = set(zip(*(passing_heads(table)[c] for c in ("layer", "head"))))
    shown = table.assign(
        interval=[f"{a:.2f}-{b:.2f}" for a, b in zip(table["low"], table["high"])],
        above=[
            "yes" if (layer, head) in passing else ""
            for layer, head in zip(table["layer"], table["head"])
        ],
    )
    columns = ["layer", "head", "weight", "from every word", "even spread", "ratio"]
    return shown[
        [*columns, "interval", "over every word", "over every word low", "above"]
    ]


def encoder_head_table(per_caption: pd.DataFrame, scores: dict) -> pd.DataFrame:
    """Per encoder head over the captions: mean entropy (bits) with its standard error over
    captions, mean distance, and the two phenomena's ratios (`scores` from `head_scores`)."""
    by_head = per_caption.groupby(["layer", "head"])
    heads = by_head[["entropy (bits)", "mean distance"]].mean()
    heads["entropy s.e."] = by_head["entropy (bits)"].std() / np.sqrt(by_head.size())
    for name in ("dependency", "anaphora"):
        heads[f"{name} ratio"] = scores[name].set_index(["layer", "head"])["ratio"]
    return heads.reset_index()


HEAD_FORMATS = {
    "entropy (bits)": "{:.2f}",
    "entropy s.e.": "{:.3f}",
    "mean distance": "{:.2f}",
    "dependency ratio": "{:.2f}",
    "anaphora ratio": "{:.2f}",
}

# Two heads of a layer "differ" when their mean entropies are further apart than this many
# standard errors of a mean (the larger of the layer's).
APART_SE = 4


def layers_apart(heads: pd.DataFrame) -> list[int]:
    """The layers whose sharpest and broadest heads differ by more than `APART_SE` errors."""
    return [
        int(layer)
        for layer, rows in heads.groupby("layer")
        if (rows["entropy (bits)"].max() - rows["entropy (bits)"].min())
        > APART_SE * rows["entropy s.e."].max()
    ]
