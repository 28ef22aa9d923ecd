"""A Sphinx extension of the book's site: every script a page loads, once.

Jupyter Book 1.x lets some extensions register their inline configuration script twice (sphinx-thebe's
`const THEBE_JS_URL = ...`, sphinx-togglebutton's selector), and a `const` declared twice stops the
second script with "Identifier 'THEBE_JS_URL' has already been declared" on every page's console.
This extension drops a script that repeats an earlier one (same file, same inline body) from each
page's list before the page is written. `_config.yml` loads it (`sphinx: extra_extensions`).
"""

from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    # An inline script's file name is None or "" depending on who added it: both mean none.
    filename = getattr(script, "filename", script) or ""
    return (str(filename), tuple(sorted(attributes.items())))


def unique_scripts(scripts: list) -> list:
    """`scripts` in order, each one only the first time it appears."""
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    return kept


def _drop_repeats(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context:
        context["script_files"][:] = unique_scripts(list(context["script_files"]))


def setup(app):
    # Late, after the extensions that add their scripts in this event too.
    app.connect("html-page-context", _drop_repeats, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
