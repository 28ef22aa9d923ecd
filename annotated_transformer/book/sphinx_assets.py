"""A Sphinx extension of the book's site: every script a page loads, once, and a chapter's copy
launches the chapter.

Jupyter Book 1.x lets some extensions register their inline configuration script twice (sphinx-thebe's
`const THEBE_JS_URL = ...`, sphinx-togglebutton's selector), and a `const` declared twice stops the
second script with "Identifier 'THEBE_JS_URL' has already been declared" on every page's console.
This extension drops a script that repeats an earlier one (same file, same inline body) from each
page's list before the page is written. `_config.yml` loads it (`sphinx: extra_extensions`).

A committed run's page (`gpu/01_attention`, see `committed`) is a copy of a chapter: the theme's
launch buttons would open `gpu/01_attention.ipynb` in the repository, which does not exist, so they
open the chapter its notebook names (`book/01_attention.ipynb`) instead.
"""

from __future__ import annotations

from ..runtime.records import parse_json


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


def chapter_page(pagename: str, metadata: dict) -> str | None:
    """The chapter ("book/01_attention") a page copies, when it is not that chapter's own page."""
    ours = metadata.get("annotated_transformer") or {}
    if isinstance(ours, str):  # myst-nb keeps a notebook's metadata as JSON text
        try:
            ours = parse_json(ours, f"{pagename}'s notebook metadata")
        except ValueError:
            ours = {}
    source = (ours.get("source") if isinstance(ours, dict) else "") or ""
    if not (source.startswith("book/") and source.endswith(".py")):
        return None
    chapter = source[: -len(".py")]
    return None if chapter == pagename else chapter


def relaunch(header_buttons: list, pagename: str, chapter: str) -> None:
    """Point the theme's launch buttons (Colab, Binder, ...) of `pagename` at `chapter`'s
    notebook; the download and repository buttons keep the page's own."""
    old, new = f"/{pagename}.ipynb", f"/{chapter}.ipynb"
    for group in header_buttons:
        if isinstance(group, dict) and group.get("label") == "launch-buttons":
            for button in group.get("buttons") or []:
                if isinstance(button, dict) and isinstance(button.get("url"), str):
                    button["url"] = button["url"].replace(old, new)


def _launch_the_chapter(app, pagename, templatename, context, doctree) -> None:
    chapter = chapter_page(pagename, app.env.metadata.get(pagename) or {})
    if chapter is not None and "header_buttons" in context:
        relaunch(context["header_buttons"], pagename, chapter)


def setup(app):
    # Late, after the extensions that add their scripts and buttons in this event too.
    app.connect("html-page-context", _drop_repeats, priority=900)
    app.connect("html-page-context", _launch_the_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
