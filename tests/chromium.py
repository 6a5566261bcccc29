"""Drive headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``),
with the standard library only: load a page, collect every console error, uncaught exception,
browser log error (a Content-Security-Policy refusal, a failed load) and network request, run
JavaScript in it, move the mouse and take a full-page screenshot.

Why the protocol and not ``--dump-dom`` / ``--enable-logging``: Chromium's stderr log prints
console messages of every level the same way (``INFO:CONSOLE``), so an error cannot be told from
a log line, and CSP refusals and requests do not appear at all. Messages on the pipe are JSON,
each ended by a NUL byte; Chromium reads commands on fd 3 and writes on fd 4.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

#: Headless flags that keep Chromium from reaching for a network this machine may not have.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
)
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find() -> str | None:
    """The Chromium executable ($MOE_LINT_CHROMIUM, else the first on PATH), or None."""
    chosen = os.environ.get("MOE_LINT_CHROMIUM")
    if chosen:
        return shutil.which(chosen) or (chosen if os.access(chosen, os.X_OK) else None)
    return next((found for name in NAMES if (found := shutil.which(name))), None)


class BrowserError(RuntimeError):
    """Chromium exited, timed out or answered a command with an error."""


class Page:
    """One headless Chromium with one tab, driven over the pipe."""

    def __init__(self, executable: str, profile: Path, width: int = 1280, height: int = 1000):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # the child's ends at fds >= 10, so placing them at 3 and 4 cannot clobber one another
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        for fd in (to_child_r, from_child_w):
            os.close(fd)

        def place() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        # its log to a file: D-Bus complaints alone could fill a pipe and stall it
        self.log = profile / "chromium.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                 f"--window-size={width},{height}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(3, 4), preexec_fn=place,
            )  # fmt: skip
        os.close(high_r)
        os.close(high_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(f"{domain}.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=True)  # fmt: skip

    # ------------------------------------------------------------------ the protocol
    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from Chromium in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    log = self.log.read_text(errors="replace")[-2000:]
                    raise BrowserError(f"Chromium closed the pipe; its log ends: {log}")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = 30.0) -> dict[str, Any]:  # fmt: skip
        """Send a command and wait for its answer; events that arrive meanwhile are kept."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first event ``method`` (one already received counts)."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event["method"] == method and not event.get("_seen"):
                    event["_seen"] = True
                    return event
            answer = self._read(deadline)
            if "method" in answer:
                self.events.append(answer)

    # ------------------------------------------------------------------ what a test uses
    def load(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception fails)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True}, session=True)  # fmt: skip
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def hover(self, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y},
                  session=True)  # fmt: skip

    def screenshot(self, path: Path, width: int = 1280) -> None:
        """The whole page as PNG (at most 12,000 pixels tall)."""
        height = min(int(self.evaluate("document.documentElement.scrollHeight")), 12000)
        data = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
            session=True, timeout=60)["data"]  # fmt: skip
        path.write_bytes(base64.b64decode(data))

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser-log errors seen so far."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                exc = details.get("exception", {}).get("description") or details.get("text")
                out.append(f"uncaught: {exc}")
            elif event["method"] == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "assert",
            ):
                args = " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                out.append(f"console.{params['type']}: {args}")
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append(f"log ({params['entry']['source']}): {params['entry']['text']}")
        return out

    def requests(self) -> list[str]:
        """The URL of every request the page made (its own file included)."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def forget(self) -> None:
        """Drop the events so far (before loading the next page)."""
        self.events.clear()

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
