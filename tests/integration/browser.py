"""Headless Chromium driven over the DevTools protocol, for tests that click: open a page, run JavaScript in it,
wait until an expression holds. Chromium listens on a free loopback port (it writes the port into its profile
directory), and is stopped by its PID."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from itertools import count
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_command(profile: Path | str, *arguments: str) -> list[str]:
    """Headless Chromium with a fresh profile and none of its background traffic (this machine reaches no other
    host: without these flags Chromium's connections are refused, many at a time)."""
    assert CHROMIUM is not None
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={profile}",
        *arguments,
    ]


class Browser:
    def __init__(self, profile: Path) -> None:
        from websockets.sync.client import connect

        self._process = subprocess.Popen(
            chromium_command(
                profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank"
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self._process.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port within 30 s"
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            pages = [target for target in json.load(answer) if target["type"] == "page"]
        self._stack = contextlib.ExitStack()
        self._socket = self._stack.enter_context(
            connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        )
        self._ids = count(1)

    def call(self, method: str, **params: Any) -> dict:
        call_id = next(self._ids)
        self._socket.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=30))
            if message.get("id") == call_id:
                assert "error" not in message, message["error"]
                return message["result"]

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20, what: str = "") -> Any:
        """Poll `expression` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                page = self.evaluate("document.getElementById('app') ? document.getElementById('app').innerText : ''")
                raise AssertionError(f"not within {timeout} s: {what or expression}\nthe page:\n{page[:3000]}")
            time.sleep(0.1)

    def click(self, selector: str) -> None:
        self.wait_for(f"!!document.querySelector({json.dumps(selector)})", what=f"{selector} on the page")
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def text(self, selector: str) -> str:
        return self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")

    def close(self) -> None:
        try:
            self._stack.close()
        finally:  # chromium and its helper processes: the process group it leads
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
