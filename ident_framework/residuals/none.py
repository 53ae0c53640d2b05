"""Built-in residual learner `none`: the physical model's prediction is final."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ident_framework.hookspecs import ResidualInputs, ResidualLearnerDefaults, hookimpl


@dataclass
class NoResidualParams:
    """No parameters."""


class NoResidual(ResidualLearnerDefaults):
    """Inactive: the engine reports no fusion stage and calls nothing else on it."""

    active = False

    def __init__(self, params: NoResidualParams):
        del params

    def fit(self, recordings: list[ResidualInputs], residuals: list[np.ndarray]):
        return self

    def predict(self, inputs: ResidualInputs) -> np.ndarray:
        return np.zeros_like(inputs.q)

    def save(self, folder: Path) -> None:
        """Nothing to save."""

    def load(self, folder: Path) -> NoResidual:
        return self


@hookimpl
def register_residual_learners(register) -> None:
    register("none", NoResidual, NoResidualParams)
