"""The LuGre friction model on its own: state integration, steady state, parameters."""

from __future__ import annotations

import numpy as np
import pytest

from ident_lugre import LugreFriction, LugreParams
from ident_lugre.model import affine_scan

SHAPE = np.array([[1.5, 0.05, 1e-3], [2.0, 0.1, 5e-4], [1.2, 0.2, 2e-3]])  # fs/fc, v_s, z_ss


def test_prefix_scan_is_the_recursion():
    rng = np.random.default_rng(0)
    a, b, x0 = rng.uniform(0, 1, (500, 3)), rng.normal(size=(500, 3)), rng.normal(size=3)
    expected = [x0]
    for k in range(500):
        expected.append(a[k] * expected[-1] + b[k])
    np.testing.assert_allclose(affine_scan(a, b, x0), np.array(expected), atol=1e-12)


def test_basis_along_a_recording_is_what_a_simulator_steps():
    """The whole-recording basis (prefix scan) equals the step-by-step state a simulator
    integrates, and its columns give the LuGre torque."""
    model = LugreFriction(LugreParams())
    t = np.arange(0.0, 4.0, 0.001)
    dq = np.column_stack([0.3 * np.sin(2 * t), 0.05 * np.sin(3 * t), np.sin(t) ** 3])
    basis = model.basis_along(t, dq, SHAPE)
    step = model.stepper(SHAPE, 0.001)
    np.testing.assert_allclose(np.array([step(v) for v in dq]), basis, atol=1e-12)
    # tau = sigma0 z + sigma1 dz/dt + fv dq with z = z_ss w: the columns are w, dz/dt, dq
    fc, sigma1, fv = 2.0, 0.7, 1.1
    sigma0 = fc / SHAPE[:, 2]
    w, rate = basis[..., 0], basis[..., 1]
    z = SHAPE[:, 2] * w
    torque = basis @ np.array([fc, sigma1, fv])
    np.testing.assert_allclose(torque, sigma0 * z + sigma1 * rate + fv * dq, rtol=1e-12)
    # dz/dt = dq - sigma0 |dq| z / g(dq), g = fc + (fs - fc) exp(-(dq / v_s)^2)
    g = fc * (1 + (SHAPE[:, 0] - 1) * np.exp(-((dq / SHAPE[:, 1]) ** 2)))
    np.testing.assert_allclose(rate, dq - sigma0 * np.abs(dq) * z / g, atol=1e-12)


def test_state_integration_converges_with_the_step():
    """The midpoint rule: a 4x shorter sample step gives a >10x smaller state error (RMS
    against a 10 us integration; second order)."""
    model = LugreFriction(LugreParams())
    fine = np.arange(0.0, 2.0, 1e-5)
    dq = (0.2 * np.sin(3 * fine))[:, None]
    reference = model.basis_along(fine, dq, SHAPE[:1])[..., 0]
    errors = []
    for stride in (400, 100):  # 4 ms and 1 ms samples
        coarse = model.basis_along(fine[::stride], dq[::stride], SHAPE[:1])[..., 0]
        errors.append(np.sqrt(np.mean((coarse - reference[::stride]) ** 2)))
    assert errors[1] < 0.1 * errors[0]


def test_steady_sliding_is_the_stribeck_curve():
    model = LugreFriction(LugreParams())
    t = np.arange(0.0, 2.0, 0.002)
    speeds = np.array([0.02, -0.05, 0.3])
    dq = np.tile(speeds, (len(t), 1))
    basis = model.basis_along(t, dq, SHAPE)
    torque = basis[-1] @ np.array([2.0, 0.7, 1.1])
    g = 2.0 * (1 + (SHAPE[:, 0] - 1) * np.exp(-((speeds / SHAPE[:, 1]) ** 2)))
    np.testing.assert_allclose(torque, g * np.sign(speeds) + 1.1 * speeds, rtol=1e-9)
    # starts at its steady state (no transient on a constant velocity), and the time-free
    # (steady-state) basis is the same
    np.testing.assert_allclose(basis[0], basis[-1], rtol=1e-9, atol=1e-12)
    steady = model.basis_along(None, dq[:1], SHAPE)[0]
    np.testing.assert_allclose(steady, basis[-1], rtol=1e-9, atol=1e-12)


def test_physical_parameters_round_trip():
    model = LugreFriction(LugreParams())
    physical = {
        "fc": np.array([7.0, 1.2]),
        "fs": np.array([10.5, 1.8]),
        "fv": np.array([4.0, 1.0]),
        "v_s": np.array([0.05, 0.08]),
        "sigma0": np.array([7000.0, 2400.0]),
        "sigma1": np.array([2.0, 0.5]),
    }
    linear, nonlinear = model.from_physical(physical, 2)
    np.testing.assert_allclose(nonlinear, [[1.5, 0.05, 1e-3], [1.5, 0.08, 5e-4]])
    back = model.physical_parameters(linear, nonlinear)
    for name, value in physical.items():
        np.testing.assert_allclose(back[name], value)
    # names left out: the configured shape, no bristle damping
    linear, nonlinear = model.from_physical({"fc": np.array([2.0])}, 1)
    np.testing.assert_allclose(nonlinear, [[1.5, 0.1, 1e-3]])
    assert linear[0, 1] == 0.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"v_s": 0.0}, "v_s must be > 0"),
        ({"z_ss": 1.0}, "must lie within z_ss_bounds"),
        ({"fs_ratio_bounds": [2.0, 1.0]}, "lower < upper"),
    ],
)
def test_bad_config_values_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        LugreParams(**values)


def test_registered_through_the_entry_point():
    from ident_framework.config.registry import get_registry

    info = get_registry().get("friction", "lugre")
    assert (info.factory, info.schema, info.distribution) == (
        LugreFriction,
        LugreParams,
        "ident-lugre",
    )


def test_stiff_bristle_rate_is_the_state_lag_not_the_step_error():
    """A bristle much stiffer than a sample's travel (z_ss = 1 µrad, 30 µrad per 2 ms sample):
    the state follows its steady state ĝ(dq) sign(dq) with the relaxation lag, so dz/dt =
    z_ss·dĝ/d(dq)·ddq, and sigma1·dz/dt = (sigma1 / sigma0)·g'(dq)·ddq, an acceleration lead on
    the Stribeck curve. (With the steady state held at each interval's mean velocity, the rate
    was off by 26 times itself at 500 Hz: the hold's error, which a fit scaled with sigma1.)"""
    model = LugreFriction(LugreParams())
    ratio, v_s, z_ss = 0.3, 0.02, 1e-6
    t = np.arange(0.0, 2.0, 0.002)
    dq = (0.03 + 0.02 * np.sin(3 * t))[:, None]  # never reverses
    ddq = (0.06 * np.cos(3 * t))[:, None]
    rate = model.basis_along(t, dq, np.array([[ratio, v_s, z_ss]]))[:, 0, 1]
    slope = (ratio - 1.0) * np.exp(-((dq[:, 0] / v_s) ** 2)) * (-2.0 * dq[:, 0] / v_s**2)
    expected = z_ss * slope * ddq[:, 0]
    late = slice(10, None)  # after the start (its state starts at the steady state)
    error = np.sqrt(np.mean((rate[late] - expected[late]) ** 2))
    assert error < 0.02 * np.sqrt(np.mean(expected[late] ** 2))


def test_stiff_bristle_converges_at_the_sample_rate():
    """At 500 Hz the columns of a stiff bristle (z_ss = 1 µrad) through reversals are those of a
    1 µs integration: state within 0.005, rate within 15 % (RMS)."""
    model = LugreFriction(LugreParams())
    shape = np.array([[0.2, 0.01, 1e-6]])
    fine = np.arange(0.0, 2.0, 1e-6)
    dq = (0.05 * np.sin(2 * fine) + 0.02 * np.sin(7 * fine))[:, None]
    reference = model.basis_along(fine, dq, shape)[::2000]
    coarse = model.basis_along(fine[::2000], dq[::2000], shape)
    rms = lambda x: np.sqrt(np.mean(x**2))  # noqa: E731
    assert rms(coarse[..., 0] - reference[..., 0]) < 0.005
    assert rms(coarse[..., 1] - reference[..., 1]) < 0.15 * rms(reference[..., 1])


@pytest.mark.parametrize("ratio", [1.5, 1.0, 0.2])
def test_a_hold_keeps_the_static_level_and_creep_meets_the_bristle(ratio):
    """The hold behaviour. A move at 0.2 rad/s slows down over 1 s to a hold: the bristle
    follows the Stribeck curve down to its value at rest, so in the hold the friction is the
    static level fs = fs_ratio·fc (a Stribeck dip, fs > fc: more than the sliding friction; a
    rise, fs < fc: less; MuJoCo's soft friction loss, zero at rest, is the limit fs -> 0), not
    the last sliding value fc. Creeping back in the hold (0.2 µrad, far below z_ss) meets the
    bristle as a spring and a damper: the friction falls by sigma0 times twice the distance
    crept (the deflection relaxes toward the other side too) and by 2·sigma1 times the creep
    velocity (the micro-damping: a friction proportional to the velocity at rest)."""
    model = LugreFriction(LugreParams())
    fc, sigma1, fv, z_ss = 2.0, 500.0, 1.0, 1e-4
    shape = np.array([[ratio, 0.02, z_ss]])
    t = np.arange(0.0, 3.2, 0.001)
    speed = 1e-6  # rad/s, creeping back from 3 s on
    dq = np.where(t < 1.0, 0.2, np.where(t < 2.0, 0.2 * (2.0 - t) ** 2, 0.0))
    dq = np.where(t > 3.0, -speed, dq)[:, None]
    basis = model.basis_along(t, dq, shape)
    torque = (basis @ np.array([fc, sigma1, fv]))[:, 0]
    np.testing.assert_allclose(torque[t < 1.0], fc + fv * 0.2, rtol=1e-9)  # sliding
    np.testing.assert_allclose(torque[(t > 2.2) & (t <= 3.0)], ratio * fc, rtol=0.02)  # fs
    first = np.argmax(t > 3.0)
    back = 1.0 + basis[first - 1, 0, 0] / ratio  # dz/dt = -speed·back: 2 with a full deflection
    assert back == pytest.approx(2.0, abs=0.02)
    damping = (sigma1 * back + fv) * speed  # at once, beside the spring of the first interval
    first_spring = fc / z_ss * back * speed * 0.0005  # travelled at the mean velocity
    jump = torque[first - 1] - torque[first]
    assert jump == pytest.approx(damping + first_spring, rel=0.005)
    crept = speed * (t[-1] - t[first])  # 0.2 µrad
    spring = fc / z_ss * back * crept  # sigma0 times the bristle's travel
    assert torque[first] - torque[-1] == pytest.approx(spring, rel=0.02)
