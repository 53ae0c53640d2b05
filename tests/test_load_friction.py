"""The friction's load-dependent term fL |tau_rb| s(dq) against a known truth: a UR12e
regressor with made-up inertial parameters (±20 % of the nominal ones, so the nominal model's
torque is not the truth's) whose Coulomb friction grows with the rigid-body torque."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify import load_friction
from ident_framework.identify.linear_problem import (
    accumulate_joint_factors,
    predict_torque,
    project_to_base,
    standard_model,
)
from ident_framework.identify.load_friction import resolve_load
from ident_framework.identify.result import StepTimer
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.modes.pipeline import identify
from ident_framework.testing.cli import error_message, run_cli
from ident_framework.testing.known_truth import TRUE_ARMATURE, known_truth_setup, sines

TRUE_FL = np.array([0.02, 0.03, 0.04, 0.02, 0.02, 0.02])  # Nm/Nm
NOISE = 0.05  # Nm


def _truth(fl: np.ndarray) -> tuple[RegressorBuilder, np.ndarray]:
    """(regressor with the load term, its tau_load from the truth; true standard parameters)."""
    plain, theta = known_truth_setup()
    builder = RegressorBuilder(
        plain.robot,
        CoulombViscousFriction(CoulombViscousParams(load_dependent="on")),
        armature=True,
    )
    n = builder.robot.n_joints
    friction = theta[60 : 60 + 2 * n].reshape(n, 2)
    true = builder.standard_parameters(theta[:60], np.column_stack([friction, fl]), TRUE_ARMATURE)
    return builder.with_load(true), true


def _data(builder: RegressorBuilder, theta: np.ndarray, seed: int, exact: bool = True):
    t, q, dq, ddq = sines(30.0, 200.0, seed)
    tau = builder.compute(q, dq, ddq) @ theta
    tau = tau + np.random.default_rng(seed).normal(0.0, NOISE, tau.shape)
    names = builder.robot.joint_names
    return Dataset(t, q, dq, tau, names, ddq=ddq) if exact else Dataset(t, q, dq, tau, names)


def _config(*overrides: str):
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=["plots=false", "robot=ur12e", *overrides])
    return validate_config(cfg, get_registry())


def _identify(fl: np.ndarray, mode: str = "on"):
    truth_builder, true = _truth(fl)
    config = _config(f"friction.load_dependent={mode}", "tuning=none")
    robot = truth_builder.robot
    train, validation = _data(truth_builder, true, 1), _data(truth_builder, true, 2)
    result = identify(
        config, robot, regressor_builder(config, robot), train, validation, None, None,
        StepTimer(), progress=False,
    )  # fmt: skip
    return result, truth_builder, true


def _fl(result) -> np.ndarray:
    builder = result.model.builder
    return load_friction.fl_values(builder, result.model.theta)


def test_the_load_column_is_the_coulomb_shape_times_the_rigid_body_torque():
    import pinocchio as pin

    model = CoulombViscousFriction(CoulombViscousParams(dead_band=0.05, load_dependent="on"))
    assert model.parameter_names == ("fv", "fc", "fL") and model.load_column == 2
    builder, _ = _truth(TRUE_FL)
    nominal = RegressorBuilder(builder.robot, model, armature=True)
    _, q, dq, ddq = sines(1.0, 50.0, 4)
    rows = nominal.compute(q, dq, ddq)
    columns = np.stack(
        [rows[:, j, nominal.parameter_names.index(f"fL_{j + 1}")] for j in range(6)], 1
    )
    robot = nominal.robot.pin_model
    data = robot.createData()
    rnea = np.array([pin.rnea(robot, data, *state) for state in zip(q, dq, ddq, strict=True)])
    sign = np.where(np.abs(dq) > 0.05, np.sign(dq), 0.0)
    np.testing.assert_allclose(columns, np.abs(rnea) * sign, atol=1e-9)  # nominal: its RNEA
    assert CoulombViscousFriction(CoulombViscousParams()).parameter_names == ("fv", "fc")
    # fL is a friction kind: estimator=consistent keeps it >= 0
    _, q, dq, ddq = sines(2.0, 50.0, 5)
    chunks = [(q, dq, ddq, np.zeros_like(q))]
    factors, _ = accumulate_joint_factors(nominal, chunks)
    base, _, _ = project_to_base(factors, nominal.parameter_names, 1e-8)
    kinds = standard_model(nominal, factors, base).kinds
    assert {kinds[nominal.parameter_names.index(f"fL_{j + 1}")] for j in range(6)} == {"friction"}


@pytest.mark.slow
def test_known_fl_is_recovered_and_the_iteration_settles():
    result, truth_builder, true = _identify(TRUE_FL)
    fl = _fl(result)
    # the joints that carry load: within 5 % of the truth (0.05 Nm noise; measured < 2 %);
    # wrist 3 (torques under 1 Nm) carries too little load for fL to show in the noise
    np.testing.assert_allclose(fl[:5], TRUE_FL[:5], rtol=0.05)
    fit = result.metrics["load_friction"]
    assert fit["converged"] and 2 <= fit["fits"] <= load_friction.MAX_FITS
    assert len(fit["fL_per_fit"]) == fit["fits"] == len(fit["rmse_per_fit"])
    # fit 1 (nominal tau_load) is off; the refits settle on the truth
    first = np.array(fit["fL_per_fit"][0])
    assert np.max(np.abs(first[:3] - TRUE_FL[:3])) > np.max(np.abs(fl[:3] - TRUE_FL[:3]))
    assert fit["rmse_per_fit"][-1] < fit["rmse_per_fit"][0]
    # the model's tau_load is its own parameters': the builder says so
    np.testing.assert_allclose(result.model.builder.load_inertial, result.model.theta[:60])
    # validation near the noise level, and the term matters there
    rmse = result.metrics["validation"]["physical"]["rmse"]
    assert rmse < 1.3 * NOISE
    twin = fit["twin"]
    assert twin["validation_rmse_without_term"] > 3 * twin["validation_rmse_with_term"]

    # the validation column needs no measured torque: the same prediction from zero torque
    validation = result.data.validation
    blind = Dataset(
        validation.timestamp, validation.q, validation.dq, np.zeros_like(validation.tau),
        validation.joint_names, ddq=validation.ddq,
    )  # fmt: skip
    theta, builder = result.model.theta, result.model.builder
    without_torque = predict_torque(builder, blind, theta, 1000)
    np.testing.assert_array_equal(without_torque, predict_torque(builder, validation, theta, 1000))


@pytest.mark.slow
def test_without_load_dependence_fl_is_about_zero():
    result, _, _ = _identify(np.zeros(6))
    fl = _fl(result)
    assert np.max(np.abs(fl[:5])) < 1e-3, fl  # measured: below 4e-4


def test_the_iteration_is_bounded(monkeypatch):
    """A fit that never settles stops after MAX_FITS fits and says so."""
    builder, true = _truth(TRUE_FL)
    calls = []

    class Problem:
        n_samples = 10

        class standard:  # noqa: N801
            r_factors = [np.zeros((true.size + 1, true.size + 1))]

    def fit(b):
        calls.append(b)
        theta = true.copy()
        theta[60 + 2] = 0.1 * len(calls)  # fL_1 keeps moving
        return Problem(), None, 0.0, None, theta

    final, fitted, record = load_friction.fit_with_load(builder, fit)
    assert len(calls) == load_friction.MAX_FITS == record.fits and not record.converged
    np.testing.assert_allclose(final.load_inertial, fitted[-1][:60])
    # each refit takes tau_load from the previous fit's parameters
    assert calls[1].load_inertial is not builder.load_inertial


def test_untuned_auto_is_off():
    assert _config().plugins["friction"].params.load_dependent == "off"  # the default
    config = _config("friction.load_dependent=auto")
    assert config.plugins["friction"].params.load_dependent == "auto"
    assert resolve_load(config, tuned=False).plugins["friction"].params.load_dependent == "off"
    assert resolve_load(config, tuned=True).plugins["friction"].params.load_dependent == "auto"
    on = _config("friction.load_dependent=on")
    assert resolve_load(on, tuned=False) is on


def test_a_coupled_motor_has_no_load_column():
    from ident_framework.model.coupling import CoupledJoints, resolve

    builder, _ = _truth(TRUE_FL)
    coupled = RegressorBuilder(
        builder.robot, builder.friction, armature=True,
        couplings=resolve([CoupledJoints(joints=[5, 6], ratio=1.0)], 6),
    )  # fmt: skip
    _, q, dq, ddq = sines(1.0, 50.0, 4)
    rows = coupled.compute(q, dq, ddq)
    names = coupled.parameter_names
    assert np.all(rows[:, :, names.index("fL_m6")] == 0.0)
    assert np.any(rows[:, :, names.index("fc_m6")] != 0.0)
    assert np.any(rows[:, 5, names.index("fL_6")] != 0.0)


def _load_log(path, seed: int, fl: np.ndarray) -> str:
    """A 200 Hz UR12e log in the CSV contract with the known truth's load friction."""
    builder, true = _truth(fl)
    ds = _data(builder, true, seed, exact=False)
    write_csv_log(ds, path)
    return str(path)


@pytest.mark.slow
def test_tuning_turns_the_term_on_and_predict_rebuilds_the_model(tmp_path):
    """source=csv (tuning=cv by default) on a log with load friction: the stage chooses the
    term; parameters.yaml names fL with its std; mode=predict gives the same validation."""
    ident = _load_log(tmp_path / "ident.csv", 1, TRUE_FL)
    other = _load_log(tmp_path / "other.csv", 2, TRUE_FL)
    run = tmp_path / "run"
    result = run_cli(
        "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={other}",
        "friction.load_dependent=auto", "estimator=consistent", "plots=false",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    assert parameters["tuning"]["chosen"]["friction.load_dependent"] == "on"
    rows = _tuning_rows(run)
    tried = {row["load_dependent"] for row in rows if row["stage"] == "load-dependent friction"}
    assert tried and [row["load_dependent"] for row in rows if row["chosen"] == "True"] == ["on"]
    assert parameters["load_friction"]["chosen"] == {"friction.load_dependent": "on"}
    joint = parameters["joints"][1]
    assert joint["fL"]["value"] == pytest.approx(TRUE_FL[1], rel=0.15)
    assert joint["fL"]["value"] >= 0.0  # the consistent estimator's friction >= 0
    metrics = json.loads((run / "metrics.json").read_text())
    summary = (run / "summary.txt").read_text()
    assert "friction load-dependent term on" in summary and "fL" in summary
    if "twin" in metrics:
        assert metrics["twin"]["load_dependent_friction"]["omitted"] is True
        assert "twin omits the load-dependent friction" in summary

    predicted = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={other}",
        f"hydra.run.dir={tmp_path / 'predict'}", cwd=tmp_path,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    again = json.loads((tmp_path / "predict" / "metrics_other.json").read_text())
    assert again["physical"]["rmse"] == pytest.approx(
        metrics["validation"]["physical"]["rmse"], rel=1e-9
    )


@pytest.mark.slow
def test_tuning_tries_the_term_on_a_log_without_load_dependence(tmp_path):
    """fL = 0 in the log: the stage tries the term; if it keeps it, fL is ~0 and it does not
    matter on the validation motion."""
    ident = _load_log(tmp_path / "ident.csv", 1, np.zeros(6))
    other = _load_log(tmp_path / "other.csv", 2, np.zeros(6))
    run = tmp_path / "run"
    result = run_cli(
        "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={other}",
        "friction.load_dependent=auto", "plots=false", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = _tuning_rows(run)
    assert {r["load_dependent"] for r in rows if r["stage"] == "load-dependent friction"}
    metrics = json.loads((run / "metrics.json").read_text())
    if "load_friction" in metrics:
        fit = metrics["load_friction"]
        assert max(abs(v) for v in fit["fL"][:5]) < 2e-3
        twin = fit["twin"]
        assert abs(twin["cost_rmse"]) < 0.02 * twin["validation_rmse_with_term"]


def _tuning_rows(run) -> list[dict]:
    import csv

    with open(run / "tuning.csv") as handle:
        return list(csv.DictReader(handle))


def test_online_refuses_the_term_on():
    from ident_framework.errors import UserError
    from ident_framework.online.sample_regressor import check_streamable

    builder, _ = _truth(TRUE_FL)
    with pytest.raises(UserError, match="friction.load_dependent=off or auto"):
        check_streamable(builder, "coulomb_viscous")


def test_distributed_refuses_the_term_on(tmp_path):
    log = _load_log(tmp_path / "ident.csv", 1, TRUE_FL)
    result = run_cli(
        "mode=factor", "source=csv", f"source.path={log}", "friction.load_dependent=on",
        "distributed.parts=2", f"hydra.run.dir={tmp_path / 'factor'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    message = error_message(result.stderr)
    assert "Traceback" not in result.stderr and "\n" not in message
    assert "load-dependent term" in message
