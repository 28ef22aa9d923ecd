"""The book: chapter pairs in sync, every chapter runs under the smoke profile, the site builds from
the executed notebooks without missing pages, and a headless Chromium sees its charts drawn."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import jupytext
import nbformat
import pytest

from annotated_transformer.book import chapters, parameters, runner, sphinx_assets, sync
from annotated_transformer.book import site as site_build
from annotated_transformer.commands import book as book_command
from annotated_transformer.evaluation import results
from annotated_transformer.profiles import PROFILE_NAMES
from tests.support import chart_audit as audit
from tests.support.browser import Browser, BrowserGone, find_chromium
from tests.support.pages import audit_page, faults, served

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob(chapters.CHAPTER_GLOB))
CHAPTER_IDS = [c.stem for c in CHAPTERS]
# Pages of the book's own infrastructure (as opposed to chapters written elsewhere).
INFRA_PAGES = (
    "00_introduction",
    "04_training",
    "05_translation_results",
    "06_model_variations",
    "07_constituency_parsing",
    "08_attention_visualizations",
    "references",
)
CHART_PAGE = "00_introduction"


# ----------------------------------------------------------------------------------------------
# Chapter sources


@pytest.mark.parametrize("source", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_pair_is_in_sync(source):
    """book/NN.py is the source of truth; its .ipynb twin must hold the same cells (outputs a
    Jupyter save left in it do not count)."""
    differs = sync.pair_differences(source)
    assert differs is None, (
        f"{source.with_suffix('.ipynb').name} drifted from {source.name} ({differs}): run "
        f"`python -m annotated_transformer book --sync --chapters {source.stem}`"
    )
    nb = nbformat.read(str(source.with_suffix(".ipynb")), as_version=4)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", (
        "pairing config missing"
    )


@pytest.mark.parametrize("source", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_takes_the_profile_as_parameters(source):
    nb = jupytext.read(str(source))
    index = chapters.parameters_cell_index(nb)
    code = nb.cells[index].source
    for name in ("profile_name", "device"):
        assert f"{name} =" in code, f"{source.name}: the parameters cell must set {name}"
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert 'find_spec("annotated_transformer")' in first_code.source, (
        f"{source.name}: the first code cell must install the package when it is missing (Colab)"
    )
    # with what the chapters import, and from elsewhere where AT_INSTALL_FROM says
    assert "annotated-transformer[notebook] @ " in first_code.source, source.name
    assert 'os.environ.get("AT_INSTALL_FROM")' in first_code.source, source.name


def test_book_and_train_choose_from_one_profile_record():
    import argparse

    from annotated_transformer.commands import train

    def profile_choices(add_arguments) -> tuple:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        return tuple(next(a for a in parser._actions if a.dest == "profile").choices)

    assert (
        profile_choices(book_command.add_arguments)
        == profile_choices(train.add_arguments)
        == PROFILE_NAMES
    )
    assert {"smoke", "cpu", "gpu", "paper", "gpu-iwslt14", "paper-big"} <= set(
        PROFILE_NAMES
    )


def test_toc_lists_every_chapter_of_the_design():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = site_build._toc_files(toc)
    expected = [
        "book/00_introduction",
        "book/01_attention",
        "book/02_model",
        "book/03_why_self_attention",
        "book/04_training",
        "book/05_translation_results",
        "book/06_model_variations",
        "book/07_constituency_parsing",
        "book/08_attention_visualizations",
    ]
    assert [f for f in files if f.startswith("book/")] == expected
    assert "references" in files
    for source in CHAPTERS:
        assert f"book/{source.stem}" in files, f"{source.name} is not in _toc.yml"


def test_config_builds_offline_from_executed_notebooks():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    js = config["sphinx"]["config"]["html_js_files"]
    assert js[:3] == [
        "vendor/vega.min.js",
        "vendor/vega-lite.min.js",
        "vendor/vega-embed.min.js",
    ]
    for name in js:
        assert (ROOT / "_static" / name).is_file(), name
    # Sphinx puts mathjax_path under _static/; "../" leads to the root, where _extra/ is copied.
    assert config["sphinx"]["config"]["mathjax_path"].startswith("../")
    assert (ROOT / "_extra" / config["sphinx"]["config"]["mathjax_path"][3:]).is_file()
    assert config["launch_buttons"]["colab_url"].startswith(
        "https://colab.research.google.com"
    )
    assert "intersphinx" not in json.dumps(config)


def test_cli_help_lists_the_options():
    out = subprocess.run(
        [sys.executable, "-m", "annotated_transformer", "book", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    for option in ("--profile", "--chapters", "--no-build", "--output-dir"):
        assert option in out.stdout


def test_selecting_an_unknown_chapter_names_the_choices():
    with pytest.raises(ValueError, match="no chapter matches '99'"):
        chapters.select_chapters(CHAPTERS, ["99"])
    assert chapters.select_chapters(CHAPTERS, ["00", "book/00_introduction.py"]) == [
        ROOT / "book" / "00_introduction.py"
    ]


def test_toc_filter_drops_missing_pages_and_empty_parts():
    toc = {
        "root": "a",
        "parts": [
            {"caption": "x", "chapters": [{"file": "b"}, {"file": "c"}]},
            {"caption": "y", "chapters": [{"file": "d"}]},
        ],
    }
    kept = site_build._filter_toc(toc, lambda f: f in {"a", "b"})
    assert kept == {"root": "a", "parts": [{"caption": "x", "chapters": [{"file": "b"}]}]}


# ----------------------------------------------------------------------------------------------
# Executing chapters


@pytest.mark.book
def test_failing_cell_names_the_chapter_and_the_cell(tmp_path):
    chapter = tmp_path / "book" / "01_broken.py"
    chapter.parent.mkdir()
    chapter.write_text(
        "# %% [markdown]\n# # Broken\n\n"
        '# %% tags=["parameters"]\nprofile_name = "cpu"\ndevice = "auto"\n\n'
        "# %%\nx = 1\n\n"
        '# %%\nvalue = {"a": 1}\nvalue["missing"]\n'
    )
    jupyter_dir = tmp_path / "jupyter"
    kernel = runner.register_kernel(jupyter_dir)
    with runner.book_environment(ROOT, "smoke", jupyter_dir, tmp_path / "results"):
        run = runner.execute_chapter(
            chapter,
            tmp_path / "out" / "01_broken.ipynb",
            profile="smoke",
            kernel_name=kernel,
        )
    assert run.status == "failed"
    assert run.cell_index == 3  # counted in the chapter's own cells, markdown included
    assert "chapter 01_broken failed in cell 3" in run.error
    assert 'value = {"a": 1}' in run.error and "KeyError" in run.error
    assert run.notebook.is_file()  # kept, with the traceback, for reading


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory):
    """Every chapter executed once under the smoke profile, then the site built from the copies."""
    out = tmp_path_factory.mktemp("book")
    lines = []
    started = time.perf_counter()
    run = runner.run_book("smoke", output_dir=out, build=False, log=lines.append)
    site = None
    if any(c.status == "ok" for c in run.chapters):
        # Build even if a chapter failed: its own test reports it, the site test checks the rest.
        site = runner.build_book_site(
            run.executed_dir, out / "html", "smoke", log=lines.append
        )
    print(
        "\n".join(lines),
        f"\nsmoke book: {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return {c.chapter: c for c in run.chapters}, site, out, run


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
@pytest.mark.parametrize("source", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_runs_under_smoke_profile(smoke_book, source):
    chapters, _, _, _ = smoke_book
    run = chapters[source.stem]
    assert run.status == "ok", run.error
    executed = nbformat.read(str(run.notebook), as_version=4)
    injected = [
        c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])
    ]
    assert injected and 'profile_name = "smoke"' in injected[0].source


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_book_run_is_recorded_with_provenance(smoke_book):
    chapters, _, _, run = smoke_book
    record = json.loads(run.record.read_text())
    assert record["profile"] == "smoke"
    for name in CHAPTER_IDS:
        entry = record["metrics"]["chapters"][name]
        # This run's own entry, not an older one: every chapter runs under the smoke profile.
        assert entry["status"] == "ok", entry["error"]
        assert entry["wall_time_s"] == round(chapters[name].wall_time_s, 2) > 0
        assert entry["notebook"] == str(chapters[name].notebook)
        assert entry["device"] == record["provenance"]["device"] and entry["device_name"]
    # Each entry names the results files its chapter wrote (what `book --import-run` takes).
    assert "attention.json" in record["metrics"]["chapters"]["01_attention"]["results"]
    for key in ("git_commit", "torch", "device", "date"):
        assert key in record["provenance"]


# A line a progress bar or a training log leaves in a page: tqdm's "40%|####  |" or its rate
# "12.5it/s]", the trainer's "train smoke: 20step ..." lines.
PROGRESS_LINE = re.compile(
    r"\d+%\|[^|]*\||\d(?:it|step|run|s|tok)/s\]|^\S+ \S+: *\d+step"
)
MAX_PROGRESS_LINES = 4  # a summary line per long loop, not a line per refresh


def _page_text(notebook: Path) -> list[str]:
    """Every line a reader sees in the executed page's outputs (streams, text and HTML)."""
    lines = []
    for cell in nbformat.read(str(notebook), as_version=4).cells:
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")] + [
                output.get("data", {}).get(kind, "")
                for kind in ("text/plain", "text/html")
            ]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else text
                lines += text.replace("\r", "\n").splitlines()
    return lines


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_pages_leave_no_progress_dumps_and_name_no_path_of_this_machine(smoke_book):
    chapters_run, _, out, _ = smoke_book
    local = {str(Path(sys.prefix)), str(ROOT), str(out)}
    if os.environ.get("AT_DATA_DIR"):
        local.add(str(Path(os.environ["AT_DATA_DIR"]).resolve()))
    for name, run in chapters_run.items():
        lines = _page_text(run.notebook)
        bars = [line for line in lines if PROGRESS_LINE.search(line)]
        assert len(bars) <= MAX_PROGRESS_LINES, (
            f"{name}: {len(bars)} progress lines, e.g. {bars[:3]}"
        )
        named = [line for line in lines if any(path in line for path in local)]
        assert not named, f"{name} shows a path of this machine: {named[:2]}"


def _built_page_lines(page: Path) -> list[str]:
    """The text a reader sees on a built page: scripts, styles and tags left out."""
    text = re.sub(
        r"<(script|style)\b.*?</\1>", "", page.read_text(encoding="utf-8"), flags=re.S
    )
    return [
        line.strip()
        for line in html.unescape(re.sub(r"<[^>]+>", "\n", text)).splitlines()
    ]


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_built_pages_show_no_progress_dumps(smoke_book):
    _, site, out, _ = smoke_book
    assert site is not None and site.ok
    pages = sorted((out / "html" / "book").glob("*.html"))
    assert len(pages) == len(CHAPTERS)
    for page in pages:
        bars = [line for line in _built_page_lines(page) if PROGRESS_LINE.search(line)]
        assert len(bars) <= MAX_PROGRESS_LINES, (
            f"{page.name}: {len(bars)} progress lines, e.g. {bars[:3]}"
        )


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_site_builds_without_missing_pages(smoke_book):
    _, site, out, _ = smoke_book
    assert site is not None and site.ok, (
        f"the site did not build; see {site and site.log_path}"
    )
    assert not site.missing_file_warnings, "\n".join(site.missing_file_warnings)
    ours = [
        w
        for w in site.warnings
        if any(f"{page}." in w or f"{page}:" in w for page in INFRA_PAGES)
    ]
    assert not ours, "\n".join(ours)
    for source in CHAPTERS:
        assert (out / "html" / "book" / f"{source.stem}.html").is_file(), (
            f"no page for {source.name}"
        )
    assert (out / "html" / "references.html").is_file()
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"):
        assert (out / "html" / "_static" / "vendor" / name).is_file()
    page = (out / "html" / "book" / f"{CHART_PAGE}.html").read_text()
    assert "at-vega-chart" in page and "_static/vendor/vega-embed.min.js" in page
    assert "https://cdn.jsdelivr.net/npm/vega" not in page
    assert (
        "cdn.jsdelivr.net/npm/mathjax" not in page
        and (out / "html" / "mathjax" / "tex-svg-full.js").is_file()
    )


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_site_shows_a_committed_gpu_run_as_a_part_of_its_own(smoke_book, tmp_path):
    """The smoke site built again with a committed `gpu` run of chapter 01 (the smoke run's
    notebook, filed as a gpu run) in a results root of its own: its page at gpu/01_attention with
    the run's note, a part in the toc, the launch buttons on the chapter, the book's pages as
    they were."""
    from annotated_transformer.book import committed
    from tests.book.test_committed_runs import H100, make_incoming_run

    chapters_run, _, out, _ = smoke_book
    incoming = make_incoming_run(tmp_path / "incoming", {"01_attention": {"wall": 42.0}})
    executed = nbformat.read(str(chapters_run["01_attention"].notebook), as_version=4)
    executed.metadata["annotated_transformer"]["profile"] = "gpu"
    nbformat.write(
        executed, str(incoming / "_build/executed/gpu/book/01_attention.ipynb")
    )
    results_root = tmp_path / "results"
    assert committed.import_run(
        incoming, "gpu", results_dir=results_root, log=lambda _: None
    ).imported == ["01_attention"]
    stage = tmp_path / "executed"
    shutil.copytree(out / "executed" / "smoke", stage)
    site = runner.build_book_site(
        stage, tmp_path / "html", "smoke", log=lambda _: None, results_dir=results_root
    )
    assert site.ok, f"the site did not build; see {site.log_path}"
    assert not site.missing_file_warnings, "\n".join(site.missing_file_warnings)
    assert not [w for w in site.warnings if "gpu/" in w], site.warnings
    page = (tmp_path / "html" / "gpu" / "01_attention.html").read_text()
    text = " ".join(
        " ".join(
            _built_page_lines(tmp_path / "html" / "gpu" / "01_attention.html")
        ).split()
    )
    assert "This page is the executed notebook of the gpu profile" in text
    assert f"book run on {H100}" in text
    assert "It ran in 42.0 s" in text
    assert 'href="../book/01_attention.html"' in page  # the same chapter, this site's run
    assert "/blob/main/book/01_attention.ipynb" in page
    assert "/blob/main/gpu/01_attention.ipynb" not in page
    assert (
        f"The book on one GPU ({H100})"
        in (tmp_path / "html" / "book" / "01_attention.html").read_text()
    )
    assert sorted(p.name for p in (tmp_path / "html" / "book").glob("*.html")) == sorted(
        p.name for p in (out / "html" / "book").glob("*.html")
    )


# ----------------------------------------------------------------------------------------------
# A real browser draws the charts


_CHART_STATE = """(() => ({
  ready: document.readyState,
  mathSources: document.querySelectorAll(".math").length,
  mathTypeset: document.querySelectorAll("mjx-container").length,
  charts: Array.from(document.querySelectorAll("div.at-vega-chart")).map(div => ({
    id: div.id,
    drawn: div.getAttribute("data-drawn"),
    svg: div.querySelectorAll("svg").length,
    canvas: div.querySelectorAll("canvas").length,
    marks: div.querySelectorAll("g.role-mark > *").length,
    text: div.textContent.slice(0, 200),
  })),
}))()"""

_CHART_BOX = """(() => {
  const div = document.querySelector("div.at-vega-chart");
  div.scrollIntoView({block: "center"});
  const r = div.getBoundingClientRect();
  return {x: r.left, y: r.top, width: r.width, height: r.height};
})()"""


def _settled(state: dict) -> bool:
    """Loaded, every chart drawn (or failed to), and the formulas typeset if the page has any."""
    charts = state.get("charts", [])
    math_done = state.get("mathSources", 0) == 0 or state.get("mathTypeset", 0) > 0
    return (
        state.get("ready") == "complete"
        and bool(charts)
        and all(c["drawn"] in ("ok", "error") for c in charts)
        and math_done
    )


def check_page_charts(
    chromium: str, page: Path, screenshot: Path, timeout: float = 45.0
) -> dict:
    """Chart states of a built page in headless Chromium, offline, plus a screenshot of its first chart."""
    with Browser(chromium) as browser:
        browser.open(page.resolve().as_uri())
        deadline = time.monotonic() + timeout
        state = {}
        while time.monotonic() < deadline:
            state = browser.evaluate(_CHART_STATE) or {}
            if _settled(state):
                break
            time.sleep(0.25)
        if state.get("charts"):
            browser.evaluate(_CHART_BOX)
            time.sleep(0.5)  # let the scroll settle before measuring
            box = browser.evaluate(_CHART_BOX)
            # The box is relative to the viewport; the clip wants page coordinates (as Puppeteer
            # does).
            viewport = browser.call("Page.getLayoutMetrics")["cssVisualViewport"]
            pad = 16
            browser.screenshot(
                screenshot,
                clip={
                    "x": max(0, viewport["pageX"] + box["x"] - pad),
                    "y": max(0, viewport["pageY"] + box["y"] - pad),
                    "width": box["width"] + 2 * pad,
                    "height": box["height"] + 2 * pad,
                    "scale": 1,
                },
            )
    return state


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_built_page_draws_its_charts_offline(smoke_book):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip(
            "no Chromium or Chrome on PATH (set AT_CHROMIUM to its path) for the browser check"
        )
    _, site, out, _ = smoke_book
    assert site is not None and site.ok, "the site did not build"
    page = out / "html" / "book" / f"{CHART_PAGE}.html"
    screenshot = results.results_root() / "smoke" / "screenshots" / f"{CHART_PAGE}.png"
    try:
        state = check_page_charts(chromium, page, screenshot)
    except BrowserGone as crash:  # a browser crash, not the page's: once more, and say so
        warnings.warn(f"{CHART_PAGE}: {crash}", stacklevel=1)
        state = check_page_charts(chromium, page, screenshot)
    charts = state.get("charts", [])
    assert charts, f"no chart div on {page.name}"
    for chart in charts:
        assert chart["drawn"] == "ok", f"chart {chart['id']} not drawn: {chart['text']}"
        assert chart["svg"] + chart["canvas"] >= 1, (
            f"chart {chart['id']} has no svg or canvas"
        )
        assert chart["marks"] > 0, f"chart {chart['id']} has an empty plot"
    # MathJax is served from the site too (_extra/mathjax), so formulas typeset offline.
    assert state["mathSources"] > 0 and state["mathTypeset"] > 0, (
        "MathJax did not typeset the page's formulas"
    )
    png = screenshot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        int.from_bytes(png[16:20], "big") > 300
        and int.from_bytes(png[20:24], "big") > 200
    )


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_every_chart_of_the_book_tells_its_series_apart(smoke_book):
    chapters, _, _, _ = smoke_book
    found = [
        f"{name}: {collision}"
        for name, run in chapters.items()
        if run.status == "ok"
        for _, spec in audit.page_specs(run.notebook)
        for collision in audit.chart_faults(spec)
    ]
    assert not found, "\n".join(found)


@pytest.mark.book
@pytest.mark.slow  # the smoke book: every chapter, then the site
def test_built_pages_fit_the_column_and_leave_the_console_clean(smoke_book):
    """Every page, served over HTTP and read at 1,400 px: nothing (chart, table, output line)
    wider than the text column, and no error, exception or warning on the console (a script
    declared twice, a Vega-Lite spec of another version, a chart with no data to draw)."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip(
            "no Chromium or Chrome on PATH (set AT_CHROMIUM) for the browser check"
        )
    _, site, out, _ = smoke_book
    assert site is not None and site.ok, "the site did not build"
    problems = []
    with served(out / "html") as root:
        for source in CHAPTERS:
            state = audit_page(chromium, f"{root}/book/{source.stem}.html")
            # Audited on a second browser: the first one's crash stays visible.
            if "crashed" in state:
                warnings.warn(f"{source.stem}: {state['crashed']}", stacklevel=1)
            if "wide" not in state:
                problems.append(f"{source.stem}: the page never answered the audit")
                continue
            problems += [
                f"{source.stem}: {w['width']} px {w['tag']} in a "
                f"{state['column']} px column: {w['text']!r}"
                for w in state["wide"]
            ]
            problems += [f"{source.stem}: console {m['level']}: {m['text'][:200]}"
                         for m in faults(state["console"])]  # fmt: skip
    assert not problems, "\n".join(problems)


def test_a_page_loads_each_script_once():
    """sphinx-thebe's configuration, registered twice by Jupyter Book (once with the file name
    None, once ""), reaches the page once: a second `const THEBE_JS_URL` is a SyntaxError."""
    from sphinx.builders.html._assets import _JavaScript

    body = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript("a.js"),
        _JavaScript(None, body=body),
        _JavaScript("a.js"),
        _JavaScript("", body=body),
        _JavaScript("", body="let y = 1"),
    ]
    kept = sphinx_assets.unique_scripts(scripts)
    assert [(s.filename, s.attributes.get("body")) for s in kept] == [
        ("a.js", None),
        (None, body),
        ("", "let y = 1"),
    ]


def test_chapter_without_parameters_cell_fails_with_the_fix(tmp_path):
    chapter = tmp_path / "02_plain.py"
    chapter.write_text("# %%\nx = 1\n")
    run = runner.execute_chapter(chapter, tmp_path / "out.ipynb", profile="smoke")
    assert run.status == "failed"
    assert (
        "chapter 02_plain cannot take a profile" in run.error
        and 'tags=["parameters"]' in run.error
    )


def test_sync_writes_the_notebook_from_the_source_without_outputs(tmp_path):
    source = tmp_path / "05_demo.py"
    source.write_text(
        '# %% [markdown]\n# # Demo\n\n# %% tags=["parameters"]\nprofile_name = "cpu"\n\n# %%\nprint(1)\n'
    )
    (target,) = sync.sync_notebooks([source])
    nb = nbformat.read(str(target), as_version=4)
    assert [c.source for c in nb.cells] == ["# Demo", 'profile_name = "cpu"', "print(1)"]
    assert [c.id for c in nb.cells] == [
        "cell-0",
        "cell-1",
        "cell-2",
    ]  # stable ids, small diffs
    first = target.read_text()
    sync.sync_notebooks([source])
    assert target.read_text() == first  # idempotent
    with pytest.raises(ValueError, match="not a chapter source"):
        sync.sync_notebooks([target])


def test_cli_parameters_are_python_literals_or_words():
    assert parameters.parse_param("max_steps=50") == ("max_steps", 50)
    assert parameters.parse_param("data_dir=/data/x") == ("data_dir", "/data/x")
    assert parameters.parse_param("beam_size=None") == ("beam_size", None)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parameters.parse_param("max_steps")


# ----------------------------------------------------------------------------------------------
# Every profile sets up the chapters that have sizes of their own

SIZED_CHAPTERS = {
    "01": "attention",
    "02": "model",
    "03": "why_self_attention",
    "04": "training",
    "07": "constituency_parsing",
}


def _cells_up_to_the_sizes(number: str) -> tuple[Path, list]:
    """Chapter `number`'s code cells after the install cell, up to the one reading its sizes."""
    (source,) = [c for c in CHAPTERS if c.stem.startswith(f"{number}_")]
    code = [c for c in jupytext.read(str(source)).cells if c.cell_type == "code"]
    assert 'find_spec("annotated_transformer")' in code[0].source  # the install cell
    call = "chapter_sizes.of(profile.name)"
    last = next((i for i, c in enumerate(code) if call in c.source), None)
    assert last is not None, f"{source.name}: no cell calls {call}"
    return source, code[1 : last + 1]


@pytest.mark.parametrize("number", SIZED_CHAPTERS)
@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_every_profile_runs_the_chapters_set_up(name, number):
    """The chapter's imports, its parameters cell with `profile_name = name` (as papermill injects
    it), and its cells up to `chapter_sizes.of(...)`, in this process: a profile without sizes
    for the chapter fails here, not minutes into a book run."""
    import torch

    source, cells = _cells_up_to_the_sizes(number)
    namespace: dict = {"__name__": f"chapter_{number}"}
    threads = torch.get_num_threads()  # chapter 03 pins the CPU threads for its timings
    try:
        for index, cell in enumerate(cells):
            exec(
                compile(cell.source, f"{source.name}, code cell {index + 1}", "exec"),
                namespace,
            )
            if "parameters" in cell.metadata.get("tags", []):
                namespace["profile_name"] = name
    finally:
        torch.set_num_threads(threads)
    assert namespace["profile_name"] == name and namespace["profile"].name == name
    import importlib

    folder = SIZED_CHAPTERS[number]
    own = importlib.import_module(f"annotated_transformer.chapters.{folder}.sizes")
    assert namespace["sizes"] is own.of(name), (
        f"profile {name!r} gives chapter {number} other sizes than its own"
    )


def test_progress_lines_are_found_in_a_built_page(tmp_path):
    """The check above can fail: a page holding a text bar's refreshes is caught, prose is not."""
    page = tmp_path / "page.html"
    page.write_text(
        "<html><head><script>var s = '40%|####  | 4/10 [00:01<00:02, 3.1it/s]';</script></head>"
        "<body><p>Training took 40% of the time | see below.</p><pre>"
        "train: 40%|####      | 4/10 [00:01&lt;00:02, 3.10it/s]\n"
        "train: 50%|#####     | 5/10 [00:01&lt;00:01, 3.20it/s]\n"
        "train smoke:   20step loss 5.1</pre></body></html>",
        encoding="utf-8",
    )
    bars = [line for line in _built_page_lines(page) if PROGRESS_LINE.search(line)]
    assert len(bars) == 3, bars
