"""tuning=cv through the command line, as a user runs it on recorded CSV logs: the table and
the chosen values in the run directory, mode=predict with the chosen options, tuning=none, and
an Optuna sweep that minimises the selection objective."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.config.preflight import check_command_line
from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.reports.tuning_report import COLUMNS
from ident_framework.testing.known_truth import sines

FAST = ["tuning.cutoffs_hz=[10.0,20.0]", "plots=false"]


def _log(path: Path, seed: int, duration: float) -> Path:
    """A 250 Hz recorded log of a UR10e with smooth-sign Coulomb friction and torque noise."""
    robot = load_robot("ur10e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    t, q, dq, ddq = sines(duration, 250.0, seed=seed)
    tau = builder.rigid_body(q, dq, ddq) @ robot.inertial_parameters()
    tau += 2.0 * dq + 3.0 * np.tanh(dq / 0.02)
    tau += 0.05 * np.random.default_rng(seed).normal(size=tau.shape)
    write_csv_log(Dataset(t, q, dq, tau, robot.joint_names), path)
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("logs")
    return _log(folder / "ident.csv", 3, 16.0), _log(folder / "validation.csv", 8, 8.0)


def _data_args(logs) -> list[str]:
    return ["robot=ur10e", "source=csv", f"source.path={logs[0]}", "validation=csv",
            f"validation.path={logs[1]}"]  # fmt: skip


def test_tuned_run_writes_its_table_and_choice_and_predict_reuses_it(cli, logs, tmp_path):
    run = tmp_path / "run"
    result = cli(*_data_args(logs), *FAST, f"hydra.run.dir={run}")
    assert result.returncode == 0, result.stderr
    with open(run / "tuning.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(COLUMNS) and rows[0]["stage"] == "start"
    chosen_rows = [r for r in rows if r["chosen"] == "True"]
    assert len(chosen_rows) == 1
    metrics = json.loads((run / "metrics.json").read_text())
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    tuning = metrics["tuning"]
    assert parameters["tuning"]["chosen"] == tuning["chosen"]
    assert float(chosen_rows[0]["cv_rmse"]) == pytest.approx(tuning["cv_rmse"], rel=1e-5)
    assert tuning["cv_rmse"] == pytest.approx(min(float(r["cv_rmse"]) for r in rows), rel=1e-5)
    assert tuning["cv_rmse"] <= tuning["configured_cv_rmse"]
    assert "tuning" in metrics["timing_s"]
    chosen = tuning["chosen"]
    assert chosen["preprocessing.lowpass_hz"] in (10.0, 20.0)
    # the log's friction is a smooth sign: a tanh or the (smooth) Stribeck shape
    assert chosen["friction.tanh_width"] is not None or chosen["friction.stribeck_velocity"]
    summary = (run / "summary.txt").read_text()
    assert "tuning=cv" in summary and "chosen: preprocessing.lowpass_hz=" in summary
    # mode=predict rebuilds the model with the chosen options: the same validation figures
    predicted = tmp_path / "predict"
    result = cli("mode=predict", f"run={run}", "source=csv", f"source.path={logs[1]}",
                 "plots=false", f"hydra.run.dir={predicted}")  # fmt: skip
    assert result.returncode == 0, result.stderr
    again = json.loads((predicted / "metrics_validation.json").read_text())["physical"]
    assert again["rmse"] == pytest.approx(metrics["validation"]["physical"]["rmse"], rel=1e-9)


def test_tuning_none_uses_the_config_as_given(cli, logs, tmp_path):
    run = tmp_path / "run"
    result = cli(*_data_args(logs), "tuning=none", "plots=false", f"hydra.run.dir={run}")
    assert result.returncode == 0, result.stderr
    assert not (run / "tuning.csv").exists()
    assert "tuning" not in json.loads((run / "metrics.json").read_text())
    assert "tuning" not in yaml.safe_load((run / "parameters.yaml").read_text())


def test_preflight_checks_both_ends_of_an_optuna_interval(logs):
    configs = check_command_line(
        ["-m", *_data_args(logs), "preprocessing.savgol_window_s=interval(0.02,0.08)"]
    )
    assert [c.preprocessing.savgol_window_s for c in configs] == [0.02, 0.08]


def _installed(module: str) -> bool:
    """Whether `module` can be imported (False also when its parent package is missing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(
    not _installed("hydra_plugins.hydra_optuna_sweeper"),
    reason="hydra-optuna-sweeper is not installed (pip install hydra-optuna-sweeper)",
)
def test_optuna_sweep_minimises_the_selection_objective(cli, logs, tmp_path):
    sweep = tmp_path / "sweep"
    result = cli("-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=2",
                 "hydra.sweeper.direction=minimize",
                 "preprocessing.savgol_window_s=interval(0.02,0.06)", *_data_args(logs), *FAST,
                 f"hydra.sweep.dir={sweep}")  # fmt: skip
    assert result.returncode == 0, result.stderr
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())["best_value"]
    objectives = [
        json.loads((sweep / str(i) / "metrics.json").read_text())["tuning"]["cv_rmse"]
        for i in range(2)
    ]
    assert best == pytest.approx(min(objectives), rel=1e-12)


def test_tuning_on_forked_workers_chooses_and_predicts_as_one_process(
    cli, logs, tmp_path, monkeypatch
):
    """The candidates' column spaces are built on forked workers (parallel_work.py); with one
    process the table, the choice and the predictions are the same to the last digit."""
    forked, alone = tmp_path / "forked", tmp_path / "alone"
    assert cli(*_data_args(logs), *FAST, f"hydra.run.dir={forked}").returncode == 0
    monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", "1")
    assert cli(*_data_args(logs), *FAST, f"hydra.run.dir={alone}").returncode == 0
    for name in ("tuning.csv", "predictions_validation.csv"):
        assert (forked / name).read_bytes() == (alone / name).read_bytes(), name
    timing = ("seconds", "_s:")
    lines = [
        [line for line in (run / "parameters.yaml").read_text().splitlines()
         if not any(word in line for word in timing)]
        for run in (forked, alone)
    ]  # fmt: skip
    assert lines[0] == lines[1]


def test_one_job_composed_once_writes_the_run_directory_hydra_main_writes(cli, logs, tmp_path):
    """A plain command line is composed once and run through Hydra's run_job
    (config/preflight.py); `hydra.mode=RUN` sends it through @hydra.main: the same files."""
    once, main = tmp_path / "once", tmp_path / "main"
    args = [*_data_args(logs), "tuning=none", "plots=false"]
    assert cli(*args, f"hydra.run.dir={once}").returncode == 0
    assert cli(*args, f"hydra.run.dir={main}", "hydra.mode=RUN").returncode == 0

    def files(run: Path) -> list[str]:
        return sorted(str(p.relative_to(run)) for p in run.rglob("*"))

    assert files(once) == files(main)
    for name in ("config.yaml", "overrides.yaml"):
        assert (once / ".hydra" / name).read_text() == (main / ".hydra" / name).read_text()
    hydra = [yaml.safe_load((run / ".hydra" / "hydra.yaml").read_text()) for run in (once, main)]
    for composed, run in zip(hydra, (once, main), strict=True):
        assert composed["hydra"]["run"]["dir"] == str(run)
        composed["hydra"]["run"]["dir"] = composed["hydra"]["runtime"]["output_dir"] = None
        composed["hydra"]["overrides"]["hydra"].remove(f"hydra.run.dir={run}")
    assert hydra[0] == hydra[1]
    assert (once / "config.yaml").read_text() == (main / "config.yaml").read_text()
