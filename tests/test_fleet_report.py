"""The fleet report from run directories: each robot's std of fc, fv, Ia and of the last link's
payload-like parameters as its parameters.yaml gives them, flags from the fleet spread."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import yaml

from ident_framework.reports.fleet import RobotRun, write_fleet_report

JOINTS = ["j1", "j2"]


def _run(folder: Path, fc: list[float], std: float | None) -> Path:
    folder.mkdir(parents=True)
    joints = [
        {"joint": name, "fc": {"value": value, "std": std}, "fv": {"value": 1.0, "std": std},
         "Ia": {"value": 0.1, "std": None}}
        for name, value in zip(JOINTS, fc, strict=True)
    ]  # fmt: skip
    standard = {"m_2": 2.0, "mx_2": 0.01, "my_2": -0.02, "mz_2": 0.3}
    stds = {"m_2": None, "mx_2": 1e-4, "my_2": 2e-4, "mz_2": None}
    document = {"joints": joints, "standard_parameters": standard}
    if std is not None:
        document["standard_parameter_std"] = stds
    (folder / "parameters.yaml").write_text(yaml.safe_dump(document))
    metrics = {"validation": {"physical": {"rmse": 0.5, "r2": 0.99}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_report_carries_each_robots_std(tmp_path: Path):
    rng = np.random.default_rng(0)
    healthy = [(5 + rng.normal(0, 0.1, 2)).tolist() for _ in range(6)]
    runs = [
        RobotRun.read(f"r{i}", "2026-11-01", _run(tmp_path / f"r{i}", fc, 0.01))
        for i, fc in enumerate(healthy)
    ]
    runs.append(RobotRun.read("worn", "2026-11-01", _run(tmp_path / "worn", [10.0, 5.0], None)))
    out = tmp_path / "fleet"
    out.mkdir()
    rows = write_fleet_report(out, runs, 3.0, 0.1)
    with open(out / "fleet.csv") as handle:
        table = list(csv.DictReader(handle))
    assert {"fc_std", "fv_std", "Ia_std"} <= set(table[0])
    assert all(float(r["fc_std"]) == 0.01 for r in table if r["robot"] != "worn")
    assert all(r["Ia_std"] == "" for r in table)  # identified only in combination: no std
    assert all(r["fc_std"] == "" for r in table if r["robot"] == "worn")  # none reported
    assert [(r["robot"], r["joint"]) for r in rows if r["outlier"]] == [("worn", "j1")]
    with open(out / "fleet_payload.csv") as handle:
        payload = {r["robot"]: r for r in csv.DictReader(handle)}
    assert float(payload["r0"]["mx_2_std"]) == 1e-4 and "m_2" not in payload["r0"]
    assert payload["worn"]["mx_2"] == ""  # no covariance, no payload figures
    text = (out / "fleet.md").read_text()
    assert "fc_std" in text and "Payload-like parameters of the last link" in text
    assert (out / "fleet.png").stat().st_size > 10_000
