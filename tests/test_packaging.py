"""Non-editable install and third-party plugins, in a fresh virtual environment.

The project is built as a wheel and installed (without dependencies: the venv sees the system
site-packages for numpy, Pinocchio, MuJoCo, Hydra) into a new venv; the command line then runs
from an unrelated directory, so conf/ must come from the installed package. A tiny plugin
distribution written here, exactly as a third party would, adds a friction option.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, run_cli

pytestmark = pytest.mark.slow

TINY_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "ident-tiny-friction"
version = "0.3.1"
dependencies = []

[project.entry-points.ident_framework]
tiny = "ident_tiny_friction"

[tool.setuptools]
packages = ["ident_tiny_friction", "ident_tiny_friction.conf"]

[tool.setuptools.package-data]
"ident_tiny_friction.conf" = ["**/*.yaml"]
"""

TINY_MODULE = """
from dataclasses import dataclass

import numpy as np
import pluggy

hookimpl = pluggy.HookimplMarker("ident_framework")


@dataclass
class TinyParams:
    scale: float = 1.0

    def __post_init__(self):
        if self.scale <= 0:
            raise ValueError(f"scale must be > 0, got {self.scale}")


class TinyFriction:
    parameter_names = ("fv",)

    def __init__(self, params):
        self.scale = params.scale

    def basis(self, dq):
        return self.scale * dq[..., None]


@hookimpl
def register_friction_models(register):
    register("tiny", TinyFriction, TinyParams)
"""

BROKEN_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "ident-broken-plugin"
version = "0.0.1"

[project.entry-points.ident_framework]
broken = "ident_broken_plugin"

[tool.setuptools]
packages = ["ident_broken_plugin"]
"""


def _wheel(project: Path, folder: Path) -> Path:
    """Build a project's wheel with this interpreter's setuptools (no download)."""
    before = set(folder.glob("*.whl")) if folder.exists() else set()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(folder), str(project)],
        check=True,
    )  # fmt: skip
    (wheel,) = set(folder.glob("*.whl")) - before
    return wheel


def _install(python: Path, project: Path, wheels: Path | None = None) -> None:
    """Install a project into the venv as a user would: from its built wheel."""
    wheel = _wheel(project, wheels or project.parent / f"{project.name}-wheels")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps",
         "--disable-pip-version-check", str(wheel)],
        check=True,
    )  # fmt: skip


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(root / "env")], check=True
    )
    python = root / "env" / "bin" / "python"
    _install(python, REPO, root / "wheels")
    return python


def test_wheel_install_runs_from_any_directory(venv_python: Path, tmp_path: Path):
    where = subprocess.run(
        [str(venv_python), "-c", "import ident_framework, sys; print(ident_framework.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert str(venv_python.parents[1]) in where, where  # the wheel, not the source tree
    result = run_cli("--cfg", "job", cwd=tmp_path, python=str(venv_python))
    assert result.returncode == 0, result.stderr
    assert "plugin: mujoco" in result.stdout and "model: ur12e" in result.stdout
    help_text = run_cli("--help", cwd=tmp_path, python=str(venv_python)).stdout
    assert "robot: mjcf, ur10e, ur12e, ur5e, urdf" in help_text


def test_third_party_plugin_appears_without_core_change(venv_python: Path, tmp_path: Path):
    package = _write(
        tmp_path / "ident-tiny-friction",
        {
            "pyproject.toml": TINY_PYPROJECT,
            "ident_tiny_friction/__init__.py": TINY_MODULE,
            "ident_tiny_friction/conf/__init__.py": "",
            "ident_tiny_friction/conf/friction/tiny.yaml": "plugin: tiny\nscale: 1.0\n",
            # an option whose YAML names an implementation nobody registers
            "ident_tiny_friction/conf/friction/ghost.yaml": "plugin: ghost\n",
        },
    )
    _install(venv_python, package)
    python = str(venv_python)

    help_text = run_cli("--help", cwd=tmp_path, python=python).stdout
    line = next(line for line in help_text.splitlines() if line.startswith("friction:"))
    # other plugin distributions visible to the venv (e.g. ident-lugre) may add more
    assert {"coulomb_viscous", "ghost", "none", "tiny"} <= {
        option.strip() for option in line.split(":", 1)[1].split(",")
    }

    composed = run_cli(
        "--cfg", "job", "friction=tiny", "friction.scale=2", cwd=tmp_path, python=python
    )
    assert composed.returncode == 0, composed.stderr
    assert "plugin: tiny" in composed.stdout and "scale: 2" in composed.stdout

    bad = run_cli("friction=tiny", "friction.scale=-1", cwd=tmp_path, python=python)
    assert bad.returncode == 2 and "scale must be > 0" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr

    ghost = run_cli("friction=ghost", cwd=tmp_path, python=python)
    assert ghost.returncode == 2
    assert "no friction plugin 'ghost'; installed: [" in ghost.stderr
    installed = ghost.stderr.split("installed: [", 1)[1].split("]", 1)[0]
    assert {"'coulomb_viscous'", "'none'", "'tiny'"} <= {n.strip() for n in installed.split(",")}

    listing = subprocess.run(
        [python, "-c", "from ident_framework.plugins import get_registry as g;"
         "print([(p.name, p.distribution, p.version) for p in g().all() if p.kind == 'friction'])"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "('tiny', 'ident-tiny-friction', '0.3.1')" in listing

    broken = _write(
        tmp_path / "ident-broken-plugin",
        {
            "pyproject.toml": BROKEN_PYPROJECT,
            "ident_broken_plugin/__init__.py": "import a_module_that_does_not_exist\n",
        },
    )
    _install(venv_python, broken)
    failed = run_cli("--cfg", "job", cwd=tmp_path, python=python)
    assert failed.returncode == 2
    assert "ident-broken-plugin" in failed.stderr and "Traceback" not in failed.stderr
