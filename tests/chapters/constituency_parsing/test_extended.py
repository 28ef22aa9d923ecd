"""The parser's extended run: when a job stops, and a second call continues without retraining."""

from __future__ import annotations

import json

import pytest

from annotated_transformer.chapters.constituency_parsing import extended
from annotated_transformer.chapters.constituency_parsing.curve import ParserRecipe
from annotated_transformer.training.long_run import JobRecord


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
    extended.write_plan(extended.ParserCurveRun(_recipe(), tmp_path))
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
    plan = extended.long_run(tmp_path).plan()
    assert plan.targets == {"min_epochs": 1, "max_epochs": 2}  # the rule of the last call
    folder = more.folder(0.05)
    assert (folder / extended.BEST_NAME).is_file()
    assert (folder / extended.BEST_AVERAGE_NAME).is_file()
    assert (
        extended.train_all(more, shares, data_dir=data_dir, show_progress=False)[
            "trained"
        ]
        == 0
    )


def test_a_run_is_opened_under_the_stopping_rule_its_folder_records(tmp_path):
    extended.write_plan(
        extended.ParserCurveRun(_recipe(), tmp_path, min_epochs=3, max_epochs=9)
    )
    opened = extended.open_run(tmp_path)
    assert (opened.min_epochs, opened.max_epochs) == (3, 9)
    assert opened.recipe == _recipe(epochs=9)  # its epochs: the rule's most


def test_an_export_into_the_run_folder_is_refused(tmp_path):
    run = extended.ParserCurveRun(_recipe(), tmp_path)
    with pytest.raises(ValueError, match="inside the run folder"):
        extended.export(run, [1.0], tmp_path / "share_1" / "curve.json")


# ------------------------------------------------------------------------------- the test score
SHAPES = [
    "(S (NP (DT the) (NN {0})) (VP (VBZ {1})) (. .))",
    "(S (NP (NNS {0})) (VP (VBD {1}) (NP (DT a) (NN {2}))) (. .))",
    "(S (NP (PRP it)) (VP (VBZ {1}) (PP (IN at) (NP (NN {0})))))",
]
WORDS = ["dog", "cat", "bird", "sees", "runs", "tree", "barks", "house", "sings"]


def _trees(n: int, offset: int = 0) -> list:
    from nltk import Tree

    return [
        Tree.fromstring(
            SHAPES[(i + offset) % len(SHAPES)].format(
                *(WORDS[(i + offset + k) % len(WORDS)] for k in range(3))
            )
        )
        for i in range(n)
    ]


# Training files, dev and test trees of the tiny run: no treebank needed.
SPLITS = ([_trees(6, k) for k in range(4)], _trees(6, 1), _trees(5, 2))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run folder trained by the package's own `train_epoch`: all the files 6 epochs (the most
    the rule allows: stopped; its models write short trees, so beam 21 is quick), half of them 1
    epoch (still training), no quarter."""
    recipe = _recipe(
        dropout=0.0, batch_tokens=60, warmup_steps=10, peak_lr=1e-2, epochs=6,
        precision="fp32", tags=True,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("parser-run")
    run = extended.ParserCurveRun(recipe, out, min_epochs=1, max_epochs=6)
    extended.write_plan(run)
    files, dev, _ = SPLITS
    for share, epochs in ((1.0, 6), (0.5, 1)):
        for _ in range(epochs):
            run.train_epoch(share, extended.first_share(files, share), dev)
    extended.record_stops(run, [1.0, 0.5])
    return out


def _score(out, path, lines, shares=(1.0, 0.5, 0.25)):
    return extended.score_test(
        extended.open_run(out),
        shares,
        path,
        splits=SPLITS,
        show_progress=False,
        say=lines.append,
    )


def test_the_test_score_is_chosen_on_dev_decoded_once_and_never_redone(
    tiny_run, tmp_path, capsys
):
    from annotated_transformer.chapters import constituency_parsing as parsing
    from annotated_transformer.chapters.constituency_parsing import sentences as describe
    from annotated_transformer.chapters.constituency_parsing import verdicts
    from annotated_transformer.cli import main

    path = tmp_path / "results" / "test.json"
    lines: list[str] = []
    summary = _score(tiny_run, path, lines)
    assert (summary["scored"], summary["unfinished"]) == ([1.0], [0.5])
    assert any(
        line.startswith("share_0.5: still training (1 epoch,") and "skipped" in line
        for line in lines
    )
    assert any(line.startswith("share_0.25: no epoch has finished") for line in lines)
    document = json.loads(path.read_text())
    assert document == summary["document"]
    (job,) = document["jobs"]
    assert job["share"] == 1.0 and job["epochs_trained"] == 6

    # every candidate's dev score is recorded, and the choice is the best of the four
    dev = job["dev"]
    assert set(dev) == {"best.pt", "best_average.pt"}
    assert all(
        set(d) == {"greedy, constrained", "beam 21, constrained"} for d in dev.values()
    )
    chosen = job["chosen_on_dev"]
    assert dev[chosen["snapshot"]][chosen["search"]]["f1"] == max(
        s["f1"] for d in dev.values() for s in d.values()
    )
    curve = extended.ParserCurveRun(_recipe(), tiny_run).curve(1.0)
    best_epoch = max(p["epoch"] for p in curve if p.get("best"))
    assert (
        job["snapshots"]["best.pt"]["epochs"] == [best_epoch]
        and chosen["epoch"] == best_epoch
    )
    assert job["snapshots"]["best_average.pt"]["epochs"][-1] == best_epoch

    # the recorded test F1 is what the chosen model and search parse on the test trees
    model, vocabularies = parsing.load_parser(tiny_run / "share_1" / chosen["snapshot"])
    again = parsing.evaluate_parser(
        model, vocabularies, SPLITS[2], beam_size=chosen["beam_size"], constrained=True
    )
    test = job["test"]
    assert test["sentences"] == 5 and test["f1"] == round(again.score.f1, 2)
    assert test["f1_ci95"][0] <= test["f1"] <= test["f1_ci95"][1]
    right = job["against_floors"][job["right_branching_floor"]]
    assert right["difference"] == pytest.approx(
        again.score.f1 - right["first"]["f1"], abs=1e-9
    )
    assert (path.parent / job["files"]["predicted"]).is_file()
    assert {"date", "git_commit", "machine"} <= set(job["provenance"])

    # chapter 07's sentence says what the file holds
    text = describe.describe_extended_test(document, 91.3, 40_000, [1.0, 0.5, 0.25])
    low, high = test["f1_ci95"]
    assert f"**{test['f1']:.1f} F1** (95% interval [{low:.1f}, {high:.1f}])" in text
    assert (
        f"dev chose {describe.say_chosen(verdicts.chosen_model(job))} (dev F1 {chosen['dev_f1']:.1f}"
        in text
    )
    assert (
        "The jobs on half and a quarter of the files are not scored on test yet" in text
    )

    # scored once: a second call, through the command, scores nothing and rewrites nothing
    written = path.read_bytes()
    rc = main(
        ["parser-curve", "--out", str(tiny_run), "--score-test", str(path),
         "--min-epochs", "1", "--max-epochs", "6", "--shares", "1", "0.5"]
    )  # fmt: skip
    output = capsys.readouterr().out
    assert rc == 0 and path.read_bytes() == written
    assert "share_1: already scored on test" in output and "move" in output
    assert "share_0.5: still training" in output
    assert "shares scored on test: none" in output


def test_the_test_score_refuses_bad_input_before_any_work(tiny_run, tmp_path, capsys):
    from filelock import FileLock

    from annotated_transformer.cli import main
    from annotated_transformer.training.run_folder import LOCK_NAME

    inside = tiny_run / "share_1" / "test.json"
    with pytest.raises(ValueError, match="inside the run folder"):
        _score(tiny_run, inside, [])
    assert not inside.exists()
    with pytest.raises(ValueError, match="does not exist"):
        extended.open_run(tmp_path / "missing")
    with pytest.raises(ValueError, match="not a parser-curve run folder"):
        extended.open_run(tmp_path)
    extended.write_plan(extended.ParserCurveRun(_recipe(), tmp_path / "empty"))
    with pytest.raises(ValueError, match="no curve.json of the shares 1, 0.5"):
        _score(tmp_path / "empty", tmp_path / "test.json", [], shares=(1.0, 0.5))
    with FileLock(str(tiny_run / LOCK_NAME)):  # a run still training holds it
        with pytest.raises(ValueError, match="in use by another parser run"):
            _score(tiny_run, tmp_path / "test.json", [])
    assert not (tmp_path / "test.json").exists()
    # through the command: one line, no traceback
    rc = main(["parser-curve", "--out", str(tmp_path / "missing"), "--score-test"])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("error: ") and "does not exist" in err
    assert "Traceback" not in err


def test_export_only_writes_the_folders_recipe_and_rule_whatever_the_flags(
    tiny_run, tmp_path
):
    from annotated_transformer.cli import main

    path = tmp_path / "curves.json"
    rc = main(
        ["parser-curve", "--out", str(tiny_run), "--export-only", "--export", str(path),
         "--d-model", "999", "--min-epochs", "1", "--max-epochs", "6", "--shares", "1", "0.5"]
    )  # fmt: skip
    assert rc == 0
    document = extended.read_curves(path)
    assert document["recipe"]["d_model"] != 999  # the folder's recipe, not the flags'
    assert (document["min_epochs"], document["max_epochs"]) == (1, 6)
    assert document["stopped"] == {"1.0": True, "0.5": False}


def test_a_folder_continues_only_on_the_kind_of_device_it_was_trained_on(tmp_path):
    extended.write_plan(extended.ParserCurveRun(_recipe(), tmp_path, device="cuda:0"))
    assert extended.long_run(tmp_path).plan().identity["device_type"] == "cuda"
    with pytest.raises(ValueError, match="trained on cuda.*--device cuda"):
        extended.ParserCurveRun(_recipe(), tmp_path, device="cpu").check_folder()
    extended.ParserCurveRun(_recipe(), tmp_path, device="cuda:1").check_folder()
    assert extended.open_run(tmp_path, device="cuda:0").device == "cuda:0"


def test_every_epoch_trains_on_the_runs_device(tmp_path, monkeypatch):
    from nltk import Tree

    seen = {}

    def fake_train(config, data, settings, out_dir, **options):
        seen.update(options, precision=settings.precision)
        raise RuntimeError("stop here")

    monkeypatch.setattr(extended.parsing, "train_parser", fake_train)
    tree = Tree.fromstring("(S (NP (DT The) (NN dog)) (VP (VBZ runs)) (. .))")
    run = extended.ParserCurveRun(_recipe(), tmp_path, device="cuda:0")
    with pytest.raises(RuntimeError, match="stop here"):
        run.train_epoch(1.0, [tree] * 4, [tree])
    assert seen["device"] == "cuda:0" and seen["precision"] == "auto"  # a new job
    # a job continues in the precision its curve was trained in, whatever auto means here
    point = {"epoch": 1, "f1": 1.0}
    record = JobRecord(extended.KIND, "share_1", {"share": 1.0}, "bf16", None)
    run.run.write_job(record.with_point(point))
    with pytest.raises(RuntimeError, match="stop here"):
        run.train_epoch(1.0, [tree] * 4, [tree])
    assert seen["precision"] == "bf16"


def test_the_test_score_refuses_a_file_that_is_not_a_test_record(tiny_run, tmp_path):
    """A file that is not a test-results record (here the curves export) is refused as the
    results file, left unchanged, and nothing is written beside it."""
    curves = tmp_path / "curves.json"
    extended.export(extended.open_run(tiny_run), [1.0, 0.5], curves)
    before = curves.read_text()
    with pytest.raises(ValueError, match="not a test-results record"):
        _score(tiny_run, curves, [])
    assert curves.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.json"]


def test_a_share_is_stopped_only_by_the_rule_it_stopped_under(tmp_path):
    """Each training call records the shares it finds stopped, with its own rule and their
    epochs; a later call with another --min-epochs leaves that record, and a share trained
    since it was recorded is not stopped (so it is not scored on test)."""
    recipe = _recipe(epochs=6)
    run = extended.ParserCurveRun(recipe, tmp_path, min_epochs=50, max_epochs=300)

    def curve(epochs):
        points = tuple({"epoch": e + 1, "step": e, "f1": 90.0 - e} for e in range(epochs))
        job = {"share": 1.0}
        record = JobRecord(extended.KIND, "share_1", job, "fp32", None, {}, points)
        run.run.write_job(record)

    curve(5)
    extended.write_plan(run)
    extended.record_stops(run, [1.0])
    assert not run.stopped(1.0)  # 5 epochs of at least 50: still training
    # a later call's looser rule (written before it trains) does not stop it by itself
    loose = extended.ParserCurveRun(recipe, tmp_path, min_epochs=2, max_epochs=300)
    extended.write_plan(loose)
    assert not extended.open_run(tmp_path).stopped(1.0)
    extended.record_stops(loose, [1.0])  # that call found it stopped under its rule
    assert extended.open_run(tmp_path).stopped(1.0)
    # a stricter call that trains it further: the earlier stop no longer holds
    extended.write_plan(run)
    curve(6)
    assert not extended.open_run(tmp_path).stopped(1.0)


def test_a_folder_holds_the_test_trees_of_one_results_file(tiny_run, tmp_path):
    """A second results file scored into a folder whose tree files the first one's record
    names is refused before any work, and those tree files stay byte for byte."""
    first = tmp_path / "scores" / "test.json"
    _score(tiny_run, first, [], shares=(1.0,))
    trees = sorted(p.name for p in first.parent.glob("parsing_test_*.txt"))
    assert trees == ["parsing_test_gold.txt", "parsing_test_predicted_share_1.txt"]
    before = {name: (first.parent / name).read_bytes() for name in trees}
    with pytest.raises(
        ValueError, match="holds test trees that other.json does not name"
    ):
        _score(tiny_run, first.parent / "other.json", [], shares=(1.0,))
    assert not (first.parent / "other.json").exists()
    assert {name: (first.parent / name).read_bytes() for name in trees} == before
    # the first results file's own call goes on as before: nothing left to score
    assert _score(tiny_run, first, [], shares=(1.0,))["already"] == [1.0]


def test_an_interrupt_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    from annotated_transformer import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(extended, "train_all", interrupted)
    out = tmp_path / "run"
    assert cli.main(["parser-curve", "--out", str(out), "--device", "cpu"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0] and str(out) in err[0], err


@pytest.mark.parametrize("low, high", [(10, 5), (301, 300), (0, 5)])
def test_a_stopping_rule_whose_least_is_above_its_most_is_refused_naming_both_flags(
    tmp_path, low, high
):
    with pytest.raises(ValueError) as caught:
        extended.ParserCurveRun(_recipe(), tmp_path, min_epochs=low, max_epochs=high)
    message = str(caught.value)
    assert "--min-epochs" in message and "--max-epochs" in message and "\n" not in message
    assert extended.ParserCurveRun(_recipe(), tmp_path, min_epochs=5, max_epochs=5)


def test_parser_curve_refuses_min_epochs_above_max_epochs_before_any_work(
    tmp_path, capsys
):
    from annotated_transformer.cli import main

    out = tmp_path / "run"
    code = main(
        ["parser-curve", "--min-epochs", "10", "--max-epochs", "5", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert code != 0 and "--min-epochs" in err and "--max-epochs" in err
    assert not out.exists()


def test_parser_curve_refuses_averaging_more_epochs_than_it_may_train(tmp_path, capsys):
    from annotated_transformer.cli import main

    out = tmp_path / "run"
    argv = ["parser-curve", "--min-epochs", "1", "--max-epochs", "2", "--average", "3"]
    code = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "--average" in err and "(--max-epochs) 2" in err
    assert not out.exists()
