"""Fleet mode: logs of several simulated robots (seeded perturbations, a ±10 % spread of joint
friction, some joints worn: Coulomb friction × 2) identified through joblib in one command; the
fleet report flags every worn joint and no healthy one, and a robot's wear over time."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.model.robot import load_robot
from ident_framework.simulation.perturbed_robot import default_joint_dynamics
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams

pytestmark = pytest.mark.slow
WORN = {"r03": 1, "r06": 4}  # robot -> worn joint (0-based)


def _log(robot, motion, seed: int, coulomb: np.ndarray, path: Path) -> None:
    params = MujocoSourceParams(seed=seed, coulomb=coulomb.tolist())
    write_csv_log(MujocoSource(params).acquire(robot, motion), path)


def test_fleet_report_flags_worn_joints_only(tmp_path: Path):
    robot = load_robot("ur10e")
    motion = FourierGenerator(FourierParams(n_candidates=1, n_refine=0, progress=False)).generate(
        robot, None, 21
    )
    nominal = default_joint_dynamics(robot)["coulomb"]
    logs = tmp_path / "logs"
    logs.mkdir()
    rng = np.random.default_rng(0)
    for i in range(8):
        name = f"r{i:02d}"
        coulomb = nominal * rng.uniform(0.9, 1.1, 6)
        if name == "r05":  # an earlier, healthy log of a robot whose joint 2 wears later
            _log(robot, motion, 100 + i, coulomb, logs / f"{name}_2026-06-01.csv")
            coulomb = coulomb.copy()
            coulomb[2] *= 2.0
        if name in WORN:
            coulomb[WORN[name]] *= 2.0
        _log(robot, motion, 100 + i, coulomb, logs / f"{name}_2026-11-01.csv")
    out = tmp_path / "fleet"
    result = subprocess.run(
        [sys.executable, "-m", "ident_framework.fleet", str(logs), "--out", str(out), "--",
         "robot=ur10e", "plots=false", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "fleet.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 9 * 6
    joints = list(robot.joint_names)
    outliers = {(r["robot"], joints.index(r["joint"])) for r in rows if r["outlier"] == "True"}
    trends = {(r["robot"], joints.index(r["joint"])) for r in rows if r["trend"] == "True"}
    assert outliers == {*WORN.items(), ("r05", 2)}, outliers
    assert trends == {("r05", 2)}, trends
    for row in rows:
        assert float(row["validation_r2"]) > 0.9  # one random 20 s excitation per log
        # each robot's own std of fc (its fit's covariance): below the fleet spread
        assert 0 < float(row["fc_std"]) < 0.5 * float(row["fleet_sigma_fc"])
    assert "_std" in (out / "fleet_payload.csv").read_text().splitlines()[0]
    assert (out / "fleet.png").stat().st_size > 10_000
    assert "## Flagged joints (3)" in (out / "fleet.md").read_text()  # r05: both flags, one row


def test_a_corrupt_log_is_listed_and_the_others_identified(tmp_path: Path):
    """Two robots and a corrupt log: exit 0, fleet.md lists all three logs and why the
    corrupt one was left out; with fleet.strict=true the same report and exit 2."""
    robot = load_robot("ur10e")
    motion = FourierGenerator(FourierParams(n_candidates=1, n_refine=0, progress=False)).generate(
        robot, None, 21
    )
    nominal = default_joint_dynamics(robot)["coulomb"]
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(2):
        _log(robot, motion, 200 + i, nominal, logs / f"r{i}_2026-11-01.csv")
    (logs / "r9_2026-11-01.csv").write_text("timestamp,actual_q_0\nnot,a number\n")
    for strict, code in (("false", 0), ("true", 2)):
        out = tmp_path / f"fleet_{strict}"
        result = subprocess.run(
            [sys.executable, "-m", "ident_framework.fleet", str(logs), "--out", str(out),
             f"fleet.strict={strict}", "--", "robot=ur10e", "plots=false"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert result.returncode == code, result.stderr[-3000:]
        assert f"left out {logs / 'r9_2026-11-01.csv'}" in result.stderr
        text = (out / "fleet.md").read_text()
        assert text.startswith("# Fleet report: 2 robots, 2 of 3 logs identified, 1 left out")
        logs_section = text[text.index("## Logs (3 given, 1 left out)") :]
        assert logs_section.count("| identified |") == 2
        assert f"| r9 | 2026-11-01 | left out: {logs / 'r9_2026-11-01.csv'} |" in logs_section
        with open(out / "fleet.csv") as handle:
            assert {row["robot"] for row in csv.DictReader(handle)} == {"r0", "r1"}
