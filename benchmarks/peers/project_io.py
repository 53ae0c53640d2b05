"""Everything the peer benchmark takes from ident_framework's Python API, in one place (the
package's layout changes; the identification itself runs only through the command line).

Used for: writing recordings in the CSV contract with the package's own writer, reading them
back with its reader (tests), simulating the UR10e case with the package's default simulated
robot, excitation and validation motion, writing the nominal UR10e's URDF for FIGAROH, and
timing the compiled rigid-body regressor kernel alone on a case's samples (the roofline).
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ident_framework.data.csv_log import read_csv_log, write_csv_log
from ident_framework.data.dataset import Dataset

from .conversions import JointRecording

PROJECT_PACKAGE = "ident_framework"


def project_command() -> list[str]:
    """The project's command line (with this interpreter)."""
    return [sys.executable, "-m", PROJECT_PACKAGE]


def project_revision() -> str:
    """`git describe` of the package's checkout, or its version."""
    import ident_framework

    folder = Path(ident_framework.__file__).resolve().parent
    described = subprocess.run(
        ["git", "-C", str(folder), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    )
    if described.returncode == 0:
        return described.stdout.strip()
    from importlib.metadata import version

    return version("ident-framework")


def write_recording(recording: JointRecording, path: Path) -> Path:
    """Write `recording` in the CSV contract (timestamp, actual_q_j, actual_qd_j,
    actual_current_as_torque_j) with the package's writer."""
    dataset = Dataset(
        recording.t, recording.q, recording.dq, recording.tau, tuple(recording.joint_names)
    )
    write_csv_log(dataset, path)
    return path


def read_recording(path: Path, joint_names: tuple[str, ...]) -> JointRecording:
    """Read a contract CSV back with the package's reader."""
    data = read_csv_log(path, joint_names)
    return JointRecording(data.timestamp, data.q, data.dq, data.tau, tuple(data.joint_names))


def _recording(dataset: Dataset) -> JointRecording:
    return JointRecording(
        dataset.timestamp, dataset.q, dataset.dq, dataset.tau, tuple(dataset.joint_names)
    )


def simulate_ur10e(
    folder: Path, sizes: list[int], seed: int = 0, log=print
) -> dict[str, Path | dict[int, Path]]:
    """The simulated UR10e case, written to `folder` (existing files are kept: a cache).

    The robot is `source=mujoco robot=ur10e` with its default perturbation (masses, centres
    of mass, inertias, a 1.5 kg payload the model is not told about, MuJoCo damping and soft
    frictionloss, rotor inertia, 0.05 Nm torque noise, encoder quantisation), recorded at
    500 Hz. Identification: the default Fourier excitation (the search of `seed`), repeated
    for as many 20-s periods as `n` samples need, cut to exactly `n` rows. Validation: the
    default `validation=mujoco` point-to-point motion (slow moves and holds, seed + 1).
    Returns {"ident": {n: csv}, "validation": csv, "urdf": the nominal UR10e's URDF}.
    """
    from hydra import compose, initialize_config_module

    from ident_framework.config.registry import get_registry
    from ident_framework.config.run_config import validate_config
    from ident_framework.config.search_path import register_plugin_search_path
    from ident_framework.modes.pipeline import (
        acquire_validation,
        design_excitation,
        robot_and_regressor,
    )
    from ident_framework.twin.export import twin_urdf_text

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "ident": {n: folder / f"ur10e_ident_{n}.csv" for n in sizes},
        "validation": folder / "ur10e_validation.csv",
        "urdf": folder / "ur10e_nominal.urdf",
    }
    missing = [p for p in [*paths["ident"].values(), paths["validation"], paths["urdf"]]]
    if all(p.exists() for p in missing):
        return paths
    register_plugin_search_path()
    overrides = ["robot=ur10e", f"seed={seed}", "trajectory.progress=false"]
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        config = validate_config(compose("config", overrides=overrides), get_registry())
    robot, builder = robot_and_regressor(config)
    if not paths["urdf"].exists():
        paths["urdf"].write_text(twin_urdf_text(robot))
    log("ur10e: designing the default Fourier excitation (the search takes ~20 s)")
    excitation = design_excitation(config, robot, builder, config.seed)
    source = config.plugins["source"].create()
    rate = config.plugins["source"].params.record_rate_hz
    per_period = excitation.duration * rate
    recorded = None
    for n, path in sorted(paths["ident"].items()):
        if path.exists():
            continue
        periods = max(1, math.ceil(n / per_period))
        log(f"ur10e: simulating {n} identification samples ({periods} Fourier periods)")
        motion = dataclasses.replace(excitation, n_periods=periods)
        recorded = source.acquire(robot, motion, "identification").select(slice(0, n))
        if recorded.n_samples != n:
            raise RuntimeError(f"simulated {recorded.n_samples} samples, wanted {n}")
        write_recording(_recording(recorded), path)
    if not paths["validation"].exists():
        log("ur10e: simulating the validation motion (point-to-point, slow moves and holds)")
        _, validation = acquire_validation(config, robot, recorded)  # recorded: unused here
        write_recording(_recording(validation), paths["validation"])
    (folder / "excitation.json").write_text(json.dumps(excitation.describe(), indent=1))
    return paths


KERNEL_CHUNK = 10_000  # samples per kernel call: threaded (>= 4096), ~29 MB of UR10e output


def kernel_rate(
    csv: Path, robot: str = "ur10e", repeats: int = 3, chunk: int = KERNEL_CHUNK,
    min_total_s: float = 0.3,
) -> dict:  # fmt: skip
    """The roofline: samples/s of `RegressorBuilder.rigid_body` (the compiled batch kernel,
    model/rigid_body_regressor.py) alone over all the samples of the recording `csv` (q, dq
    and ddq = numpy.gradient(dq, t)), in calls of `chunk` samples (on the kernel's threads;
    bounded memory at 10⁶ samples): the shortest of at least `repeats` passes, more (up to 50)
    until they took `min_total_s` together, after one warm-up call."""
    from ident_framework.friction.coulomb_viscous import (
        CoulombViscousFriction,
        CoulombViscousParams,
    )
    from ident_framework.model.regressor import RegressorBuilder
    from ident_framework.model.rigid_body_regressor import c_kernel
    from ident_framework.model.robot import load_robot
    from ident_framework.parallel_work import worker_limit

    model = load_robot(robot)
    builder = RegressorBuilder(model, CoulombViscousFriction(CoulombViscousParams()))
    data = read_csv_log(csv, model.joint_names)
    q, dq = data.q, data.dq
    ddq = np.gradient(dq, data.timestamp, axis=0)
    n = len(q)
    builder.rigid_body(q[:chunk], dq[:chunk], ddq[:chunk])  # the library loaded (or built)
    passes, best, total = 0, float("inf"), 0.0
    while passes < repeats or (total < min_total_s and passes < 50):
        start = time.perf_counter()
        for first in range(0, n, chunk):
            part = slice(first, first + chunk)
            builder.rigid_body(q[part], dq[part], ddq[part])
        took = time.perf_counter() - start
        passes, best, total = passes + 1, min(best, took), total + took
    if builder._batch is None:
        engine = "Pinocchio loop (model not supported by the batch kernel)"
    else:
        engine = "C" if c_kernel() is not None else "numba"
    return {
        "samples": n,
        "seconds": best,
        "samples_per_s": n / best,
        "engine": engine,
        "threads": worker_limit(),
        "chunk": chunk,
        "passes": passes,
    }
