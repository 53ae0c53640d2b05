"""Built-in estimator `ls`: ordinary least squares on the base regressor.

Solved from the per-joint triangular factors of [W_j | tau_j] (see `interfaces.LinearProblem`),
so memory does not grow with the recording. Standard deviations from the residual variance
and (W^T W)^-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ident_framework.hookspecs import hookimpl
from ident_framework.identify.linear_problem import stack_factors
from ident_framework.interfaces import EstimatorDefaults, LinearProblem


@dataclass
class LeastSquaresParams:
    """No parameters."""


def solve_stacked(
    factors: list[np.ndarray], n_rows: int, scale_by_residual: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(beta, std) minimising the sum over the given [W | tau] factors.

    std = sqrt(diag(s² (WᵀW)⁻¹)), with s² the residual variance (RSS / (rows − parameters))
    when `scale_by_residual`, else s² = 1 (rows already weighted by their noise std)."""
    r = stack_factors(factors)
    k = r.shape[1] - 1
    r_w, rhs, residual = r[:k, :k], r[:k, k], abs(r[k, k]) if r.shape[0] > k else 0.0
    beta = scipy.linalg.solve_triangular(r_w, rhs)
    sigma2 = residual**2 / max(n_rows - k, 1) if scale_by_residual else 1.0
    r_inv = scipy.linalg.solve_triangular(r_w, np.eye(k))
    std = np.sqrt(sigma2 * np.sum(r_inv**2, axis=1))
    return beta, std


def joint_residual_std(factors: list[np.ndarray], beta: np.ndarray, n_samples: int) -> np.ndarray:
    """(n,) residual standard deviation of each joint's rows at beta (Nm), with the
    parameters' degrees of freedom shared over the joints (Gautier)."""
    k = len(beta)
    augmented = np.append(beta, -1.0)
    rss = np.array([np.sum((factor @ augmented) ** 2) for factor in factors])
    dof = max(n_samples - k / len(factors), 1.0)
    return np.sqrt(rss / dof)


class LeastSquares(EstimatorDefaults):
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
