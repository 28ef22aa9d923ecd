"""Results files: written with provenance, read back unchanged, summarised without invented numbers."""

import json

import pytest

from annotated_transformer.book import summary
from annotated_transformer.evaluation import results
from annotated_transformer.model.config import preset


def test_written_result_reads_back_with_provenance(tmp_path):
    path = results.write_result(
        "translation",
        {"bleu_tokenized": 27.1, "rows": {"base": {"ppl": 4.9}}},
        profile="cpu",
        config=preset("tiny"),
        wall_time_s=12.5,
        device="cpu",
        root=tmp_path,
    )
    assert path == tmp_path / "cpu" / "translation.json"
    record = results.read_result("translation", "cpu", root=tmp_path)
    assert record["metrics"] == {"bleu_tokenized": 27.1, "rows": {"base": {"ppl": 4.9}}}
    assert record["profile"] == "cpu" and record["wall_time_s"] == 12.5
    assert record["config"]["d_model"] == preset("tiny").d_model
    prov = record["provenance"]
    for key in (
        "git_commit",
        "git_dirty",
        "torch",
        "python",
        "device",
        "device_name",
        "date",
    ):
        assert key in prov, key
    assert prov["device"] == "cpu" and prov["torch"]
    assert "T" in prov["date"] and prov["date"].endswith("+00:00")  # ISO 8601, UTC


def test_numpy_and_torch_values_become_plain_json(tmp_path):
    import numpy as np
    import torch

    results.write_result(
        "x",
        {"a": np.float32(1.5), "b": torch.tensor([1, 2]), "c": np.arange(2)},
        profile="smoke",
        device="cpu",
        root=tmp_path,
    )
    metrics = json.loads((tmp_path / "smoke" / "x.json").read_text())["metrics"]
    assert metrics == {"a": 1.5, "b": [1, 2], "c": [0, 1]}


def test_missing_result_is_none_and_bad_names_are_refused(tmp_path):
    assert results.read_result("translation", "gpu", root=tmp_path) is None
    with pytest.raises(ValueError, match="plain file stem"):
        results.results_path("../escape", "cpu", root=tmp_path)
    with pytest.raises(TypeError, match="metrics must be a dict"):
        results.write_result("x", [1, 2], profile="cpu", root=tmp_path)


def test_corrupt_result_names_the_file(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "training.json").write_text("{not json")
    with pytest.raises(ValueError, match="training.json is not valid JSON"):
        results.read_result("training", "cpu", root=tmp_path)


def test_results_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path))
    assert results.results_path("a", "cpu") == tmp_path / "cpu" / "a.json"


def test_summary_says_not_run_yet_instead_of_inventing_numbers(tmp_path):
    table = summary.summary_table("smoke", root=tmp_path)
    measured = [summary.profile_column(p) for p in ("smoke", "gpu", "paper")]
    assert list(table.columns) == ["panel", "claim", "in the paper", *measured, "chapter"]
    assert len(table) == len(summary.CLAIMS)
    assert (table[measured] == summary.NOT_RUN).all().all()


def test_summary_keeps_profiles_apart(tmp_path):
    results.write_result(
        "translation",
        {"bleu_tokenized": 31.25},
        profile="gpu",
        device="cpu",
        root=tmp_path,
    )
    table = summary.summary_table("cpu", root=tmp_path).set_index("claim")
    row = table.loc["tokenized BLEU (the paper's kind)"]
    assert row["gpu run"] == "31.2"  # formatted with the claim's format
    assert (
        row["cpu run"] == summary.NOT_RUN
    )  # a GPU number never shows up as the executing profile's
    assert row["paper run"] == summary.NOT_RUN
    # The file exists but this key is not in it: say so rather than "not run yet".
    assert table.loc["sacreBLEU ± 95%", "gpu run"] == "not in translation.json"


def test_summary_panels_name_what_each_row_was_measured_on(tmp_path):
    results.write_result(
        "translation_multi30k_en_de",  # what `train --profile gpu` writes
        {
            "sacrebleu": 38.97,
            "bleu_tokenized": 39.0,
            "parameters": 2_300_000,
            "test": {"test_set": "multi30k/test_2016_flickr", "sentences": 1000},
        },
        profile="gpu",
        device="cpu",
        root=tmp_path,
    )
    results.write_result(
        "translation",  # what chapter 05 writes, with the interval
        {
            "sacrebleu": 36.13,
            "sacrebleu_ci95": 1.21,
            "bleu_tokenized": 36.08,
            "training_flops": 3.3e15,
            "training_flops_how": "paper's way: time x devices x rate",
            "parameters": 7_577_600,
            "test_set": "multi30k/test_2016_flickr",
            "sentences": 1000,
        },
        profile="cpu",
        device="cpu",
        root=tmp_path,
    )
    panels = dict(summary.summary_panels("cpu", root=tmp_path))
    assert "The model's size and arithmetic (chapters 02, 03)" in panels
    table = panels["English-to-German translation (Table 2; chapter 05)"].set_index("")
    assert table.loc["the paper", "measured on"].startswith(
        "WMT14 newstest2014, base model"
    )
    cpu, gpu = table.loc["cpu run"], table.loc["gpu run"]
    here = results.provenance("cpu")["device_name"]  # the machine that wrote both records
    assert (
        cpu["measured on"]
        == f"multi30k/test_2016_flickr, 1,000 sentences, 7.6M-parameter model, {here}"
    )
    assert (
        gpu["measured on"]
        == f"multi30k/test_2016_flickr, 1,000 sentences, 2.3M-parameter model, {here}"
    )
    assert cpu["sacreBLEU ± 95%"] == "36.1 ± 1.2" and gpu["sacreBLEU ± 95%"] == "39.0"
    assert cpu["training cost (FLOPs, Table 2's way)"] == "3.3e15"
    # the gpu run's record is read for its cost too, and says that it holds none
    assert gpu["training cost (FLOPs, Table 2's way)"] == (
        "not in translation_multi30k_en_de.json"
    )
    assert table.loc["paper run", "measured on"] == summary.SHOWN_NOT_RUN


def test_executing_committed_profile_is_not_listed_twice(tmp_path):
    table = summary.summary_table("gpu", root=tmp_path)
    assert [c for c in table.columns if c.endswith(" run")] == ["gpu run", "paper run"]


def test_provenance_table_and_description(tmp_path):
    results.write_result(
        "training",
        {"step_time_s": 0.5, "dataset": "multi30k"},
        profile="cpu",
        wall_time_s=3.0,
        device="cpu",
        root=tmp_path,
    )
    table = summary.provenance_table(["cpu", "gpu"], root=tmp_path)
    assert table.to_dict("records")[0]["dataset"] == "multi30k"
    assert len(table) == 1
    text = results.describe_provenance(
        results.read_result("training", "cpu", root=tmp_path)
    )
    assert text.startswith("measured on ") and " on 20" in text


def test_committed_results_are_valid_records():
    """Whatever sits in results/gpu and results/paper (and their book runs, results/book_gpu)
    must be readable by the summary."""
    for profile in summary.COMMITTED_PROFILES:
        for folder in summary.result_folders(profile):
            for record in results.list_results(folder):
                assert record["profile"] == profile
                assert record["provenance"].get("date"), record["name"]


def test_a_run_folder_inside_the_clone_is_recorded_relative(tmp_path):
    """A committed results file names no path of the machine that wrote it, and reads back."""
    clone = results.repo_root()
    if clone is None:
        pytest.skip("needs a clone")
    inside = clone / "runs" / "some-run"
    path = results.write_result(
        "x", {"a": 1}, profile="smoke", path=tmp_path / "x.json", run_folder=inside
    )
    record = json.loads(path.read_text())
    assert record["run_folder"] == "runs/some-run"
    assert results.run_folder_of_record(record) == inside.resolve()
    outside = results.write_result(
        "y", {"a": 1}, profile="smoke", path=tmp_path / "y.json", run_folder=tmp_path
    )
    assert json.loads(outside.read_text())["run_folder"] == str(tmp_path.resolve())


def test_every_committed_file_the_summary_reads_is_a_results_record(monkeypatch):
    # The introduction reads every JSON of the committed profiles' folders (results/gpu/, ...):
    # one file that is not a record (no "metrics") stops the whole summary.
    monkeypatch.delenv("AT_RESULTS_DIR", raising=False)
    for profile in summary.COMMITTED_PROFILES:
        for folder in summary.result_folders(profile):
            for record in results.list_results(folder):
                assert isinstance(record["metrics"], dict), (folder, record.get("name"))
