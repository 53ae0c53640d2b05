"""Built-in friction model `coulomb_viscous`: tau_f = fv * dq + fc * s(dq) per joint.

s(dq) is the Coulomb "sign" of each joint, one of two shapes per joint:

- a sign with a dead band (the source study's choice): below `dead_band` rad/s the Coulomb
  column is zero, so samples near rest do not pull the Coulomb estimate either way;
- a smooth sign tanh(dq / w) of width `tanh_width` w (rad/s): friction that builds up over a
  small speed range, as a soft-constraint simulator's friction loss or a harmonic drive's.

`tanh_width` takes one value for every joint or a list of one per joint; a joint whose width
is 0 (or `tanh_width: null`) uses the dead-band sign. `tuning=cv` chooses the dead band and the
width of each joint from the identification data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import hookimpl
from ident_framework.interfaces import FrictionModelDefaults


def _per_joint(value: float | list[float] | None, key: str) -> np.ndarray | None:
    if value is None:
        return None
    values = np.atleast_1d(np.asarray(value, dtype=float))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(f"{key} must be >= 0 rad/s, one value or one per joint, got {value}")
    return values


@dataclass
class CoulombViscousParams:
    """dead_band: joint speed (rad/s) below which sign(dq) is taken as 0; tanh_width: width
    (rad/s) of a smooth sign tanh(dq / w) instead, one value or one per joint (0 or null: the
    dead-band sign)."""

    dead_band: float = 0.01
    tanh_width: float | list[float] | None = None

    def __post_init__(self) -> None:
        if not self.dead_band >= 0.0:
            raise ValueError(f"dead_band must be >= 0 rad/s, got {self.dead_band}")
        values = _per_joint(self.tanh_width, "tanh_width")
        if values is not None:
            self.tanh_width = float(values[0]) if values.size == 1 else values.tolist()


class CoulombViscousFriction(FrictionModelDefaults):
    """Viscous (Nm·s/rad) and Coulomb (Nm) friction per joint, linear in its parameters."""

    parameter_names = ("fv", "fc")

    def __init__(self, params: CoulombViscousParams):
        self.dead_band = float(params.dead_band)
        width = _per_joint(params.tanh_width, "tanh_width")
        self.tanh_width = np.zeros(1) if width is None else width

    def _broadcast(self, values: np.ndarray, n: int, key: str) -> np.ndarray:
        if values.size not in (1, n):
            raise ValueError(
                f"friction.{key} has {values.size} values for {n} joints: give one value or "
                f"one per joint"
            )
        return np.broadcast_to(values, (n,))

    def basis(self, dq: np.ndarray) -> np.ndarray:
        n = dq.shape[-1]
        width = self._broadcast(self.tanh_width, n, "tanh_width")
        sign = np.where(np.abs(dq) > self.dead_band, np.sign(dq), 0.0)
        if np.any(width > 0):
            smooth = np.tanh(dq / np.where(width > 0, width, 1.0))
            sign = np.where(width > 0, smooth, sign)
        return np.stack([dq, sign], axis=-1)


@hookimpl
def register_friction_models(register) -> None:
    register("coulomb_viscous", CoulombViscousFriction, CoulombViscousParams)
