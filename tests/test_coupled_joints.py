"""Coupled transmissions (`robot.coupled_joints`, model/coupling.py): a motor that drives two
joints. Known truth: data made with a coupled wrist motor give back its rotor inertia and
friction, and predict a different motion far better than the per-joint model; every estimator
takes the columns; the config is checked; robots without it are unchanged; the Stäubli TX40
preset on the real TX40 data (skipped without ../shared)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.estimators.consistent import ConsistentEstimator, ConsistentParams
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.estimators.rls import RlsEstimator
from ident_framework.estimators.wls import WeightedLeastSquares, WeightedLeastSquaresParams
from ident_framework.identify.linear_problem import build_problem, predict_torque
from ident_framework.identify.recursive import RecursiveLeastSquaresParams
from ident_framework.model.coupling import Coupling
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import load_robot
from ident_framework.testing.cli import REPO, SHARED, run_cli
from ident_framework.testing.known_truth import exact_dataset, known_truth_setup
from ident_framework.twin.export import identified_dynamics

# the wrist motor of joint 6 also turns with joint 5 at half its speed (a non-unit ratio, so that
# a wrong side or a missing factor shows); parameters of the order of the TX40's (FIGAROH's
# TX40_config.yaml: Iam6 0.00964 kg·m², fvm6 0.616 Nm·s/rad, fsm6 1.95 Nm)
WRIST = Coupling(other=4, driven=5, ratio=0.5)
TRUE_MOTOR = {"fv_m6": 0.6, "fc_m6": 1.9, "Ia_m6": 0.0096}
# relative tolerance with 0.02 Nm noise on 20 s at 200 Hz (the small rotor inertia: ~6 % measured)
TOLERANCE = {"fv_m6": 0.03, "fc_m6": 0.03, "Ia_m6": 0.15}
NOISE_NM = 0.02


def _coupled(builder: RegressorBuilder, couplings=(WRIST,)) -> RegressorBuilder:
    return RegressorBuilder(builder.robot, builder.friction, armature=True, couplings=couplings)


def _noisy(data: Dataset, seed: int) -> Dataset:
    noise = np.random.default_rng(seed).normal(0.0, NOISE_NM, data.tau.shape)
    return Dataset(
        data.timestamp, data.q, data.dq, data.tau + noise, data.joint_names, ddq=data.ddq
    )


@pytest.fixture(scope="module")
def coupled_truth():
    plain, theta_plain = known_truth_setup()
    builder = _coupled(plain)
    motor = [TRUE_MOTOR[name] for name in builder.parameter_names[-3:]]
    n_plain = plain.n_parameters
    theta = builder.standard_parameters(
        theta_plain[: plain.n_inertial],
        theta_plain[plain.n_inertial : plain.n_inertial + plain.n_friction].reshape(6, 2),
        theta_plain[n_plain - 6 :],
        coupled=motor,
    )
    train = _noisy(exact_dataset(builder, theta, seed=1, duration=20.0), seed=11)
    test = exact_dataset(builder, theta, seed=2, duration=10.0)  # a different motion, clean
    return plain, builder, theta, train, test


def test_coupled_columns_act_on_both_joints_with_the_ratio():
    plain, _ = known_truth_setup()
    builder = _coupled(plain)
    assert builder.parameter_names[-3:] == ["fv_m6", "fc_m6", "Ia_m6"]
    rng = np.random.default_rng(0)
    q, dq, ddq = (rng.normal(size=(5, 6)) for _ in range(3))
    y = builder.compute(q, dq, ddq)
    omega, domega = dq[:, 5] + 0.5 * dq[:, 4], ddq[:, 5] + 0.5 * ddq[:, 4]
    motor = np.column_stack([omega, np.sign(omega), domega])
    np.testing.assert_array_equal(y[:, 5, -3:], motor)
    np.testing.assert_allclose(y[:, 4, -3:], 0.5 * motor, rtol=1e-15)
    assert not y[:, :4, -3:].any()
    np.testing.assert_array_equal(y[:, :, :-3], plain.compute(q, dq, ddq))  # the rest unchanged


def test_known_coupled_motor_is_identified_and_predicts_better(coupled_truth):
    plain, builder, theta, train, test = coupled_truth
    problem, base, _ = build_problem(builder, train, 2000, 1e-8, False)
    estimate = base.to_standard(LeastSquares(LeastSquaresParams()).fit(problem).coef_)
    names = builder.parameter_names
    alone = base.identifiable_alone()
    for name, truth in TRUE_MOTOR.items():
        i = names.index(name)
        assert alone[i], f"{name} should be identifiable on its own"
        assert estimate[i] == pytest.approx(truth, rel=TOLERANCE[name]), name
    without, base_without, _ = build_problem(plain, train, 2000, 1e-8, False)
    estimate_without = base_without.to_standard(
        LeastSquares(LeastSquaresParams()).fit(without).coef_
    )
    error = predict_torque(builder, test, estimate, 2000) - test.tau
    error_without = predict_torque(plain, test, estimate_without, 2000) - test.tau
    rmse = np.sqrt(np.mean(error**2, axis=0))
    rmse_without = np.sqrt(np.mean(error_without**2, axis=0))
    assert np.all(rmse[4:] < 0.1 * rmse_without[4:]), (rmse, rmse_without)
    assert np.all(rmse < 3 * NOISE_NM), rmse  # the coupled model explains the rest down to noise


@pytest.mark.parametrize(
    "estimator",
    [
        WeightedLeastSquares(WeightedLeastSquaresParams()),
        RlsEstimator(RecursiveLeastSquaresParams()),
        ConsistentEstimator(ConsistentParams()),
    ],
    ids=["wls", "rls", "consistent"],
)
def test_every_estimator_takes_the_coupled_columns(coupled_truth, estimator):
    _, builder, theta, train, _ = coupled_truth
    problem, base, _ = build_problem(builder, train, 2000, 1e-8, False)
    fitted = estimator.fit(problem)
    standard = getattr(fitted, "standard_coef_", None)
    estimate = base.to_standard(fitted.coef_) if standard is None else standard
    for name, truth in TRUE_MOTOR.items():  # positive values: the consistent bounds are inactive
        value = estimate[builder.parameter_names.index(name)]
        assert value == pytest.approx(truth, rel=TOLERANCE[name] + 0.02), name


def test_twin_lumps_the_coupled_motor_on_the_diagonal(coupled_truth):
    _, builder, theta, _, _ = coupled_truth
    dynamics = identified_dynamics(builder.robot, builder.parameter_names, theta, builder.couplings)
    alone = identified_dynamics(builder.robot, builder.parameter_names, theta)
    ia, fv = TRUE_MOTOR["Ia_m6"], TRUE_MOTOR["fv_m6"]
    np.testing.assert_allclose(dynamics.armature - alone.armature, [0, 0, 0, 0, 0.25 * ia, ia])
    np.testing.assert_allclose(dynamics.damping - alone.damping, [0, 0, 0, 0, 0.25 * fv, fv])
    np.testing.assert_array_equal(dynamics.frictionloss, alone.frictionloss)


def _config(*overrides: str):
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return validate_config(cfg, get_registry())


def test_robots_without_coupling_are_unchanged():
    config = _config("robot=ur10e")
    assert config.robot.coupled_joints == []
    builder = regressor_builder(config, load_robot("ur10e"))
    reference = RegressorBuilder(builder.robot, builder.friction, armature=True)
    assert builder.couplings == () and builder.parameter_names == reference.parameter_names
    rng = np.random.default_rng(4)
    q, dq, ddq = (rng.normal(size=(7, 6)) for _ in range(3))
    np.testing.assert_array_equal(builder.compute(q, dq, ddq), reference.compute(q, dq, ddq))
    for j in range(6):
        np.testing.assert_array_equal(builder.own_columns(j), reference.own_columns(j))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[{joints:[5,9]}]", "robot.coupled_joints[0].joints = [5, 9] names a joint"),
        ("[{joints:[5]}]", "robot.coupled_joints[0].joints must be a list of 2 integers >= 1"),
        ("[{joints:[5,6],ratio:0}]", "robot.coupled_joints[0].ratio must be a finite non-zero"),
        ("[{joints:[5,6],gear:2}]", "Unknown config key 'robot.coupled_joints[0].gear'"),
        ("[{joints:[4,6]},{joints:[5,6]}]", "gives the motor of one joint twice"),
    ],
)
def test_bad_coupling_config_is_one_paragraph_naming_the_key(value, expected):
    with pytest.raises(UserError) as raised:
        builder_of(f"robot.coupled_joints={value}")
    assert expected in str(raised.value)
    assert "\n" not in str(raised.value)


def builder_of(*overrides: str) -> RegressorBuilder:
    config = _config("robot=ur5e", *overrides)
    return regressor_builder(config, load_robot("ur5e"))


def test_bad_coupling_on_the_command_line_exits_2(tmp_path: Path):
    result = run_cli(
        "robot=ur5e", "robot.coupled_joints=[{joints:[6,7]}]", f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 2
    assert "robot.coupled_joints[0].joints" in result.stderr and "Traceback" not in result.stderr


# -- the Stäubli TX40 preset ------------------------------------------------------------------
sys.path.insert(0, str(REPO / "benchmarks"))
from peers import conversions  # noqa: E402

TX40 = SHARED / "datasets" / "staubli_tx40"


def test_tx40_preset_ratio_is_the_example_transmission():
    """conf/robot/staubli_tx40.yaml's ratio is FIGAROH's TX40 transmission (Nq, Nt of the
    example, `benchmarks/peers/conversions.py`): motor 6 over its gear ratio turns with
    dq6 + r dq5, and its torque enters joint 5 with the same r."""
    config = _config("robot=staubli_tx40", "robot.path=unused.urdf")
    (entry,) = config.robot.coupled_joints
    nq, nt = conversions.tx40_position_matrix(), conversions.tx40_torque_matrix()
    assert entry.joints == [5, 6]
    assert entry.ratio == nq[5, 4] / nq[5, 5] == nt[4, 5] / nt[5, 5]


def _tx40_csv(folder: Path) -> tuple[Path, Path]:
    q_motor, i_motor = conversions.read_tx40_motor_side(TX40)
    paths = []
    for name, (start, stop) in (("ident", (0, 24750)), ("validation", (29250, 45000))):
        rec = conversions.tx40_joint_side(q_motor[start:stop], i_motor[start:stop], start)
        path = folder / f"tx40_{name}.csv"
        write_csv_log(Dataset(rec.t, rec.q, rec.dq, rec.tau, tuple(rec.joint_names)), path)
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.slow
@pytest.mark.skipif(not TX40.is_dir(), reason="shared TX40 data absent")
def test_tx40_coupled_wrist_on_real_data(tmp_path: Path):
    """The real TX40 log (the benchmark's rows): the preset's coupled wrist brings joint 5's
    validation RMSE down (measured 5.64 -> 1.18 Nm) and the motor's parameters come out near
    FIGAROH's TX40_config.yaml values (Iam6 0.00964, fvm6 0.616, fsm6 1.95)."""
    ident, validation = _tx40_csv(tmp_path)
    urdf = TX40 / "tx40_mdh_modified.urdf"
    common = [
        f"robot.path={urdf}", "source=csv", f"source.path={ident}", "validation=csv",
        f"validation.path={validation}", "plots=false",
    ]  # fmt: skip
    figures = {}
    for robot in ("urdf", "staubli_tx40"):
        run = tmp_path / robot
        result = run_cli(f"robot={robot}", *common, f"hydra.run.dir={run}")
        assert result.returncode == 0, result.stderr[-3000:]
        figures[robot] = json.loads((run / "metrics.json").read_text())["validation"]["physical"]
    coupled, plain = figures["staubli_tx40"], figures["urdf"]
    assert coupled["rmse_per_joint"][4] < 0.4 * plain["rmse_per_joint"][4]
    assert coupled["rmse_per_joint"][5] < 0.8 * plain["rmse_per_joint"][5]
    assert coupled["rmse"] < 0.85 * plain["rmse"]
    parameters = yaml.safe_load((tmp_path / "staubli_tx40" / "parameters.yaml").read_text())
    (motor,) = parameters["coupled_motors"]
    assert motor["joints"] == ["joint_5", "joint_6"] and motor["ratio"] == 1.0
    assert motor["Ia"]["value"] == pytest.approx(0.00964, rel=0.3)
    assert motor["fv"]["value"] == pytest.approx(0.616, rel=0.3)
    assert motor["fc"]["value"] == pytest.approx(1.95, rel=0.3)


def test_tuning_fold_factors_share_the_coupled_columns(coupled_truth):
    """tuning=cv's fold factors with a coupled motor: R^T R equals W^T W of the coupled
    regressor (the motor's columns one parameter over both joints' rows, not one per row)."""
    from ident_framework.identify.linear_problem import joint_row_spaces
    from ident_framework.identify.tuning.block_factors import FoldRows, OwnColumns, fold_factors

    _, builder, _, train, _ = coupled_truth
    data = Dataset(
        train.timestamp[:1500], train.q[:1500], train.dq[:1500], train.tau[:1500],
        train.joint_names, ddq=train.ddq[:1500],
    )  # fmt: skip
    own = OwnColumns(
        ("fv", "fc", "Ia"),
        lambda d, rows, joints=None: builder.own_terms(d.dq[rows], d.ddq[rows])[:, :, :3],
        tuple(builder.parameter_names[-3:]),
        lambda d, rows: builder.coupled_terms(d.dq[rows], d.ddq[rows]),
    )
    rows = FoldRows(data, data.tau, np.zeros(data.n_samples, dtype=int))
    factors = fold_factors(builder, [rows], 1, own, joint_row_spaces(builder))
    n = 6
    names = builder.parameter_names
    order = list(range(10 * n))  # the tuning's column of each regressor column
    order += [factors.own_column(j, p) for j in range(n) for p in ("fv", "fc")]
    order += [factors.own_column(j, "Ia") for j in range(n)]
    order += [factors.shared_column(i) for i in range(3)]
    assert len(order) == len(names)
    w = builder.compute(data.q, data.dq, data.ddq).reshape(-1, len(names))
    r = factors.merged[0][:, order]
    gram = w.T @ w
    np.testing.assert_allclose(r.T @ r, gram, rtol=1e-8, atol=1e-8 * np.abs(gram).max())
