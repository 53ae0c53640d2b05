"""Built-in residual learner `none`: the physical model's prediction is final."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ident_framework.hookspecs import hookimpl
from ident_framework.interfaces import ResidualLearnerDefaults


@dataclass
class NoResidualParams:
    """No parameters."""


class NoResidual(ResidualLearnerDefaults):
    """Inactive: the engine reports no fusion stage and calls nothing else on it."""

    active = False

    def __init__(self, params: NoResidualParams):
        del params

    def fit(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, residual: np.ndarray):
        return self

    def predict(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        return np.zeros_like(q)

    def save(self, folder: Path) -> None:
        """Nothing to save."""

    def load(self, folder: Path) -> NoResidual:
        return self


@hookimpl
def register_residual_learners(register) -> None:
    register("none", NoResidual, NoResidualParams)
