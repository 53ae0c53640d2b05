"""Known truth: data made with known parameters and exact accelerations are recovered."""

from __future__ import annotations

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.friction.none import NoFriction, NoFrictionParams
from ident_framework.identify.linear_problem import build_problem, predict_torque
from ident_framework.identify.metrics import torque_metrics
from ident_framework.model.base_parameters import BaseParameters, TriangularAccumulator
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.testing.known_truth import (
    TRUE_ARMATURE,
    TRUE_COULOMB,
    TRUE_VISCOUS,
    exact_dataset,
)


def test_known_truth_recovered_without_noise(true_setup):
    builder, theta = true_setup
    train = exact_dataset(builder, theta, seed=1)
    problem, base, cond = build_problem(
        builder, train, chunk_size=700, tolerance=1e-8, progress=False
    )
    assert (base.n_standard, base.rank) == (78, 52)
    beta = LeastSquares(LeastSquaresParams()).fit(problem).coef_
    beta_true = base.to_base(theta)
    relative = np.abs(beta - beta_true) / np.maximum(np.abs(beta_true), 1e-12)
    significant = np.abs(beta_true) > 1e-9 * np.abs(beta_true).max()
    assert np.max(relative[significant]) < 1e-6
    assert np.linalg.norm(beta - beta_true) / np.linalg.norm(beta_true) < 1e-9

    validation = exact_dataset(builder, theta, seed=2, duration=10.0)
    predicted = predict_torque(builder, validation, base.to_standard(beta), chunk_size=500)
    assert torque_metrics(validation.tau, predicted)["rmse"] < 1e-6
    # friction and rotor inertia of joints 3-6 are identifiable on their own
    identified = base.to_standard(beta)
    names = builder.parameter_names
    for j in range(6):
        assert identified[names.index(f"fv_{j + 1}")] == pytest.approx(TRUE_VISCOUS[j], rel=1e-7)
        assert identified[names.index(f"fc_{j + 1}")] == pytest.approx(TRUE_COULOMB[j], rel=1e-7)
    for j in range(2, 6):
        assert identified[names.index(f"Ia_{j + 1}")] == pytest.approx(TRUE_ARMATURE[j], rel=1e-6)


def test_chunking_does_not_change_the_result(true_setup):
    builder, theta = true_setup
    rng = np.random.default_rng(0)
    data = exact_dataset(builder, theta, seed=4, duration=8.0)
    noisy = Dataset(
        data.timestamp, data.q, data.dq, data.tau + rng.normal(0, 0.05, data.tau.shape),
        data.joint_names, ddq=data.ddq,
    )  # fmt: skip
    results = []
    for chunk in (97, 1600):
        problem, base, cond = build_problem(builder, noisy, chunk, 1e-8, progress=False)
        results.append(
            (base.to_standard(LeastSquares(LeastSquaresParams()).fit(problem).coef_), cond)
        )
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-8, atol=1e-10)
    assert results[0][1] == pytest.approx(results[1][1], rel=1e-8)


def test_ls_standard_deviation_matches_monte_carlo(true_setup):
    builder, theta = true_setup
    data = exact_dataset(builder, theta, seed=5, duration=6.0)
    rng = np.random.default_rng(1)
    estimates, stds = [], []
    for _ in range(40):
        tau = data.tau + rng.normal(0, 0.2, data.tau.shape)
        noisy = Dataset(data.timestamp, data.q, data.dq, tau, data.joint_names, ddq=data.ddq)
        problem, base, _ = build_problem(builder, noisy, 1000, 1e-8, progress=False)
        fit = LeastSquares(LeastSquaresParams()).fit(problem)
        estimates.append(fit.coef_)
        stds.append(fit.coef_std_)
    empirical = np.std(estimates, axis=0)
    predicted = np.mean(stds, axis=0)
    ratio = empirical / predicted
    assert 0.7 < np.median(ratio) < 1.3


@pytest.mark.parametrize(
    "friction, armature, expected",
    [
        ("none", False, (60, 36)),
        ("coulomb_viscous", False, (72, 48)),
        ("coulomb_viscous", True, (78, 52)),
    ],
)
def test_rank_of_ur_arms(friction, armature, expected):
    """36 of 60 without friction and 48 of 72 with Coulomb-viscous friction, as in the source
    study. With rotor inertia, 52 of 78 (not 53): besides Ia_1 (joint 1 is vertical: its
    column equals ZZ1's), Ia_2 is not separable from ZZ2 because joint 2 is perpendicular to
    joint 1, so link 2's ZZ2 multiplies only ddq2 on joint 2, exactly as Ia_2 does. (UR's
    rounded roll angle 1.570796327 leaves that direction at 3e-11 of the largest singular
    value, far below the tolerance.)"""
    model = (
        NoFriction(NoFrictionParams())
        if friction == "none"
        else CoulombViscousFriction(CoulombViscousParams())
    )
    for name in ("ur12e", "ur10e", "ur5e"):
        builder = RegressorBuilder(load_robot(name), model, armature=armature)
        rng = np.random.default_rng(0)
        limits = builder.robot.limits
        q = rng.uniform(-np.pi, np.pi, (2000, 6))
        dq = rng.uniform(-1, 1, (2000, 6)) * limits.velocity
        ddq = rng.uniform(-1, 1, (2000, 6)) * limits.acceleration
        accumulator = TriangularAccumulator(builder.n_parameters)
        accumulator.add(builder.compute(q, dq, ddq).reshape(-1, builder.n_parameters))
        base = BaseParameters.from_r_factor(accumulator.factor, builder.parameter_names)
        assert (base.n_standard, base.rank) == expected, name


def test_kept_rows_predict_what_a_second_regressor_pass_predicts(true_setup, monkeypatch):
    """build_problem keeps the projected rows of the identification data (within
    KEPT_ROWS_BYTES): its prediction equals Y theta recomputed from Pinocchio, for any theta;
    another dataset, or rows over the budget, take the second pass."""
    from ident_framework.identify import linear_problem

    builder, theta = true_setup
    train = exact_dataset(builder, theta, seed=1)
    problem, base, _ = build_problem(builder, train, chunk_size=700, tolerance=1e-8, progress=False)
    kept = problem.kept_rows
    assert kept is not None and kept.belongs_to(train)
    rng = np.random.default_rng(3)
    for value in (theta, base.to_standard(rng.normal(size=base.rank))):
        reference = predict_torque(builder, train, value, chunk_size=500)
        fast = predict_torque(builder, train, value, chunk_size=500, kept=kept)
        scale = np.abs(reference).max()
        np.testing.assert_allclose(fast, reference, rtol=0, atol=1e-12 * scale)
    other = exact_dataset(builder, theta, seed=2, duration=2.0)
    assert not kept.belongs_to(other)
    np.testing.assert_array_equal(
        predict_torque(builder, other, theta, 500, kept=kept),
        predict_torque(builder, other, theta, 500),
    )
    monkeypatch.setattr(linear_problem, "KEPT_ROWS_BYTES", 1000)
    assert build_problem(builder, train, 700, 1e-8, progress=False)[0].kept_rows is None


def test_factor_pass_is_the_same_on_any_number_of_workers(true_setup, monkeypatch):
    """The factor pass runs in tasks on forked workers; the factors and the kept rows are
    bitwise the same with one worker as with two, and equal (to rounding) to one streamed
    accumulation of every chunk; the kept rows the workers wrote predict Y theta."""
    from ident_framework.identify import linear_problem
    from ident_framework.identify.linear_problem import accumulate_joint_factors, dataset_chunks

    builder, theta = true_setup
    train = exact_dataset(builder, theta, seed=1)  # 4,000 samples
    monkeypatch.setattr(linear_problem, "TASK_SAMPLES", 1400)  # 3 tasks of 2 chunks of 700
    runs = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", workers)
        problem, base, cond = build_problem(builder, train, 700, 1e-8, progress=False)
        kept = problem.kept_rows
        runs[workers] = (problem.standard.r_factors, kept.projected, kept.own, cond)
    for one, two in zip(runs["1"][:3], runs["2"][:3], strict=True):
        for a, b in zip(one, two, strict=True):
            np.testing.assert_array_equal(a, b)
    assert runs["1"][3] == runs["2"][3]
    streamed, n_samples = accumulate_joint_factors(builder, dataset_chunks(train, 700))
    assert n_samples == train.n_samples
    for r, reference in zip(runs["2"][0], streamed, strict=True):
        scale = np.abs(reference).max()
        np.testing.assert_allclose(r.T @ r, reference.T @ reference, atol=1e-10 * scale**2)
    reference = predict_torque(builder, train, theta, chunk_size=500)
    fast = predict_torque(builder, train, theta, chunk_size=500, kept=problem.kept_rows)
    np.testing.assert_allclose(fast, reference, rtol=0, atol=1e-12 * np.abs(reference).max())
