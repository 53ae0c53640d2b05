"""Least squares pulled toward the nominal model by the log-det divergence of the links'
pseudo-inertias: physically consistent by construction, solved by Newton's method in numpy.

With J_k(θ) the 4×4 pseudo-inertia of link k (kg, kg·m, kg·m²; `model/physical_consistency.py`)
and J0_k the nominal model's:

    minimise  ½ χ²(θ) + weight Σ_k D(J_k ‖ J0_k) − μ Σ_i log θ_i   (i: friction, rotor inertia)
    D(J ‖ J0) = tr(J0⁻¹ J) − log det(J0⁻¹ J) − 4     (≥ 0, zero only at J = J0)

χ²(θ) = |R θ − r|² / σ²: the data term from the triangular factor of [W | τ], in units of the
least-squares residual variance σ² (Nm²). A singular nominal J0 gets `NOMINAL_FLOOR`.

Rationale: docs/design.md#geometric-prior-estimator
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ident_framework.model.physical_consistency import N_LINK, PSEUDO_INERTIA_MAP

NOMINAL_FLOOR = 1e-3  # share of M diag(L², L², L², 1) added to a nominal J0 that is not ≻ 0
BARRIER_END = 1e-6  # χ² units: the log barrier's final weight on friction / rotor inertia
BARRIER_START = 1e-1
BARRIER_STEP = 0.01
NEWTON_TOLERANCE = 1e-6  # Newton decrement² (χ² units) at which a stage has converged
MAX_NEWTON_STEPS = 200  # per barrier stage
# A cold start solves a path of weights from CONTINUATION_START down to the one asked for, each
# from the last one's estimate (design.md)
CONTINUATION_START = 1e5
CONTINUATION_FACTOR = 10.0
_BASIS = PSEUDO_INERTIA_MAP.reshape(4, 4, N_LINK).transpose(2, 0, 1)  # (10, 4, 4): dJ/dπ_a


@dataclass
class PriorLayout:
    """Where the parameters sit in θ: the first 10 n_links entries are the links' inertial
    parameters (Pinocchio's order about the joint frame), `signed` (k,) marks friction and
    rotor inertia (kept > 0), `nominal` (k,) the robot model's values (friction 0)."""

    n_links: int
    nominal: np.ndarray
    signed: np.ndarray

    def nominal_pseudo_inertias(self) -> np.ndarray:
        """(n_links, 4, 4) J0 of every link, made ≻ 0 where the nominal one is not."""
        links = self.nominal[: N_LINK * self.n_links].reshape(self.n_links, N_LINK)
        j0 = np.einsum("aij,ka->kij", _BASIS, links)
        masses = np.where(links[:, 0] > 0.0, links[:, 0], 0.0)
        mass = np.maximum(masses, 0.01 * masses.max(initial=0.0))
        mass[mass <= 0.0] = 1.0
        second = np.maximum(0.5 * (links[:, 4] + links[:, 6] + links[:, 9]), 0.0)
        radius2 = np.maximum(second / mass, 1e-6)
        for k in range(self.n_links):
            if np.linalg.eigvalsh(j0[k])[0] <= 1e-9 * max(mass[k] * radius2[k], mass[k]):
                j0[k] = j0[k] + NOMINAL_FLOOR * mass[k] * np.diag([*([radius2[k]] * 3), 1.0])
        return j0


@dataclass
class GeometricFit:
    """theta (k,) the estimate; chi2 the data term's excess over least squares (units of σ²);
    divergence Σ_k D(J_k ‖ J0_k); newton_steps; converged (within MAX_NEWTON_STEPS);
    `covariance` (k, k): the inverse Hessian at theta (Laplace), mapped by `transform` to θ;
    zero for parameters no data row depends on."""

    theta: np.ndarray
    chi2: float
    divergence: float
    newton_steps: int
    hessian: np.ndarray
    transform: np.ndarray
    converged: bool = True

    @cached_property
    def covariance(self) -> np.ndarray:
        inverse = np.linalg.pinv(self.hessian, rcond=1e-14, hermitian=True)
        return self.transform @ inverse @ self.transform.T


class _Objective:
    """The objective in rotated coordinates z: θ = θ_fixed + T z with T = diag(s) V over the
    excited parameters, V from the SVD R diag(s) = U Σ Vᵀ of the column-equilibrated data
    factor, so the data term ½ Σ_i (Σ_i z_i − c_i)² / σ² (c = Uᵀ r) is diagonal."""

    def __init__(
        self, r_factor: np.ndarray, sigma2: float, layout: PriorLayout, weight: float
    ) -> None:
        k = r_factor.shape[1] - 1
        r_w, rhs = r_factor[:, :k], r_factor[:, k]
        self.layout, self.weight, self.sigma2 = layout, weight, sigma2
        self.j0 = layout.nominal_pseudo_inertias()
        self.j0_inv = np.linalg.inv(self.j0)
        self.logdet_j0 = np.linalg.slogdet(self.j0)[1]
        self.inertial = N_LINK * layout.n_links
        # parameters no row of the data depends on (a joint that never moves) stay at their
        # nominal value: nothing could bound them (the barrier alone would push them to ∞)
        norms = np.linalg.norm(r_w, axis=0)
        unexcited = norms <= 1e-7 * max(float(norms.max(initial=0.0)), 1e-300)
        unexcited[: self.inertial] = False
        self.free, self.fixed = np.flatnonzero(~unexcited), np.flatnonzero(unexcited)
        self.theta_fixed = np.where(unexcited, np.asarray(layout.nominal, dtype=float), 0.0)
        self.signed = np.flatnonzero(np.asarray(layout.signed, dtype=bool) & ~unexcited)
        # equilibrated columns (an inertial column the data barely see: the unit of a weak one)
        scale = 1.0 / np.maximum(norms[self.free], 1e-7 * max(float(norms.max()), 1e-300))
        u, self.singular, self.vt = np.linalg.svd(r_w[:, self.free] * scale, full_matrices=False)
        self.scale = scale
        self.transform = np.zeros((k, len(self.free)))
        self.transform[self.free] = scale[:, None] * self.vt.T
        self.target = u.T @ rhs
        self.reachable = self.singular > 1e-12 * max(float(self.singular.max(initial=0.0)), 1e-300)
        # the last θs' pseudo-inertias and Cholesky factors (a Newton step asks for the same
        # θ's up to four times: feasible, value, derivatives, max_step), by θ's bytes
        self._pseudo: dict[bytes, np.ndarray] = {}
        self._lower: dict[bytes, np.ndarray] = {}
        n = layout.n_links
        # the links' 10 x 10 blocks of the Hessian in θ, as (rows, columns) in link order
        first = N_LINK * np.arange(n)[:, None, None]
        block = np.arange(N_LINK)
        self._block_rows = np.broadcast_to(first + block[:, None], (n, N_LINK, N_LINK)).ravel()
        self._block_columns = np.broadcast_to(first + block, (n, N_LINK, N_LINK)).ravel()

    def theta(self, z: np.ndarray) -> np.ndarray:
        return self.theta_fixed + self.transform @ z

    def coordinates(self, theta: np.ndarray) -> np.ndarray:
        """z of a θ whose fixed parameters are at their nominal values."""
        return self.vt @ (theta[self.free] / self.scale)

    def pseudo(self, theta: np.ndarray) -> np.ndarray:
        """(n_links, 4, 4) the links' pseudo-inertias J(θ) (read-only: kept for the next
        asks of the same θ)."""
        key = theta.tobytes()
        if key not in self._pseudo:
            links = theta[: self.inertial].reshape(self.layout.n_links, N_LINK)
            j = np.einsum("aij,ka->kij", _BASIS, links)
            j.flags.writeable = False
            _keep(self._pseudo, key, j)
        return self._pseudo[key]

    def lower(self, theta: np.ndarray) -> np.ndarray:
        """The Cholesky factors of `pseudo(theta)` (LinAlgError: a J not ≻ 0)."""
        key = theta.tobytes()
        if key not in self._lower:
            factor = np.linalg.cholesky(self.pseudo(theta))
            factor.flags.writeable = False
            _keep(self._lower, key, factor)
        return self._lower[key]

    def feasible(self, theta: np.ndarray) -> bool:
        if np.any(theta[self.signed] <= 0.0):
            return False
        try:
            self.lower(theta)
        except np.linalg.LinAlgError:
            return False
        return True

    def max_step(self, theta: np.ndarray, direction: np.ndarray) -> float:
        """The largest t with θ + t·direction still strictly feasible (inf: unbounded): signed
        entries stay > 0, and J + t dJ ≻ 0 for every link (the eigenvalues λ of
        L⁻¹ dJ L⁻ᵀ, J = L Lᵀ: t < −1/λ_min)."""
        d = direction[self.signed]
        falling = d < 0.0
        t = float(np.min(-theta[self.signed][falling] / d[falling])) if falling.any() else np.inf
        lower_inv = np.linalg.inv(self.lower(theta))
        change = lower_inv @ self.pseudo(direction) @ lower_inv.transpose(0, 2, 1)
        if not np.all(np.isfinite(change)):
            return 0.0
        lam_min = np.linalg.eigvalsh(change)[:, 0]
        if np.any(lam_min < 0.0):
            t = min(t, float(np.min(-1.0 / lam_min[lam_min < 0.0])))
        return t

    def chi2(self, z: np.ndarray) -> float:
        """The data term's excess over the least-squares minimum, units of σ²."""
        residual = (self.singular * z - self.target)[self.reachable]
        return float(residual @ residual) / self.sigma2

    def value(self, z: np.ndarray, theta: np.ndarray, mu: float) -> float:
        prior = self.weight * self.divergence(theta) if self.weight > 0.0 else 0.0
        return 0.5 * self.chi2(z) + prior - mu * float(np.sum(np.log(theta[self.signed])))

    def divergence(self, theta: np.ndarray) -> float:
        j = self.pseudo(theta)
        trace = np.einsum("kij,kji->", self.j0_inv, j)
        logdet = np.linalg.slogdet(j)[1]
        return float(trace - logdet.sum() + self.logdet_j0.sum() - 4 * self.layout.n_links)

    def derivatives(
        self, z: np.ndarray, theta: np.ndarray, mu: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the objective in z."""
        grad_theta = np.zeros(len(theta))
        hess_theta = np.zeros((len(theta), len(theta)))
        if self.weight > 0.0:
            j_inv = np.linalg.inv(self.pseudo(theta))
            g_links = np.einsum("kij,aji->ka", self.j0_inv - j_inv, _BASIS)
            # tr(J⁻¹ E_a J⁻¹ E_b): the log-det's curvature along the basis matrices
            left = np.einsum("kij,ajl->kail", j_inv, _BASIS)
            h_links = np.einsum("kaij,kbji->kab", left, left)
            grad_theta[: self.inertial] = self.weight * g_links.ravel()
            hess_theta[self._block_rows, self._block_columns] = self.weight * h_links.ravel()
        if self.signed.size:
            values = theta[self.signed]
            grad_theta[self.signed] -= mu / values
            hess_theta[self.signed, self.signed] += mu / values**2
        t = self.transform
        data_scale = self.singular / self.sigma2
        grad = t.T @ grad_theta + data_scale * (self.singular * z - self.target)
        hess = t.T @ hess_theta @ t
        diagonal = np.arange(len(hess))
        hess[diagonal, diagonal] += data_scale * self.singular
        return grad, hess


_KEPT = 4  # θs whose pseudo-inertias (and factors) `_Objective` keeps


def _keep(cache: dict[bytes, np.ndarray], key: bytes, value: np.ndarray) -> None:
    """cache[key] = value, the oldest entries dropped beyond `_KEPT`."""
    while len(cache) >= _KEPT:
        del cache[next(iter(cache))]
    cache[key] = value


def fit_geometric(
    r_factor: np.ndarray,
    sigma2: float,
    layout: PriorLayout,
    weight: float,
    start: np.ndarray | None = None,
) -> GeometricFit:
    """The regularised estimate from `r_factor` (the triangular factor of [W | τ] in the
    standard parameters), the residual variance `sigma2` (Nm²), `layout` and the prior's
    `weight` (> 0). `start`: a feasible θ to begin from (default: the nominal model, and a
    path of weights from CONTINUATION_START down; `newton_steps` counts the whole path)."""
    if start is not None or weight >= CONTINUATION_START:
        return _solve_objective(_Objective(r_factor, sigma2, layout, weight), start)
    path = [weight]
    while path[-1] * CONTINUATION_FACTOR < CONTINUATION_START * (1 + 1e-9):
        path.append(path[-1] * CONTINUATION_FACTOR)
    fits = fit_weights(r_factor, sigma2, layout, path[::-1])
    if fits[-1] is None:
        raise np.linalg.LinAlgError("the Newton system is singular at every weight")
    steps = sum(f.newton_steps for f in fits if f is not None)
    return dataclasses.replace(fits[-1], newton_steps=steps)


def fit_weights(
    r_factor: np.ndarray,
    sigma2: float,
    layout: PriorLayout,
    weights: list[float],
    start: np.ndarray | None = None,
) -> list[GeometricFit | None]:
    """`fit_geometric` of one factor with each of `weights` in order, each from the last
    estimate (the first from `start`); None for a weight whose solve fails on degenerate
    data."""
    objective = _Objective(r_factor, sigma2, layout, 0.0)
    fits: list[GeometricFit | None] = []
    theta = start
    for weight in weights:
        objective.weight = float(weight)
        try:
            fits.append(_solve_objective(objective, theta))
        except np.linalg.LinAlgError:
            fits.append(None)
        theta = None if fits[-1] is None else fits[-1].theta
    return fits


def _solve_objective(objective: _Objective, start: np.ndarray | None) -> GeometricFit:
    """The minimum of `objective` from a feasible `start` (else the nominal model)."""
    layout = objective.layout
    warm, theta = False, None
    if start is not None:  # its excited parameters, the others at their nominal values
        theta = np.array(start, dtype=float)
        theta[objective.fixed] = objective.theta_fixed[objective.fixed]
        warm = objective.feasible(theta)
    z = objective.coordinates(theta) if warm else None
    if z is None or not objective.feasible(objective.theta(z)):  # (round-off near the bound)
        warm = False
        z = objective.coordinates(_nominal_start(layout, objective))
    steps, converged = 0, True
    # from a given feasible start (a neighbouring weight's solution): straight at the end
    mu = BARRIER_START if objective.signed.size and not warm else BARRIER_END
    while True:
        z, taken, done = _newton(objective, z, mu)
        steps += taken
        converged &= done
        if mu <= BARRIER_END:
            break
        mu = max(mu * BARRIER_STEP, BARRIER_END)
    theta = objective.theta(z)
    _, hessian = objective.derivatives(z, theta, mu)
    return GeometricFit(
        theta, objective.chi2(z), objective.divergence(theta), steps, hessian,
        objective.transform, converged,
    )  # fmt: skip


def _nominal_start(layout: PriorLayout, objective: _Objective) -> np.ndarray:
    """The nominal model (J0 floored where singular), friction and rotor inertia > 0."""
    theta = np.array(layout.nominal, dtype=float)
    # the inertial parameters of the (floored) nominal J0: π = M⁺ vec(J0)
    flat = objective.j0.reshape(layout.n_links, 16)
    theta[: objective.inertial] = (np.linalg.pinv(PSEUDO_INERTIA_MAP) @ flat.T).T.ravel()
    signed = objective.signed
    norms = np.linalg.norm(objective.transform[signed], axis=1)
    theta[signed] = np.maximum(theta[signed], 0.1 * np.where(norms > 0, norms, 1.0))
    return theta


def _newton(objective: _Objective, z: np.ndarray, mu: float) -> tuple[np.ndarray, int, bool]:
    """Damped Newton on the objective at barrier weight `mu`, from a feasible z: (z, steps,
    whether it stopped before MAX_NEWTON_STEPS)."""
    theta = objective.theta(z)
    value = objective.value(z, theta, mu)
    for step in range(1, MAX_NEWTON_STEPS + 1):
        grad, hess = objective.derivatives(z, theta, mu)
        direction = _solve(hess, -grad)
        decrement2 = float(-grad @ direction)
        if not np.isfinite(decrement2) or decrement2 <= NEWTON_TOLERANCE:
            return z, step, True  # converged, or no finite step left (degenerate data)
        step_theta = objective.transform @ direction
        t = min(1.0, 0.95 * objective.max_step(theta, step_theta))
        while t > 1e-12:
            trial_z = z + t * direction
            trial = objective.theta(trial_z)  # θ of z itself: no drift from adding steps
            if objective.feasible(trial):
                trial_value = objective.value(trial_z, trial, mu)
                if trial_value <= value - 0.25 * t * decrement2:
                    break
            t *= 0.5
        else:
            # no decrease left at machine precision: converged only if Newton expected none
            return z, step, decrement2 <= 1e-9 * max(abs(value), 1.0)
        z, theta, value = trial_z, trial, trial_value
    return z, MAX_NEWTON_STEPS, False


def _solve(hess: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """H⁻¹ rhs by Cholesky of the diagonally scaled H; a tiny ridge where H is singular
    along a direction nothing constrains. A zero diagonal (degenerate data) can scale an entry
    past the float range: then no factor exists and the fallbacks decide, without a warning."""
    d = np.sqrt(np.maximum(np.diag(hess), 1e-300))
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = hess / d[:, None] / d[None, :]
    for jitter in (0.0, 1e-12, 1e-9, 1e-6):
        shifted = scaled + jitter * np.eye(len(d)) if jitter else scaled
        try:
            np.linalg.cholesky(shifted)  # positive definite: a descent direction
        except np.linalg.LinAlgError:
            continue
        return np.linalg.solve(shifted, rhs / d) / d
    return np.linalg.lstsq(hess, rhs, rcond=1e-12)[0]
