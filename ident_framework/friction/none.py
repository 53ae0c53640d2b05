"""Built-in friction model `none`: no friction columns in the regressor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import FrictionModelDefaults, hookimpl


@dataclass
class NoFrictionParams:
    """No parameters."""


class NoFriction(FrictionModelDefaults):
    parameter_names: tuple[str, ...] = ()

    def __init__(self, params: NoFrictionParams):
        del params

    def basis(self, dq: np.ndarray) -> np.ndarray:
        return np.zeros((*dq.shape, 0))


@hookimpl
def register_friction_models(register) -> None:
    register("none", NoFriction, NoFrictionParams)
