"""The friction's temperature term against a known truth: a simulated UR12e whose damping and
frictionloss fall by k per kelvin as its joints warm from 25 to 45 °C during the excitation,
validated on a point-to-point motion of the warm robot (45 °C)."""

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
from ident_framework.identify.result import StepTimer
from ident_framework.identify.temperature import with_temperature
from ident_framework.model.regressor import regressor_builder
from ident_framework.modes.pipeline import identify, run_pipeline
from ident_framework.testing.cli import error_message, run_cli
from ident_framework.testing.known_truth import (
    TRUE_COULOMB,
    TRUE_VISCOUS,
    known_truth_setup,
    sines,
)

K = 0.01  # 1/K: friction falls 1 % per kelvin above 25 °C
COULOMB = np.array([7.0, 7.0, 4.0, 1.5, 1.5, 1.2])  # Nm at 25 °C (the source's defaults)


def _config(*overrides: str):
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "source.temperature_c=[25,45]",
                "validation.temperature_c=[45,45]",
                "tuning.sources=[mujoco]",
                "plots=false",
                *overrides,
            ],
        )
    return validate_config(cfg, get_registry())


def test_temperature_columns_scale_the_friction_columns():
    model = CoulombViscousFriction(
        CoulombViscousParams(dead_band=0.0, temperature="on", reference_temperature=[30.0, 40.0])
    )
    assert model.parameter_names == ("fv", "fc", "fv_T", "fc_T")
    dq = np.array([[0.5, -0.2], [-1.0, 0.3]])
    basis = model.basis(dq)
    assert np.all(basis[..., 2:] == 0)  # at T_ref
    full = model.temperature_basis(basis, np.array([[35.0, 35.0], [30.0, 45.0]]))
    np.testing.assert_allclose(full[..., 2], dq * np.array([[5.0, -5.0], [0.0, 5.0]]))
    np.testing.assert_allclose(full[..., 3], np.sign(dq) * np.array([[5.0, -5.0], [0.0, 5.0]]))
    off = CoulombViscousFriction(CoulombViscousParams(temperature="auto"))
    assert off.parameter_names == ("fv", "fc")  # auto is decided by the pipeline


@pytest.mark.slow
def test_warming_robot_identified_with_the_temperature_term_predicts_the_warm_robot():
    config = _config(f"source.friction_temperature_coefficient={K}")
    result = run_pipeline(config, progress=False)
    chosen = result.config.selection.chosen
    assert chosen["friction.temperature"] == "on"  # the tuning picked it
    builder = result.model.builder
    assert builder.uses_temperature
    reference = np.asarray(builder.friction.reference_temperature)
    np.testing.assert_allclose(reference, 35.0, atol=0.01)  # the excitation's mean
    theta = dict(zip(builder.parameter_names, result.model.theta, strict=True))
    fc_t = np.array([theta[f"fc_T_{j + 1}"] for j in range(6)])
    fc = np.array([theta[f"fc_{j + 1}"] for j in range(6)])
    # the strong joints: the temperature coefficient within 25 % of the truth -k fc(25 °C)
    np.testing.assert_allclose(fc_t[:3], -K * COULOMB[:3], rtol=0.25)
    np.testing.assert_allclose(fc[:3], COULOMB[:3] * (1 - K * 10.0), rtol=0.05)  # fc at T_ref
    with_term = result.metrics["validation"]["physical"]["rmse"]

    without_term = _validation_rmse_without_the_term(result)
    print(
        f"validation RMSE with the temperature term {with_term:.4f} Nm, without {without_term:.4f}"
    )
    assert with_term < 0.85 * without_term


def _validation_rmse_without_the_term(result) -> float:
    """Validation RMSE (Nm) of the same data and chosen options, friction.temperature=off."""
    plain = with_temperature(result.config, "off", None)
    without = identify(
        plain, result.model.robot, regressor_builder(plain, result.model.robot),
        result.data.train, result.data.validation, None, None, StepTimer(), progress=False,
    )  # fmt: skip
    return without.metrics["validation"]["physical"]["rmse"]


@pytest.mark.slow
def test_temperatures_without_a_temperature_dependence_change_nothing():
    """Joint temperatures recorded, friction independent of them (k = 0)."""
    result = run_pipeline(_config(), progress=False)
    chosen = result.config.selection.chosen
    if chosen["friction.temperature"] == "on":  # then it must not matter
        with_term = result.metrics["validation"]["physical"]["rmse"]
        without_term = _validation_rmse_without_the_term(result)
        assert abs(with_term - without_term) < 0.02 * without_term
    rows = [r for r in result.config.selection.table if r["stage"] == "temperature term"]
    assert rows, "the term was a candidate"


def _warm_log(path, seed: int, temperatures: tuple[float, float], with_columns: bool = True):
    """A 200 Hz UR12e log in the CSV contract whose friction falls by K per kelvin above
    25 °C (known-truth regressor, torque noise 0.05 Nm), temperatures rising linearly."""
    builder, theta = known_truth_setup()
    t, q, dq, ddq = sines(30.0, 200.0, seed)
    tau = builder.compute(q, dq, ddq) @ theta
    temperature = np.linspace(*temperatures, len(t))[:, None].repeat(6, axis=1)
    friction = TRUE_VISCOUS * dq + TRUE_COULOMB * np.where(np.abs(dq) > 0.01, np.sign(dq), 0.0)
    tau = tau - K * (temperature - 25.0) * friction
    tau += np.random.default_rng(seed).normal(0.0, 0.05, tau.shape)
    ds = Dataset(t, q, dq, tau, builder.robot.joint_names,
                 temperature=temperature if with_columns else None)  # fmt: skip
    write_csv_log(ds, path)
    return path


@pytest.mark.slow
def test_recorded_log_identified_with_temperatures_and_predicted(tmp_path):
    """source=csv (tuning=cv by default) on a warming log; validation on a warm log; mode=predict
    reuses the term and its T_ref; a log without temperatures is refused by predict."""
    ident = _warm_log(tmp_path / "ident.csv", 1, (25.0, 45.0))
    warm = _warm_log(tmp_path / "warm.csv", 2, (45.0, 46.0))
    run = tmp_path / "run"
    result = run_cli(
        "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={warm}",
        "plots=false", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    assert parameters["tuning"]["chosen"]["friction.temperature"] == "on"
    assert parameters["temperature"]["reference_c"] == pytest.approx([35.0] * 6, abs=0.01)
    standard = parameters["standard_parameters"]
    fc_t = np.array([standard[f"fc_T_{j + 1}"] for j in range(6)])
    np.testing.assert_allclose(fc_t, -K * TRUE_COULOMB, rtol=0.1, atol=0.003)
    metrics = json.loads((run / "metrics.json").read_text())
    assert "friction temperature term on" in (run / "summary.txt").read_text()

    predicted = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={warm}",
        f"hydra.run.dir={tmp_path / 'predict'}", cwd=tmp_path,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    again = json.loads((tmp_path / "predict" / "metrics_warm.json").read_text())
    assert again["physical"]["rmse"] == pytest.approx(
        metrics["validation"]["physical"]["rmse"], 1e-9
    )

    bare = _warm_log(tmp_path / "bare.csv", 2, (45.0, 46.0), with_columns=False)
    refused = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={bare}",
        f"hydra.run.dir={tmp_path / 'refused'}", cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-3000:]
    message = error_message(refused.stderr)
    assert "Traceback" not in refused.stderr and "\n" not in message
    assert "joint_temperatures_0" in message and "friction.temperature" in message


def test_online_and_distributed_refuse_the_term_on(tmp_path):
    from ident_framework.errors import UserError
    from ident_framework.model.regressor import RegressorBuilder
    from ident_framework.model.robot import load_robot
    from ident_framework.online.sample_regressor import check_streamable

    robot = load_robot("ur12e")
    params = CoulombViscousParams(temperature="on", reference_temperature=30.0)
    with pytest.raises(UserError, match="friction.temperature=off or auto"):
        check_streamable(RegressorBuilder(robot, CoulombViscousFriction(params)), "coulomb_viscous")
    check_streamable(RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams())), "x")

    log = _warm_log(tmp_path / "ident.csv", 1, (25.0, 45.0))
    result = run_cli(
        "mode=factor", "source=csv", f"source.path={log}", "friction.temperature=on",
        "distributed.parts=2", f"hydra.run.dir={tmp_path / 'factor'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    message = error_message(result.stderr)
    assert "Traceback" not in result.stderr and "\n" not in message
    assert "mode=factor does not support the friction's temperature term" in message


@pytest.mark.slow
def test_term_on_is_kept_by_the_tuning_and_a_log_without_temperatures_is_refused(tmp_path):
    log = _warm_log(tmp_path / "ident.csv", 1, (25.0, 45.0))
    run = tmp_path / "run"
    result = run_cli(
        "source=csv", f"source.path={log}", "validation=split", "friction.temperature=on",
        "friction.reference_temperature=30", "plots=false", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    assert "friction.temperature" not in parameters["tuning"]["chosen"]  # not a candidate
    assert parameters["temperature"]["reference_c"] == [30.0] * 6
    assert "fc_T_1" in parameters["standard_parameters"]

    bare = _warm_log(tmp_path / "bare.csv", 1, (25.0, 45.0), with_columns=False)
    refused = run_cli(
        "source=csv", f"source.path={bare}", "validation=split", "friction.temperature=on",
        f"hydra.run.dir={tmp_path / 'refused'}", cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-3000:]
    message = error_message(refused.stderr)
    assert "\n" not in message and "joint_temperatures_0..joint_temperatures_5" in message
    assert not (tmp_path / "refused" / "parameters.yaml").exists()
