"""Run the command line as a user would: `python -m ident_framework ARGS` in a fresh Python
process. REPO: the checkout this package was imported from; SHARED: the shared reference data
beside it (tests that need it skip without it). `fake_distribution`: an installed plugin
distribution made on the fly, as pip would leave it, in a folder to put on PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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
