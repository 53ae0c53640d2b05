"""Non-editable install, torch absent, third-party plugins: in a fresh virtual environment.

The project is built as a wheel from a copy of the checkout in a temporary folder (so the
checkout is left as it was) and installed without dependencies into a new venv. That venv sees
the site-packages of the interpreter running the tests (a `.pth` file adds them, so it works the
same from a global interpreter and from inside any venv) for numpy, Pinocchio, MuJoCo, Hydra —
but not torch, which an import blocker in the venv hides, as it is an optional extra. The
command line then runs from an unrelated directory, so conf/ must come from the installed
package. A tiny plugin distribution written here, exactly as a third party would, adds a
friction option. The last test checks that none of this wrote into the checkout.
"""

from __future__ import annotations

import json
import os
import pkgutil
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import ident_framework
from ident_framework import c_kernels
from ident_framework.testing.cli import REPO, error_message, run_cli

pytestmark = pytest.mark.slow

# What a build or a run leaves in a checkout, not copied into the build folder.
NOT_BUILT_FROM = (".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                  ".ruff_cache", "outputs", "multirun", "runs")  # fmt: skip
# Imported by every python of the venv (a .pth line): `import torch` fails as if not installed.
NO_TORCH_MODULE = """
import importlib.abc
import sys


class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoTorch())
"""

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
    """Build a project's wheel with this interpreter's setuptools (no download, no pip cache).
    setuptools builds in the project folder (build/, *.egg-info): give it a copy, not a
    checkout."""
    before = set(folder.glob("*.whl")) if folder.exists() else set()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "--disable-pip-version-check", "-w", str(folder), str(project)],
        check=True,
    )  # fmt: skip
    (wheel,) = set(folder.glob("*.whl")) - before
    return wheel


def _install(python: Path, project: Path, wheels: Path | None = None) -> None:
    """Install a project into the venv as a user would: from its built wheel. The venv also
    sees this interpreter's packages (a development install of the project among them):
    --ignore-installed installs the wheel into the venv and leaves those alone."""
    wheel = _wheel(project, wheels or project.parent / f"{project.name}-wheels")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed",
         "--no-cache-dir", "--disable-pip-version-check", str(wheel)],
        check=True,
    )  # fmt: skip


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def site_directories() -> list[str]:
    """This interpreter's site-packages folders, in sys.path order: a venv's own (and the base
    interpreter's when it was made with --system-site-packages), the user site when enabled,
    or the global interpreter's."""
    site_dirs = {*site.getsitepackages(), sysconfig.get_path("purelib")}
    site_dirs.add(sysconfig.get_path("platlib"))
    if site.ENABLE_USER_SITE:
        site_dirs.add(site.getusersitepackages())
    return list(dict.fromkeys(path for path in sys.path if path in site_dirs))


def make_venv(root: Path, hide_torch: bool) -> Path:
    """A new venv whose python also sees this interpreter's site-packages (after its own,
    their .pth files processed), optionally with torch hidden; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    lines = [f"import site; site.addsitedir({path!r})" for path in site_directories()]
    if hide_torch:
        (Path(own) / "_ident_test_no_torch.py").write_text(NO_TORCH_MODULE)
        lines.insert(0, "import _ident_test_no_torch")
    (Path(own) / "_ident_test_parent_site.pth").write_text("\n".join(lines) + "\n")
    return python


def checkout_state() -> set[str] | None:
    """`git status` of the checkout, untracked and ignored files included (bytecode caches
    left out); None when it is not a git checkout."""
    if shutil.which("git") is None:
        return None
    status = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--ignored", "--untracked-files=all"],
        capture_output=True, text=True,
    )  # fmt: skip
    if status.returncode != 0:
        return None
    lines = set(status.stdout.splitlines())
    return {line for line in lines if "__pycache__" not in line and ".pytest_cache" not in line}


@pytest.fixture(scope="module")
def checkout_before() -> set[str] | None:
    return checkout_state()


@pytest.fixture(scope="module")
def venv_python(checkout_before, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    python = make_venv(root / "env", hide_torch=True)
    source = root / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_BUILT_FROM))
    _install(python, source, root / "wheels")
    return python


def test_venv_sees_the_test_interpreters_packages_but_not_torch(venv_python: Path):
    probe = (
        "import hydra, mujoco, pinocchio\n"
        "try:\n    import torch\nexcept ModuleNotFoundError as e:\n    print('absent', e.name)\n"
    )
    result = subprocess.run([str(venv_python), "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "absent torch"


def test_every_module_imports_without_torch(venv_python: Path, tmp_path: Path):
    """No import path of the package needs torch (only training or loading bpnn does)."""
    names = sorted(
        info.name
        for info in pkgutil.walk_packages(ident_framework.__path__, "ident_framework.")
        if not info.name.startswith("ident_framework.conf")
    )
    assert "ident_framework.residuals.bpnn" in names and "ident_framework.__main__" in names
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)"
    result = subprocess.run(
        [str(venv_python), "-c", code, "ident_framework", *names],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]


def test_default_run_needs_no_torch(venv_python: Path, tmp_path: Path):
    run = tmp_path / "run"
    result = run_cli(
        "trajectory.n_candidates=40", "trajectory.n_refine=0", "trajectory.progress=false",
        f"hydra.run.dir={run}", cwd=tmp_path, python=str(venv_python),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run / "metrics.json").is_file() and (run / "plots").is_dir()
    assert "R²" in result.stdout


def test_bpnn_without_torch_says_how_to_install_it(venv_python: Path, tmp_path: Path):
    result = run_cli(
        "residual=bpnn", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path,
        python=str(venv_python),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    message = error_message(result.stderr)
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert "residual=bpnn needs PyTorch" in message and "No module named 'torch'" in message
    assert 'pip install -e ".[bpnn]"' in message and "ident-framework[bpnn]" in message
    assert "--index-url https://download.pytorch.org/whl/cpu" in message
    assert "whl/cu<version>" in message and "residual=none" in message
    assert not (tmp_path / "run").exists()  # refused before anything ran


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
    assert "robot: mjcf, staubli_tx40, ur10e, ur12e, ur5e, urdf" in help_text


def test_wheel_ships_the_sample_recordings(venv_python: Path, tmp_path: Path):
    """`sample:NAME` reads the recordings installed with the package, from any directory."""
    run = tmp_path / "run"
    result = run_cli(
        "source=csv", "source.path=sample:ident", "validation=rosbag",
        "validation.path=sample:validation", "tuning=none", "plots=false",
        f"hydra.run.dir={run}", cwd=tmp_path, python=str(venv_python),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    paths = [r["path"] for part in ("train", "validation") for r in metrics[part]["recordings"]]
    assert [Path(p).name for p in paths] == ["ident.csv", "validation_bag"], paths
    assert all(str(venv_python.parents[1]) in path for path in paths), paths
    unknown = run_cli("source=csv", "source.path=sample:nope", cwd=tmp_path,
                      python=str(venv_python))  # fmt: skip
    assert unknown.returncode == 2 and "sample:ident, sample:validation" in unknown.stderr


def test_wheel_ships_and_builds_the_c_kernels(venv_python: Path, tmp_path: Path):
    """The C sources are package data: the installed package builds its kernels from its own
    files (a fresh cache), so a run needs no numba."""
    code = (
        "import sys\n"
        "from ident_framework.data.filters import c_kernel as f\n"
        "from ident_framework.model.rigid_body_regressor import c_kernel as r\n"
        "print(r()._name, f()._name, 'numba' in sys.modules)\n"
    )
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environment.pop("IDENT_FRAMEWORK_NATIVE", None)
    environment.pop("PYTHONPATH", None)
    if c_kernels.compiler_found():
        result = subprocess.run(
            [str(venv_python), "-c", code], cwd=tmp_path, env=environment,
            capture_output=True, text=True,
        )  # fmt: skip
        assert result.returncode == 0 and result.stderr == "", result.stderr[-3000:]
        regressor, zero_phase, numba = result.stdout.split()
        assert str(tmp_path / "cache") in regressor and str(tmp_path / "cache") in zero_phase
        assert numba == "False"
    listing = subprocess.run(
        [str(venv_python), "-c", "import importlib.resources as r; print(sorted("
         "f.name for p in ('model', 'data') for f in r.files('ident_framework.' + p).iterdir()"
         " if f.name.endswith('.c')))"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert listing.strip() == "['rigid_body_kernel.c', 'savgol_kernel.c', 'zero_phase_kernel.c']"


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
        [python, "-c", "from ident_framework.config.registry import get_registry as g;"
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


def test_the_checkout_is_left_unchanged(venv_python: Path, checkout_before: set[str] | None):
    """Building the project's wheel and the venv wrote only to temporary folders (runs last in
    this module: the wheel was built and installed by the fixture, the plugins by the tests)."""
    if checkout_before is None:
        pytest.skip("not a git checkout")
    after = checkout_state()
    assert after == checkout_before, sorted(after ^ checkout_before)
