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
        # Chromium's own log, kept for the message when it dies under a test (a renderer crash
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
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
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
        return self

    def __exit__(self, *exc) -> None:
        if getattr(self, "_conn", None) is not None:

            async def close():  # tornado makes futures for the close frame: inside our loop, not "the current" one
                self._conn.close()

            self._loop.run_until_complete(close())
            self._loop.close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._profile.cleanup()
        self._log.close()

    def log_tail(self, chars: int = 1500) -> str:
        """The end of what Chromium wrote to its standard error so far."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-chars:]

    def call(self, method: str, **params):
        from tornado.websocket import WebSocketClosedError

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
                if msg.get("id") == msg_id:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        return self._loop.run_until_complete(_call())

    def _gone(self, method: str) -> str:
        return (
            f"Chromium closed the DevTools connection during {method} "
            f"(exit code {self._proc.poll()}); its log ends:\n{self.log_tail()}"
        )

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
