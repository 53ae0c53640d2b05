"""The fleet report from run directories: each robot's std of fc, fv, Ia and of the last link's
payload-like parameters as its parameters.yaml gives them, flags from the fleet spread."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import yaml

from ident_framework.reports.fleet import (
    LeftOut,
    RobotRun,
    fleet_flags,
    plot_fleet,
    write_fleet_report,
)

JOINTS = ["j1", "j2"]


def _run(folder: Path, fc: list[float], std: float | None) -> Path:
    folder.mkdir(parents=True)
    joints = [
        {"joint": name, "fc": {"value": value, "std": std}, "fv": {"value": 1.0, "std": std},
         "Ia": {"value": 0.1, "std": None, "identifiable_alone": False}}
        for name, value in zip(JOINTS, fc, strict=True)
    ]  # fmt: skip
    standard = {"m_2": 2.0, "mx_2": 0.01, "my_2": -0.02, "mz_2": 0.3}
    stds = {"m_2": None, "mx_2": 1e-4, "my_2": 2e-4, "mz_2": None}
    document = {"joints": joints, "standard_parameters": standard}
    if std is not None:
        document["standard_parameter_std"] = stds
    (folder / "parameters.yaml").write_text(yaml.safe_dump(document))
    metrics = {"validation": {"physical": {"rmse": 0.5, "r2": 0.999987}}}
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
    left_out = [LeftOut("r9", "2026-11-01", tmp_path / "r9.csv", "not a CSV log | line 2")]
    rows = write_fleet_report(out, runs, 3.0, 0.1, left_out)
    with open(out / "fleet.csv") as handle:
        table = list(csv.DictReader(handle))
    assert {"fc_std", "fv_std", "Ia_std"} <= set(table[0])
    assert all(float(r["fc_std"]) == 0.01 for r in table if r["robot"] != "worn")
    # identified only in combination: neither a value nor a std (a minimum-norm share)
    assert all(r["Ia_std"] == "" and r["Ia"] == "" for r in table)
    assert all(r["fc_std"] == "" for r in table if r["robot"] == "worn")  # none reported
    assert [(r["robot"], r["joint"]) for r in rows if r["outlier"]] == [("worn", "j1")]
    with open(out / "fleet_payload.csv") as handle:
        payload = {r["robot"]: r for r in csv.DictReader(handle)}
    assert float(payload["r0"]["mx_2_std"]) == 1e-4 and "m_2" not in payload["r0"]
    assert payload["worn"]["mx_2"] == ""  # no covariance, no payload figures
    text = (out / "fleet.md").read_text()
    assert "fc_std" in text and "Payload-like parameters of the last link" in text
    assert (out / "fleet.png").stat().st_size > 10_000
    assert text.startswith("# Fleet report: 7 robots, 7 of 8 logs identified, 1 left out")
    assert "| 0.5 | 0.99999 |" in text and "| 0.5 | 1 |" not in text  # R², not "1"
    assert "identified only in combination with others" in text
    logs = text[text.index("## Logs (8 given, 1 left out)") :]
    assert (
        f"| r9 | 2026-11-01 | left out: {tmp_path / 'r9.csv'} | not a CSV log \\| line 2 |" in logs
    )
    assert logs.count("| identified |") == 7


def test_plot_error_bars_are_visible(tmp_path: Path):
    """A shoulder at 7 Nm and a wrist at 1 Nm, each robot's std 0.4 % of its fc (the least
    bench_fleet measured), a worn shoulder at 2 x: every healthy robot's ±2 std bar is several
    pixels tall (on one shared axis they were about one)."""
    rng = np.random.default_rng(1)
    runs = []
    for i in range(10):
        fc = (np.array([7.0, 1.0]) * rng.uniform(0.9, 1.1, 2)).tolist()
        runs.append(RobotRun.read(f"r{i}", "d", _run(tmp_path / f"r{i}", fc, 0.004)))
        runs[-1].stds["fc"] = 0.004 * np.array(fc)
    runs.append(RobotRun.read("worn", "d", _run(tmp_path / "worn", [14.0, 1.0], 0.05)))
    heights = plot_fleet(fleet_flags(runs, 3.0, 0.1), 3.0, tmp_path / "fleet.png")
    assert len(heights) == 21 and min(heights) > 4.0, heights  # the worn one is off the scale
