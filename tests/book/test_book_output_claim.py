"""The book's output folder is the book's whole, claimed before the first chapter as `train --out`
is: a new or empty folder, one the book marked (`.made-by`), or one holding only what the book
writes there (a site only with the listing its build writes) passes; any other is refused in one
line, with every file in it left as it was.

- A reader's own Sphinx project or build (conf.py, index.rst, a `_build/`, an `html/` with its
  own `.buildinfo`) is refused, with and without the site build, and never deleted or replaced.
- The book's outputs (--output-dir, --results-dir) inside a folder another command made (a
  `train` run folder, a `table3` or `parser-curve` run) are refused naming the owner, and
  nothing is made there.

The book is one stand-in chapter: every refusal comes before its kernel would start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from annotated_transformer.book import runner, site
from annotated_transformer.cli import main
from annotated_transformer.evaluation import results
from annotated_transformer.runtime import ownership

CHAPTER = """# %% tags=["parameters"]
profile_name = "cpu"
device = "auto"

# %%
from annotated_transformer.evaluation import results
results.write_result("demo", {"value": 1}, profile=profile_name)
"""

# A reader's Sphinx project and its build, as `sphinx-build -M html . _build` leaves them.
SPHINX_PROJECT = {
    "conf.py": "project = 'mine'\n",
    "index.rst": "Mine\n====\n",
    "_build/html/index.html": "<html>mine</html>",
    "_build/html/.buildinfo": "config: mine\n",
    "_build/html/_static/mine.css": "body {}\n",
    "_build/doctrees/index.doctree": "pickle",
    "_build/doctrees/environment.pickle": "pickle",
}


@pytest.fixture
def book(tmp_path, monkeypatch):
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    monkeypatch.delenv(results.BOOK_RUN_ENV, raising=False)
    root = tmp_path / "clone"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("title: demo\n")
    (root / "book" / "01_demo.py").write_text(CHAPTER)
    return root


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder` with its text ("/" for a folder)."""
    return {
        p.relative_to(folder).as_posix(): "/" if p.is_dir() else p.read_text()
        for p in sorted(folder.rglob("*"))
    }


def refused(book: Path, output_dir: Path, *, build: bool, results_dir=None) -> str:
    with pytest.raises((ValueError, OSError)) as error:
        runner.run_book(
            "smoke",
            root=book,
            chapters=["01"],
            output_dir=output_dir,
            results_dir=results_dir or book / "results",
            build=build,
            log=lambda line: None,
        )
    message = str(error.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------ a reader's own files are refused
@pytest.mark.parametrize("build", [True, False], ids=["build", "no-build"])
@pytest.mark.parametrize("given", [".", "_build", "_build/html"])
def test_a_readers_sphinx_project_or_build_is_refused_and_kept(
    book, tmp_path, build, given
):
    docs = tmp_path / "docs"
    write(docs, SPHINX_PROJECT)
    before = tree(docs)
    message = refused(book, docs / given, build=build)
    assert "did not" in message
    assert tree(docs) == before  # nothing deleted, replaced or added
    assert results.read_result(runner.RECORD, "smoke", book / "results") is None


@pytest.mark.parametrize("build", [True, False], ids=["build", "no-build"])
def test_an_html_folder_of_a_readers_sphinx_is_not_the_books_site(book, tmp_path, build):
    """An output folder holding only `html/`, a Sphinx site with its `.buildinfo` but without
    the listing the book's build writes, is a reader's: refused, and kept whole."""
    out = tmp_path / "out"
    write(out, {k: v for k, v in SPHINX_PROJECT.items() if k.startswith("_build/html")})
    out = out / "_build"
    before = tree(out)
    assert "did not" in refused(book, out, build=build)
    assert tree(out) == before


def test_the_site_build_replaces_only_a_site_it_listed(tmp_path):
    """`build_site` refuses, before Sphinx runs, an html folder that a Sphinx of a reader's
    built (`.buildinfo`, no `.site_files`)."""
    html = tmp_path / "out" / "html"
    write(html, {"index.html": "<html>mine</html>", ".buildinfo": "config: mine\n"})
    with pytest.raises(FileExistsError) as error:
        site.build_site(tmp_path / "stage", html, log=lambda line: None)
    assert "\n" not in str(error.value) and site.SITE_LISTING in str(error.value)
    assert (html / "index.html").read_text() == "<html>mine</html>"


def test_a_folder_the_book_filled_passes_and_is_marked(book, tmp_path):
    """What the book writes in its output folder (a listed site, notebooks, its kernel, its
    log, a staging leftover) is the book's: the checks pass and the folder is marked."""
    out = tmp_path / "out"
    write(
        out,
        {
            "executed/smoke/book/01_demo.ipynb": "{}",
            "jupyter/kernels/python3/kernel.json": "{}",
            "html/index.html": "<html></html>",
            "html/.buildinfo": "built",
            f"html/{site.SITE_LISTING}": "index.html\n.buildinfo\n",
            "sphinx-build.log": "",
            ".html.abc123.part/index.html": "",
        },
    )
    runner._check_outputs(
        "smoke",
        [book / "book" / "01_demo.py"],
        out,
        book / "results",
        out / "executed" / "smoke",
        out / "html",
        True,
    )
    ownership.mark_made_by(out, "book")
    assert ownership.owner_of_folder(out).maker == "book"
    (out / "notes.txt").write_text("the book's folder now")  # marked: the book's whole
    ownership.check_own_folder(
        "--output-dir", out, command="book", mark=ownership.CLAIM_MARKER
    )


# ------------------------------------------------- the book's outputs in another command's folder
OWNERS = {
    "train": "metrics.jsonl",
    "table3": ownership.TABLE3_MARKER,
    "parser-curve": ownership.PARSER_MARKER,
}


@pytest.mark.parametrize("build", [True, False], ids=["build", "no-build"])
@pytest.mark.parametrize("maker", sorted(OWNERS))
@pytest.mark.parametrize("flag", ["--output-dir", "--results-dir"])
def test_the_books_outputs_inside_another_commands_folder_are_refused(
    book, tmp_path, maker, flag, build
):
    run = tmp_path / "runs" / "cpu"
    write(run, {OWNERS[maker]: "{}\n"})
    inside = run / "anything"
    if flag == "--output-dir":
        message = refused(book, inside, build=build)
    else:
        message = refused(book, tmp_path / "out", build=build, results_dir=inside)
    assert message.startswith(f"{flag} ") and f"`{maker}`" in message
    assert OWNERS[maker] in message
    assert not inside.exists() and not (tmp_path / "out").exists()


def test_the_command_refuses_an_output_folder_in_a_run_folder_in_one_line(
    tmp_path, monkeypatch, capsys
):
    """`book --output-dir runs/cpu/anything`: one `error:` line naming `train`, before the
    first chapter."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "runs" / "cpu", {"metrics.jsonl": "{}\n"})
    argv = ["book", "--profile", "smoke", "--chapters", "01", "--no-build"]
    assert main([*argv, "--output-dir", "runs/cpu/anything"]) in (1, 2)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: --output-dir runs/cpu/anything: runs/cpu is")
    assert "`train`" in err[0]
    assert not (tmp_path / "runs" / "cpu" / "anything").exists()
