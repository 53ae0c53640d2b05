"""The Stribeck friction model on its own: columns, directions, parameters, config checks."""

from __future__ import annotations

import numpy as np
import pytest

from ident_stribeck import StribeckFriction, StribeckParams


def stribeck_torque(dq, fc, fs, fv, v_s, delta, width):
    sign = np.tanh(dq / width) if width > 0 else np.sign(dq)
    return (fc + (fs - fc) * np.exp(-(np.abs(dq / v_s) ** delta))) * sign + fv * dq


def test_columns_times_linear_parameters_give_the_stribeck_curve():
    model = StribeckFriction(StribeckParams(delta=1.5, sign_width=0.002))
    dq = np.linspace(-1.0, 1.0, 401)[:, None] * np.array([1.0, 0.3])
    v_s = np.array([[0.05], [0.1]])
    basis = model.basis_along(None, dq, v_s)
    fc, fs, fv = np.array([7.0, 1.5]), np.array([10.0, 2.5]), np.array([4.0, 1.0])
    torque = basis[..., 0] * fc + basis[..., 1] * fs + basis[..., 2] * fv
    expected = stribeck_torque(dq, fc, fs, fv, v_s[:, 0], 1.5, 0.002)
    np.testing.assert_allclose(torque, expected, atol=1e-12)


def test_exact_sign_and_fitted_exponent():
    model = StribeckFriction(StribeckParams(sign_width=0.0, fit_delta=True))
    assert model.nonlinear_names == ("v_s", "delta")
    dq = np.array([[-0.2], [0.0], [0.03]])
    basis = model.basis_along(None, dq, np.array([[0.05, 1.0]]))
    torque = basis @ np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(torque[:, 0], stribeck_torque(dq[:, 0], 1, 2, 0.5, 0.05, 1, 0))
    assert torque[1, 0] == 0.0


def test_asymmetric_levels_act_in_their_direction_only():
    model = StribeckFriction(StribeckParams(asymmetric=True))
    assert model.parameter_names == ("fc_pos", "fc_neg", "fs_pos", "fs_neg", "fv")
    dq = np.array([[0.5], [-0.5]])
    basis = model.basis_along(None, dq, np.array([[0.1]]))
    torque = basis[:, 0] @ np.array([2.0, 3.0, 4.0, 5.0, 0.0])
    assert torque[0] > 0 > torque[1]
    assert torque[0] == pytest.approx(stribeck_torque(0.5, 2.0, 4.0, 0.0, 0.1, 2.0, 0.005))
    assert torque[1] == pytest.approx(stribeck_torque(-0.5, 3.0, 5.0, 0.0, 0.1, 2.0, 0.005))


def test_physical_parameters_round_trip():
    model = StribeckFriction(StribeckParams())
    given = {"fc": np.array([7.0, 1.2]), "fs_ratio": np.array([1.5, 1.4]), "fv": np.ones(2)}
    linear, nonlinear = model.from_physical({**given, "v_s": np.array([0.04, 0.08])}, 2)
    physical = model.physical_parameters(linear, nonlinear)
    np.testing.assert_allclose(physical["fs"], [10.5, 1.68])
    np.testing.assert_allclose(physical["v_s"], [0.04, 0.08])
    # a Coulomb-viscous truth seen through the model: no Stribeck effect (fs = fc)
    linear, nonlinear = model.from_physical({"fc": np.array([2.0]), "fv": np.array([1.0])}, 1)
    assert model.physical_parameters(linear, nonlinear)["fs"] == pytest.approx([2.0])
    np.testing.assert_allclose(nonlinear, [[0.1]])  # the configured v_s


def test_starts_and_bounds_come_from_the_config():
    model = StribeckFriction(StribeckParams(v_s=0.1, v_s_bounds=[0.05, 1.0]))
    lower, upper = model.nonlinear_bounds()
    assert (lower[0], upper[0]) == (0.05, 1.0)
    starts = model.initial_nonlinear(np.ones(6), np.ones(6))
    assert starts.shape == (3, 6, 1)
    np.testing.assert_allclose(starts[:, 0, 0], [0.05, 0.1, 0.3])  # 0.03 clipped to the bound


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"v_s": -0.1}, "v_s must be > 0"),
        ({"v_s": 5.0}, "must lie within v_s_bounds"),
        ({"v_s_bounds": [0.5, 0.1]}, "lower < upper"),
        ({"sign_width": -1.0}, "sign_width must be >= 0"),
        ({"fit_delta": True, "delta": 9.0}, "must lie within delta_bounds"),
    ],
)
def test_bad_config_values_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        StribeckParams(**values)


def test_registered_through_the_entry_point():
    from ident_framework.config.registry import get_registry

    info = get_registry().get("friction", "stribeck")
    assert (info.factory, info.schema) == (StribeckFriction, StribeckParams)
    assert info.distribution == "ident-stribeck"
