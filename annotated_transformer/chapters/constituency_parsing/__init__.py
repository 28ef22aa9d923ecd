"""Trees as sequences: constituency parsing as translation (paper section 6.3).

The paper parses English with the translation model unchanged, following Vinyals et al. (2015),
"Grammar as a foreign language": the source is the sentence, the target is its parse tree written
out depth first as one line of tokens. This package holds everything that is specific to trees, one
module per part (`treebank`, `linearization`, `scoring`, `vocabulary`, `search`, `baselines`,
`training`), chapter 07's sentences (`sentences`), tables and charts (`report`) and results record
(`record`), the learning curves (`curve`) and the run until dev F1 stops rising (`extended`); the
model, training (`fit`) and beam search are the translation ones. The parser's own parts: a target
vocabulary of the linearization's symbols and a source vocabulary of words, with separate
embeddings (`ParserVocabularies`); a constraint that lets the search write valid trees only
(`TreeConstraint`, a hook of `beam_search`); and the report beside two baselines
(`report_parser`).

Conventions of the linearization (`linearize`). The paper's text does not say which symbols fill the
word slots; the authors' released code (tensor2tensor, ``data_generators/wsj_parsing.py``,
``words_and_tags_from_wsj_tree``) writes each word's part-of-speech tag, strips the TOP bracket and
labels every closing bracket (``S NP DT NN /NP VP VBD /VP /S``), with separate source and target
vocabularies (``wsj_source.vocab``, ``wsj_target.vocab``, of word pieces there). Chapter 07's parser
is that linearization (``tags=True``); ``tags=False`` writes ``XX`` in every slot, as Vinyals et al.
did, and the chapter trains it as a variant.

- An opening bracket carries its label, ``(NP``, and so does a closing one, ``)NP`` (tensor2tensor
  writes ``NP`` and ``/NP``): the decoder always knows which constituent it is closing.
- Words are *not* written in the target (the decoder would have to copy them); each word is one
  slot, holding its part-of-speech tag (``tags=True``) or ``XX``. Vinyals et al. replaced the tags
  by ``XX`` because the F1 score does not count them and dropping them helped them.
- Before linearizing, `clean_tree` applies the usual Penn Treebank preprocessing: the empty top
  bracket (or TOP / ROOT) goes, empty elements (``-NONE-`` traces) and the constituents left empty
  without them go, and function tags and indices are cut (``NP-SBJ-1`` -> ``NP``).
- The source vocabulary is words (seen at least twice in training; rarer ones as a class of their
  spelling, `unknown_word_class`), not word pieces; the target vocabulary is the linearization's
  own symbols (`tree_vocabulary`).

``(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))`` becomes, with tags,
``(S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S``, and without,
``(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S``; `delinearize` puts the words back in the slots.
A model's output need not be a tree; the repair rule is stated in `delinearize`.

The score (`bracket_score`) is labelled bracket F1 as evalb computes it with Collins's parameter
file, COLLINS.prm, the setting behind the WSJ numbers of Table 4: punctuation (the tags
``, : `` '' .``) is deleted from both trees before spans are counted, by the gold tree's tags (a
parser's predicted tags may differ), TOP / ROOT brackets are not counted, nor are part-of-speech
brackets, PRT counts as ADVP, and brackets are matched as a multiset of (label, first word, last
word). `corpus_scores` gives evalb's two summaries: all sentences, and those of at most 40 words.
"""

from .baselines import (  # noqa: F401
    baselines,
    flat_tree,
    most_frequent_labels,
    right_branching_tree,
)
from .linearization import (  # noqa: F401
    WORD_SLOT,
    Delinearized,
    delinearize,
    linearize,
    with_slot_tags,
)
from .scoring import (  # noqa: F401
    EVALB_CONVENTIONS,
    PUNCTUATION_TAGS,
    BracketScore,
    bracket_score,
    corpus_score,
    corpus_scores,
    labelled_brackets,
    paired_f1_bootstrap,
)
from .search import (  # noqa: F401
    PAPER_ALPHA,
    PAPER_BEAM,
    PAPER_EXTRA_LENGTH,
    ParseRun,
    TreeConstraint,
    choose_search,
    evaluate_parser,
    parse_sentences,
)
from .training import (  # noqa: F401
    ParsingData,
    load_parser,
    parser_max_len,
    report_parser,
    train_parser,
    write_trees,
)
from .treebank import (  # noqa: F401
    clean_tree,
    is_preterminal,
    parse_bracketed,
    read_treebank,
    split_by_file,
    strip_function_tags,
)
from .vocabulary import (  # noqa: F401
    BOS_ID,
    EOS_ID,
    SPECIAL_SYMBOLS,
    UNK_ID,
    ParserVocabularies,
    Vocabulary,
    tree_vocabulary,
    word_vocabulary,
)
