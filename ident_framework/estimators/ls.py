"""Built-in estimator `ls`: ordinary least squares on the base regressor, from the per-joint
triangular factors of [W_j | tau_j] (`hookspecs.LinearProblem`). Standard deviations from the
residual variance and (W^T W)^-1.

Optional regularisation (`triangular.spectral_solve`): `ridge`, Tikhonov toward the nominal
parameters (friction and offsets toward 0) with λ = ridge × the largest singular value;
`truncate`, truncated SVD: directions below truncate × the largest keep their nominal value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import EstimatorDefaults, LinearProblem, hookimpl
from ident_framework.identify.linear_problem import stack_factors
from ident_framework.params import Params, param
from ident_framework.triangular import solve_upper, spectral_solve


@dataclass
class LeastSquaresParams(Params):
    """ridge: Tikhonov strength toward the nominal parameters, as a share of the largest
    singular value (0: none); truncate: singular values below this share of the largest are
    dropped (truncated SVD; 0: none)."""

    ridge: float = param(0.0, ge=0, note="a share of the largest singular value")
    truncate: float = param(0.0, ge=0, lt=1, note="a share of the largest singular value")


def solve_stacked(
    factors: list[np.ndarray], n_rows: int, scale_by_residual: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(beta, std) minimising the sum over the given [W | tau] factors; std =
    sqrt(diag(s² (WᵀW)⁻¹)), s² = RSS / (rows − parameters) when `scale_by_residual`, else 1."""
    beta, covariance = solve_with_covariance(factors, n_rows, scale_by_residual)
    return beta, np.sqrt(np.diag(covariance))


def solve_with_covariance(
    factors: list[np.ndarray], n_rows: int, scale_by_residual: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(beta, its covariance s² (WᵀW)⁻¹ = s² R⁻¹R⁻ᵀ (r, r)), as `solve_stacked`."""
    r = stack_factors(factors)
    k = r.shape[1] - 1
    r_w, rhs, residual = r[:k, :k], r[:k, k], abs(r[k, k]) if r.shape[0] > k else 0.0
    beta = solve_upper(r_w, rhs)
    sigma2 = residual**2 / max(n_rows - k, 1) if scale_by_residual else 1.0
    r_inv = solve_upper(r_w, np.eye(k))
    return beta, sigma2 * (r_inv @ r_inv.T)


def joint_residual_std(factors: list[np.ndarray], beta: np.ndarray, n_samples: int) -> np.ndarray:
    """(n,) residual standard deviation of each joint's rows at beta (Nm), with the
    parameters' degrees of freedom shared over the joints (Gautier)."""
    k = len(beta)
    augmented = np.append(beta, -1.0)
    rss = np.array([np.sum((factor @ augmented) ** 2) for factor in factors])
    dof = max(n_samples - k / len(factors), 1.0)
    return np.sqrt(rss / dof)


class LeastSquares(EstimatorDefaults):
    """fit(problem) -> self; coef_ (base parameters), coef_std_ (their std deviations),
    coef_cov_ (their covariance)."""

    def __init__(self, params: LeastSquaresParams):
        self.params = params

    def fit(self, problem: LinearProblem) -> LeastSquares:
        n_rows = problem.n_samples * len(problem.r_factors)
        if self.params.ridge == 0.0 and self.params.truncate == 0.0:
            self.coef_, self.coef_cov_ = solve_with_covariance(problem.r_factors, n_rows)
        else:
            self.coef_, self.coef_cov_ = regularised_with_covariance(
                problem, self.params.ridge, self.params.truncate
            )
        self.coef_std_ = np.sqrt(np.diag(self.coef_cov_))
        return self


def regularised_with_covariance(
    problem: LinearProblem, ridge: float, truncate: float
) -> tuple[np.ndarray, np.ndarray]:
    """(beta, its covariance s² G Gᵀ, G the regularised solution's gain on R's rows)."""
    standard = problem.standard
    nominal = None  # the nominal parameters in base parameters (None: unknown)
    if standard is not None and standard.nominal is not None:
        nominal = standard.combination @ np.asarray(standard.nominal, dtype=float)
    r = stack_factors(problem.r_factors)
    k = r.shape[1] - 1
    beta, gain, _ = spectral_solve(r[:k, :k], r[:k, k], nominal, ridge, truncate)
    augmented = np.append(beta, -1.0)
    rss = float(np.sum((r @ augmented) ** 2))
    sigma2 = rss / max(problem.n_samples * len(problem.r_factors) - k, 1)
    return beta, sigma2 * (gain @ gain.T)


@hookimpl
def register_estimators(register) -> None:
    register("ls", LeastSquares, LeastSquaresParams)
