"""Built-in estimator `wls`: weighted least squares in the manner of Gautier. An ordinary LS
fit gives each joint's residual standard deviation sigma_j (Nm); joint j's rows are weighted by
1/sigma_j and solved again. Standard deviations: diag((Wᵀ Ω⁻¹ W)⁻¹), Ω = diag(sigma_j²).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.estimators.ls import joint_residual_std, solve_stacked, solve_with_covariance
from ident_framework.hookspecs import EstimatorDefaults, LinearProblem, hookimpl
from ident_framework.params import Params, param


@dataclass
class WeightedLeastSquaresParams(Params):
    """min_sigma: floor on a joint's residual std (Nm), so an exactly fitted joint (no noise)
    does not get an infinite weight."""

    min_sigma: float = param(1e-9, gt=0, unit="Nm")


class WeightedLeastSquares(EstimatorDefaults):
    """fit(problem) -> self; coef_, coef_std_, coef_cov_, and joint_sigma_ (Nm per joint)."""

    def __init__(self, params: WeightedLeastSquaresParams):
        self.params = params

    def fit(self, problem: LinearProblem) -> WeightedLeastSquares:
        n_rows = problem.n_samples * problem.n_joints
        beta_ls, _ = solve_stacked(problem.r_factors, n_rows)
        sigma = joint_residual_std(problem.r_factors, beta_ls, problem.n_samples)
        self.joint_sigma_ = np.maximum(sigma, self.params.min_sigma)
        weighted = [f / s for f, s in zip(problem.r_factors, self.joint_sigma_, strict=True)]
        self.coef_, self.coef_cov_ = solve_with_covariance(
            weighted, n_rows, scale_by_residual=False
        )
        self.coef_std_ = np.sqrt(np.diag(self.coef_cov_))
        return self


@hookimpl
def register_estimators(register) -> None:
    register("wls", WeightedLeastSquares, WeightedLeastSquaresParams)
