"""A committed book run (`results/book_gpu/`): the importer merges the incoming runs a GPU machine returns
chapter by chapter and never goes backwards, the site adds the run's pages as a part of their own
(and nothing when it has no notebooks), and the introduction sets its times beside the executing
run's. Fake runs in tmp folders: nothing here reads or writes the repository's results/."""

from __future__ import annotations

import argparse
import json
import shutil
import tarfile
from pathlib import Path

import nbformat
import pytest
import yaml

from annotated_transformer.book import committed, runner, sphinx_assets, summary
from annotated_transformer.book import site as site_build
from annotated_transformer.commands import book as book_command
from annotated_transformer.viz import table_html

ROOT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"
MACHINE = "/device/clone"  # the GPU machine's clone, as its absolute paths name it


def _notebook(chapter: str, profile: str, text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# Chapter {chapter}\n\nIntro."),
        nbformat.v4.new_code_cell("print('x')", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            f'profile_name = "{profile}"', metadata={"tags": ["injected-parameters"]}
        ),
    ]
    nb.cells[1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=text + "\n")
    ]
    nb.metadata["annotated_transformer"] = {
        "profile": profile,
        "source": f"book/{chapter}.py",
        "status": "ok",
    }
    nb.metadata["papermill"] = {
        "input_path": {"cells": []},
        "output_path": f"{MACHINE}/_build/.staging/{profile}/{chapter}/{chapter}.ipynb",
    }
    return nb


def make_incoming_run(
    folder: Path,
    chapters: dict[str, dict],
    *,
    profile: str = "gpu",
    device: str = H100,
    date: str = "2026-11-27T10:00:00+00:00",
) -> Path:
    """A returned run as `scripts/gpu/run.py chapters` writes it: `_build/executed/<profile>/book/NN.ipynb`
    and `results/<profile>/` with `book_run.json`. `chapters`: {name: {"date", "status",
    "files": {name: text}, "listed": whether the entry names its files}}."""
    book = folder / "_build" / "executed" / profile / "book"
    res = folder / "results" / profile
    book.mkdir(parents=True)
    res.mkdir(parents=True)
    entries = {}
    for chapter, spec in chapters.items():
        status = spec.get("status", "ok")
        files = spec.get("files", {})
        for name, text in files.items():
            (res / name).write_text(text)
        if status == "ok":
            nb = _notebook(chapter, profile, spec.get("output", f"{chapter} ran"))
            nbformat.write(nb, str(book / f"{chapter}.ipynb"))
        entry = {
            "status": status,
            "wall_time_s": spec.get("wall", 10.0),
            "error": None if status == "ok" else "boom",
            "cell_index": None,
            "notebook": f"{MACHINE}/_build/executed/{profile}/book/{chapter}.ipynb",
            "date": spec.get("date", date),
            "git_commit": spec.get("commit", "a" * 40),
        }
        if spec.get("listed", True):
            entry.update(results=sorted(files), device="cuda", device_name=device)
        entries[chapter] = entry
    record = {
        "schema": 1,
        "name": "book_run",
        "profile": profile,
        "metrics": {"chapters": entries, "ok": True, "profile": {"name": profile}},
        "config": None,
        "wall_time_s": 1.0,
        "run_folder": None,
        "provenance": {
            "git_commit": "a" * 40,
            "git_dirty": True,
            "device": "cuda",
            "device_name": device,
            "date": date,
        },
    }
    (res / "book_run.json").write_text(json.dumps(record))
    # The profile's other committed records travel in the tarball too: never taken.
    (res / "README.md").write_text("the committed gpu records\n")
    return folder


def _entries(results_root: Path) -> dict:
    return committed.read_run("gpu", results_root)["metrics"]["chapters"]


def _log():
    lines = []
    return lines, lines.append


# ----------------------------------------------------------------------------------------------
# The importer


def test_incoming_runs_accumulate_chapter_by_chapter_and_an_older_one_is_refused(
    tmp_path,
):
    root = tmp_path / "results"
    (root / "gpu").mkdir(parents=True)
    (root / "gpu" / "README.md").write_text("the committed gpu records\n")
    first = make_incoming_run(
        tmp_path / "first",
        {
            "01_attention": {"files": {"attention.json": '{"v": 1}'}},
            "02_model": {"files": {"model.json": '{"v": 1}'}},
            "04_training": {"status": "interrupted"},
        },
        date="2026-11-27T10:00:00+00:00",
    )
    report = committed.import_run(first, "gpu", results_dir=root, log=lambda _: None)
    target = root / "book_gpu"
    assert report.ok and report.imported == ["01_attention", "02_model"]
    assert report.skipped and report.skipped[0].startswith("04_training: interrupted")
    assert sorted(p.name for p in (target / "notebooks").iterdir()) == [
        "01_attention.ipynb",
        "02_model.ipynb",
    ]
    assert json.loads((target / "attention.json").read_text()) == {"v": 1}
    entries = _entries(root)
    assert set(entries) == {"01_attention", "02_model"}
    assert entries["01_attention"]["notebook"] == (
        "results/book_gpu/notebooks/01_attention.ipynb"
    )
    assert entries["01_attention"]["results"] == ["attention.json"]
    assert entries["01_attention"]["device_name"] == H100
    (target / "by_hand.txt").write_text("kept")  # a file the importer did not write

    # A later incoming: a new chapter and a rerun of 01; 02 stays as the first incoming left it.
    second = make_incoming_run(
        tmp_path / "second",
        {
            "01_attention": {"files": {"attention.json": '{"v": 2}'}, "wall": 12.5},
            "03_why_self_attention": {"files": {"why_self_attention.json": "{}"}},
        },
        date="2026-11-28T10:00:00+00:00",
    )
    tarball = tmp_path / "chapters_01-03.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        for part in ("_build", "results"):
            tar.add(second / part, arcname=part)
    report = committed.import_run(tarball, "gpu", results_dir=root, log=lambda _: None)
    assert report.ok and report.imported == ["01_attention", "03_why_self_attention"]
    entries = _entries(root)
    assert set(entries) == {"01_attention", "02_model", "03_why_self_attention"}
    assert entries["01_attention"]["wall_time_s"] == 12.5
    assert entries["02_model"]["date"].startswith("2026-11-27")
    assert json.loads((target / "attention.json").read_text()) == {"v": 2}
    record = committed.read_run("gpu", root)
    assert [i["source"] for i in record["metrics"]["imports"]] == [
        "first",
        "chapters_01-03.tgz",
    ]
    assert record["wall_time_s"] == 12.5 + 10.0 + 10.0

    # The first incoming again: its 01 is older than the committed one, its 02 is the same run.
    report = committed.import_run(first, "gpu", results_dir=root, log=lambda _: None)
    assert not report.ok
    assert report.refused[0].startswith("01_attention: the committed entry")
    assert report.unchanged == ["02_model"] and report.imported == []
    assert json.loads((target / "attention.json").read_text()) == {"v": 2}
    assert _entries(root)["01_attention"]["wall_time_s"] == 12.5
    # Nothing deleted, the profile's own folder untouched.
    assert (target / "by_hand.txt").read_text() == "kept"
    assert sorted(p.name for p in (root / "gpu").iterdir()) == ["README.md"]


def test_a_stale_commit_is_set_right_only_where_the_sources_match(tmp_path):
    """--commit: the machine's git metadata was older than its tree. A chapter whose notebook
    records the digest of its source at that commit takes the commit, clean, with a note; one
    whose source differs is refused; importing the same incoming again changes nothing."""
    import hashlib
    import subprocess

    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    stale = "d" * 40
    incoming = make_incoming_run(
        tmp_path / "incoming",
        {
            "01_attention": {
                "files": {
                    "attention.json": '{"provenance": {"git_commit": "'
                    + stale
                    + '", "git_dirty": true}}'
                },
                "commit": stale,
            },
            "02_model": {"files": {"model.json": "{}"}, "commit": stale},
        },
    )
    executed = incoming / "_build" / "executed" / "gpu" / "book"
    for chapter, digest in (
        (
            "01_attention",
            hashlib.sha256((ROOT / "book/01_attention.py").read_bytes()).hexdigest()[:16],
        ),
        ("02_model", "not-that-source"),
    ):
        nb = nbformat.read(str(executed / f"{chapter}.ipynb"), as_version=4)
        nb.metadata["annotated_transformer"]["source_sha256"] = digest
        nbformat.write(nb, str(executed / f"{chapter}.ipynb"))
    root = tmp_path / "results"
    if subprocess.run(
        ["git", "diff", "--quiet", "HEAD", "--", "book/01_attention.py"], cwd=ROOT
    ).returncode:
        pytest.skip("book/01_attention.py has local edits")
    report = committed.import_run(
        incoming, "gpu", results_dir=root, commit=head[:9], log=lambda _: None
    )
    assert report.imported == ["01_attention"]
    assert report.refused and report.refused[0].startswith("02_model: its source is not")
    entry = _entries(root)["01_attention"]
    assert (entry["git_commit"], entry["git_dirty"]) == (head, False)
    assert "recorded ddddddd with local edits" in entry["git_note"]
    prov = json.loads((root / "book_gpu" / "attention.json").read_text())["provenance"]
    assert (prov["git_commit"], prov["git_dirty"]) == (head, False)
    again = committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    assert again.unchanged == ["01_attention"]
    assert _entries(root)["01_attention"]["git_commit"] == head
    with pytest.raises(ValueError, match="--commit nothing: no such commit"):
        committed.import_run(incoming, "gpu", results_dir=root, commit="nothing")


def test_the_cli_says_no_when_a_chapter_is_refused(tmp_path):
    root = tmp_path / "results"
    newer = make_incoming_run(
        tmp_path / "newer", {"01_attention": {}}, date="2026-11-28T00:00:00+00:00"
    )
    older = make_incoming_run(
        tmp_path / "older", {"01_attention": {}}, date="2026-11-27T00:00:00+00:00"
    )
    parser = argparse.ArgumentParser()
    book_command.add_arguments(parser)

    def cli(*argv: str) -> int:
        return book_command.run(parser.parse_args([*argv, "--results-dir", str(root)]))

    assert cli("--import-run", str(newer), "--profile", "gpu") == 0
    assert cli("--import-run", str(older), "--profile", "gpu") == 1
    assert (
        cli("--import-run", str(newer)) == 2
    )  # a gpu run is not the default cpu profile's


def test_committed_pages_name_no_path_of_the_running_machine(tmp_path):
    incoming = make_incoming_run(
        tmp_path / "incoming",
        {
            "01_attention": {
                "output": f"wrote {MACHINE}/runs/book-gpu/x.json",
                "files": {"attention.json": f'{{"run": "{MACHINE}/runs/book-gpu"}}'},
            }
        },
    )
    committed.import_run(incoming, "gpu", results_dir=tmp_path / "r", log=lambda _: None)
    target = tmp_path / "r" / "book_gpu"
    page = (target / "notebooks" / "01_attention.ipynb").read_text()
    assert MACHINE not in page and "wrote runs/book-gpu/x.json" in page
    meta = json.loads(page)["metadata"]["papermill"]
    assert meta["input_path"] == "book/01_attention.py"
    assert meta["output_path"] == "results/book_gpu/notebooks/01_attention.ipynb"
    assert MACHINE not in (target / "attention.json").read_text()


def test_an_entry_without_its_files_gets_those_that_changed_when_it_ended(tmp_path):
    """Records written before the runner listed each chapter's files: a file that differs from
    the results root's own is given to the chapter that ended nearest its modification time."""
    import os

    incoming = make_incoming_run(
        tmp_path / "incoming",
        {
            "01_attention": {
                "files": {"attention.json": "{}"},
                "listed": False,
                "date": "2026-11-27T10:00:00+00:00",
            },
            "02_model": {
                "files": {"model.json": "{}"},
                "listed": False,
                "date": "2026-11-27T10:05:00+00:00",
                "wall": 200.0,
            },
        },
    )
    res = incoming / "results" / "gpu"
    for name, when in (("attention.json", "10:00:00"), ("model.json", "10:04:59")):
        stamp = committed._date(f"2026-11-27T{when}+00:00").timestamp()
        os.utime(res / name, (stamp, stamp))
    root = tmp_path / "r"
    (root / "gpu").mkdir(parents=True)
    (root / "gpu" / "README.md").write_text(
        "the committed gpu records\n"
    )  # the same: not theirs
    report = committed.import_run(incoming, "gpu", results_dir=root, log=lambda _: None)
    entries = _entries(root)
    assert entries["01_attention"]["results"] == ["attention.json"]
    assert entries["02_model"]["results"] == ["model.json"]
    assert entries["02_model"]["device_name"] == H100  # from the record's provenance
    assert report.unattributed == []


def test_the_runner_records_each_chapter_s_files_and_hardware(tmp_path):
    run = runner.ChapterRun(
        "01_attention",
        Path("book/01_attention.py"),
        Path("x.ipynb"),
        "ok",
        3.0,
        results=["attention.json"],
    )
    path = runner._record_chapter("smoke", run, "cpu", tmp_path)
    entry = json.loads(path.read_text())["metrics"]["chapters"]["01_attention"]
    assert entry["results"] == ["attention.json"]
    assert entry["device"] == "cpu" and entry["device_name"].endswith("cores)")
    assert "git_commit" in entry and "git_dirty" in entry


def test_the_run_record_s_time_is_its_good_chapters_whatever_runs_wrote_them(tmp_path):
    # A later run of one chapter replaces that chapter's time; the record's time stays the book's
    # (the sum over its good chapters), not the last invocation's.
    def run(chapter, status, seconds):
        return runner.ChapterRun(
            chapter, Path(f"book/{chapter}.py"), Path("x.ipynb"), status, seconds
        )

    for r in (run("01_attention", "ok", 3.0), run("02_model", "ok", 5.0)):
        runner._record_chapter("smoke", r, "cpu", tmp_path)
    path = runner._record_chapter(
        "smoke", run("01_attention", "ok", 2.0), "cpu", tmp_path
    )
    assert json.loads(path.read_text())["wall_time_s"] == 2.0 + 5.0
    path = runner._record_chapter(
        "smoke", run("03_why_self_attention", "error", 9.0), "cpu", tmp_path
    )
    assert json.loads(path.read_text())["wall_time_s"] == 2.0 + 5.0


# ----------------------------------------------------------------------------------------------
# The site


def _stage(tmp_path: Path, name: str, results_root: Path | None, profile="cpu") -> Path:
    stage = tmp_path / name
    stage.mkdir()
    site_build.stage_site(
        stage,
        root=ROOT,
        log=lambda _: None,
        profile=profile,
        results_dir=results_root,
    )
    return stage


def _tree(folder: Path) -> dict[str, object]:
    """Every file of a staged site; a notebook without its cells' ids (random for a page shown
    from its source)."""
    files: dict[str, object] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".ipynb":
            nb = json.loads(path.read_text())
            for cell in nb["cells"]:
                cell.pop("id", None)
            files[str(path.relative_to(folder))] = nb
        else:
            files[str(path.relative_to(folder))] = path.read_bytes()
    return files


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory) -> Path:
    """A results root with a committed gpu run of chapters 01 and 03."""
    tmp = tmp_path_factory.mktemp("gpu")
    incoming = make_incoming_run(
        tmp / "incoming",
        {"01_attention": {"wall": 16.25}, "03_why_self_attention": {}},
        date="2026-11-27T10:00:00+00:00",
    )
    committed.import_run(incoming, "gpu", results_dir=tmp / "results", log=lambda _: None)
    return tmp / "results"


def test_the_toc_gains_a_part_of_the_gpu_run_s_chapters_only(tmp_path, gpu_results):
    stage = _stage(tmp_path, "stage", gpu_results)
    toc = yaml.safe_load((stage / "_toc.yml").read_text())
    captions = [part.get("caption") for part in toc["parts"]]
    caption = f"The book on one GPU ({H100})"
    # After the book's own chapters, before the back matter.
    assert captions == ["The model", "Training and results", caption, "Back matter"]
    part = toc["parts"][2]
    assert [c["file"] for c in part["chapters"]] == [
        "gpu/01_attention",
        "gpu/03_why_self_attention",
    ]
    page = nbformat.read(str(stage / "gpu" / "01_attention.ipynb"), as_version=4)
    first = page.cells[0].source
    assert first.startswith("# Chapter 01_attention\n\n[Open in Colab](")
    assert "/blob/main/book/01_attention.ipynb)" in first  # the chapter, not the copy
    # one line on what the page is, then where, when and in how long it ran
    assert (
        f":::{{note}}\nThis page is the executed notebook of the `gpu` profile's book run on **{H100}**, "
        "whose text may differ from this site's chapter of the same name ([its page in the "
        "`cpu` run](../book/01_attention.ipynb)).\n\n"
    ) in first
    assert "It ran in **16.2 s** on 2026-11-27 at commit `aaaaaaa`" in first
    # the run's tree had edits, and its record does not say which files
    assert "plus local changes that the record does not list" in first
    assert "remove-cell" in page.cells[2].metadata["tags"]
    # The executing profile's run is never a part of its own site.
    own = _stage(tmp_path, "own", gpu_results, profile="gpu")
    assert not (own / "gpu").exists()
    assert len(yaml.safe_load((own / "_toc.yml").read_text())["parts"]) == 3


def test_the_committed_gpu_pages_show_their_run_s_values_and_end_on_its_findings(
    tmp_path,
):
    """The committed run's pages (an earlier version of chapters 01-03): the parameters cell
    shows the profile the run used, the note says the text is an earlier version of the chapter,
    and the page ends on what that run found, its closing section written from its own record."""
    from annotated_transformer.chapters.model import record, sentences

    if not (ROOT / "results" / "book_gpu" / "notebooks" / "02_model.ipynb").is_file():
        pytest.skip("no committed gpu run of chapter 02 in this clone")
    stage = _stage(tmp_path, "real", ROOT / "results")
    page = nbformat.read(str(stage / "gpu" / "02_model.ipynb"), as_version=4)
    (parameters,) = [c for c in page.cells if "parameters" in c.metadata.get("tags", [])]
    assert parameters.source.startswith('profile_name = "gpu"')
    assert (
        "whose text, an earlier version of the chapter, differs from this site's chapter "
        "of the same name"
    ) in page.cells[0].source
    last = page.cells[-1]
    assert last.cell_type == "markdown"
    assert last.source.startswith(committed.CLOSING_HEADING + "\n")
    found = record.read("book_gpu", ROOT / "results")
    assert last.source.endswith(sentences.closing(found))
    assert "wrote gpu/model.json" not in last.source


def test_the_book_s_pages_are_unchanged_by_a_gpu_run_or_its_absence(
    tmp_path, gpu_results
):
    before = _stage(tmp_path, "before", None, profile=None)  # the site as it was built
    empty = tmp_path / "empty"
    (empty / "book_gpu").mkdir(parents=True)  # a record but no notebooks: no part at all
    shutil.copy(gpu_results / "book_gpu" / "book_run.json", empty / "book_gpu")
    without = _stage(tmp_path, "without", empty)
    assert _tree(without) == _tree(before)
    with_gpu = _tree(_stage(tmp_path, "with", gpu_results))
    assert {k: v for k, v in with_gpu.items() if k.startswith("book/")} == {
        k: v for k, v in _tree(before).items() if k.startswith("book/")
    }


def test_a_chapter_s_copy_launches_the_chapter():
    meta = {"annotated_transformer": {"source": "book/01_attention.py"}}
    assert sphinx_assets.chapter_page("gpu/01_attention", meta) == "book/01_attention"
    assert sphinx_assets.chapter_page("book/01_attention", meta) is None
    assert sphinx_assets.chapter_page("references", {}) is None
    buttons = [
        {
            "label": "launch-buttons",
            "buttons": [
                {"url": "https://colab/github/o/r/blob/main/gpu/01_attention.ipynb"}
            ],
        },
        {
            "label": "download-buttons",
            "buttons": [{"url": "../_sources/gpu/01_attention.ipynb"}],
        },
    ]
    sphinx_assets.relaunch(buttons, "gpu/01_attention", "book/01_attention")
    assert buttons[0]["buttons"][0]["url"].endswith("/blob/main/book/01_attention.ipynb")
    assert buttons[1]["buttons"][0]["url"] == "../_sources/gpu/01_attention.ipynb"


# ----------------------------------------------------------------------------------------------
# The introduction


def test_the_run_table_sets_the_gpu_run_beside_the_executing_one(tmp_path, gpu_results):
    cpu = make_incoming_run(
        tmp_path / "cpu",
        {
            "01_attention": {"wall": 16.15},
            "02_model": {"status": "failed"},
            "03_why_self_attention": {"wall": 20.1},
        },
        profile="cpu",
        device="AMD EPYC (2 cores)",
    )
    record = json.loads((cpu / "results" / "cpu" / "book_run.json").read_text())
    runs = summary.committed_book_runs("cpu", root=gpu_results)
    assert list(runs) == ["gpu"]
    table = summary.book_run_table(record, runs, profile="cpu")
    cpu_column, gpu_column = "cpu: AMD EPYC (2 cores)", f"gpu: {H100}"
    assert list(table.columns) == ["chapter", cpu_column, gpu_column]
    rows = table.set_index("chapter")
    assert rows.loc["01_attention", cpu_column] == 16.15
    assert rows.loc["01_attention", gpu_column] == 16.25
    assert rows.loc["02_model", cpu_column] == "failed"
    html = table_html(table, na_rep=summary.SHOWN_NOT_RUN, **{gpu_column: "{:,.1f}"})
    assert f"<td>{summary.SHOWN_NOT_RUN}</td>" in html  # 02 has not run on the GPU
    assert summary.describe_book_run(runs["gpu"]).startswith(
        "2 chapters, run on 2026-11-27 at commit aaaaaaa"
    )
    # Run under the gpu profile, the table has its own run only.
    assert summary.committed_book_runs("gpu", root=gpu_results) == {}


def test_the_gpu_column_reads_the_gpu_book_run_first(tmp_path):
    from annotated_transformer.evaluation import results

    root = tmp_path / "results"
    for folder, base in (("gpu", 1.0), ("book_gpu", 2.0)):
        results.write_result(
            "model",
            {"params_m": {"base": base}},
            profile="gpu",
            root=root,
            path=root / folder / "model.json",
        )
    (claim,) = [c for c in summary.CLAIMS if c.label == "parameters, base (millions)"]
    column = summary.profile_column("gpu")
    shown = summary.summary_table("cpu", root=root).set_index("claim")[column]
    assert shown[claim.label] == "2.0"  # the committed book run's, before results/gpu/
    assert summary.files_of(claim, "gpu", root, executing="cpu") == ["model", "model"]
    # Executed under the gpu profile, the column is that run's own folder.
    own = summary.summary_table("gpu", root=root).set_index("claim")[column]
    assert own[claim.label] == "1.0"
    assert summary.result_folders("gpu", "gpu") == ["gpu"]
    table = summary.provenance_table(["cpu", "gpu"], root=root)
    assert list(table["folder"]) == ["results/book_gpu/", "results/gpu/"]


def test_the_run_record_names_notebooks_inside_the_clone_by_relative_path(tmp_path):
    # A record committed from a clone under /tmp must not name /tmp; a notebook outside the
    # clone keeps the path it was given.
    inside = ROOT / "_build" / "executed" / "cpu" / "book" / "01_attention.ipynb"
    run = runner.ChapterRun(
        "01_attention", Path("book/01_attention.py"), inside, "ok", 1.0
    )
    assert run.to_dict()["notebook"] == "_build/executed/cpu/book/01_attention.ipynb"
    outside = tmp_path / "01_attention.ipynb"
    run = runner.ChapterRun(
        "01_attention", Path("book/01_attention.py"), outside, "ok", 1.0
    )
    assert run.to_dict()["notebook"] == str(outside)


def test_a_record_the_chapter_cannot_read_back_leaves_the_page_without_a_closing(
    tmp_path, gpu_results, monkeypatch
):
    def unreadable(*args, **kwargs):
        raise KeyError("rows")

    monkeypatch.setattr(committed, "closing_section", unreadable)
    lines = []
    stage = tmp_path / "stage"
    stage.mkdir()
    site_build.stage_site(
        stage, root=ROOT, log=lines.append, profile="cpu", results_dir=gpu_results
    )
    page = nbformat.read(str(stage / "gpu" / "01_attention.ipynb"), as_version=4)
    assert not page.cells[-1].source.startswith(committed.CLOSING_HEADING)
    assert any(
        "gpu/01_attention: no closing section" in line and "KeyError" in line
        for line in lines
    ), lines
