"""Shared helpers: run the command line as a user would (a fresh Python process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, python: str | None = None):
    """`python -m ident_framework ARGS` in a subprocess; returns the CompletedProcess."""
    env = dict(os.environ, HYDRA_FULL_ERROR="0", MPLBACKEND="Agg")
    env.pop("HYDRA_FULL_ERROR")
    return subprocess.run(
        [python or sys.executable, "-m", "ident_framework", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli
