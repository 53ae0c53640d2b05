"""Nonlinear friction parameters: variable projection against known truth, parallel filtering,
and a friction plugin's torque as a simulated robot's true friction.

The nonlinear friction models here are written in the test, as a plugin would write them (the
Stribeck and LuGre plugins under plugins/ have their own tests): the core must work with any.
"""

from __future__ import annotations

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.preprocessing import PreprocessingParams, preprocess
from ident_framework.errors import UserError
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.friction_fit import SeparableFit, fit_nonlinear_friction
from ident_framework.identify.linear_problem import (
    build_problem,
    predict_torque,
    recording_friction,
)
from ident_framework.model.friction_terms import check_friction_model
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.simulation.true_friction import parse_true_friction
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.testing.known_truth import multisine
from ident_framework.trajectories.point_to_point import PointToPointGenerator, PointToPointParams

FC = np.array([7.0, 6.5, 4.0, 1.5, 1.4, 1.2])  # Nm
FV = np.array([4.0, 3.5, 2.5, 1.0, 0.9, 0.8])  # Nm·s/rad


class ExponentialFriction:
    """Memoryless: tau = fc (1 - exp(-|dq| / v0)) sign(dq) + fv dq; v0 (rad/s) nonlinear."""

    parameter_names = ("fc", "fv")
    nonlinear_names = ("v0",)
    sequential = False

    def basis_along(self, t, dq, nonlinear):
        rise = 1.0 - np.exp(-np.abs(dq) / nonlinear[:, 0])
        return np.stack([rise * np.sign(dq), dq], axis=-1)

    def basis(self, dq):
        return self.basis_along(None, dq, np.full((dq.shape[1], 1), 0.1))

    def nonlinear_bounds(self):
        return np.array([1e-3]), np.array([2.0])

    def initial_nonlinear(self, viscous, coulomb):
        return np.array([np.full((len(coulomb), 1), v) for v in (0.03, 0.3)])

    def physical_parameters(self, linear, nonlinear):
        return {"fc": linear[:, 0], "fv": linear[:, 1], "v0": nonlinear[:, 0]}

    def from_physical(self, physical, n):
        zero = np.zeros(n)
        linear = np.column_stack([physical.get("fc", zero), physical.get("fv", zero)])
        return linear, np.broadcast_to(physical.get("v0", 0.1), (n,)).reshape(n, 1).copy()


class LagFriction(ExponentialFriction):
    """Sequential: a state s (-1..1) follows sign(dq) over a sliding distance d (rad),
    ds/dt = (sign(dq) - s) |dq| / d; tau = fc s + fv dq; d nonlinear."""

    nonlinear_names = ("d",)
    sequential = True

    def basis_along(self, t, dq, nonlinear):
        if t is None:
            return np.stack([np.sign(dq), dq], axis=-1)
        d = nonlinear[:, 0]
        s = np.empty_like(dq)
        s[0] = np.sign(dq[0])
        decay = np.exp(-np.abs(dq[:-1]) * np.diff(t)[:, None] / d)
        for k in range(len(dq) - 1):
            s[k + 1] = decay[k] * s[k] + (1.0 - decay[k]) * np.sign(dq[k])
        return np.stack([s, dq], axis=-1)

    def stepper(self, nonlinear, dt):
        raise NotImplementedError  # not simulated here

    def initial_nonlinear(self, viscous, coulomb):
        return np.full((1, len(coulomb), 1), 0.01)

    def physical_parameters(self, linear, nonlinear):
        return {"fc": linear[:, 0], "fv": linear[:, 1], "d": nonlinear[:, 0]}

    def from_physical(self, physical, n):
        linear, _ = super().from_physical(physical, n)
        return linear, np.broadcast_to(physical.get("d", 0.01), (n,)).reshape(n, 1).copy()


@pytest.fixture(scope="module")
def robot():
    return load_robot("ur12e")


def known_truth(robot, model, nonlinear, seed, noise, duration=20.0, theta=None):
    """(builder, theta, dataset): exact accelerations, torque = regressor @ theta + noise
    (theta drawn from `seed` unless given)."""
    builder = RegressorBuilder(robot, model)
    rng = np.random.default_rng(seed)
    if theta is None:
        inertial = robot.inertial_parameters() * rng.uniform(0.8, 1.2, 60)
        armature = [0.4, 0.4] + [0.1] * 4
        theta = builder.standard_parameters(inertial, np.column_stack([FC, FV]), armature)
    t = np.arange(0.0, duration, 1.0 / 200.0)
    q, dq, ddq = multisine(t, 6, seed, amp_rad=(0.1, 0.5))
    true = builder.with_nonlinear(nonlinear)
    tau = true.compute(q, dq, ddq, true.friction_basis(t, dq)) @ theta
    tau += noise * rng.standard_normal(tau.shape)
    return builder, theta, Dataset(t, q, dq, tau, robot.joint_names, ddq=ddq)


def test_projected_residual_is_the_least_squares_residual(robot):
    """||rho(theta)||² = min_beta ||W(theta) beta - tau||², joint by joint (W in memory here)."""
    d = np.linspace(0.002, 0.02, 6)[:, None]
    builder, _, data = known_truth(robot, LagFriction(), d, seed=1, noise=0.05, duration=6.0)
    fit = SeparableFit(builder, data, chunk_size=500, tolerance=1e-8)
    trial = 1.3 * d
    regressor = builder.with_nonlinear(trial)
    w = regressor.compute(
        data.q, data.dq, data.ddq, regressor.friction_basis(data.timestamp, data.dq)
    )
    beta, *_ = np.linalg.lstsq(w.reshape(-1, w.shape[-1]), data.tau.ravel(), rcond=None)
    full = (data.tau - w @ beta) ** 2
    np.testing.assert_allclose(fit.joint_sse(trial), full.sum(axis=0), rtol=1e-6)
    residual = fit.residual(trial.ravel())
    assert residual @ residual == pytest.approx(full.sum(), rel=1e-6)


def test_memoryless_nonlinear_parameter_recovered(robot):
    v0 = np.array([0.05, 0.06, 0.08, 0.1, 0.12, 0.15])[:, None]
    builder, theta, data = known_truth(robot, ExponentialFriction(), v0, seed=2, noise=0.02)
    fit = fit_nonlinear_friction(builder, data, 1000, 1e-8, progress=False)
    np.testing.assert_allclose(fit.values, v0, rtol=0.01)
    assert fit.sse < 1.1 * data.tau.size * 0.02**2 < fit.sse_coulomb_viscous
    # then the usual linear identification at the fitted values recovers fc and fv
    fitted = builder.with_nonlinear(fit.values)
    problem, base, _ = build_problem(fitted, data, 1000, 1e-8, progress=False)
    standard = base.to_standard(LeastSquares(LeastSquaresParams()).fit(problem).coef_)
    friction = standard[60:72].reshape(6, 2)
    np.testing.assert_allclose(friction[3:], np.column_stack([FC, FV])[3:], rtol=0.01)


def test_sequential_model_fitted_and_predicted_along_time(robot):
    """A state integrated along the recording: fitted from the best of its starts, then the
    identified model predicts another recording (own timestamps) as well as the truth does."""
    d = np.array([0.004, 0.005, 0.006, 0.008, 0.01, 0.012])[:, None]
    builder, theta, data = known_truth(robot, LagFriction(), d, seed=3, noise=0.02)
    fit = fit_nonlinear_friction(builder, data, 1000, 1e-8, progress=False)
    np.testing.assert_allclose(fit.values, d, rtol=0.03)
    fitted = builder.with_nonlinear(fit.values)
    assert fitted.sequential and recording_friction(fitted, data).shape == (data.n_samples, 6, 2)
    _, _, other = known_truth(robot, LagFriction(), d, 4, 0.0, duration=8.0, theta=theta)
    problem, base, _ = build_problem(fitted, data, 1000, 1e-8, progress=False)
    standard = base.to_standard(LeastSquares(LeastSquaresParams()).fit(problem).coef_)
    error = predict_torque(fitted, other, standard, 700) - other.tau
    assert np.sqrt(np.mean(error**2)) < 0.02


def test_linear_friction_models_take_the_old_path(robot):
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    assert builder.nonlinear is None and not builder.sequential
    assert not builder.parallel_friction
    t = np.arange(0.0, 2.0, 0.01)
    q, dq, ddq = multisine(t, 6, 0)
    data = Dataset(t, q, dq, np.zeros_like(q), robot.joint_names, ddq=ddq)
    assert recording_friction(builder, data) is None


def test_parallel_filter_is_the_torque_filter(robot):
    """Friction columns filtered in parallel: the identity column gives back the filtered
    velocity preprocessing produced; rows survive select and concatenate."""
    t = np.arange(0.0, 6.0, 0.002)
    q, dq, _ = multisine(t, 6, 5)
    rng = np.random.default_rng(0)
    raw = Dataset(t, q, dq + 0.01 * rng.standard_normal(dq.shape), 0 * q, robot.joint_names)
    data = preprocess(raw, PreprocessingParams())
    identity = data.parallel_filter.apply(lambda t, v: v[..., None])[..., 0]
    np.testing.assert_allclose(identity, data.dq, atol=1e-12)
    part = data.select(slice(100, 900))
    np.testing.assert_allclose(
        part.parallel_filter.apply(lambda t, v: v[..., None])[..., 0], part.dq, atol=1e-12
    )
    both = concatenate([data, part])
    stacked = both.parallel_filter.apply(lambda t, v: v[..., None])[..., 0]
    np.testing.assert_allclose(stacked, both.dq, atol=1e-12)
    # more channels than are filtered at once (6 joints x 20 columns), at some rows only
    many = lambda t, v: np.stack([np.tanh(v / w) for w in np.geomspace(1e-3, 1.0, 20)], -1)  # noqa: E731
    rows = np.flatnonzero(rng.random(both.n_samples) < 0.2)
    np.testing.assert_allclose(
        both.parallel_filter.apply(many, rows), both.parallel_filter.apply(many)[rows], atol=1e-13
    )
    assert both.parallel_filter.apply(many, rows[:0]).shape == (0, 6, 20)


def test_parallel_friction_parts_see_each_segments_acceleration(robot):
    """Column functions given as parts get the same ddq as one function over all of them:
    each segment's np.gradient of its unfiltered velocity (two recordings: two segments)."""
    from ident_framework.identify.linear_problem import parallel_friction_basis

    t = np.arange(0.0, 4.0, 0.002)
    q, dq, _ = multisine(t, 6, 7)
    raw = Dataset(t, q, dq, 0 * q, robot.joint_names)
    data = preprocess(raw, PreprocessingParams())
    both = concatenate([data, data.select(slice(0, 1200))])

    def lead(t, dq, ddq):
        return np.tanh((dq + 0.01 * ddq) / 0.01)[..., None]

    def square(t, dq, ddq):
        return (ddq**2)[..., None]

    whole = parallel_friction_basis(
        both, lambda t, dq, ddq: np.concatenate([lead(t, dq, ddq), square(t, dq, ddq)], -1), True
    )
    np.testing.assert_allclose(parallel_friction_basis(both, [lead, square], True), whole)


def test_nonlinear_model_missing_a_member_is_named():
    class Incomplete:
        parameter_names = ("fc",)
        nonlinear_names = ("v_s",)

        def basis(self, dq):
            return np.sign(dq)[..., None]

    with pytest.raises(UserError, match="'half' from distribution 'ident-half'.*basis_along"):
        check_friction_model(Incomplete(), "half", "ident-half")


def test_true_friction_config_is_checked():
    with pytest.raises(UserError, match="no friction plugin 'nope'; installed: \\["):
        parse_true_friction({"plugin": "nope"}, "source.true_friction")
    with pytest.raises(UserError, match="source.true_friction.parameters.fk"):
        parse_true_friction(
            {"plugin": "coulomb_viscous", "parameters": {"fk": 1.0}}, "source.true_friction"
        )
    with pytest.raises(UserError, match="dead_band must be >= 0"):
        parse_true_friction({"plugin": "coulomb_viscous", "dead_band": -1.0}, "x")
    with pytest.raises(UserError, match="gives friction parameters but no plugin"):
        parse_true_friction({"plugin": None, "parameters": {"fc": 1.0}}, "source.true_friction")
    assert parse_true_friction({"plugin": None, "parameters": {}}, "x") is None


def test_plugin_friction_is_the_simulated_robots_true_friction(robot):
    """The true robot loses its damping and frictionloss; the plugin's torque acts instead,
    so the recorded torque is rigid body + rotor inertia + the plugin's friction (exactly,
    with MuJoCo's accelerations); the truth carries the plugin's parameters."""
    params = MujocoSourceParams(
        true_friction={"plugin": "coulomb_viscous", "dead_band": 0.0, "parameters": {"fc": 2.0}},
        record_acceleration=True, torque_noise_std=0.0, encoder_resolution=0.0,
    )  # fmt: skip
    motion = PointToPointGenerator(PointToPointParams(duration_s=3.0)).generate(robot, None, 1)
    data = MujocoSource(params).acquire(robot, motion, "identification")
    truth = data.metadata["truth"]
    assert truth["friction"]["plugin"] == "coulomb_viscous"
    assert truth["friction"]["parameters"]["fc"] == [2.0] * 6
    assert truth["friction"]["parameters"]["fv"] == [4.0, 4.0, 2.5, 1.0, 1.0, 1.0]  # source level
    assert truth["viscous"] == [0.0] * 6 and truth["coulomb"] == [0.0] * 6
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams(0.0)))
    friction = np.column_stack([truth["friction"]["parameters"][k] for k in ("fv", "fc")])
    theta = builder.standard_parameters(truth["inertial"], friction, truth["armature"])
    predicted = builder.compute(data.q, data.dq, data.ddq) @ theta
    assert np.abs(predicted - data.tau).max() < 1e-6


class ShapedExponentialFriction(ExponentialFriction):
    """tau = fc (1 - exp(-(|dq| / v0)^p)) sign(dq) + fv dq; v0 fitted, p held at 1 by equal
    bounds (then it is `ExponentialFriction`)."""

    nonlinear_names = ("v0", "p")

    def basis_along(self, t, dq, nonlinear):
        rise = 1.0 - np.exp(-((np.abs(dq) / nonlinear[:, 0]) ** nonlinear[:, 1]))
        return np.stack([rise * np.sign(dq), dq], axis=-1)

    def nonlinear_bounds(self):
        return np.array([1e-3, 1.0]), np.array([2.0, 1.0])

    def initial_nonlinear(self, viscous, coulomb):
        return np.array([np.column_stack([np.full(len(coulomb), v), np.ones(len(coulomb))])
                         for v in (0.03, 0.3)])  # fmt: skip


def test_a_parameter_with_equal_bounds_is_held(robot):
    """Equal bounds hold a nonlinear parameter where they put it: the fit moves the others
    only (its Jacobian columns are zero) and reports no bound for it."""
    v0 = np.array([0.05, 0.06, 0.08, 0.1, 0.12, 0.15])[:, None]
    builder, _, data = known_truth(robot, ExponentialFriction(), v0, seed=2, noise=0.02)
    held = RegressorBuilder(robot, ShapedExponentialFriction())
    fit = fit_nonlinear_friction(held, data, 1000, 1e-8, progress=False)
    np.testing.assert_array_equal(fit.values[:, 1], 1.0)
    np.testing.assert_allclose(fit.values[:, :1], v0, rtol=0.01)
    assert not any(name == "p" for _, name in fit.at_bounds)
    separable = SeparableFit(held, data, 1000, 1e-8)
    assert separable.free.tolist() == [0]
    jacobian = separable.jacobian(np.column_stack([v0[:, 0], np.ones(6)]).ravel())
    assert not jacobian[:, 1::2].any() and jacobian[:, 0::2].any()


BLAS_DURING_FIT = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_friction_fit import ExponentialFriction, known_truth
from ident_framework.identify.friction_fit import fit_nonlinear_friction
from ident_framework.model.robot import load_robot
from threadpoolctl import threadpool_info
assert "scipy.linalg" not in sys.modules, "SciPy loaded before the fit: nothing tested"
seen = []

class Watched(ExponentialFriction):
    def basis_along(self, t, dq, nonlinear):
        seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
        return super().basis_along(t, dq, nonlinear)

v0 = np.full((6, 1), 0.08)
builder, _, data = known_truth(load_robot("ur12e"), Watched(), v0, seed=2, noise=0.02, duration=4.0)
fit_nonlinear_friction(builder, data, 1000, 1e-8, progress=False)
assert "scipy.linalg" in sys.modules
print("threads", max(seen[1:]))
"""


def test_the_fit_runs_scipys_blas_on_one_thread(tmp_path):
    """SciPy brings its own BLAS; the fit loads it (least_squares), and threadpool_limits
    limits only the libraries loaded when it is entered: loaded inside, SciPy's SVD of the
    Jacobian ran on every core, ~10x slower on a busy 2-core machine (24 s instead of 3 s for
    a LuGre fit of 10^4 samples). A fresh process, SciPy not loaded before the fit."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: BLAS runs on one thread anyway")
    script = tmp_path / "fit.py"
    script.write_text(BLAS_DURING_FIT.format(tests=str(Path(__file__).parent)))
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1", done.stdout
