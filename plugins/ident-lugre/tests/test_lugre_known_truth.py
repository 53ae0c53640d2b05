"""Known truth: a simulated UR12e whose joint friction is LuGre (this plugin's model applied
in MuJoCo each step at 1 kHz, source.true_friction) is identified by a sweep of three friction
models at 0.05 Nm torque noise, through the command line:

    python -m ident_framework -m friction=coulomb_viscous,stribeck,lugre  source.true_friction...

friction=lugre recovers the static parameters (fc, fs, fv, v_s) within 10 % and beats
Coulomb-viscous on the validation motion's slow segments on every joint; the sweep's comparison
table ranks the three; `mode=predict` reapplies the saved run (its fitted nonlinear values).
"""

from __future__ import annotations

import csv
import json
from functools import partial
from pathlib import Path

import pytest
import yaml
from ident_framework.testing import cli

pytestmark = pytest.mark.slow

V_S = [0.04, 0.05, 0.06, 0.05, 0.06, 0.08]  # rad/s per joint
TRUTH = {"fs_ratio": 1.5, "z_ss": 0.001, "sigma1": 1.0}  # fs = 1.5 fc, sigma0 = fc / 1 mrad
MODELS = ("coulomb_viscous", "stribeck", "lugre")
TRUE_FRICTION = [
    "source.true_friction.plugin=lugre",
    f"+source.true_friction.parameters.v_s=[{','.join(map(str, V_S))}]",
    *(f"+source.true_friction.parameters.{k}={v}" for k, v in TRUTH.items()),
]


run_cli = partial(cli.run_cli, timeout=900)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, Path]:
    """The sweep's directory and each model's run directory."""
    folder = tmp_path_factory.mktemp("lugre")
    result = run_cli(
        "-m", f"friction={','.join(MODELS)}", f"hydra.sweep.dir={folder / 'sweep'}",
        *TRUE_FRICTION, "trajectory.n_candidates=100", "trajectory.n_refine=0", cwd=folder,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    runs = {"sweep": folder / "sweep"}
    for run in (folder / "sweep").iterdir():
        if (run / "parameters.yaml").exists():
            plugin = yaml.safe_load((run / "parameters.yaml").read_text())["plugins"]["friction"]
            runs[plugin["plugin"]] = run
    return runs


def metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_lugre_static_parameters_within_ten_percent(sweep):
    friction = metrics(sweep["lugre"])["friction"]
    assert friction["true"]["v_s"] == pytest.approx(V_S)
    for name in ("fc", "fs", "fv", "v_s"):
        worst = max(abs(e) for e in friction["error_percent"][name])
        assert worst < 10.0, (name, friction["error_percent"][name])


def test_lugre_beats_coulomb_viscous_in_the_slow_segments_of_every_joint(sweep):
    lugre = metrics(sweep["lugre"])["validation"]["physical"]["slow"]
    coulomb = metrics(sweep["coulomb_viscous"])["validation"]["physical"]["slow"]
    assert min(lugre["samples_per_joint"]) > 500  # the point-to-point motion's slow moves
    for j, (ours, theirs) in enumerate(
        zip(lugre["rmse_per_joint"], coulomb["rmse_per_joint"], strict=True)
    ):
        assert ours < 0.5 * theirs, (j, ours, theirs)


def test_comparison_table_ranks_the_models(sweep):
    with open(sweep["sweep"] / "comparison.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["friction"] for row in rows) == sorted(MODELS)
    ranked = sorted(rows, key=lambda row: float(row["validation_rmse"]))
    assert ranked[0]["friction"] == "lugre"
    for row in rows:
        assert float(row["validation_r2"]) <= 1.0 and float(row["validation_rmse_slow"]) > 0
    table = (sweep["sweep"] / "comparison.md").read_text()
    assert "| rank |" in table and "validation_rmse_slow" in table
    first = next(line for line in table.splitlines() if line.startswith("| 1 |"))
    assert "| lugre |" in first


def test_predict_mode_reapplies_the_fitted_nonlinear_parameters(sweep, tmp_path: Path):
    """A new recording of the same robot (CSV), predicted with the saved LuGre run: as good as
    the run's own validation (the fitted v_s differ from the configured 0.1 rad/s, so a model
    rebuilt without them would not be); without them in parameters.yaml: a clear refusal."""
    from ident_framework.data.csv_log import write_csv_log
    from ident_framework.model.robot import load_robot
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
    from ident_framework.trajectories.point_to_point import (
        PointToPointGenerator,
        PointToPointParams,
    )

    robot = load_robot("ur12e")
    source = MujocoSource(
        MujocoSourceParams(true_friction={"plugin": "lugre", "parameters": {**TRUTH, "v_s": V_S}})
    )
    motion = PointToPointGenerator(PointToPointParams(duration_s=10.0)).generate(robot, None, 9)
    write_csv_log(source.acquire(robot, motion, "validation"), tmp_path / "log.csv")
    run = sweep["lugre"]
    result = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={tmp_path / 'log.csv'}",
        f"hydra.run.dir={tmp_path / 'predict'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    predicted = json.loads((tmp_path / "predict" / "metrics_log.json").read_text())
    assert predicted["physical"]["rmse"] < 0.1

    stripped = tmp_path / "stripped"
    stripped.mkdir()
    for name in ("config.yaml", "parameters.yaml"):
        (stripped / name).write_text((run / name).read_text())
    parameters = yaml.safe_load((stripped / "parameters.yaml").read_text())
    del parameters["friction"]
    (stripped / "parameters.yaml").write_text(yaml.safe_dump(parameters, sort_keys=False))
    refused = run_cli(
        "mode=predict", f"run={stripped}", "source=csv", f"source.path={tmp_path / 'log.csv'}",
        f"hydra.run.dir={tmp_path / 'predict2'}", cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2 and "friction.nonlinear" in refused.stderr, refused.stderr
