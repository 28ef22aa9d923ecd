"""A headless Chromium driven over the DevTools protocol, for the tests that click and type in a page.

Synchronous on purpose: a test reads as steps (open, evaluate, wait for, screenshot).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path


def find_chromium() -> str | None:
    for name in (
        os.environ.get("AT_CHROMIUM"),
        "chromium",
        "chromium-browser",
        "google-chrome",
        "chrome",
    ):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class BrowserGone(RuntimeError):
    """Chromium (or the page's renderer) went away under a call: a crash, not a page error."""


class Browser:
    """`with Browser(path) as page: page.open(url); page.evaluate("...")`."""

    def __init__(self, chromium: str, window: str = "1280,1000"):
        self.chromium, self.window = chromium, window

    def __enter__(self):
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        # Chromium's own log, kept for the message when it dies under a test (a dead browser
        # closes the DevTools socket and says nothing else).
        self._log = tempfile.TemporaryFile(mode="w+b")
        self._proc = subprocess.Popen(
            [
                self.chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-port=0",
                f"--window-size={self.window}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self._loop = self._conn = None
        self._dead = ""  # why the page can no longer answer, once it cannot
        try:
            self._connect()
        except BaseException as error:  # a browser that did not start is not left running
            tail = self.log_tail()
            self.__exit__(None, None, None)
            if isinstance(error, Exception) and tail:
                raise RuntimeError(f"{error}; Chromium's log ends:\n{tail}") from error
            raise
        return self

    def _connect(self) -> None:
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Chromium did not open its DevTools port (exit code {self._proc.poll()})"
                )
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/json/list", timeout=10
        ) as response:
            targets = json.load(response)
        ws_url = next(
            t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"
        )
        self._loop = asyncio.new_event_loop()
        from tornado.websocket import websocket_connect

        async def connect():
            return await websocket_connect(ws_url, max_message_size=256 * 1024 * 1024)

        self._conn = self._loop.run_until_complete(connect())
        self._ids = itertools.count(1)
        self.events: list[dict] = []
        self.call("Page.enable")
        self.call(
            "Inspector.enable"
        )  # a renderer crash arrives as Inspector.targetCrashed

    def __exit__(self, *exc) -> None:
        if self._conn is not None:

            async def close():  # tornado makes futures for the close frame: inside our loop, not "the current" one
                self._conn.close()

            self._loop.run_until_complete(close())
        if self._loop is not None:
            self._loop.close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._profile.cleanup()
        self._log.close()

    def log_tail(self, chars: int = 1500) -> str:
        """The end of what Chromium wrote to its standard error so far (read at an offset, so the
        file position Chromium writes at does not move)."""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 4 * chars)
        return os.pread(fd, size - start, start).decode("utf-8", "replace")[-chars:]

    def call(self, method: str, **params):
        from tornado.websocket import WebSocketClosedError

        if self._dead:  # a crashed page answers nothing more
            raise BrowserGone(self._dead)

        async def _call():
            msg_id = next(self._ids)
            try:
                await self._conn.write_message(
                    json.dumps({"id": msg_id, "method": method, "params": params})
                )
            except WebSocketClosedError:
                raise BrowserGone(self._gone(method)) from None
            while True:
                raw = await self._conn.read_message()
                if raw is None:
                    raise BrowserGone(self._gone(method))
                msg = json.loads(raw)
                if "method" in msg:  # an event, read while waiting for our answer
                    self.events.append(msg)
                    if msg["method"] == "Inspector.targetCrashed":
                        raise BrowserGone(
                            self._gone(method, "the page's renderer crashed")
                        )
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        return self._loop.run_until_complete(_call())

    def _gone(
        self, method: str, what: str = "Chromium closed the DevTools connection"
    ) -> str:
        try:  # a browser whose socket just closed may still be on its way out
            self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        code = self._proc.poll()
        state = "still running" if code is None else f"exit code {code}"
        self._dead = f"{what} during {method} ({state}); its log ends:\n{self.log_tail()}"
        return self._dead

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str, await_promise: bool = False):
        result = self.call(
            "Runtime.evaluate",
            expression=expression,
            returnByValue=True,
            awaitPromise=await_promise,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(
                f"page error: {result['exceptionDetails'].get('exception', {}).get('description')}"
            )
        return result["result"].get("value")

    def console(self) -> list[dict]:
        """What the page said on its console so far (call `listen` before `open`): one
        {"level", "text", "where"} per message, uncaught exception and browser log entry."""
        said = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled":
                text = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p["args"]
                )
                frames = (p.get("stackTrace") or {}).get("callFrames") or [{}]
                said.append(
                    {"level": p["type"], "text": text, "where": frames[0].get("url", "")}
                )
            elif e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                text = (d.get("exception") or {}).get("description") or d.get("text", "")
                said.append(
                    {"level": "exception", "text": text, "where": d.get("url", "")}
                )
            elif e["method"] == "Log.entryAdded":
                entry = p["entry"]
                said.append(
                    {
                        "level": entry["level"],
                        "text": entry["text"],
                        "where": entry.get("url", ""),
                    }
                )
        return said

    def listen(self) -> None:
        """Collect the page's console messages and errors from now on (see `console`)."""
        self.call("Runtime.enable")
        self.call("Log.enable")

    def wait_for(self, expression: str, timeout: float = 20.0, interval: float = 0.1):
        """The first truthy value of `expression`, polled until `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for: {expression}")
            time.sleep(interval)

    def screenshot(self, path: Path, clip: dict | None = None) -> Path:
        """A PNG of the whole page, or of `clip` ({x, y, width, height, scale} in page pixels)."""
        area = {"clip": clip} if clip else {"captureBeyondViewport": True}
        shot = self.call("Page.captureScreenshot", format="png", **area)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
