"""The real Franka Emika Panda log of ../shared/datasets/panda_gaz2019 (skipped when absent;
GPL-3.0 data, read in place, never copied): its own column names mapped on the command line
(time, q_j, dq_j, tau_j), ~1 kHz with 0.7-15.5 ms steps and a gap after its first sample,
identified on the first and last thirds of the run, validated on the middle third (a motion
the identification data do not contain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ident_framework.model.robot import load_robot
from ident_framework.testing.cli import SHARED, run_cli

PANDA = SHARED / "datasets" / "panda_gaz2019"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PANDA.is_dir(), reason="shared Franka Panda data absent"),
]
MAPPING = "{time: time, q: q_, dq: dq_, tau: tau_}"


def test_the_urdf_joints_are_in_the_logs_column_order():
    """Column index j of the log is panda_joint{j+1} (the dataset's README)."""
    robot = load_robot("urdf", str(PANDA / "panda_arm.urdf"))
    assert list(robot.joint_names) == [f"panda_joint{j + 1}" for j in range(7)]


@pytest.mark.parametrize(
    ("files", "tuning"),
    [(["ident_traj1_part1.csv", "ident_traj1_part3.csv"], "cv"),
     (["ident_traj1_part1.csv"], "none")],
    ids=["two-recordings-tuned", "one-recording-untuned"],
)  # fmt: skip
def test_the_panda_log_runs_from_its_own_header(tmp_path: Path, files: list[str], tuning: str):
    run = tmp_path / "run"
    paths = ",".join(str(PANDA / name) for name in files)
    result = run_cli(
        "robot=urdf", f"robot.path={PANDA / 'panda_arm.urdf'}", "source=csv",
        f"source.path=[{paths}]", f"source.columns={MAPPING}", "validation=csv",
        f"validation.path={PANDA / 'val_traj1_middle.csv'}", f"validation.columns={MAPPING}",
        f"tuning={tuning}", "plots=false", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    data = metrics["data"]
    # the one-sample piece before part 1's 15.5 ms first step, nothing else
    assert data["train_preprocessing"]["short_segments_dropped"] == 1
    assert data["train_preprocessing"]["short_segment_samples_dropped"] == 1
    assert data["validation_preprocessing"]["short_segments_dropped"] == 0
    assert "1 pieces too short to filter dropped (1 samples" in result.stdout
    validation = metrics["validation"]["physical"]
    # measured: 0.317 Nm, R² 0.9989, joints >= 0.918 (tuned, two recordings); 0.699 Nm, R²
    # 0.9949, joints >= 0.633 (untuned, part 1 alone; joint 7's validation torque spans only
    # -0.42..0.45 Nm)
    assert validation["r2"] > 0.99
    assert validation["rmse"] < (0.4 if tuning == "cv" else 0.8)
    assert min(validation["r2_per_joint"]) > (0.85 if tuning == "cv" else 0.55)
