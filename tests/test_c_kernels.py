"""The C kernels' build, cache and fallback (`c_kernels.py`), each in a fresh process: built
once into the per-user cache and loaded from it afterwards; a cache folder that cannot be
written gives way to a private temp folder (and one open to others is refused); concurrent
first builds leave one whole library each; without a working compiler the numba kernels run
and the process says so in one line, once; IDENT_FRAMEWORK_NATIVE=0 asks for numba silently.
Every probe checks the results (the filter against SciPy, the regressor against Pinocchio)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ident_framework import c_kernels

WARNING = "C kernels unavailable"
# filters and computes a regressor twice each, checks them, prints what ran
PROBE = """
import json, sys
import numpy as np
import pinocchio as pin
from ident_framework.data.filters import butterworth_lowpass, zero_phase_filter
from ident_framework.data.filters import c_kernel as filter_kernel
from ident_framework.model.rigid_body_regressor import BatchRegressor
from ident_framework.model.rigid_body_regressor import c_kernel as regressor_kernel
from ident_framework.model.robot import load_robot

rng = np.random.default_rng(0)
x = np.cumsum(rng.standard_normal((600, 3)), axis=0)
sos = butterworth_lowpass(4, 20.0, 500.0)
model = load_robot("ur10e").pin_model
q, dq, ddq = (rng.normal(0.0, 2.0, (1100, 6)) for _ in range(3))
for _ in range(2):
    filtered, regressor = zero_phase_filter(sos, x), BatchRegressor(model)(q, dq, ddq)
data = model.createData()
expected = [pin.computeJointTorqueRegressor(model, data, *s).copy() for s in zip(q, dq, ddq)]
assert np.abs(regressor - np.array(expected)).max() < 1e-12 * np.abs(expected).max()
import scipy.signal
reference = scipy.signal.sosfiltfilt(sos, x, axis=0)
assert np.abs(filtered - reference).max() < 1e-12 * np.abs(reference).max()
libraries = [kernel() and kernel()._name for kernel in (regressor_kernel, filter_kernel)]
print(json.dumps({"libraries": libraries, "numba": "numba" in sys.modules}))
"""

pytestmark = pytest.mark.skipif(not c_kernels.compiler_found(), reason="no C compiler")


def probe(tmp_path: Path, **env: str) -> tuple[dict, list[str]]:
    """Run PROBE with the environment changed by `env` (cache in tmp_path/cache unless
    given): (what it printed, its stderr lines)."""
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environment.pop(c_kernels.SWITCH, None)
    environment.update(env)
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), result.stderr.splitlines()


def test_built_once_then_loaded_from_the_cache(tmp_path: Path):
    first, errors = probe(tmp_path)
    assert not first["numba"] and errors == []
    folder = tmp_path / "cache" / "ident_framework" / "native"
    built = sorted(folder.iterdir())
    assert [Path(p).parent for p in first["libraries"]] == [folder, folder]
    assert [p.name.split("-")[0] for p in built] == ["rigid_body_kernel", "zero_phase_kernel"]
    assert all(p.suffix == ".so" and len(p.stem.split("-")[1]) == 20 for p in built)
    times = [p.stat().st_mtime_ns for p in built]
    second, errors = probe(tmp_path)
    assert second["libraries"] == first["libraries"] and errors == []
    assert sorted(folder.iterdir()) == built  # nothing built again, no temporary left
    assert [p.stat().st_mtime_ns for p in built] == times


def test_an_unwritable_cache_gives_way_to_a_private_temp_folder(tmp_path: Path):
    """XDG_CACHE_HOME under a regular file (so no folder can be made there, even as root)."""
    (tmp_path / "a_file").write_text("")
    temp = tmp_path / "temp"
    temp.mkdir()
    result, errors = probe(tmp_path, XDG_CACHE_HOME=str(tmp_path / "a_file"), TMPDIR=str(temp))
    assert not result["numba"] and errors == []
    private = temp / f"ident_framework-native-{os.getuid()}"
    assert {Path(p).parent for p in result["libraries"]} == {private}
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_a_private_temp_folder_open_to_others_is_refused(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = c_kernels.cache_folders()[-1]
    assert folder.parent == tmp_path
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # whatever the umask
    with pytest.raises(PermissionError, match="not a private folder"):
        c_kernels._ensure_folder(folder)
    folder.chmod(0o700)
    c_kernels._ensure_folder(folder)


def test_concurrent_first_builds_leave_one_whole_library_each(tmp_path: Path):
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environment.pop(c_kernels.SWITCH, None)
    runs = [
        subprocess.Popen([sys.executable, "-c", PROBE], env=environment, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]  # fmt: skip
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], outputs
    libraries = {tuple(json.loads(out)["libraries"]) for out, _ in outputs}
    assert len(libraries) == 1
    folder = tmp_path / "cache" / "ident_framework" / "native"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        Path(p).name for p in libraries.pop()
    )  # no temporary file left behind


@pytest.mark.parametrize("compiler", ["missing", "broken"])
def test_without_a_working_compiler_numba_runs_and_says_so_once(tmp_path: Path, compiler: str):
    """No compiler at all, or one that answers --version but cannot compile: the numba
    kernels give the same checked results; stderr holds one warning line, no traceback."""
    if compiler == "missing":
        command = str(tmp_path / "no-such-cc")
    else:
        command = str(tmp_path / "broken-cc")
        Path(command).write_text(
            '#!/bin/sh\n[ "$1" = --version ] && echo "broken-cc 1.0" && exit 0\n'
            'echo "broken-cc: error: cannot compile anything" >&2\nexit 1\n'
        )
        Path(command).chmod(0o755)
    result, errors = probe(tmp_path, CC=command)
    assert result["numba"] and result["libraries"] == [None, None]
    assert len(errors) == 1 and WARNING in errors[0] and "numba" in errors[0], errors
    reason = "no working C compiler" if compiler == "missing" else "cannot compile anything"
    assert reason in errors[0]
    assert not list((tmp_path / "cache").rglob("*.so"))


def test_a_compiler_without_march_native_builds_with_the_portable_flags(tmp_path: Path):
    command, _ = c_kernels._compiler()
    wrapper = tmp_path / "no-native-cc"
    wrapper.write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = -march=native ] && '
        '{ echo "error: unknown -march=native" >&2; exit 1; }; done\n'
        f'exec {" ".join(command)} "$@"\n'
    )
    wrapper.chmod(0o755)
    result, errors = probe(tmp_path, CC=str(wrapper))
    assert not result["numba"] and errors == []
    built = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*")}
    assert len([p for p in built if p.suffix == ".so"]) == 2
    again, errors = probe(tmp_path, CC=str(wrapper))  # found in the cache: nothing built
    assert again["libraries"] == result["libraries"] and errors == []
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*")} == built


def test_switched_off_the_numba_kernels_run_silently(tmp_path: Path):
    result, errors = probe(tmp_path, **{c_kernels.SWITCH: "0"})
    assert result["numba"] and result["libraries"] == [None, None] and errors == []
