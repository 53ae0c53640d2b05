"""Real measured data (skipped when ../shared/datasets is absent): a KUKA LWR4+ identified
from one measured trajectory predicts the torques of a different one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.testing.cli import SHARED, run_cli

KUKA = SHARED / "datasets" / "kuka_lwr4"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not KUKA.is_dir(), reason="shared KUKA LWR4 data absent"),
]


def _csv(npz: Path, out: Path) -> Path:
    data = np.load(npz)
    joints = tuple(f"lwr_{j}_joint" for j in range(7))
    t = data["times"] - data["times"][0]
    write_csv_log(Dataset(t, data["positions"], data["velocities"], data["torques"], joints), out)
    return out


def test_kuka_held_out_trajectory(tmp_path: Path):
    train = _csv(KUKA / "measurements_1.npz", tmp_path / "m1.csv")
    test = _csv(KUKA / "measurements_3.npz", tmp_path / "m3.csv")
    results = {}
    for estimator in ("ls", "consistent"):
        run = tmp_path / estimator
        result = run_cli(
            "robot=urdf", f"robot.path={KUKA / 'kuka_lwr4.urdf'}", "source=csv",
            f"source.path={train}", "validation=csv", f"validation.path={test}",
            f"estimator={estimator}", "regressor.torque_offset=true", f"hydra.run.dir={run}",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        results[estimator] = json.loads((run / "metrics.json").read_text())
    consistent = results["consistent"]["validation"]["physical"]
    assert consistent["r2"] > 0.99
    assert consistent["rmse"] < 0.5 * results["ls"]["validation"]["physical"]["rmse"]
    assert results["consistent"]["identifiability"]["physically_consistent"]
