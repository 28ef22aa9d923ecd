"""The parser's extended run: when a job stops, and a second call continues without retraining."""

from __future__ import annotations

import json

import pytest

from annotated_transformer.experiments import parsing_extended as extended
from annotated_transformer.experiments.parsing_curve import ParserRecipe


def test_a_job_stops_once_its_best_is_a_fifth_of_its_epochs_behind():
    rising = [float(i) for i in range(30)]
    assert not extended.should_stop(rising, min_epochs=20, max_epochs=300)
    flat = rising[:20] + [19.0] * 5  # best at epoch 20, 25 trained: 5 >= 0.2 * 25
    assert extended.should_stop(flat, min_epochs=20, max_epochs=300)
    assert not extended.should_stop(flat[:24], min_epochs=20, max_epochs=300)
    assert not extended.should_stop([5.0, 1.0, 1.0], min_epochs=20, max_epochs=300)
    assert extended.should_stop([1.0, 2.0], min_epochs=20, max_epochs=2)


def _recipe(**changes) -> ParserRecipe:
    base = dict(n_layers=1, d_model=32, d_ff=64, n_heads=2, warmup_steps=20, epochs=2)
    return ParserRecipe(**(base | {"snapshot_epochs": 1, "average_last": 2} | changes))


def test_another_recipe_or_a_strangers_folder_is_refused(tmp_path):
    (tmp_path / extended.PLAN_NAME).write_text(
        json.dumps({"recipe": _recipe().to_dict()})
    )
    extended.ParserCurveRun(
        _recipe(epochs=50), tmp_path
    ).check_folder()  # more epochs: fine
    with pytest.raises(ValueError, match="another recipe .*d_model"):
        extended.ParserCurveRun(_recipe(d_model=64, d_ff=64), tmp_path).check_folder()
    stranger = tmp_path / "mine"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not a parser run"):
        extended.ParserCurveRun(_recipe(), stranger).check_folder()


@pytest.mark.slow  # trains a small parser on the Penn Treebank sample
def test_a_second_call_continues_and_keeps_the_best(data_dir, tmp_path):
    shares = [0.05]
    first = extended.ParserCurveRun(_recipe(), tmp_path, min_epochs=1, max_epochs=1)
    assert extended.train_all(first, shares, data_dir=data_dir, show_progress=False)[
        "epochs"
    ] == {0.05: 1}
    more = extended.ParserCurveRun(_recipe(), tmp_path, min_epochs=1, max_epochs=2)
    summary = extended.train_all(more, shares, data_dir=data_dir, show_progress=False)
    assert summary == {"trained": 1, "epochs": {0.05: 2}}
    curve = more.curve(0.05)
    assert [p["epoch"] for p in curve] == [1, 2] and curve[1]["step"] == 2 * curve[0][
        "step"
    ]
    folder = more.folder(0.05)
    assert (folder / extended.BEST_NAME).is_file()
    assert (folder / extended.BEST_AVERAGE_NAME).is_file()
    assert (
        extended.train_all(more, shares, data_dir=data_dir, show_progress=False)[
            "trained"
        ]
        == 0
    )


def test_an_export_into_the_run_folder_is_refused(tmp_path):
    run = extended.ParserCurveRun(_recipe(), tmp_path)
    with pytest.raises(ValueError, match="inside the run folder"):
        extended.export(run, [1.0], tmp_path / "share_1" / "curve.json")
