"""Run the command line as a user would: `python -m ident_framework ARGS` in a fresh Python
process. REPO: the checkout this package was imported from; SHARED: the shared reference data
beside it (tests that need it skip without it). `fake_distribution`: an installed plugin
distribution made on the fly, as pip would leave it, in a folder to put on PYTHONPATH.
`running_service`: mode=online as its own process, and its page in a headless Chromium.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def run_cli(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 600,
    python: str | None = None,
    pythonpath: Path | None = None,
) -> subprocess.CompletedProcess:
    """`python -m ident_framework ARGS` in a subprocess (Hydra's full tracebacks off, plots
    without a display; `pythonpath` put in front of PYTHONPATH), text output."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("HYDRA_FULL_ERROR", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return subprocess.run(
        [python or sys.executable, "-m", "ident_framework", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def error_message(stderr: str) -> str:
    """The error paragraph of a failed command's stderr: from its last `error: ` line on (the
    steps the command finished before it say so above it, a line each)."""
    lines = stderr.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    return "\n".join(lines[starts[-1] :] if starts else lines)


def fake_distribution(site: Path, name: str, module: str, files: dict[str, str]) -> Path:
    """An installed distribution `name` whose entry point loads `module` (files relative to
    site, their text dedented); returns site."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ident_framework]\n{module} = {module}\n")
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return site


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
        if value := page.evaluate(expression):
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
    """Start mode=online (with `FAST`), wait for its URL, stop it (SIGINT) at the end."""
    command = [sys.executable, "-m", "ident_framework", "mode=online", *FAST, *overrides,
               f"hydra.run.dir={run_dir}"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    service = Service(process, run_dir)

    def read() -> None:
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
