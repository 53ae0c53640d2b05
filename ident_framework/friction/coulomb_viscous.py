"""Built-in friction model `coulomb_viscous`: tau_f = fv * dq + fc * sign(dq) per joint.

The sign has a small dead band (as in the source study): below `dead_band` rad/s the Coulomb
column is zero, so samples near rest do not pull the Coulomb estimate either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import hookimpl
from ident_framework.interfaces import FrictionModelDefaults


@dataclass
class CoulombViscousParams:
    """dead_band: joint speed (rad/s) below which sign(dq) is taken as 0."""

    dead_band: float = 0.01

    def __post_init__(self) -> None:
        if not self.dead_band >= 0.0:
            raise ValueError(f"dead_band must be >= 0 rad/s, got {self.dead_band}")


class CoulombViscousFriction(FrictionModelDefaults):
    """Viscous (Nm·s/rad) and Coulomb (Nm) friction per joint, linear in its parameters."""

    parameter_names = ("fv", "fc")

    def __init__(self, params: CoulombViscousParams):
        self.dead_band = params.dead_band

    def basis(self, dq: np.ndarray) -> np.ndarray:
        sign = np.where(np.abs(dq) > self.dead_band, np.sign(dq), 0.0)
        return np.stack([dq, sign], axis=-1)


@hookimpl
def register_friction_models(register) -> None:
    register("coulomb_viscous", CoulombViscousFriction, CoulombViscousParams)
