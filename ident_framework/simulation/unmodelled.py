"""Torques the simulated robot has and the identified model lacks (`source.unmodelled`),
applied each sim step as a generalised force: extra static friction at low speed (stribeck),
friction depending on the joint angle (position), and a joint-side cogging ripple
A_j sin(n_j q_j + phi_j) (low harmonics per joint revolution; motor-side cogging is not
simulated)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ident_framework.errors import UserError, per_joint_values

UNMODELLED_EFFECTS = ("none", "stribeck", "position", "cogging")
COGGING_FRACTION = 0.01  # cogging amplitude per unit unmodelled_scale, of the joint's effort limit
MAX_COGGING_PERIODS = 12  # cycles per joint revolution: a low-harmonic, joint-side ripple
STRIBECK_VELOCITY = 0.05  # rad/s, width of the extra static friction
_SIGN_SMOOTHING = 0.002  # rad/s, tanh width standing in for sign(dq)


def unmodelled_friction(
    kind: str, scale: float, coulomb: np.ndarray, q: np.ndarray, dq: np.ndarray
) -> np.ndarray:
    """Friction torque (Nm, opposing the motion) that Coulomb-viscous friction does not model.

    stribeck: extra static friction at low speed, 0.5·fc·exp(−(dq/0.05)²)·sign(dq), i.e. the
    static level is 1.5 × the Coulomb level (Stribeck effect). position: friction that depends
    on the joint angle (e.g. gear eccentricity), 0.15·fc·(1 + sin 2q)·sign(dq). Both scaled by
    `scale`; sign(dq) is a steep tanh (width 0.002 rad/s)."""
    sign = np.tanh(dq / _SIGN_SMOOTHING)
    if kind == "stribeck":
        return scale * 0.5 * coulomb * np.exp(-((dq / STRIBECK_VELOCITY) ** 2)) * sign
    if kind == "position":
        return scale * 0.3 * coulomb * 0.5 * (1.0 + np.sin(2.0 * q)) * sign
    return np.zeros_like(dq)


def cogging(params: Any, effort: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint the cogging ripple amplitude_j · sin(periods_j · q_j + phase_j) (q in rad, joint
    side): amplitude (Nm, unmodelled_scale × COGGING_FRACTION × the effort limit), periods per
    joint revolution, phase (rad); UserError when a joint has no finite effort limit."""
    effort = np.asarray(effort, dtype=float)
    if not np.all(np.isfinite(effort) & (effort > 0)):
        raise UserError(
            "source.unmodelled=cogging sizes the ripple by each joint's effort limit, but the "
            f"robot's effort limits are {effort.tolist()} Nm. Give the robot finite effort "
            "limits (URDF <limit effort=...>, MJCF actuatorfrcrange), or choose another "
            "source.unmodelled effect."
        )
    n = len(effort)
    periods = per_joint_values(params.cogging_periods, n, "cogging_periods", one_for_all=True)
    phase = per_joint_values(params.cogging_phase_rad, n, "cogging_phase_rad", one_for_all=True)
    return params.unmodelled_scale * COGGING_FRACTION * effort, periods, phase


def unmodelled_torque(
    params: Any, effort: np.ndarray, coulomb: np.ndarray
) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """The unmodelled torque (Nm) the motors must supply, as a function of (q rad, dq rad/s),
    per `params.unmodelled`; None when there is none."""
    if params.unmodelled == "none" or params.unmodelled_scale == 0:
        return None
    if params.unmodelled == "cogging":
        amplitude, periods, phase = cogging(params, effort)
        return lambda q, dq: amplitude * np.sin(periods * q + phase)
    kind, scale = params.unmodelled, params.unmodelled_scale
    return lambda q, dq: unmodelled_friction(kind, scale, coulomb, q, dq)


def unmodelled_metadata(params: Any, effort: np.ndarray) -> dict:
    """metadata["unmodelled"]: the planted effect, its scale, and for cogging the amplitude
    (Nm), periods per revolution and phase (rad) per joint."""
    out = {"kind": params.unmodelled, "scale": float(params.unmodelled_scale)}
    if params.unmodelled == "cogging" and params.unmodelled_scale > 0:
        amplitude, periods, phase = cogging(params, effort)
        out.update(
            amplitude_nm=amplitude.tolist(), periods=periods.tolist(), phase_rad=phase.tolist()
        )
    return out
