"""Built-in estimator `ls`: ordinary least squares on the base regressor.

Solved from the per-joint triangular factors of [W_j | tau_j] (see `interfaces.LinearProblem`),
so memory does not grow with the recording. Standard deviations from the residual variance
and (W^T W)^-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .hookspecs import hookimpl
from .interfaces import LinearProblem


@dataclass
class LeastSquaresParams:
    """No parameters."""


def solve_stacked(factors: list[np.ndarray], n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(beta, std) minimising the sum over the given [W | tau] factors."""
    r = np.linalg.qr(np.vstack(factors), mode="r")
    k = r.shape[1] - 1
    r_w, rhs, residual = r[:k, :k], r[:k, k], abs(r[k, k]) if r.shape[0] > k else 0.0
    beta = scipy.linalg.solve_triangular(r_w, rhs)
    dof = max(n_rows - k, 1)
    sigma2 = residual**2 / dof
    r_inv = scipy.linalg.solve_triangular(r_w, np.eye(k))
    std = np.sqrt(sigma2 * np.sum(r_inv**2, axis=1))
    return beta, std


class LeastSquares:
    """fit(problem) -> self; coef_ (base parameters), coef_std_ (their std deviations)."""

    def __init__(self, params: LeastSquaresParams):
        self.params = params

    def fit(self, problem: LinearProblem) -> LeastSquares:
        n_rows = problem.n_samples * len(problem.r_factors)
        self.coef_, self.coef_std_ = solve_stacked(problem.r_factors, n_rows)
        return self


@hookimpl
def register_estimators(register) -> None:
    register("ls", LeastSquares, LeastSquaresParams)
