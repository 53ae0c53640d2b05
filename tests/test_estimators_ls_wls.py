"""LS and WLS on the base regressor; QR-named base parameters; uncertainty."""

from __future__ import annotations

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.estimators.wls import WeightedLeastSquares, WeightedLeastSquaresParams
from ident_framework.identify.linear_problem import build_problem, predict_torque
from ident_framework.identify.metrics import uncertainty_summary
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.testing.known_truth import exact_dataset


def _noisy(data: Dataset, std_per_joint, seed=0) -> Dataset:
    rng = np.random.default_rng(seed)
    tau = data.tau + rng.normal(0, 1, data.tau.shape) * np.asarray(std_per_joint)
    return Dataset(data.timestamp, data.q, data.dq, tau, data.joint_names, ddq=data.ddq)


def test_wls_equals_ls_without_noise(true_setup):  # noqa: F811
    builder, theta = true_setup
    problem, base, _ = build_problem(builder, exact_dataset(builder, theta, 1), 1000, 1e-8, False)
    ls = LeastSquares(LeastSquaresParams()).fit(problem).coef_
    wls = WeightedLeastSquares(WeightedLeastSquaresParams()).fit(problem).coef_
    assert np.linalg.norm(wls - ls) / np.linalg.norm(ls) < 1e-6
    np.testing.assert_allclose(wls, base.to_base(theta), rtol=1e-6, atol=1e-9)


def test_wls_downweights_a_noisy_joint(true_setup):  # noqa: F811
    """Joint 1 with 20x the noise of the others: WLS finds the joint noise levels and its
    estimates scatter less than LS's (Monte Carlo over noise draws)."""
    builder, theta = true_setup
    clean = exact_dataset(builder, theta, 2, duration=8.0)
    std = np.array([1.0, 0.05, 0.05, 0.05, 0.05, 0.05])
    errors = {"ls": [], "wls": []}
    for seed in range(8):
        problem, base, _ = build_problem(builder, _noisy(clean, std, seed), 1000, 1e-8, False)
        truth = base.to_base(theta)
        wls = WeightedLeastSquares(WeightedLeastSquaresParams()).fit(problem)
        np.testing.assert_allclose(wls.joint_sigma_, std, rtol=0.25)  # LS leaks joint 1 noise
        for name, estimator in (("ls", LeastSquares(LeastSquaresParams())), ("wls", wls)):
            coef = estimator.fit(problem).coef_
            errors[name].append(np.linalg.norm(coef - truth))
    assert np.mean(errors["wls"]) < 0.7 * np.mean(errors["ls"])


def test_qr_base_parameters_are_named_regroupings(true_setup):  # noqa: F811
    builder, theta = true_setup
    data = exact_dataset(builder, theta, 3, duration=10.0)
    problem, base, cond = build_problem(builder, data, 1000, 1e-8, False, method="qr")
    assert base.method == "qr" and base.rank == 52
    assert set(base.names) <= set(builder.parameter_names)
    combos = dict(zip(base.names, base.combinations(), strict=True))
    # Ia_2 is regrouped with ZZ2 (joint 2 is perpendicular to joint 1), exactly:
    regroup = next(c for n, c in combos.items() if "Ia_2" in c)
    assert "+1*Izz_2" in regroup and "+1*Ia_2" in regroup
    # friction and the rotor inertia of joints 3-6 stand alone
    for name in ("fv_1", "fc_6", "Ia_3", "Ia_6"):
        assert combos[name] == f"+1*{name}"
    coef = LeastSquares(LeastSquaresParams()).fit(problem).coef_
    np.testing.assert_allclose(coef, base.to_base(theta), rtol=1e-6, atol=1e-9)
    # the base model predicts exactly what the standard one does
    predicted = predict_torque(builder, data, base.to_standard(coef), 1000)
    assert np.abs(predicted - data.tau).max() < 1e-6
    svd_problem, svd_base, svd_cond = build_problem(builder, data, 1000, 1e-8, False)
    assert cond == pytest.approx(svd_cond)  # cond is always that of W V_r


def test_base_parameter_maps_are_inverse():
    rng = np.random.default_rng(0)
    r = np.linalg.qr(rng.normal(size=(40, 6)) @ rng.normal(size=(6, 10)), mode="r")
    for method in ("svd", "qr"):
        base = BaseParameters.from_r_factor(r, [f"p{i}" for i in range(10)], 1e-8, method)
        assert base.rank == 6
        np.testing.assert_allclose(base.combination @ base.basis, np.eye(6), atol=1e-10)
        theta = rng.normal(size=10)
        # W theta == W B C theta: the base parameters carry everything the data can see
        np.testing.assert_allclose(r @ theta, r @ base.basis @ base.to_base(theta), atol=1e-9)


def test_uncertainty_summary_flags_poorly_identified():
    summary = uncertainty_summary(
        ["a", "b", "c"], np.array([1.0, 0.01, -2.0]), np.array([0.01, 0.01, 0.5]), 10.0
    )
    assert summary["poorly_identified"] == ["b", "c"]
    assert summary["relative_std_percent"][0] == pytest.approx(1.0)
