"""Recursive least squares: equals LS without forgetting, forgets with it, stays healthy."""

from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.config.plugin_config import build_params
from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.estimators.rls import RlsEstimator, register_estimators
from ident_framework.hookspecs import LinearProblem
from ident_framework.identify.linear_problem import build_problem
from ident_framework.identify.recursive import RecursiveLeastSquares, RecursiveLeastSquaresParams
from ident_framework.testing.known_truth import exact_dataset

REPO = Path(__file__).resolve().parents[1]


def relative_error(estimate: np.ndarray, reference: np.ndarray) -> float:
    """Largest relative difference over the parameters that are not negligibly small."""
    significant = np.abs(reference) > 1e-9 * np.abs(reference).max()
    return float(np.max(np.abs(estimate - reference)[significant] / np.abs(reference)[significant]))


def synthetic_problem(t: np.ndarray, phi: np.ndarray, y: np.ndarray, chunk: int = 500):
    """A LinearProblem re-streaming given rows (phi (N, n, r), y (N, n)); factors unused."""
    n, r = phi.shape[1:]

    def chunks():
        for start in range(0, len(t), chunk):
            rows = slice(start, start + chunk)
            yield t[rows], phi[rows], y[rows]

    names = [f"p{i}" for i in range(r)]
    return LinearProblem([np.eye(r + 1)] * n, len(t), names, chunks)


@pytest.fixture(scope="module")
def noise_free(true_setup):  # noqa: F811
    builder, theta = true_setup
    problem, base, _ = build_problem(
        builder, exact_dataset(builder, theta, seed=1), 700, 1e-8, progress=False
    )
    return problem, base, base.to_base(theta)


@pytest.mark.parametrize("warm_start_s", [0.0, 2.0])
def test_lambda_one_reproduces_least_squares(noise_free, warm_start_s):
    problem, base, beta_true = noise_free
    assert base.rank == 52
    ls = LeastSquares(LeastSquaresParams()).fit(problem).coef_
    rls = RecursiveLeastSquares(RecursiveLeastSquaresParams(warm_start_s=warm_start_s))
    beta = rls.fit(problem).coef_
    assert relative_error(beta, ls) < 1e-6
    assert relative_error(beta, beta_true) < 1e-6
    assert rls.n_updates_ == problem.n_samples
    assert rls.n_repairs_ == 0


def test_standard_deviation_matches_least_squares(true_setup):  # noqa: F811
    builder, theta = true_setup
    data = exact_dataset(builder, theta, seed=5, duration=6.0)
    rng = np.random.default_rng(0)
    tau = data.tau + rng.normal(0.0, 0.2, data.tau.shape)
    noisy = Dataset(data.timestamp, data.q, data.dq, tau, data.joint_names, ddq=data.ddq)
    problem, _, _ = build_problem(builder, noisy, 1000, 1e-8, progress=False)
    ls = LeastSquares(LeastSquaresParams()).fit(problem)
    rls = RecursiveLeastSquares(RecursiveLeastSquaresParams()).fit(problem)
    np.testing.assert_allclose(rls.coef_std_, ls.coef_std_, rtol=1e-3)
    assert np.max(np.abs(rls.coef_ - ls.coef_) / ls.coef_std_) < 1e-3


def test_update_fit_and_row_by_row_agree():
    """fit == the same samples through update(); with lam = 1 one block update per sample ==
    n sequential scalar updates (one row each)."""
    rng = np.random.default_rng(1)
    n_samples, n, r = 600, 3, 7
    t = np.arange(n_samples) * 0.002
    phi = rng.normal(size=(n_samples, n, r))
    y = phi @ rng.normal(size=r) + rng.normal(0.0, 0.1, (n_samples, n))
    problem = synthetic_problem(t, phi, y, chunk=97)
    for forgetting in (1.0, 0.99):
        params = RecursiveLeastSquaresParams(forgetting=forgetting, checkpoint_s=0.1)
        fitted = RecursiveLeastSquares(params).fit(problem)
        online = RecursiveLeastSquares(params)
        errors = [online.update(phi[k], y[k], t[k]) for k in range(n_samples)]
        np.testing.assert_array_equal(online.coef_, fitted.coef_)
        np.testing.assert_array_equal(online.covariance_, fitted.covariance_)
        assert errors[0].shape == (n,)
        np.testing.assert_allclose(errors[0], y[0])  # a priori, from theta0 = 0
        np.testing.assert_array_equal(online.snapshots_[1], fitted.snapshots_[1][:-1])
        assert online.running_rmse == pytest.approx(fitted.running_rmse)
    rows = RecursiveLeastSquares(RecursiveLeastSquaresParams())
    for k in range(n_samples):
        for j in range(n):
            rows.update(phi[k, j], y[k, j], t[k])  # phi (r,), y scalar
    block = RecursiveLeastSquares(RecursiveLeastSquaresParams()).fit(problem)
    np.testing.assert_allclose(rows.coef_, block.coef_, rtol=1e-9)
    np.testing.assert_allclose(rows.coef_std_, block.coef_std_, rtol=1e-6)


def test_forgetting_follows_a_parameter_jump():
    rng = np.random.default_rng(2)
    n_samples, n, r = 6000, 2, 6
    theta_a, theta_b = rng.normal(size=r), rng.normal(size=r)
    phi = rng.normal(size=(n_samples, n, r))
    jump = n_samples // 2
    truth = np.where(np.arange(n_samples)[:, None] < jump, theta_a, theta_b)
    y = np.einsum("knr,kr->kn", phi, truth) + rng.normal(0.0, 0.01, (n_samples, n))
    problem = synthetic_problem(np.arange(n_samples) * 0.002, phi, y)
    forgetting = RecursiveLeastSquares(RecursiveLeastSquaresParams(forgetting=0.99)).fit(problem)
    batch = RecursiveLeastSquares(RecursiveLeastSquaresParams()).fit(problem)
    assert np.max(np.abs(forgetting.coef_ - theta_b)) < 0.01
    assert np.max(np.abs(batch.coef_ - 0.5 * (theta_a + theta_b))) < 0.05  # averages
    # the snapshot just before the jump holds the old parameters
    times, thetas = forgetting.snapshots_
    before = thetas[np.searchsorted(times, (jump - 1) * 0.002, side="right") - 1]
    assert np.max(np.abs(before - theta_a)) < 0.01


def test_standard_deviation_under_forgetting():
    """coef_std_ = sqrt(sigma² c diag P) with c -> 1/(1 + lam): the spread of the estimate
    over time on stationary data (snapshots 5 memories apart, about independent)."""
    rng = np.random.default_rng(4)
    n_samples, n, r, noise = 40_000, 2, 6, 0.1
    phi = rng.normal(size=(n_samples, n, r))
    y = phi @ rng.normal(size=r) + rng.normal(0.0, noise, (n_samples, n))
    problem = synthetic_problem(np.arange(n_samples) * 0.002, phi, y, chunk=5000)
    params = RecursiveLeastSquaresParams(forgetting=0.99, checkpoint_s=1.0)  # 500 samples
    rls = RecursiveLeastSquares(params).fit(problem)
    _, thetas = rls.snapshots_
    ratio = np.std(thetas[2:], axis=0) / rls.coef_std_
    assert 0.75 < np.median(ratio) < 1.25


def test_numerical_health_with_poor_excitation():
    """1e5 updates at lam = 0.99 with the same rank-6 regressor (46 of 52 directions never
    excited): without a bound P would grow as 0.99^-k (inf after ~70,000 updates)."""
    rng = np.random.default_rng(3)
    n, r, n_updates = 6, 52, 100_000
    phi = rng.normal(size=(n, r))
    y = phi @ rng.normal(size=r)
    params = RecursiveLeastSquaresParams(forgetting=0.99, max_trace=1e4)
    rls = RecursiveLeastSquares(params)
    with rls.single_threaded():
        for k in range(n_updates):
            rls.update(phi, y, k * 0.002)
            if k % 25_000 == 0:
                assert rls.covariance_.trace() <= 1e4 * (1 + 1e-12)
        p = rls.covariance_
        assert np.array_equal(p, p.T)
        eigenvalues = np.linalg.eigvalsh(p)
        assert eigenvalues[0] > 0.0
        assert p.trace() <= 1e4 * (1 + 1e-12)
        assert rls.n_repairs_ == 0 and np.all(np.isfinite(rls.coef_))
        np.testing.assert_allclose(phi @ rls.coef_, y, atol=1e-8)
        assert np.all(np.isfinite(rls.coef_std_))
        # rich excitation again, with other parameters: no burst, they are found (forgetting
        # resumes once the trace is below the bound; the old fit's weight decays as 0.99^k)
        theta = rng.normal(size=r)
        for k in range(3000):
            rich = rng.normal(size=(n, r))
            rls.update(rich, rich @ theta, (n_updates + k) * 0.002)
        np.testing.assert_allclose(rls.coef_, theta, atol=1e-6)
        # the same start without the bound winds up
        unbounded = RecursiveLeastSquares(
            RecursiveLeastSquaresParams(forgetting=0.99, max_trace=1e300)
        )
        bounded = RecursiveLeastSquares(RecursiveLeastSquaresParams(forgetting=0.99))
        for k in range(1500):
            unbounded.update(phi, y, k * 0.002)
            bounded.update(phi, y, k * 0.002)
    assert unbounded.covariance_.trace() > 1e10
    assert bounded.covariance_.trace() <= 1e6 * r * (1 + 1e-12)  # default bound: alpha r


def test_bad_sample_is_refused_and_state_kept():
    rls = RecursiveLeastSquares()
    rls.update(np.ones((2, 3)), np.ones(2), 0.0)
    before = rls.coef_, rls.covariance_
    with pytest.raises(ValueError, match="non-finite"):
        rls.update(np.full((2, 3), np.nan), np.ones(2), 0.002)
    np.testing.assert_array_equal(rls.coef_, before[0])
    np.testing.assert_array_equal(rls.covariance_, before[1])
    with pytest.raises(ValueError, match="columns"):
        rls.update(np.ones((2, 4)), np.ones(2))
    with pytest.raises(ValueError, match="phi must be"):
        rls.update(np.ones((2, 3)), np.ones(3))


def test_snapshots_and_plots_written(noise_free, tmp_path):
    problem, base, _ = noise_free
    params = RecursiveLeastSquaresParams(checkpoint_s=1.0, running_window_s=0.5)
    rls = RlsEstimator(params).fit(problem)
    rls.write_outputs(tmp_path)
    with open(tmp_path / "rls_snapshots.csv") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["time_s", *base.names]
    assert 20 <= len(rows) - 1 <= 22  # 20 s of data, one per second and the end
    np.testing.assert_allclose([float(v) for v in rows[-1][1:]], rls.coef_, rtol=1e-9)
    rmse = np.loadtxt(tmp_path / "rls_running_rmse.csv", delimiter=",", skiprows=1)
    assert rmse.shape == (len(rows) - 1, 2) and rmse[-1, 1] < 1e-6  # converged, no noise
    for name in ("rls_convergence.png", "rls_running_rmse.png"):
        assert (tmp_path / "plots" / name).stat().st_size > 10_000


@pytest.mark.parametrize(
    "field, value",
    [
        ("forgetting", 0.0),
        ("forgetting", 1.5),
        ("forgetting", math.nan),
        ("alpha", 0.0),
        ("warm_start_s", -1.0),
        ("max_trace", 0.0),
        ("checkpoint_s", 0.0),
        ("running_window_s", -0.5),
    ],
)
def test_bad_params_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        RecursiveLeastSquaresParams(**{field: value})
    with pytest.raises(UserError, match=field):
        build_params(RecursiveLeastSquaresParams, {field: value}, "estimator", "rls")


def test_config_and_registration():
    values = yaml.safe_load((REPO / "conf" / "estimator" / "rls.yaml").read_text())
    assert values.pop("plugin") == "rls"
    defaults = RecursiveLeastSquaresParams()
    assert build_params(RecursiveLeastSquaresParams, values, "estimator", "rls") == defaults
    assert set(values) == set(vars(defaults))
    registered = []
    register_estimators(register=lambda *args: registered.append(args))
    assert registered == [("rls", RlsEstimator, RecursiveLeastSquaresParams)]


def load_experiment():
    spec = importlib.util.spec_from_file_location(
        "drift_payload", REPO / "experiments" / "drift_payload.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rls_tracks_payload_change():
    """The drift experiment at a smaller scale: 8 s excitation period, 250 Hz, payload
    1.5 -> 3.5 kg after two periods; lam for 2 s of memory."""
    experiment = load_experiment()
    from ident_framework.testing.drift_study import least_squares_on, rmse_of

    period, rate = 8.0, 250.0
    setup, change = experiment.make_setup(
        period_s=period, record_rate_hz=rate, n_candidates=50, n_refine=0
    )
    assert change == 16.0 and setup.recording.state_jump_rad < 0.01
    factors = setup.factors
    ls = LeastSquares(LeastSquaresParams()).fit(setup.problem).coef_
    best_after = rmse_of(factors["validation_after"], least_squares_on(factors["after"]))[0]
    ls_after = rmse_of(factors["validation_after"], ls)[0]
    assert ls_after > 2.5 * best_after  # LS over the whole recording does not track

    result = experiment.track(setup, change, period, forgetting=1.0 - 1.0 / (2.0 * rate))
    assert result["validation_recovery_s"] < 1.5 * period
    assert result["validation_final"] < min(1.2 * best_after, 0.5 * ls_after)
    assert result["apriori_recovery_grace_s"] < 1.5 * period
