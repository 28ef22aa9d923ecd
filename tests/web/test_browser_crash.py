"""The test browser's crash path: a Chromium that dies under a call says so (its exit code and
log), and the page audit starts a second browser once before it calls a page broken."""

from __future__ import annotations

import pytest

from tests.support import pages
from tests.support.browser import Browser, BrowserGone, find_chromium


def test_a_dead_browser_raises_browser_gone_with_its_exit_code():
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium or Chrome on PATH (set AT_CHROMIUM to its path)")
    with Browser(chromium) as page:
        assert page.evaluate("1 + 1") == 2
        page._proc.kill()
        page._proc.wait(timeout=10)
        with pytest.raises(BrowserGone, match=r"exit code -9"):
            page.evaluate("1 + 1")
        with pytest.raises(
            RuntimeError
        ):  # still a RuntimeError for callers that catch those
            page.evaluate("1 + 1")


def test_a_crashed_renderer_raises_browser_gone_now_and_on_every_later_call():
    """A renderer that dies leaves the browser and its socket alive: without the crash event,
    the pending call and every later one would wait for an answer that never comes."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium or Chrome on PATH (set AT_CHROMIUM to its path)")
    with Browser(chromium) as page:
        with pytest.raises(BrowserGone, match="renderer crashed during Page.crash"):
            page.call("Page.crash")
        with pytest.raises(BrowserGone, match="renderer crashed"):
            page.evaluate("1 + 1")


def test_the_audit_retries_a_crashed_browser_once(monkeypatch):
    calls = []

    def audit_once(chromium, url, timeout):
        calls.append(url)
        if len(calls) == 1:
            raise BrowserGone("renderer crashed")
        return {"column": 800, "wide": [], "console": []}

    monkeypatch.setattr(pages, "_audit_once", audit_once)
    state = pages.audit_page("chromium", "http://page")
    assert calls == ["http://page", "http://page"]
    assert state["crashed"] == "renderer crashed" and state["wide"] == []


def test_the_audit_fails_a_page_that_crashes_the_browser_twice(monkeypatch):
    def audit_once(chromium, url, timeout):
        raise BrowserGone("renderer crashed")

    monkeypatch.setattr(pages, "_audit_once", audit_once)
    with pytest.raises(BrowserGone):
        pages.audit_page("chromium", "http://page")
