"""The one door to training: the initial weights come from the seed alone, dropout from
seed * 1000 + rank, and the trainer built is the one that trains."""

import pytest
import torch

from annotated_transformer.training.fit import Fitted, build_model, fit
from tests.support.training import VOCAB, FakeTokenizer, copy_pairs, tiny_profile

PROFILE = tiny_profile(max_steps=2, eval_every=0, save_every_steps=None)
CONFIG, SETTINGS = PROFILE.model_config(), PROFILE.train_settings()
TRAIN, VALID = copy_pairs(40, 0), copy_pairs(6, 1)


class Tokenizer(FakeTokenizer):
    vocab_size = VOCAB


class Started(Exception):
    """Raised by `on_start` to look at the trainer before its first step."""


def started_trainer(tmp_path, settings=SETTINGS, **kwargs):
    def stop_before_training(trainer):
        raise Started(trainer)

    with pytest.raises(Started) as caught:
        fit(
            CONFIG,
            Tokenizer(),
            TRAIN,
            VALID,
            settings,
            tmp_path,
            show_progress=False,
            on_start=stop_before_training,
            **kwargs,
        )
    return caught.value.args[0]


def same_weights(a, b) -> bool:
    return all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values())
    )


def test_build_model_weights_depend_on_the_seed_alone():
    torch.manual_seed(123)
    first = build_model(CONFIG, VOCAB, seed=5)
    torch.rand(1000)  # whatever was drawn before
    again = build_model(CONFIG, VOCAB, seed=5)
    other = build_model(CONFIG, VOCAB, seed=6)
    assert same_weights(first, again) and not same_weights(first, other)


def test_one_vocabulary_is_shared_and_a_pair_is_kept_apart():
    shared = build_model(CONFIG, VOCAB, seed=0)
    apart = build_model(CONFIG, (VOCAB, VOCAB + 6), seed=0)
    assert shared.share_embeddings and shared.src_embed is shared.tgt_embed
    assert not apart.share_embeddings
    assert (apart.src_embed.num_embeddings, apart.tgt_embed.num_embeddings) == (
        VOCAB,
        VOCAB + 6,
    )


def test_fits_initial_weights_depend_on_the_seed_alone(tmp_path):
    torch.manual_seed(1)
    first = started_trainer(tmp_path / "a")
    torch.manual_seed(2)
    torch.rand(10)
    again = started_trainer(tmp_path / "b")
    other = started_trainer(tmp_path / "c", SETTINGS.replace(seed=SETTINGS.seed + 1))
    assert same_weights(first.model, again.model)
    assert not same_weights(first.model, other.model)
    assert same_weights(first.model, build_model(CONFIG, VOCAB, seed=SETTINGS.seed))


def test_dropout_draws_from_the_seed_times_1000(tmp_path):
    started_trainer(tmp_path)
    after_start = torch.rand(4)
    torch.manual_seed(SETTINGS.seed * 1000 + 0)  # rank 0
    assert torch.equal(torch.rand(4), after_start)


def test_the_vocabulary_defaults_to_the_tokenizers(tmp_path):
    trainer = started_trainer(tmp_path)
    assert trainer.model.tgt_embed.num_embeddings == VOCAB
    wider = started_trainer(tmp_path / "w", vocab_size=(VOCAB, VOCAB + 2))
    assert wider.model.tgt_embed.num_embeddings == VOCAB + 2


def test_a_missing_resume_checkpoint_is_named(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"--resume .*last\.pt: no such checkpoint"
    ):
        fit(
            CONFIG,
            Tokenizer(),
            TRAIN,
            VALID,
            SETTINGS,
            tmp_path,
            show_progress=False,
            resume=True,
        )


def test_fit_trains_the_model_it_returns(tmp_path):
    fitted = fit(
        CONFIG, Tokenizer(), TRAIN, VALID, SETTINGS, tmp_path, show_progress=False
    )
    assert isinstance(fitted, Fitted) and fitted.model is fitted.trainer.model
    assert fitted.result.progress.step == 2 and fitted.result.stopped_by == "max_steps"
    assert not same_weights(fitted.model, build_model(CONFIG, VOCAB, seed=SETTINGS.seed))
    assert (tmp_path / "last.pt").is_file()
