"""The book's run folder belongs to the profile's book run, and the site to
its build.

- A `--param` run trains a run folder of its own (under its --output-dir), so the profile's
  chapter 08 never reads the `--param` run's model.
- The lock comes first: a process training into the folder refuses the book before anything of
  it is moved (and chapter 04's `runs.start_run` moves nothing by itself).
- A training chapter that fails or is interrupted leaves the published run in the folder (its
  own goes to `<folder>.partial`, which the next chapter 04 resumes); one killed mid-way is put
  right by the next book run.
- A site rebuild refuses, in one line naming them, files a reader put into the site.
- Chapter 08's ONNX exports go beside the run folder (`<folder>-onnx/`, where `export-onnx`
  points an --out inside a run folder), and the site build stages the live page's model from
  there.
- Chapter 05 never trains: in a book run with no finished run there it refuses in one line
  naming chapter 04; run by hand it reads the reader's own run of chapter 04 by hand, else the
  book's, else refuses in one line.

The chapters are stand-ins (a kernel start each, seconds) that write and read the run folder as
chapters 04, 05 and 08 do, through `results.book_run_dir`, `report.run_to_translate` and
`live_page.exports_dir`.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
from pathlib import Path

import pytest

from annotated_transformer.book import runner, site
from annotated_transformer.evaluation import results

REPO = Path(__file__).resolve().parents[2]

TRAINING = """# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"
steps = 3

# %%
import os, signal, time
from annotated_transformer.evaluation import results
run = results.book_run_dir(profile_name)
run.mkdir(parents=True, exist_ok=True)
with open(run / "metrics.jsonl", "a") as log:
    log.write(f"{steps}\\n")

# %%
MODE = "ok"
if MODE == "fail":
    raise RuntimeError("the chapter fails after training")
if MODE == "interrupt":
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(30)
results.write_result("training", {"steps": steps}, profile=profile_name)
"""

FIGURES = """# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"

# %%
from annotated_transformer.evaluation import results
from annotated_transformer.web import live_page
run = results.book_run_dir(profile_name)
model = (run / "metrics.jsonl").read_text()
exports = live_page.exports_dir(run)
web = exports / live_page.FLOAT32_EXPORT
web.mkdir(parents=True, exist_ok=True)
(web / "model.json").write_text('{"weights": "float32"}')
live_page.publish_choice(web, exports)
results.write_result("figures", {"model": model}, profile=profile_name)
"""

TRANSLATION = """# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"

# %%
from annotated_transformer.evaluation import results
from annotated_transformer.chapters.translation_results import table2 as report
from annotated_transformer.profiles import get_profile
run, trained = report.run_to_translate(get_profile(profile_name))
results.write_result("scores", {"folder": str(run.folder)}, profile=profile_name)
"""


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A book of two stand-in chapters (04 trains the run folder, 08 reads it) in a clone of its
    own, whose results root is its results/."""
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    monkeypatch.delenv(results.BOOK_RUN_ENV, raising=False)
    root = tmp_path / "clone"
    (root / "book").mkdir(parents=True)
    shutil.copy(REPO / "_config.yml", root)
    (root / "book" / "04_training.py").write_text(TRAINING)
    (root / "book" / "05_translation_results.py").write_text(TRANSLATION)
    (root / "book" / "08_attention_visualizations.py").write_text(FIGURES)
    return root


def run(root: Path, *chapters: str, **kwargs):
    kwargs.setdefault("results_dir", root / "results")
    kwargs.setdefault("output_dir", root / "_build")
    return runner.run_book(
        "smoke",
        root=root,
        chapters=list(chapters),
        build=False,
        log=lambda line: None,
        **kwargs,
    )


def chapter(root: Path, **changes) -> None:
    text = TRAINING
    for old, new in changes.items():
        text = text.replace(old, new)
    (root / "book" / "04_training.py").write_text(text)


def figures(results_dir: Path) -> str:
    return results.read_result("figures", "smoke", results_dir)["metrics"]["model"]


def test_chapters_take_the_run_folder_from_the_runner():
    """No chapter writes out `runs/book-<profile>`: chapters 04 and 08 take the folder from
    `results.book_run_dir`, chapter 05 finds its run through `report.run_to_translate` and
    trains none itself, and chapter 08 writes its ONNX exports to
    `live_page.exports_dir`."""
    for name in ("04_training", "05_translation_results", "08_attention_visualizations"):
        source = (REPO / "book" / f"{name}.py").read_text()
        assert not re.search(r'"runs" / f"book-\{profile', source), name
    for name in ("04_training", "08_attention_visualizations"):
        source = (REPO / "book" / f"{name}.py").read_text()
        assert "results.book_run_dir(profile.name)" in source, name
    translation = (REPO / "book" / "05_translation_results.py").read_text()
    assert re.search(r"report\.run_to_translate\(\s*profile", translation)
    assert "pipeline.run(" not in translation
    figures_source = (REPO / "book" / "08_attention_visualizations.py").read_text()
    assert "live_page.exports_dir(run_dir)" in figures_source
    assert 'by_hand.chapter04_checkpoint(profile.name, "08")' in figures_source
    assert not re.search(r'run_dir / "web', figures_source)
    assert runner.TRAINING_CHAPTERS == ("04_training",)


def test_a_param_run_trains_a_run_folder_of_its_own(book, tmp_path):
    """A `--param` run trains under its own --output-dir and leaves the profile's run
    folder as it was, so the profile's next chapter 08 draws its figures from the
    profile's model."""
    assert all(c.status == "ok" for c in run(book, "04").chapters)
    profiles_run = book / "runs" / "book-smoke"
    assert (profiles_run / "metrics.jsonl").read_text() == "3\n"

    other = run(
        book,
        "04",
        "08",
        output_dir=tmp_path / "other",
        results_dir=tmp_path / "other_results",
        parameters={"steps": 40},
    )
    assert all(c.status == "ok" for c in other.chapters)
    assert (profiles_run / "metrics.jsonl").read_text() == "3\n"
    assert not (profiles_run / "replaced").exists()
    own = tmp_path / "other" / "runs" / "book-smoke"
    assert (own / "metrics.jsonl").read_text() == "40\n"
    assert figures(tmp_path / "other_results") == "40\n"

    assert all(c.status == "ok" for c in run(book, "08").chapters)
    assert figures(book / "results") == "3\n"


def test_the_run_folder_follows_the_results_root(tmp_path):
    root = tmp_path / "clone"
    assert runner.book_run_folder(root, "cpu", root / "x", root / "results") == (
        root / "runs" / "book-cpu"
    )
    assert runner.book_run_folder(root, "cpu", tmp_path / "o", tmp_path / "r") == (
        tmp_path / "o" / "runs" / "book-cpu"
    )


def test_a_live_run_refuses_the_book_before_anything_moves(book):
    """The folder's lock is taken before the old run is set aside: a book run refused by a
    process training into the folder has moved nothing of that live run and recorded
    nothing."""
    from filelock import FileLock

    live = book / "runs" / "book-smoke"
    live.mkdir(parents=True)
    (live / "metrics.jsonl").write_text("live\n")
    with FileLock(str(live / ".lock")):
        with pytest.raises(ValueError) as refused:
            run(book, "04")
    assert "another process is training into" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert (live / "metrics.jsonl").read_text() == "live\n"
    assert sorted(p.name for p in live.parent.iterdir()) == ["book-smoke"]
    assert results.read_result(runner.RECORD, "smoke", book / "results") is None


def test_chapter_04_start_moves_nothing_of_the_run_it_replaces(tmp_path):
    """`runs.start_run` leaves an older run where it is: `pipeline.run(overwrite=True)`
    sets it aside, holding the folder's lock."""
    from annotated_transformer.chapters.training import runs
    from annotated_transformer.profiles import get_profile

    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "metrics.jsonl").write_text('{"kind": "start", "profile": {}}\n')
    (folder / "last.pt").write_bytes(b"x")
    (folder / "checkpoints" / "step_10.pt").write_bytes(b"x")
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    assert runs.start_run(folder, get_profile("smoke"), resume=True) is False
    assert runs.start_run(folder, get_profile("smoke"), resume=False) is False
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    source = (REPO / "book" / "04_training.py").read_text()
    assert "overwrite=not resuming" in source


def test_chapter_04_resumes_a_run_logged_before_a_setting_existed(tmp_path):
    """A start record without `compile_mode` and `length_buckets` (written before they existed)
    is a run of the profile that has them at their defaults."""
    import json

    from annotated_transformer.chapters.training import runs
    from annotated_transformer.profiles import get_profile

    folder = tmp_path / "run"
    folder.mkdir()
    older = get_profile("smoke").to_dict()
    del older["compile_mode"], older["length_buckets"]
    (folder / "metrics.jsonl").write_text(
        json.dumps({"kind": "start", "profile": older}) + "\n"
    )
    (folder / "last.pt").write_bytes(b"x")
    assert runs.unfinished_run_of(folder, get_profile("smoke"))
    assert not runs.unfinished_run_of(folder, get_profile("smoke", length_buckets=True))


def test_a_failed_or_interrupted_chapter_04_leaves_the_published_run(book):
    """A failed or interrupted chapter 04 leaves the published run in runs/book-<profile>
    for chapters 05 and 08 and its own in `<folder>.partial`, which the next chapter 04
    continues; the run a finished chapter 04 replaces is set aside, not deleted."""
    assert all(c.status == "ok" for c in run(book, "04").chapters)
    folder = book / "runs" / "book-smoke"
    partial = folder.with_name("book-smoke.partial")

    chapter(book, **{"steps = 3": "steps = 7", 'MODE = "ok"': 'MODE = "fail"'})
    (failed,) = run(book, "04").chapters
    assert failed.status == "failed"
    assert (folder / "metrics.jsonl").read_text() == "3\n"
    assert (partial / "metrics.jsonl").read_text() == "7\n"
    assert not folder.with_name("book-smoke.published").exists()

    chapter(book, **{"steps = 3": "steps = 9", 'MODE = "ok"': 'MODE = "interrupt"'})
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run(book, "04")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (folder / "metrics.jsonl").read_text() == "3\n"
    assert (
        partial / "metrics.jsonl"
    ).read_text() == "7\n9\n"  # it continued the partial run
    record = results.read_result(runner.RECORD, "smoke", book / "results")
    assert record["metrics"]["chapters"]["04_training"]["status"] == "interrupted"

    assert all(c.status == "ok" for c in run(book, "08").chapters)
    assert figures(book / "results") == "3\n"

    chapter(book, **{"steps = 3": "steps = 11"})
    assert all(c.status == "ok" for c in run(book, "04", "08").chapters)
    assert (folder / "metrics.jsonl").read_text() == "7\n9\n11\n"
    assert figures(book / "results") == "7\n9\n11\n"
    (aside,) = (
        folder / "replaced"
    ).iterdir()  # the run it replaced: set aside, not deleted
    assert (aside / "metrics.jsonl").read_text() == "3\n"
    assert sorted(p.name for p in folder.parent.iterdir()) == [
        "book-smoke",
        "book-smoke-onnx",
    ]
    assert not [p for p in folder.rglob("*") if "web" in p.name]


def test_a_killed_training_chapter_is_put_right_by_the_next_run(book):
    folder = book / "runs" / "book-smoke"
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("unfinished\n")
    published = folder.with_name("book-smoke.published")
    published.mkdir()
    (published / "metrics.jsonl").write_text("3\n")
    assert all(c.status == "ok" for c in run(book, "08").chapters)
    assert figures(book / "results") == "3\n"
    assert not published.exists()
    partial = folder.with_name("book-smoke.partial")
    assert (partial / "metrics.jsonl").read_text() == "unfinished\n"


# ------------------------------------------------------------------------------------------ site
FAKE_SPHINX = """
import sys
from pathlib import Path
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
(out / "index.html").write_text("<html></html>")
(out / ".buildinfo").write_text("built")
(out / "_static").mkdir(exist_ok=True)
(out / "_static" / "page.css").write_text("")
"""


def test_a_site_rebuild_refuses_a_readers_files(tmp_path, monkeypatch, book):
    """A rebuild refuses, in one line naming them, files a reader put into the built site,
    and the book refuses before its first chapter; the reader's files stay."""
    monkeypatch.setattr(site, "_SPHINX_BUILD", FAKE_SPHINX)
    html = tmp_path / "out" / "html"
    assert site.build_site(tmp_path / "stage", html, log=lambda line: None).ok
    assert site.reader_files(html) == []
    assert site.build_site(tmp_path / "stage", html, log=lambda line: None).ok

    (html / "notes.txt").write_text("mine")
    (html / "_static" / "extra.js").write_text("mine")
    with pytest.raises(FileExistsError) as refused:
        site.build_site(tmp_path / "stage", html, log=lambda line: None)
    message = str(refused.value)
    assert "\n" not in message and "notes.txt" in message
    assert "_static/extra.js" in message
    assert (html / "notes.txt").read_text() == "mine"
    # the book refuses before its first chapter
    with pytest.raises(FileExistsError):
        runner.run_book(
            "smoke",
            root=book,
            chapters=["08"],
            output_dir=tmp_path / "out",
            results_dir=book / "results",
            log=lambda line: None,
        )
    assert results.read_result(runner.RECORD, "smoke", book / "results") is None
    assert json.loads(json.dumps(site.reader_files(html))) == [
        "_static/extra.js",
        "notes.txt",
    ]


# ---------------------------------------------------------------- what other chapters derive
def test_chapter_08s_exports_lie_beside_the_run_folder_and_the_site_stages_them(
    book, tmp_path, monkeypatch
):
    """Chapter 08 writes its exports to `<folder>-onnx/` beside the run folder, which only
    chapter 04 writes, and the site build stages the live model from the exports of this
    run's own folder, under its --output-dir, never from the clone's runs/."""
    staged = []
    monkeypatch.setattr(runner, "stage_site", lambda *a, **k: None)
    monkeypatch.setattr(
        runner.live_page,
        "stage_for_site",
        lambda stage, exports: staged.append(Path(exports)) or [],
    )
    monkeypatch.setattr(runner, "build_site", lambda *a, **k: "built")
    book_run = runner.run_book(
        "smoke",
        root=book,
        chapters=["04", "08"],
        output_dir=tmp_path / "other",
        results_dir=tmp_path / "other_results",
        parameters={"steps": 40},
        log=lambda line: None,
    )
    assert all(c.status == "ok" for c in book_run.chapters)
    assert book_run.site == "built"
    folder = tmp_path / "other" / "runs" / "book-smoke"
    exports = folder.with_name("book-smoke-onnx")
    assert staged == [exports]
    assert sorted(p.name for p in folder.iterdir() if p.name != ".lock") == [
        "metrics.jsonl"
    ]
    assert (exports / runner.live_page.LIVE_EXPORT / "model.json").is_file()
    assert not (book / "runs").exists()


def test_export_onnx_points_where_chapter_08_writes(tmp_path):
    """`export-onnx --out` inside a run folder is refused, naming the folder chapter 08 uses."""
    from annotated_transformer.runtime import ownership
    from annotated_transformer.web import live_page

    folder = (tmp_path / "runs" / "book-smoke").resolve()
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("")
    exports = live_page.exports_dir(folder)
    for name in (live_page.FLOAT32_EXPORT, live_page.INT8_EXPORT, live_page.LIVE_EXPORT):
        ownership.check_output(
            "--out", exports / name, command="export-onnx", folder=True
        )
        with pytest.raises(ownership.OwnedFolderError) as refused:
            ownership.check_output(
                "--out", folder / name, command="export-onnx", folder=True
            )
        assert str(refused.value).endswith(f"e.g. {exports / name}")


def _finished_run(folder: Path, profile_name: str = "smoke") -> None:
    """What `pipeline.run` leaves, as `report.finished_run` reads it."""
    from annotated_transformer import pipeline
    from annotated_transformer.profiles import get_profile

    (folder / "checkpoints").mkdir(parents=True)
    records = [
        {
            "kind": "start",
            "profile": get_profile(profile_name).to_dict(),
            "device": "cpu",
            "precision": "fp32",
        },
        {"kind": "train", "target_tokens": 10},
        {"kind": "stop", "step": 3, "train_time_s": 1.0, "stopped_by": "max_steps"},
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "checkpoints" / "step_3.pt").write_bytes(b"x")
    (folder / pipeline.AVERAGED_NAME).write_bytes(b"x")
    (folder / pipeline.TRANSLATIONS_NAME).write_text("")


def test_chapter_05_in_a_book_run_refuses_without_chapter_04s_run(book):
    """In a book run with no finished run in the folder, chapter 05 fails in one line
    naming chapter 04 and trains nothing into the folder."""
    (failed,) = run(book, "05").chapters
    assert failed.status == "failed"
    assert "NoBookRun: run chapter 04 first: " in failed.error
    assert "--chapters 04 05" in failed.error and "\n" not in failed.error
    runs = book / "runs"
    assert not runs.exists() or sorted(p.name for p in runs.iterdir()) == ["book-smoke"]
    assert not (runs / "book-smoke" / "metrics.jsonl").exists()

    _finished_run(runs / "book-smoke")
    before = sorted(p.relative_to(runs) for p in runs.rglob("*"))
    assert all(c.status == "ok" for c in run(book, "05").chapters)
    scores = results.read_result("scores", "smoke", book / "results")["metrics"]
    assert scores["folder"] == str(runs / "book-smoke")
    assert sorted(p.relative_to(runs) for p in runs.rglob("*")) == before


def test_chapter_05_by_hand_reads_the_readers_run_then_the_books_and_trains_none(
    tmp_path, monkeypatch
):
    from annotated_transformer.chapters.translation_results import table2 as report
    from annotated_transformer.profiles import get_profile

    monkeypatch.delenv(results.BOOK_RUN_ENV, raising=False)
    monkeypatch.delenv(results.BY_HAND_DIR_ENV, raising=False)
    monkeypatch.setenv(results.BY_HAND_ENV, "1")
    monkeypatch.setattr(results, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(
        report, "run_pipeline", lambda *a, **k: pytest.fail("chapter 05 trained")
    )
    profile = get_profile("smoke")
    with pytest.raises(report.NoBookRun, match="the ways on") as refused:
        report.run_to_translate(profile, missing="none here: the ways on")
    assert refused.value._render_traceback_() == ["NoBookRun: none here: the ways on"]
    book_run = tmp_path / "runs" / "book-smoke"
    _finished_run(book_run)
    found, origin = report.run_to_translate(profile)
    assert (found.folder, origin) == (book_run, "the book's run")
    mine = tmp_path / "runs" / "by-hand" / "book-smoke"
    _finished_run(mine)
    found, origin = report.run_to_translate(profile)
    assert (found.folder, origin) == (mine, "chapter 04 run by hand")
