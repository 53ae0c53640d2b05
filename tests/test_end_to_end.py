"""End-to-end runs of the command line, as a user types them."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework import c_kernels
from ident_framework.data.csv_log import read_csv_log, write_csv_log
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.hookspecs import BUILTIN_PLUGINS, PLUGIN_GROUPS, POINTS
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.testing.cli import run_cli
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams
from ident_framework.trajectories.point_to_point import PointToPointGenerator, PointToPointParams

pytestmark = pytest.mark.slow

JOINTS = 6


@pytest.fixture(scope="module")
def recorded_logs(tmp_path_factory) -> tuple[Path, Path]:
    """An identification and a validation log of the simulated UR robot, in the CSV contract
    (what ur_rtde's recorder writes), made through the public Python API."""
    folder = tmp_path_factory.mktemp("logs")
    robot = load_robot("ur10e")
    source = MujocoSource(MujocoSourceParams(seed=3))
    fourier = FourierGenerator(FourierParams(n_candidates=40, n_refine=0, progress=False))
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    excitation = fourier.generate(robot, make_condition_objective(builder), seed=3)
    ident = source.acquire(robot, excitation, "identification")
    # The validation motion roams the joint ranges (workspace=None), as this test's logs always
    # did: inside the default workspace this 12 s motion moves the arm up only, its torques
    # vary less and the same fit scores pooled R² 0.983 instead of 0.998 (measured; the
    # excitation, the best of 40 random motions inside the workspace, is the same in both).
    motion = PointToPointGenerator(PointToPointParams(duration_s=12.0, workspace=None)).generate(
        robot, None, 4
    )
    validation = source.acquire(robot, motion, "validation")
    write_csv_log(ident, folder / "ident.csv")
    write_csv_log(validation, folder / "val.csv")
    return folder / "ident.csv", folder / "val.csv"


def _metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_default_run_meets_the_targets(tmp_path: Path):
    """`python -m ident_framework` with no arguments: the headline run of the README."""
    run = tmp_path / "run"
    result = run_cli(f"hydra.run.dir={run}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = _metrics(run)
    assert metrics["identifiability"]["n_standard"] == 78
    assert metrics["identifiability"]["n_base"] == 52
    assert metrics["identifiability"]["cond"] <= 100
    validation = metrics["validation"]["physical"]
    assert validation["r2"] >= 0.995
    assert metrics["truth"]["rmse_ratio_identified_to_true"] <= 1.05
    assert len(validation["r2_per_joint"]) == JOINTS

    # run-directory contract
    assert set(metrics) >= {"identifiability", "train", "validation", "timing_s"}
    header = (run / "predictions_validation.csv").read_text().splitlines()[0].split(",")
    assert header == (
        ["timestamp"]
        + [f"tau_meas_{j}" for j in range(JOINTS)]
        + [f"tau_physical_{j}" for j in range(JOINTS)]
        + [f"tau_pred_{j}" for j in range(JOINTS)]
    )
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    assert len(parameters["base_parameters"]) == 52
    assert {"name", "value", "std"} <= set(parameters["base_parameters"][0])
    assert parameters["robot"]["joint_names"][0] == "shoulder_pan_joint"
    assert parameters["plugins"]["friction"]["plugin"] == "coulomb_viscous"
    assert parameters["plugins"]["friction"]["version"]
    joint = parameters["joints"][3]
    assert joint["fv"]["true"] == pytest.approx(joint["fv"]["value"], rel=0.1)
    installed = yaml.safe_load((run / "plugins.yaml").read_text())["installed"]
    assert {"kind": "friction", "name": "none"} in [
        {"kind": p["kind"], "name": p["name"]} for p in installed
    ]
    trajectory = yaml.safe_load((run / "trajectory.yaml").read_text())
    assert trajectory["cond_base_regressor_recorded"] == pytest.approx(
        metrics["identifiability"]["cond"]
    )
    for plot in ("validation_torque.png", "rmse_per_joint.png", "excitation.png"):
        assert (run / "plots" / plot).stat().st_size > 10_000
    assert not (run / ".incomplete").exists()
    # the default estimator is physically consistent: the default run writes the twin
    assert metrics["identifiability"]["physically_consistent"]
    assert (run / "twin.xml").exists() and (run / "twin.urdf").exists()
    assert "twin written" in result.stdout and "twin_not_written" not in metrics
    assert metrics["twin"]["inverse_dynamics"]["rmse"] > 0
    assert metrics["estimator"]["train_rmse"] >= metrics["estimator"]["train_rmse_least_squares"]


def test_identify_from_recorded_logs(recorded_logs, tmp_path: Path):
    ident, val = recorded_logs
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={ident}", "validation=csv",
        f"validation.path={val}", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = _metrics(run)
    assert metrics["validation"]["physical"]["r2"] > 0.99
    assert "truth" not in metrics  # a recording knows no truth
    assert not (run / "trajectory.yaml").exists()  # nothing was excited
    assert (run / "twin.xml").exists()  # physically consistent by default: a recorded log too
    assert metrics["tuning"]["chosen"]["estimator.weight"] > 0
    for split in ("train", "validation"):  # no false alarm on a clean simulated recording
        checks = metrics["data"]["checks"][split]
        assert checks["excluded_rows"] == 0 and checks["warnings"] == [], checks


# What an identification from a recorded log does not use, so does not import (issue 28): the
# other modes, the simulated robot, the robot connection, the motion design and its safety
# check, the MCAP export, and pandas (pyarrow's `to_numpy` and `pa.array` convert through it)
NOT_FOR_A_LOG = (
    "pandas", "ident_framework.modes.closed_loop", "ident_framework.modes.rehearsal",
    "ident_framework.modes.predict", "ident_framework.modes.distributed",
    "ident_framework.online", "ident_framework.simulation", "ident_framework.rtde",
    "ident_framework.trajectories.fourier.search", "ident_framework.model.motion_safety",
    "ident_framework.reports.mcap_export",
)  # fmt: skip


def test_identifying_from_a_log_imports_only_what_it_uses(recorded_logs, tmp_path: Path):
    """The whole command on a recorded log, tuning included, as `python -X importtime` sees
    it: no SciPy module is imported (scipy.linalg alone costs 0.16 s, scipy.signal 0.5 s;
    `triangular.py`, `data/filters.py`), nor numba or llvmlite where a C compiler
    builds the compiled loops (`c_kernels.py`; numba costs ~0.45 s and ~100 MB), nor pandas,
    nor a built-in plugin the config does not name, nor a module of what the run does not do
    (`NOT_FOR_A_LOG`); and the prompt exit keeps every output."""
    ident, val = recorded_logs
    run = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ident_framework", "robot=ur10e",
         "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={val}",
         "plots=false", f"hydra.run.dir={run}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split("|") for line in result.stderr.splitlines()
             if line.startswith("import time:")]  # fmt: skip
    imported = [line[-1].strip() for line in lines]
    assert "ident_framework.modes.pipeline" in imported
    scipy = [
        (line[-1].strip(), int(line[1]))
        for line in lines
        if line[-1].strip().split(".")[0] == "scipy"
    ]
    if c_kernels.compiler_found():  # the C kernels ran: no numba, no llvmlite, no SciPy
        assert not [m for m in imported if m.split(".")[0] in ("numba", "llvmlite")]
        assert scipy == []
        assert "C kernels unavailable" not in result.stderr + result.stdout
    else:  # numba looks for SciPy at its import and first call; `c_kernels` makes those
        # imports fail at once (they appear, halted, with a few µs each)
        assert sum(us for _, us in scipy) < 1000, scipy
        assert {name for name, _ in scipy} <= {"scipy", "scipy.linalg", "scipy.linalg.cython_blas"}
    # the built-in plugins the config names (the registry imports each when it is looked up)
    # and none other; everything of NOT_FOR_A_LOG stays out
    used = yaml.safe_load((run / "parameters.yaml").read_text())["plugins"]
    named = {POINTS[kind].builtin_options()[used[group]["plugin"]]
             for group, kind in PLUGIN_GROUPS.items()}  # fmt: skip
    assert named <= set(imported), (named, imported)
    assert not [m for m in BUILTIN_PLUGINS if m in imported and m not in named]
    assert not [m for m in imported if m.startswith(NOT_FOR_A_LOG)]
    assert _metrics(run)["tuning"]["candidates"] > 10
    assert "outputs in" in result.stdout
    assert not (run / ".incomplete").exists()


def test_planted_defects_are_excluded_counted_and_reported(recorded_logs, tmp_path: Path):
    """A clipped torque and stale packets in the identification log, a clipped torque in the
    validation log: those samples (and 0.02 s around them) leave estimation and scoring, and
    metrics.json and the summary count them."""
    ident, val = recorded_logs
    joints = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint")  # fmt: skip
    data = read_csv_log(ident, joints)
    tau, q, dq = data.tau.copy(), data.q.copy(), data.dq.copy()
    tau[2000:2050, 2] = tau[:, 2].max() + 1.0  # clipped at its top
    for array in (q, dq, tau):
        array[4001:4021] = array[4000]  # 20 stale repeats while moving
    bad_ident = tmp_path / "ident_defects.csv"
    write_csv_log(replace(data, q=q, dq=dq, tau=tau), bad_ident)
    held_out = read_csv_log(val, joints)
    tau_val = held_out.tau.copy()
    tau_val[1000:1030, 1] = tau_val[:, 1].min() - 1.0
    bad_val = tmp_path / "val_defects.csv"
    write_csv_log(replace(held_out, tau=tau_val), bad_val)
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={bad_ident}", "validation=csv",
        f"validation.path={bad_val}", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = _metrics(run)
    train, validation = metrics["data"]["checks"]["train"], metrics["data"]["checks"]["validation"]
    assert train["torque_clipping"]["samples_per_joint"]["elbow_joint"] == 50
    assert train["stale_samples"] == 20
    assert validation["torque_clipping"]["samples_per_joint"]["shoulder_lift_joint"] == 30
    # 0.02 s at 500 Hz: 10 samples on each side of each defect
    assert train["excluded_samples"] == 50 + 20 + 4 * 10 and validation["excluded_samples"] == 50
    assert train["excluded_rows"] == 110 and validation["excluded_rows"] == 50
    assert metrics["data"]["train_samples"] == train["rows_in"] - 110
    assert metrics["data"]["validation_samples"] == validation["rows_in"] - 50
    assert metrics["validation"]["physical"]["r2"] > 0.99  # the defects did not reach the fit
    summary = (run / "summary.txt").read_text()
    assert "data checks (train): 110 of" in summary and "elbow_joint" in summary
    predicted = np.loadtxt(run / "predictions_validation.csv", delimiter=",", skiprows=1)
    assert len(predicted) == metrics["data"]["validation_samples"]
    assert not np.any(np.isin(predicted[:, 0], held_out.timestamp[1000:1030]))


def test_relative_csv_paths_and_split_validation(recorded_logs, tmp_path: Path):
    ident, _ = recorded_logs
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "mine.csv").write_bytes(ident.read_bytes())
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", "source.path=logs/mine.csv", "validation=split",
        "validation.fraction=0.25", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = _metrics(run)
    share = metrics["data"]["validation_samples"] / (
        metrics["data"]["validation_samples"] + metrics["data"]["train_samples"]
    )
    # the last quarter, less the filter edges dropped at both ends of each piece (longer at
    # the low cut-offs the tuning may choose; a larger share of the shorter piece)
    assert 0.15 < share < 0.3
    assert metrics["validation"]["physical"]["r2"] > 0.98


def test_sweep_writes_one_comparison_table(recorded_logs, tmp_path: Path):
    ident, val = recorded_logs
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "friction=none,coulomb_viscous", "robot=ur10e", "source=csv",
        f"source.path={ident}", "validation=csv", f"validation.path={val}",
        "tuning=none",  # the regressor columns as configured: n_base below is structural
        f"hydra.sweep.dir={sweep}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    with open(sweep / "comparison.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["friction"] for row in rows] == ["none", "coulomb_viscous"]
    assert [int(row["n_base"]) for row in rows] == [40, 52]  # 36 + 4 separable rotor inertias
    for row in rows:
        for key in ("train_rmse", "train_r2", "validation_rmse", "validation_r2", "cond"):
            assert np.isfinite(float(row[key]))
    no_friction, with_friction = (float(row["validation_rmse"]) for row in rows)
    assert with_friction < 0.5 * no_friction
    table = (sweep / "comparison.md").read_text()
    assert table.count("\n| ") == 3 and "validation_rmse" in table
    assert (sweep / "comparison_rmse_per_joint.png").stat().st_size > 10_000


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bad_log_is_refused_and_nothing_is_written(recorded_logs, tmp_path: Path):
    ident, val = recorded_logs
    lines = ident.read_text().splitlines()
    cells = lines[101].split(",")
    cells[3] = "nan"  # actual_q_2 of data row 101 (line 102: the header is line 1)
    lines[101] = ",".join(cells)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    before = _digest(bad)
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={bad}", "validation=csv",
        f"validation.path={val}", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "bad.csv" in result.stderr and "actual_q_2" in result.stderr
    assert "data row 101" in result.stderr and "line 102" in result.stderr
    assert not run.exists()
    assert _digest(bad) == before


def test_failed_run_keeps_an_earlier_run_directory(recorded_logs, tmp_path: Path):
    """A failing run into an existing run directory leaves the earlier results alone."""
    ident, _ = recorded_logs
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text('{"earlier": true}')
    short = tmp_path / "short.csv"
    short.write_text("\n".join(ident.read_text().splitlines()[:30]) + "\n")
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={short}", "validation=split",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert "short.csv" in result.stderr
    assert json.loads((run / "metrics.json").read_text()) == {"earlier": True}
    assert sorted(p.name for p in run.iterdir()) == ["metrics.json"]
