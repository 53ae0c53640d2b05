"""FIGAROH 1.0.2 in a venv of its own (it is no dependency of ident_framework).

The venv is created once under `~/.cache/ident_framework/figaroh-venv` (or a given folder) with
`pip install figaroh==1.0.2 pandas pyyaml` and reused while its figaroh is that version.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FIGAROH_VERSION = "1.0.2"
REQUIREMENTS = (f"figaroh=={FIGAROH_VERSION}", "pandas", "pyyaml")
DEFAULT_VENV = Path.home() / ".cache" / "ident_framework" / "figaroh-venv"
_PROBE = "import importlib.metadata as m, figaroh; print(m.version('figaroh'))"


class FigarohUnavailable(RuntimeError):
    """FIGAROH could not be installed or run (no network, no wheel for this platform, ...)."""


def figaroh_version(python: Path) -> str | None:
    """figaroh's version importable by `python`, or None."""
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-W", "ignore", "-c", _PROBE], capture_output=True, text=True, timeout=300
    )
    return probe.stdout.strip().splitlines()[-1] if probe.returncode == 0 else None


def ensure_figaroh(venv: Path = DEFAULT_VENV, python: Path | None = None, log=print) -> Path:
    """The interpreter of a venv holding FIGAROH 1.0.2: `python` if given (checked), else the
    cached venv, created on first use. Raises FigarohUnavailable with the reason."""
    if python is not None:
        found = figaroh_version(python)
        if found != FIGAROH_VERSION:
            raise FigarohUnavailable(f"{python} has figaroh {found}, not {FIGAROH_VERSION}")
        return python
    python = venv / "bin" / "python"
    if figaroh_version(python) == FIGAROH_VERSION:
        return python
    log(f"creating FIGAROH's venv in {venv} (pip install {' '.join(REQUIREMENTS)}; minutes)")
    venv.parent.mkdir(parents=True, exist_ok=True)
    install_log = venv.parent / "figaroh-venv-install.log"
    with open(install_log, "w", encoding="utf-8") as out:
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", *REQUIREMENTS],
        ]
        for step in steps:
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                tail = install_log.read_text(errors="replace")[-600:]
                raise FigarohUnavailable(f"'{' '.join(step)}' failed (log {install_log}): {tail}")
    found = figaroh_version(python)
    if found != FIGAROH_VERSION:
        raise FigarohUnavailable(f"the new venv {venv} imports figaroh {found}")
    return python
