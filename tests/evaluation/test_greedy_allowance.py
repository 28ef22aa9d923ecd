"""Greedy decoding allows each sentence max_len_a * its own length + max_len_b tokens, as beam
search does: a sentence's translation is the same alone or in a batch with longer ones, also when
it never emits eos and runs to its allowance."""

from __future__ import annotations

import pytest
import torch

from annotated_transformer.data.batching import collate_sources
from annotated_transformer.evaluation.scoring import translate
from annotated_transformer.model.decoding import greedy_decode
from annotated_transformer.model.static_decoding import static_greedy_decode
from annotated_transformer.training.checkpoint import model_from_checkpoint
from tests.support.tiny_checkpoint import write_tiny_checkpoint

SENTENCES = [
    "Two dogs run.",
    "A man in a blue shirt is playing a guitar in the park on the street.",
    "Ein Hund.",
    "The law will never be perfect, but its application should be just.",
]
A, B = 1.0, 5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "tiny.pt"
    return model_from_checkpoint(write_tiny_checkpoint(path, layers=1, heads=2))


def real_tokens(row: torch.Tensor, pad_id: int) -> list[int]:
    return [t for t in row.tolist() if t != pad_id]


@pytest.mark.parametrize("cuda_graphs", [False, True])
def test_a_sentence_translates_the_same_alone_and_in_a_batch(tiny, cuda_graphs):
    model, tokenizer = tiny
    settings = dict(beam_size=1, max_len_a=A, max_len_b=B, cuda_graphs=cuda_graphs)
    together = translate(model, tokenizer, SENTENCES, **settings)
    alone = [translate(model, tokenizer, [s], **settings)[0] for s in SENTENCES]
    assert together == alone


def test_each_row_stops_at_its_own_allowance(tiny):
    """The random model never emits eos here, so every row runs to a * its length + b."""
    model, tokenizer = tiny
    c = model.config
    encoded = [tokenizer.encode(s) for s in SENTENCES]
    src = collate_sources(encoded, c.pad_id, c.eos_id)
    lengths = [len(ids) + 1 for ids in encoded]  # with the eos the source ends with
    assert len(set(lengths)) == len(lengths)  # rows of different widths share the batch
    batch = greedy_decode(model, src, max_len_a=A, max_len_b=B)
    for row, ids, length in zip(batch, encoded, lengths):
        alone = greedy_decode(
            model, src.new_tensor([ids + [c.eos_id]]), max_len_a=A, max_len_b=B
        )[0]
        assert c.eos_id not in alone.tolist()  # never ends by itself
        assert real_tokens(row, c.pad_id) == alone.tolist()
        assert len(alone) == 1 + int(A * length + B)  # bos and its own allowance
    recomputed = greedy_decode(model, src, max_len_a=A, max_len_b=B, use_cache=False)
    static = static_greedy_decode(model, src, max_len_a=A, max_len_b=B, graphs=False)
    assert torch.equal(recomputed, batch) and torch.equal(static, batch)
    # read back every 3 steps, as on a GPU: the steps past every row's end are trimmed
    late = greedy_decode(model, src, max_len_a=A, max_len_b=B, check_every=3)
    assert torch.equal(late, batch)


def test_the_hook_sees_each_rows_own_tokens_left(tiny):
    model, tokenizer = tiny
    c = model.config
    encoded = [tokenizer.encode(s) for s in SENTENCES[:2]]
    src = collate_sources(encoded, c.pad_id, c.eos_id)
    seen = []

    def everything(tokens, source_index, steps_left):
        seen.append(steps_left.tolist())
        return torch.ones(
            tokens.size(0), model.tgt_embed.num_embeddings, dtype=torch.bool
        )

    greedy_decode(model, src, max_len_a=A, max_len_b=B, allowed_tokens=everything)
    assert seen[0] == [int(A * (len(ids) + 1) + B) for ids in encoded]


@pytest.mark.parametrize(
    "allowance",
    [dict(), dict(max_new_tokens=3, max_len_a=1.0, max_len_b=2), dict(max_len_a=1.0)],
)
def test_one_allowance_exactly(tiny, allowance):
    model, tokenizer = tiny
    src = torch.tensor([tokenizer.encode("Two dogs run.") + [model.config.eos_id]])
    with pytest.raises(ValueError, match="one of the two"):
        greedy_decode(model, src, **allowance)
