"""scripts/gpu/: the tool that runs chapters, the GPU tests or an experiment on a GPU machine into
one folder (run.py), and the experiments' scripts, run on a CPU with their QUICK sizes."""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch

from annotated_transformer.book import committed
from tests.book.test_committed_runs import make_incoming_run
from tests.support.scripts import imported_script

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "scripts" / "gpu"


@pytest.fixture(scope="module")
def run():
    with imported_script(TOOL / "run.py") as module:
        yield module


def _tool(tmp_path, *args, **env):
    return subprocess.run(
        [sys.executable, str(TOOL / "run.py"), *args],
        cwd=tmp_path,  # the tool runs from the repository root wherever it is started
        capture_output=True,
        text=True,
        env={
            "AT_CACHE_DIR": str(tmp_path / "cache"),
            "PATH": "/usr/bin:/bin",
            "DEVICE": "cpu",
            "QUICK": "1",
            **env,
        },
    )


def test_each_run_gets_a_folder_of_its_own(run, tmp_path):
    new = run.output_folder(str(tmp_path / "a" / "b"))
    assert new.is_dir()
    assert run.output_folder(str(new)) == new  # empty: taken
    (new / "run.json").write_text("{}")
    for taken in (new, new / "run.json"):
        with pytest.raises(SystemExit, match="is not a new or empty folder"):
            run.output_folder(str(taken))


def test_every_experiment_is_a_script_of_the_folder_and_every_script_an_experiment(run):
    scripts = {name for name, _ in run.EXPERIMENTS.values()}
    assert all((TOOL / name).is_file() for name in scripts)
    beside = {p.name for p in TOOL.iterdir() if p.suffix in (".sh", ".py")}
    # run.py is the tool; compare_recipes.py compares committed translations on any machine;
    # common.sh is what the scripts share
    assert beside - scripts == {"run.py", "compare_recipes.py", "common.sh"}


def test_the_readme_gives_the_tools_wheel_command(run):
    readme = (TOOL / "README.md").read_text()
    assert run.WHEELS in " ".join(readme.split())
    assert "--find-links wheels -r requirements.lock" in readme


def test_a_book_run_collected_from_a_clone_imports_and_leaves_its_checkpoints(
    run, tmp_path
):
    """What `chapters` copies out of the clone is what `book --import-run` takes: the executed
    notebooks and the results folder at their paths, never a checkpoint."""
    clone = make_incoming_run(
        tmp_path / "clone", {"01_attention": {"files": {"attention.json": "{}"}}}
    )
    (clone / "results" / "gpu" / "recipe").mkdir()
    (clone / "results" / "gpu" / "recipe" / "last.pt").write_bytes(b"weights")
    (clone / "results" / "gpu" / ".book.lock").write_text("")
    (clone / "_build" / "failed" / "gpu" / "book").mkdir(parents=True)
    (clone / "_build" / "failed" / "gpu" / "book" / "02_model.ipynb").write_text("{}")
    out = tmp_path / "out"
    run.collect(clone, out, "gpu")
    assert (out / "_build/executed/gpu/book/01_attention.ipynb").is_file()
    assert (out / "_build/failed/gpu/book/02_model.ipynb").is_file()
    assert not list(out.rglob("*.pt")) and not list(out.rglob("*.lock"))
    results = tmp_path / "results"
    report = committed.import_run(out, "gpu", results_dir=results, log=lambda _: None)
    assert report.ok
    assert (results / "book_gpu" / "attention.json").is_file()
    assert (results / "book_gpu" / "notebooks" / "01_attention.ipynb").is_file()


def test_the_gpu_tests_are_the_files_that_use_the_mark(run):
    files = run.gpu_test_files(REPO)
    importing = {
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if "from tests.support.gpu import" in path.read_text()
    }
    assert set(files) == importing
    assert len(files) >= 4  # the static decoders, evaluation, the loss, the benchmarks


@pytest.mark.slow  # a pytest subprocess
def test_the_tool_runs_the_marked_tests_and_records_the_run(tmp_path):
    """`run.py tests`: every test marked `gpu` is collected (and on a CPU skipped), none of the
    others runs; the folder holds the JUnit record, the log and run.json."""
    out = tmp_path / "gpu-tests"
    proc = _tool(tmp_path, "--out", str(out), "tests")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = list(ElementTree.parse(out / "gpu_tests.xml").getroot().iter("testcase"))
    names = {case.get("name") for case in cases}
    assert {
        "test_on_a_gpu_logits_of_several_blocks_give_the_cpu_loss_and_gradient[dtype0]",
        "test_on_a_gpu_a_decoder_of_one_position_captures_its_step",
        "test_on_a_gpu_translation_with_cuda_graphs_is_the_eager_translation",
        "test_in_autocast_keys_and_values_are_kept_as_computed_and_change_nothing[bf16-cuda]",
    } <= names
    assert not any("cpu" in name.split("[")[-1] for name in names if "[" in name)
    if not torch.cuda.is_available():
        assert all(case.find("skipped") is not None for case in cases)
    assert "skipped" in (out / "gpu_tests.log").read_text() or torch.cuda.is_available()
    facts = json.loads((out / "run.json").read_text())
    assert facts["exit_status"] == 0 and facts["command"][-1] == "tests"
    assert re.fullmatch(r"[0-9a-f]{40}", facts["commit"])
    assert facts["torch"] == torch.__version__


def _speed(out, *parts):
    return subprocess.run(
        ["bash", str(TOOL / "speed.sh"), str(out), *parts],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "DEVICE": "cpu",
            "QUICK": "1",
        },
    )


def test_speed_script_checks_its_parts_before_running_any(tmp_path):
    for parts in (("decode", "everything"), ("decode train_eager",)):  # names, exactly
        unknown = _speed(tmp_path / "out", *parts)
        assert unknown.returncode == 2 and "unknown part" in unknown.stderr
    assert not (tmp_path / "out" / "decode.log").exists()
    bare = subprocess.run(
        ["bash", str(TOOL / "speed.sh")], capture_output=True, text=True
    )
    assert bare.returncode == 2 and "usage: speed.sh OUT" in bare.stderr


@pytest.mark.slow
def test_the_speed_experiment_runs_its_commands_on_a_cpu(tmp_path):
    # `run.py experiment speed` with DEVICE=cpu QUICK=1: the GPU run's commands, the smoke profile
    out = tmp_path / "speed"
    proc = _tool(tmp_path, "--out", str(out), "experiment", "speed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {p.name for p in out.iterdir()}
    parts = ("decode", "decode_bf16", "train_eager", "profile_eager", "profile_graphed")
    parts += ("train_compiled", "train_bucketed", "train_graphs", "profile_compiled")
    assert {f"{part}.log" for part in parts} | {"speed.log", "run.json"} <= names
    for stem in ("profile_step_compiled", "profile_step_eager", "profile_step_graphed"):
        assert {f"{stem}.json", f"{stem}.md"} <= names
        runs = json.loads((out / f"{stem}.json").read_text())["profiler"]["runs"]
        profiled = {"profile_step_eager": ["fp32 eager"],
                    "profile_step_graphed": ["fp32 eager", "fp32 eager_bucketed_graphed"],
                    "profile_step_compiled": ["fp32 eager", "fp32 compiled"]}  # fmt: skip
        assert list(runs) == profiled[stem]
    decode = json.loads((out / "speed_decode.json").read_text())
    assert all(row["same_tokens"] for row in decode["decoding"])
    bf16 = json.loads((out / "speed_decode_bf16.json").read_text())["decoding"]
    assert {row["precision"] for row in bf16} == {"bf16"}
    assert sorted((row["search"], row["batch"]) for row in bf16) == [
        ("beam", 2),
        ("beam", 3),
        ("greedy", 2),
        ("greedy", 3),
    ]
    eager = json.loads((out / "speed_train_eager.json").read_text())["training"]["fp32"]
    assert set(eager["variants"]) == {
        "eager",
        "eager_cudnn_attention",
        "eager_row_blocks_loss",
        "eager_bucketed",
        "eager_bucketed_cudnn_attention",
        "eager_bucketed_graphed",
    }
    for part, variant in (
        ("compiled", "compiled"),
        ("bucketed", "compiled_bucketed"),
        ("graphs", "compiled_bucketed_reduce_overhead"),
    ):
        record = json.loads((out / f"speed_train_{part}.json").read_text())["training"]
        record = record["fp32"]
        assert set(record["variants"]) == {"eager", variant}  # one compile, beside eager
    assert json.loads((out / "run.json").read_text())["exit_status"] == 0


def _table3_extended(tmp_path, data_dir, out, **env):
    return subprocess.run(
        ["bash", str(TOOL / "table3_extended.sh"), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            "AT_CACHE_DIR": str(tmp_path / "cache"),
            "AT_DATA_DIR": data_dir or "",
            "PATH": "/usr/bin:/bin",
            "PYTHON": sys.executable,
            "DEVICE": "cpu",
            "QUICK": "1",
            **env,
        },
    )


def test_table3_extended_script_refuses_a_part_or_a_budget_it_cannot_run(tmp_path):
    out = tmp_path / "out"
    proc = _table3_extended(tmp_path, None, out, GROUP="heads")
    assert proc.returncode == 2
    assert "GROUP=heads is not a part; choose all, findings, size or rest" in proc.stderr
    for bad in ("0", "8m", "-1"):
        proc = _table3_extended(tmp_path, None, out, MINUTES=bad)
        assert proc.returncode == 2, bad
        assert f"MINUTES={bad} is not a positive number of minutes" in proc.stderr
    assert not out.exists()
    out.mkdir()
    (out / "runs.json").write_text("{}")  # an earlier export is never overwritten
    proc = _table3_extended(tmp_path, None, out)
    assert proc.returncode == 2 and "give a new output folder" in proc.stderr
    assert (out / "runs.json").read_text() == "{}"


@pytest.mark.slow
def test_table3_extended_script_exports_whole_epochs_on_a_cpu(tmp_path, data_dir):
    # table3_extended.sh with DEVICE=cpu QUICK=1: the GPU command on the smoke profile and its
    # export; then one part of the run (GROUP), as a second machine trains it, merged into the
    # first's export
    first, part = tmp_path / "first", tmp_path / "size"
    proc = _table3_extended(tmp_path, data_dir, first)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads((first / "runs.json").read_text())
    jobs = {
        (j["job"]["corpus"], j["job"]["row"]): len(j["curve"]) for j in document["jobs"]
    }
    assert jobs == {
        ("full", "base"): 1,
        ("full", "C1"): 1,
        ("full", "D1"): 1,
        ("small", "base"): 1,
        ("small", "D1"): 1,
    }
    assert document["targets"] == {"full": 1, "small": 1}
    assert "2 processes, exit 0" in (first / "log.txt").read_text()
    proc = _table3_extended(tmp_path, data_dir, part, GROUP="size")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = tmp_path / "merged.json"
    proc = subprocess.run(
        [sys.executable, "-m", "annotated_transformer", "table3", "--merge"]
        + [str(first / "runs.json"), str(part / "runs.json"), "--export", str(merged)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {
        (j["job"]["corpus"], j["job"]["row"])
        for j in json.loads(merged.read_text())["jobs"]
    }
    assert rows == {*jobs, ("full", "C2")}  # the part's C1 and C2 beside the first's five


def test_table3_extended_parts_split_the_twenty_rows_as_the_findings_need():
    """table3_extended.sh names its parts' rows in bash: they must split Table 3's 20 rows, and
    the findings part must hold every row of every finding but bigger-is-better (the size part)."""
    from annotated_transformer.chapters.model_variations.statistics import FINDINGS
    from annotated_transformer.model.config import TABLE3_ALL_ROWS

    script = (TOOL / "table3_extended.sh").read_text()
    parts = {
        name: rows.split()
        for name, rows in re.findall(r"^\s+(\w+)\) rows=\(([^)]*)\) ;;", script, re.M)
    }
    assert set(parts) == {"all", "findings", "size", "rest"}
    assert sorted(parts["all"]) == sorted(TABLE3_ALL_ROWS)
    split = parts["findings"] + parts["size"] + parts["rest"]
    assert sorted(split) == sorted(TABLE3_ALL_ROWS)  # each row in exactly one part
    for finding in FINDINGS:
        rows = {row for pair in finding.pairs for row in pair}
        part = "size" if finding.name == "bigger is better" else "findings"
        assert rows <= set(parts[part]) | {"base"}, finding.name
    # the findings part trains the base the others compare to
    assert "base" in parts["findings"]
