"""Run the command line as a user would: `python -m ident_framework ARGS` in a fresh Python
process. REPO is the checkout this package was imported from (tests run from one), SHARED the
shared reference data beside it (`../shared`: tests that need it skip without it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    without a display; `pythonpath` put in front of PYTHONPATH); returns the CompletedProcess
    (text stdout and stderr)."""
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
