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
