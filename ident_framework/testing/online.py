"""Test helpers for mode=online: the service as its own process (the real CLI), its URL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# a quick excitation search: the online service's start-up is not what these tests measure
FAST = (
    "trajectory.n_candidates=20",
    "trajectory.n_refine=0",
    "trajectory.progress=false",
    "online.port=0",
)
URL = re.compile(r"open (http://[\d.]+:\d+/)")
# Debian's Chromium and the headless flags that work here (Playwright: never `playwright
# install`; a fresh --user-data-dir per browser; no timer throttling for a live page)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-background-timer-throttling",
]


def wait_for_page(page: Any, expression: str, timeout_s: float = 30.0) -> Any:
    """The first truthy value of the JavaScript `expression` on a Playwright `page`, polled
    every 0.2 s for up to `timeout_s` s (AssertionError after that)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = page.evaluate(expression)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {expression}")


@dataclass
class Service:
    process: subprocess.Popen
    run_dir: Path
    url: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 180) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout: float = 180) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"the service did not stop in {timeout} s:\n{self.output}"
            ) from None


@contextmanager
def running_service(run_dir: Path, *overrides: str, timeout: float = 240) -> Iterator[Service]:
    """Start the service (the real CLI, with `FAST`), wait for its URL, stop it (SIGINT) at the
    end."""
    command = [sys.executable, "-m", "ident_framework", "mode=online", *FAST, *overrides,
               f"hydra.run.dir={run_dir}"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    service = Service(process, run_dir)

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            service.lines.append(line)
            if match := URL.search(line):
                service.url = match.group(1)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not service.url and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not service.url:
        service.stop(signal.SIGKILL, 10)
        raise AssertionError(f"the service did not start:\n{service.output}")
    try:
        yield service
    finally:
        if process.poll() is None:
            service.stop()
