"""What a reader's browser finds on a built page: the console's messages and anything wider than
the text column (a chart, a table, an output line in a scroll box), at a laptop's 1,400 px."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
from pathlib import Path

from tests.support.browser import Browser, BrowserGone

# Every output element that could push past the column or hide a line in a scroll box.
_WIDE = """(() => {
  const column = document.querySelector("article.bd-article") || document.querySelector("main");
  if (!column) return {column: 0, wide: [], charts: 0, drawn: 0, ready: "loading"};
  const limit = column.getBoundingClientRect().width;
  const seen = new Set(), wide = [];
  const selector = "div.cell_output pre, div.cell_output table, div.at-vega-chart, " +
    "div.at-vega-chart svg, div.at-vega-chart canvas, div.cell_output img, div.at-table";
  for (const el of column.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    const width = Math.max(el.scrollWidth || 0, box.width);
    // a scroll box narrower than the column still hides what it must scroll to show
    const hidden = el.clientWidth > 0 && (el.scrollWidth || 0) > el.clientWidth + 1 &&
      getComputedStyle(el).overflowX !== "visible";
    if ((width > limit + 1 || hidden) && !seen.has(el)) {
      seen.add(el);
      wide.push({tag: el.tagName.toLowerCase(), width: Math.round(width),
                 text: (el.textContent || "").trim().slice(0, 80)});
    }
  }
  const charts = Array.from(document.querySelectorAll("div.at-vega-chart"));
  return {column: Math.round(limit), wide: wide, charts: charts.length,
          drawn: charts.filter(c => c.getAttribute("data-drawn")).length,
          ready: document.readyState};
})()"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def served(site: Path):
    """The built site over HTTP on a free local port, as a reader gets it (a page opened from
    the disk may not fetch its own files: the live translation's model, for one)."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# What a page may say on its console without being wrong: the theme's and the toggle buttons'
# progress notes. Anything at the levels below is a fault.
FAULTS = ("error", "exception", "warning", "assert")


def faults(console: list[dict]) -> list[dict]:
    """The messages of `console` that report something wrong. Every page names its icon
    (_config.yml's favicon), so a 404 for /favicon.ico is the page's fault too."""
    return [m for m in console if m["level"] in FAULTS]


def audit_page(chromium: str, url: str, timeout: float = 45.0) -> dict:
    """{"column": px, "wide": [elements wider than it], "console": [messages]} of the page at
    `url`, once its charts are drawn (or `timeout` has passed), in a 1,400 px wide window.

    A browser that dies under the audit (its DevTools socket closes) is started once more, and the
    page audited afresh, with the first crash's log kept under "crashed"; a page that takes
    Chromium down twice raises `BrowserGone`."""
    try:
        return _audit_once(chromium, url, timeout)
    except BrowserGone as first:
        state = _audit_once(chromium, url, timeout)
        state["crashed"] = str(first)
        return state


def _audit_once(chromium: str, url: str, timeout: float) -> dict:
    with Browser(chromium, window="1400,1000") as browser:
        browser.listen()
        browser.open(url)
        deadline = time.monotonic() + timeout
        state: dict = {}
        while time.monotonic() < deadline:
            try:
                state = browser.evaluate(_WIDE) or {}
            except BrowserGone:
                raise
            except RuntimeError:  # the page is still loading
                state = {}
            if state.get("ready") == "complete" and state["drawn"] == state["charts"]:
                break
            time.sleep(0.25)
        time.sleep(1.0)  # late messages (fonts, MathJax)
        try:
            state = browser.evaluate(_WIDE) or state
        except BrowserGone:
            raise
        except RuntimeError:
            pass
        state["console"] = browser.console()
    return state
