"""Built-in residual learner `none`: the physical model's prediction is final."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import hookimpl


@dataclass
class NoResidualParams:
    """No parameters."""


class NoResidual:
    active = False

    def __init__(self, params: NoResidualParams):
        del params

    def fit(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, residual: np.ndarray):
        return self

    def predict(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        return np.zeros_like(q)


@hookimpl
def register_residual_learners(register) -> None:
    register("none", NoResidual, NoResidualParams)
