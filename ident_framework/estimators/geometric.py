"""Built-in estimator `geometric` (the default): physically consistent least squares pulled
toward the nominal model by the log-det divergence of the links' pseudo-inertia matrices
(Lee, Wensing and Park, IEEE T-RO 2020; `identify/geometric_prior.py`).

Every link's parameters are a physically valid mass distribution (J ≻ 0), friction and rotor
inertia > 0. The data term is χ² (units of the least-squares residual variance), `weight` the
prior's strength per unit of divergence (`tuning=cv` can choose it). Standard deviations: the
Laplace approximation, mapped to the base parameters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import EstimatorDefaults, LinearProblem, hookimpl
from ident_framework.identify.geometric_prior import PriorLayout, fit_geometric
from ident_framework.identify.linear_problem import stack_factors
from ident_framework.model.physical_consistency import (
    check_parameters,
    sign_constrained,
    violations,
)
from ident_framework.params import Params, param
from ident_framework.triangular import one_blas_thread

RESIDUAL_FLOOR = 1e-8  # σ is at least this share of the torque's RMS (noise-free data)


@dataclass
class GeometricParams(Params):
    """weight: the prior's strength, χ² units per unit of log-det divergence from the nominal
    model (larger: closer to the nominal model; > 0)."""

    weight: float = param(100.0, gt=0)


class GeometricEstimator(EstimatorDefaults):
    """fit(problem) -> self. standard_coef_, standard_cov_ (Laplace approximation), coef_,
    coef_std_, coef_cov_, chi2_ (excess over least squares, units of σ²), divergence_
    (Σ_k D(J_k ‖ J0_k)), train_rmse_ and train_rmse_ls_ (Nm), newton_steps_, solve_time_s_
    (s); fit_report_ the same for metrics.json."""

    def __init__(self, params: GeometricParams):
        self.params = params

    def fit(self, problem: LinearProblem) -> GeometricEstimator:
        standard = problem.standard
        if standard is None:
            raise UserError(
                "The geometric estimator needs the standard (physical) parameterisation of the "
                "problem, which this data path does not provide. Use estimator=ls."
            )
        start = time.perf_counter()
        rows = problem.n_samples * problem.n_joints
        layout = PriorLayout(
            standard.n_links,
            np.asarray(standard.nominal, dtype=float),
            sign_constrained(standard.kinds, standard.names),
        )
        with one_blas_thread():  # small dense matrices: BLAS threads only contend
            stacked = stack_factors(standard.r_factors)
            sigma2, rss_ls = residual_variance(problem.r_factors, rows)
            try:
                fit = fit_geometric(stacked, sigma2, layout, self.params.weight)
            except np.linalg.LinAlgError as error:
                raise UserError(
                    f"The geometric estimator could not fit these data ({error}): the "
                    f"identification data ({problem.n_samples} samples) excite too little of "
                    "the model. Record a longer, richer motion, or try estimator=ls."
                ) from None
        theta = fit.theta
        report = check_parameters(theta, standard)
        problems = violations(report)
        if problems:  # J ≻ 0 is kept by every Newton step: only round-off could get here
            raise UserError(
                "The geometric estimator's solution is not physically consistent: "
                f"{'; '.join(problems)}. Raise estimator.weight."
            )
        combination = np.asarray(standard.combination, dtype=float)
        self.standard_coef_, self.standard_cov_ = theta, fit.covariance
        self.coef_ = combination @ theta
        self.coef_cov_ = combination @ self.standard_cov_ @ combination.T
        self.coef_std_ = np.sqrt(np.maximum(np.diag(self.coef_cov_), 0.0))
        residual = float(np.sum((stacked @ np.append(theta, -1.0)) ** 2))
        self.chi2_, self.divergence_, self.newton_steps_ = (
            fit.chi2,
            fit.divergence,
            fit.newton_steps,
        )
        self.train_rmse_ = float(np.sqrt(residual / rows))
        self.train_rmse_ls_ = float(np.sqrt(rss_ls / rows))
        self.solve_time_s_ = time.perf_counter() - start
        self.fit_report_ = {
            "weight": float(self.params.weight),
            "train_rmse": self.train_rmse_,
            "train_rmse_least_squares": self.train_rmse_ls_,
            "chi2": self.chi2_,
            "divergence": self.divergence_,
            "newton_steps": self.newton_steps_,
            "converged": bool(fit.converged),
            "solve_time_s": self.solve_time_s_,
        }
        return self


def residual_variance(base_factors: list[np.ndarray], rows: int) -> tuple[float, float]:
    """(σ² the least-squares residual variance in Nm², floored; RSS of that fit, Nm²) from the
    problem's per-joint factors of [W_base | τ] (`LinearProblem.r_factors`)."""
    r = stack_factors(base_factors)
    k = r.shape[1] - 1
    rss = float(r[k, k] ** 2) if r.shape[0] > k else 0.0
    torque2 = float(np.sum(r[:, k] ** 2))
    sigma2 = max(rss / max(rows - k, 1), RESIDUAL_FLOOR**2 * torque2 / max(rows, 1))
    return sigma2, rss


@hookimpl
def register_estimators(register) -> None:
    register("geometric", GeometricEstimator, GeometricParams)
