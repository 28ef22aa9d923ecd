"""The parser's learning curves (annotated_transformer.chapters.constituency_parsing.curve): shares of whole
files, snapshots at the end of every k-th epoch, the average of the last ones, and the check that
tells a parser that reads its sentence from one that does not."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from nltk import Tree

from annotated_transformer.chapters import constituency_parsing as parsing
from annotated_transformer.chapters.constituency_parsing import curve as parsing_curve
from annotated_transformer.training.checkpoint import (
    CheckpointError,
    list_snapshots,
    load_checkpoint,
)
from annotated_transformer.training.fit import build_model

TINY = parsing_curve.ParserRecipe(
    n_layers=1,
    d_model=32,
    d_ff=64,
    n_heads=2,
    dropout=0.0,
    batch_tokens=200,
    warmup_steps=10,
    peak_lr=3e-3,
    epochs=4,
    snapshot_epochs=2,
    average_last=2,
    precision="fp32",
)

SHAPES = [
    "(S (NP (DT the) (NN {0})) (VP (VBZ {1})) (. .))",
    "(S (NP (NNS {0})) (VP (VBD {1}) (NP (DT a) (NN {2}))) (. .))",
    "(S (NP (PRP it)) (VP (VBZ {1}) (PP (IN at) (NP (NN {0})))))",
]
WORDS = ["dog", "cat", "bird", "sees", "runs", "tree", "barks", "house", "sings"]


def trees(n: int, offset: int = 0) -> list[Tree]:
    out = []
    for i in range(n):
        w = [WORDS[(i + offset + k) % len(WORDS)] for k in range(3)]
        out.append(Tree.fromstring(SHAPES[(i + offset) % len(SHAPES)].format(*w)))
    return out


def test_a_share_takes_whole_files_from_the_front():
    files = [trees(3, k) for k in range(4)]
    assert parsing_curve.first_share(files, 1.0) == [t for f in files for t in f]
    assert parsing_curve.first_share(files, 0.5) == files[0] + files[1]
    assert parsing_curve.first_share(files, 0.25) == files[0]


@pytest.mark.parametrize("share", [0.01, 0.0001, 0.125])
def test_a_share_below_one_files_worth_is_refused_not_rounded_up_to_a_file(share):
    """A share that rounds to no whole file would train on a whole file, several times the share
    asked for: one line naming the share, the file count and the smallest share that means one."""
    files = [trees(3, k) for k in range(4)]
    with pytest.raises(ValueError) as caught:
        parsing_curve.first_share(files, share)
    message = str(caught.value)
    assert f"share of {share:g} of the 4 training files" in message
    assert "at least 0.25" in message and "\n" not in message
    for bad in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match="share"):
            parsing_curve.first_share(files, bad)


def test_a_recipe_names_unknown_fields():
    with pytest.raises(ValueError, match="unknown parser recipe fields"):
        parsing_curve.ParserRecipe.from_dict({"layers": 2})
    recipe = parsing_curve.ParserRecipe.from_dict(TINY.to_dict())
    assert recipe == TINY
    with pytest.raises(ValueError, match="at least 1"):
        parsing_curve.ParserRecipe(epochs=0)


def test_curves_snapshot_every_kth_epoch_and_average_the_last(tmp_path):
    files = [trees(6, k) for k in range(4)]
    dev = trees(4, 1)
    runs = list(
        parsing_curve.learning_curves(files, dev, TINY, [1.0, 0.5, 1.0], tmp_path)
    )
    assert [r.share for r in runs] == [1.0, 0.5]  # largest first, once each
    full, half = runs
    assert (full.train_trees, half.train_trees) == (24, 12)
    for run in runs:
        assert run.epochs == pytest.approx(4.0)
        assert [p["epochs"] for p in run.dev_f1] == pytest.approx([2.0, 4.0])
        assert len(run.dev_loss) >= 4 and all(0 < p["nll"] < 20 for p in run.dev_loss)
        assert all(0 <= p["f1"] <= 100 and p["invalid"] == 0 for p in run.dev_f1)
        snapshots = list_snapshots(run.run_dir)
        assert [int(load_checkpoint(p)["step"]) for p in snapshots] == [
            p["step"] for p in run.dev_f1
        ]
        averaged = torch.load(run.averaged, weights_only=False)
        last = [load_checkpoint(p)["model"] for p in snapshots[-2:]]
        name = next(iter(averaged["model"]))
        assert torch.allclose(
            averaged["model"][name], (last[0][name] + last[1][name]) / 2
        )
    assert half.steps < full.steps


def test_source_dependence_is_zero_for_a_parser_that_cannot_see_its_sentence():
    data = parsing.ParsingData.from_splits({"train": trees(12)}, min_count=1)
    config = TINY.config(data)
    model = build_model(config, data.vocabularies.sizes, seed=3).eval()
    seeing = parsing_curve.source_dependence(model, data.vocabularies, trees(12))
    assert seeing["trees"] == 12 and seeing["trees_with_another_sentence"] > 0
    assert seeing["nll_own_sentence"] != seeing["nll_other_sentence"]
    with torch.no_grad():
        for layer in model.decoder_layers:
            for p in layer.cross_attn.parameters():
                p.zero_()
    blind = parsing_curve.source_dependence(model, data.vocabularies, trees(12))
    assert blind["nll_own_sentence"] == pytest.approx(
        blind["nll_other_sentence"], rel=1e-6
    )


def test_choose_search_scores_each_beam_on_dev_and_keeps_the_best():
    data = parsing.ParsingData.from_splits({"train": trees(6)}, min_count=1)
    model = build_model(TINY.config(data), data.vocabularies.sizes, seed=3).eval()
    runs, chosen = parsing.choose_search(model, data.vocabularies, trees(3), beams=(1, 2))
    assert set(runs) == {"greedy, constrained", "beam 2, constrained"}
    assert chosen.score.f1 == max(r.score.f1 for r in runs.values())
    assert all(r.score.invalid == 0 for r in runs.values())  # constrained: always a tree


def test_chapter_runs_train_the_tags_parser_with_its_xx_twin_beside_it():
    files = [trees(6, k) for k in range(4)]
    tags = dataclasses.replace(TINY, tags=True, epochs=2, snapshot_epochs=1)
    live = parsing_curve.chapter_runs(
        files, trees(4, 1), tags, [0.5], show_progress=False
    )
    assert sorted(live.runs) == [0.5, 1.0]  # all the files always train
    assert all(r.tags for r in live.runs.values()) and not live.variant.tags
    assert live.variant.train_trees == live.runs[1.0].train_trees == 24
    model, vocabularies = parsing.load_parser(live.states["tags"], "cpu")
    assert vocabularies.tags and not parsing.load_parser(live.states["xx"], "cpu")[1].tags
    assert live.seconds > 0
    with pytest.raises(ValueError, match="tags=True"):
        parsing_curve.chapter_runs(files, trees(4, 1), TINY, [1.0], show_progress=False)


@pytest.mark.parametrize(
    "epochs, every, average", [(4, 2, 3), (1, 1, 3), (12, 5, 3), (2, 3, 1)]
)
def test_a_recipe_that_averages_more_snapshots_than_it_writes_is_refused(
    epochs, every, average
):
    with pytest.raises(ValueError) as caught:
        dataclasses.replace(
            TINY, epochs=epochs, snapshot_epochs=every, average_last=average
        )
    message = str(caught.value)
    assert "--average" in message and "--max-epochs" in message and "\n" not in message
    assert dataclasses.replace(TINY, epochs=6, snapshot_epochs=2, average_last=3)


def test_chapter_runs_refuse_an_averaged_model_with_a_non_finite_weight(monkeypatch):
    """The averaged models chapter 07 keeps pass the finite-weight check of `load_checkpoint`:
    one line naming the file and the tensor."""
    real_average = parsing_curve.average_checkpoints

    def poisoned_average(paths):
        merged = real_average(paths)
        name = next(iter(merged["model"]))
        merged["model"][name] = torch.full_like(merged["model"][name], float("nan"))
        return merged

    monkeypatch.setattr(parsing_curve, "average_checkpoints", poisoned_average)
    files = [trees(6, k) for k in range(2)]
    tags = dataclasses.replace(
        TINY, tags=True, epochs=1, snapshot_epochs=1, average_last=1
    )
    with pytest.raises(CheckpointError) as caught:
        parsing_curve.chapter_runs(files, trees(4, 1), tags, [1.0], show_progress=False)
    message = str(caught.value)
    assert parsing_curve.AVERAGED_NAME in message and "holds NaN" in message
    assert "weight src_embed.weight" in message and "\n" not in message


def test_on_a_gpu_the_runs_share_the_device_in_the_workers_asked_for(
    monkeypatch, tmp_path
):
    from annotated_transformer.runtime import side_by_side

    asked = {}

    def record(function, jobs, *, workers):
        asked.update(workers=workers, devices={job["device"] for job in jobs})
        return iter(())

    monkeypatch.setattr(side_by_side, "side_by_side", record)
    files, dev = [trees(6, k) for k in range(4)], trees(4, 1)
    list(
        parsing_curve.learning_curves(
            files, dev, TINY, [1.0, 0.5], tmp_path, workers=4, device="cuda"
        )
    )
    assert asked == {"workers": 4, "devices": {"cuda"}}  # before: one after another
