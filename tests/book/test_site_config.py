"""The site's configuration names only files that are there."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_the_site_names_an_icon_that_exists_under_static():
    # without one the browser asks every page's server for /favicon.ico and logs a 404
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    icon = config["html"]["favicon"]
    assert icon.startswith("_static/") and (REPO / icon).is_file()
    assert (REPO / icon).read_text().lstrip().startswith("<svg")


def test_a_page_shows_the_parameters_it_ran_with(tmp_path):
    """The executed page's parameters cell carries the values the runner injected (its own
    injected cell is hidden), comments kept: a reader of the cpu page sees "cpu", not "auto"."""
    import nbformat

    from annotated_transformer.book import site

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 1. Title"),
        nbformat.v4.new_code_cell(
            '# auto: the machine\'s\nprofile_name = "auto"  # the sizes\nseed = 0  # kept',
            metadata={"tags": ["parameters"]},
        ),
        nbformat.v4.new_code_cell(
            '# Parameters\nprofile_name = "cpu"\n',
            metadata={"tags": [site.INJECTED_TAG]},
        ),
    ]
    page = tmp_path / "01_page.ipynb"
    nbformat.write(nb, str(page))
    site.finish_page(page, "book/01_page.ipynb", {"url": ""})
    done = nbformat.read(str(page), as_version=4)
    assert done.cells[1].source == (
        '# auto: the machine\'s\nprofile_name = "cpu"  # the sizes\nseed = 0  # kept'
    )
    assert "remove-cell" in done.cells[2].metadata["tags"]
