"""Built-in estimator `consistent`: physically consistent identification (convex, cvxpy), after
Wensing, Kim and Slotine (2017).

A maximum a posteriori estimate in the full standard parameters theta under the physical
constraints:

    minimise   chi2(theta) + regularization * ||P_N S^-1 (theta - theta_nom)||²
    subject to J_k(theta) ⪰ psd_margin · M_k diag(L_k², L_k², L_k², 1)   (each link k)
               friction >= 0, rotor inertia >= 0                          (offsets free)

chi2: the excess RSS over least squares in units of the LS residual variance; S scales each
link by its nominal mass M_k (kg) and radius of gyration L_k (m); P_N: the null-space part.

Rationale (scaling, floors, polish): docs/design.md#physically-consistent-estimator
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ident_framework.errors import UserError
from ident_framework.estimators.ls import solve_stacked
from ident_framework.hookspecs import EstimatorDefaults, LinearProblem, StandardModel, hookimpl
from ident_framework.identify.linear_problem import stack_factors
from ident_framework.model.physical_consistency import (
    N_LINK,
    PSEUDO_INERTIA_MAP,
    check_parameters,
    sign_constrained,
    violations,
)
from ident_framework.params import Params, param

SOLVERS = ("clarabel", "scs")  # cvxpy names: upper case
# LS residual norm floors (relative to the torque norm) for sigma, tried in turn (design.md)
RESIDUAL_FLOORS = (1e-8, 1e-5, 1e-2)
SIGN_TOLERANCE = 1e-8  # scaled friction / rotor inertia above -this count as 0 (solver round-off)


@dataclass
class ConsistentParams(Params):
    """regularization: 1 / s² for a prior standard deviation s of the unidentifiable
        directions in scaled units (25: s = 20 % of the nominal link);
    psd_margin: J ⪰ psd_margin · M diag(L², L², L², 1) per link (dimensionless);
    solver: `clarabel` (interior point) or `scs`; fallback: tried when it fails (null: none);
    max_iterations: the solver's iteration limit (SCS gets 1000× as many);
    tolerance: feasibility and duality-gap tolerance (SCS: at least 1e-9)."""

    regularization: float = param(25.0, gt=0)
    psd_margin: float = param(1e-6, ge=0, lt=1)
    solver: str = param("clarabel", choices=SOLVERS)
    fallback: str | None = param("scs", choices=SOLVERS, null=True)
    max_iterations: int = param(500, ge=1)
    tolerance: float = param(1e-10, gt=0, lt=1e-2)


def parameter_scales(standard: StandardModel) -> np.ndarray:
    """(p,) scale of each standard parameter. Inertial: m ~ M, h ~ M L, I ~ M L² with the
    nominal mass M (at least 1 % of the heaviest) and radius of gyration L (at least 1 % of the
    largest and 1 mm); others: ||tau_j|| / ||column|| (1 when either is zero)."""
    p = len(standard.names)
    nominal = np.asarray(standard.nominal, dtype=float)
    links = nominal[: N_LINK * standard.n_links].reshape(standard.n_links, N_LINK)
    masses = np.where(np.isfinite(links[:, 0]) & (links[:, 0] > 0.0), links[:, 0], 0.0)
    mass_scale = np.maximum(masses, 0.01 * masses.max(initial=0.0))
    mass_scale[mass_scale <= 0.0] = 1.0
    # ∫|r|² dm = ½ tr(I_origin): L² = ½ tr(I_origin) / m
    second = np.nan_to_num(0.5 * (links[:, 4] + links[:, 6] + links[:, 9]))
    radius = np.sqrt(np.maximum(second, 0.0) / mass_scale) * (masses > 0.0)
    radius = np.maximum(radius, max(0.01 * radius.max(initial=0.0), 1e-3))
    scales = np.ones(p)
    powers = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    for k in range(standard.n_links):
        scales[N_LINK * k : N_LINK * (k + 1)] = mass_scale[k] * radius[k] ** powers
    for i in range(N_LINK * standard.n_links, p):
        factor = standard.r_factors[standard.joints[i]]
        column, torque = np.linalg.norm(factor[:p, i]), np.linalg.norm(factor[:, p])
        if column > 0.0 and torque > 0.0:
            scales[i] = torque / column
    return scales


class _ScaledModel:
    """The problem in scaled parameters x = theta / scales, parametrised as
    x = x_ls + on_u @ u + null @ w (chi2 = ||u||², P_N x = null @ w)."""

    def __init__(self, standard: StandardModel, n_rows: int, residual_floor: float):
        p = len(standard.names)
        self.n_links = standard.n_links
        self.scales = parameter_scales(standard)
        stacked = stack_factors(standard.r_factors)
        if stacked.shape[0] < p + 1:  # fewer rows than parameters: pad with zero rows
            stacked = np.vstack([stacked, np.zeros((p + 1 - stacked.shape[0], p + 1))])
        torque_norm = float(np.linalg.norm(stacked[:, p]))
        if not torque_norm > 0.0:
            raise UserError("The consistent estimator got all-zero torques: nothing to fit.")
        a = stacked[:p, :p] * self.scales / torque_norm  # relative residual = a x - b
        b = stacked[:p, p] / torque_norm
        combination = np.asarray(standard.combination, dtype=float) * self.scales
        self.rank = combination.shape[0]
        vt = np.linalg.svd(combination)[2]
        identifiable, self.null = vt[: self.rank].T, vt[self.rank :].T
        import scipy.linalg  # 0.16 s: not with the module, which validating a config imports

        q, r = np.linalg.qr(a @ identifiable)
        self.x_ls = identifiable @ scipy.linalg.solve_triangular(r, q.T @ b)
        self.residual = float(
            np.hypot(np.linalg.norm(b - a @ self.x_ls), stacked[p, p] / torque_norm)
        )
        dof = max(n_rows - self.rank, 1)
        sigma = max(self.residual, residual_floor) / np.sqrt(dof)  # relative residual per row
        self.on_u = sigma * scipy.linalg.solve_triangular(r, identifiable.T, trans="T").T
        self.w_nom = self.null.T @ (np.asarray(standard.nominal, dtype=float) / self.scales)
        self.signed = np.flatnonzero(sign_constrained(standard.kinds, standard.names))

    def x(self, u: np.ndarray, w: np.ndarray) -> np.ndarray:
        return self.x_ls + self.on_u @ u + self.null @ w


class ConsistentEstimator(EstimatorDefaults):
    """fit(problem) -> self. standard_coef_, coef_ (base parameters), coef_std_ (LS
    approximation), solve_time_s_ (s), status_ and solver_, chi2_ (the data term at the
    solution), polished_ (the identifiable part moved to the LS fit), report_
    (`check_parameters` of the result), residual_floor_ (the floor used)."""

    def __init__(self, params: ConsistentParams):
        self.params = params

    def fit(self, problem: LinearProblem) -> ConsistentEstimator:
        standard = problem.standard
        if standard is None:
            raise UserError(
                "The consistent estimator needs the standard (physical) parameterisation of the "
                "problem, which this data path does not provide. Use estimator=ls."
            )
        import cvxpy  # noqa: F401  (~1 s: not with the module, not within the timing)

        start = time.perf_counter()
        rows = problem.n_samples * problem.n_joints
        with threadpool_limits(limits=1, user_api="blas"):  # small dense factorisations
            model, u, w = self._solve_with_floors(standard, rows)
            _, self.coef_std_ = solve_stacked(problem.r_factors, rows)
        self.polished_ = u.size > 0 and self._feasible(model, model.x(np.zeros_like(u), w))
        if self.polished_:  # u = 0: the LS fit; lower objective, still feasible: the optimum
            u = np.zeros_like(u)
        x = model.x(u, w)
        signed = x[model.signed]
        x[model.signed[(signed < 0.0) & (signed > -SIGN_TOLERANCE)]] = 0.0  # round-off
        theta = model.scales * x
        self.chi2_ = float(u @ u)
        self.report_ = check_parameters(theta, standard)
        problems = violations(self.report_)
        if problems:
            raise UserError(
                f"The consistent estimator's solution ({self.solver_}, status {self.status_}) "
                f"is not physically consistent: {'; '.join(problems)}. Tighten "
                "estimator.tolerance or raise estimator.psd_margin."
            )
        self.standard_coef_ = theta
        self.coef_ = np.asarray(standard.combination) @ theta
        self.solve_time_s_ = time.perf_counter() - start
        return self

    def _solve_with_floors(
        self, standard: StandardModel, rows: int
    ) -> tuple[_ScaledModel, np.ndarray, np.ndarray]:
        """Solve with the first residual floor; a later one only when the solver fails and the
        LS residual is below it (noise-free data that contradict the constraints)."""
        for index, floor in enumerate(RESIDUAL_FLOORS):
            model = _ScaledModel(standard, rows, floor)
            try:
                u, w = self._solve(model)
            except UserError:
                later = RESIDUAL_FLOORS[index + 1 :]
                if later and model.residual < later[-1]:
                    continue
                raise
            self.residual_floor_ = floor
            return model, u, w
        raise AssertionError("unreachable: the last floor re-raises")

    def _solve(self, model: _ScaledModel) -> tuple[np.ndarray, np.ndarray]:
        """(u, w) of the MAP problem: configured solver, then the fallback (UserError)."""
        import cvxpy as cp  # already imported by fit

        u = cp.Variable(model.rank)
        w = cp.Variable(model.null.shape[1])
        objective = cp.sum_squares(u)
        if model.null.shape[1]:
            objective = objective + self.params.regularization * cp.sum_squares(w - model.w_nom)
        constraints = []
        margin = self.params.psd_margin * np.eye(4)
        for k in range(model.n_links):  # vec(J_k / M_k) = offset + on_u @ u + on_w @ w
            rows = slice(N_LINK * k, N_LINK * (k + 1))
            offset, on_u, on_w = (
                PSEUDO_INERTIA_MAP @ m[rows] for m in (model.x_ls, model.on_u, model.null)
            )
            pseudo = offset + on_u @ u + (on_w @ w if model.null.shape[1] else 0.0)
            constraints.append(cp.reshape(pseudo, (4, 4), order="C") >> margin)
        rows = model.signed
        if rows.size:
            expression = model.x_ls[rows] + model.on_u[rows] @ u
            if model.null.shape[1]:
                expression = expression + model.null[rows] @ w
            constraints.append(expression >= 0.0)
        problem = cp.Problem(cp.Minimize(objective), constraints)
        attempts = [self.params.solver]
        if self.params.fallback and self.params.fallback != self.params.solver:
            attempts.append(self.params.fallback)
        failures = []
        for name in attempts:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # cvxpy warns on inaccurate solutions
                    problem.solve(solver=name.upper(), **self._options(name))
            except cp.SolverError as error:
                failures.append(f"{name}: {error}")
                continue
            if problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and u.value is not None:
                self.solver_, self.status_ = name, str(problem.status)
                values_w = w.value if model.null.shape[1] else np.zeros(0)
                return np.asarray(u.value, dtype=float), np.asarray(values_w, dtype=float)
            failures.append(f"{name}: status {problem.status}")
        raise UserError(
            "The consistent estimator's conic solver failed ("
            + "; ".join(failures)
            + "). Try another estimator.solver (clarabel, scs), a larger "
            "estimator.max_iterations or a looser estimator.tolerance; if the problem is "
            "reported infeasible, lower estimator.psd_margin."
        )

    def _options(self, name: str) -> dict[str, float | int]:
        tol, iterations = self.params.tolerance, self.params.max_iterations
        if name == "clarabel":
            return {
                "max_iter": iterations,
                "tol_gap_abs": tol,
                "tol_gap_rel": tol,
                "tol_feas": tol,
                "tol_ktratio": min(tol, 1e-6),
            }
        scs_tol = max(tol, 1e-9)
        return {"max_iters": 1000 * iterations, "eps_abs": scs_tol, "eps_rel": scs_tol}

    def _feasible(self, model: _ScaledModel, x: np.ndarray) -> bool:
        """Every constraint holds at scaled parameters x (pseudo-inertia with half the margin)."""
        if np.any(x[model.signed] < 0.0):
            return False
        threshold = 0.5 * self.params.psd_margin
        for k in range(model.n_links):
            pseudo = (PSEUDO_INERTIA_MAP @ x[N_LINK * k : N_LINK * (k + 1)]).reshape(4, 4)
            if np.linalg.eigvalsh(pseudo)[0] < threshold:
                return False
        return True


@hookimpl
def register_estimators(register) -> None:
    register("consistent", ConsistentEstimator, ConsistentParams)
