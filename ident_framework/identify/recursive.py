"""Recursive least squares with exponential forgetting, shared by `estimator=rls`
(`estimators/rls.py`, whole recordings) and the online service (`online/`, sample by sample).

One update per robot sample, all n joints at once: phi (n, r) are the sample's base regressor
rows, y (n,) its joint torques (Nm)::

    S = lam I_n + phi P phi^T,   K = P phi^T S^-1
    theta += K (y - phi theta),  P = (I - K phi) P / lam

`forgetting` lam is per sample (memory 1/(1 - lam) samples; 1: batch least squares with the
ridge 1/alpha). `max_trace` bounds trace(P) by variable forgetting (anti-windup).

Rationale: docs/design.md#recursive-least-squares
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from threadpoolctl import threadpool_limits

from ident_framework.hookspecs import LinearProblem
from ident_framework.params import Params, param
from ident_framework.triangular import stacked_r

DEFAULT_SAMPLE_PERIOD_S = 0.002  # s, UR's RTDE rate (500 Hz): the step assumed without times
_SYMMETRISE_EVERY = 256  # updates between explicit symmetrisations of P


@dataclass
class RecursiveLeastSquaresParams(Params):
    """forgetting: lam per sample (1: none); alpha: P0 = alpha I (large: a weak prior
    theta0 = 0); warm_start_s: s of data at the start solved by batch LS (0: off); max_trace:
    bound on trace(P) (None: alpha × r); checkpoint_s: s between two snapshots of theta;
    running_window_s: s over which the running RMSE of the a-priori error is taken."""

    forgetting: float = param(1.0, gt=0, le=1)
    alpha: float = param(1.0e6, gt=0, note="P0 = alpha I")
    warm_start_s: float = param(0.0, ge=0, unit="s", note="0: off")
    max_trace: float | None = param(None, gt=0)
    checkpoint_s: float = param(0.1, gt=0, unit="s")
    running_window_s: float = param(1.0, gt=0, unit="s")


class RecursiveLeastSquares:
    """Recursive least squares with forgetting, whole recordings (`fit`) or online (`update`).
    coef_ (r,), coef_std_ (r,), covariance_ (r, r) the matrix P, n_updates_, time_ (s),
    n_repairs_ (eigenvalue repairs of P), snapshots_ (times (k,) s, thetas (k, r)),
    running_rmse_ (times (k,) s, RMSE (k,) Nm) and running_rmse (Nm, current)."""

    def __init__(self, params: RecursiveLeastSquaresParams | None = None):
        self.params = params if params is not None else RecursiveLeastSquaresParams()
        self._theta: np.ndarray | None = None
        self.parameter_names: list[str] = []

    # ------------------------------------------------------------------ state
    def reset(self, n_parameters: int, parameter_names: Sequence[str] | None = None) -> None:
        """Start over with theta = 0, P = alpha I (scaled down to max_trace if larger)."""
        if n_parameters < 1:
            raise ValueError(f"n_parameters must be >= 1, got {n_parameters}")
        r = int(n_parameters)
        self.parameter_names = (
            list(parameter_names)
            if parameter_names is not None
            else [f"beta_{i + 1}" for i in range(r)]
        )
        if len(self.parameter_names) != r:
            raise ValueError(f"{len(self.parameter_names)} parameter names for {r} parameters")
        params = self.params
        self._max_trace = params.max_trace if params.max_trace is not None else params.alpha * r
        self._theta = np.zeros(r)
        self._p = np.eye(r) * min(params.alpha, self._max_trace / r)
        self._trace = float(self._p.trace())
        self._eye = np.eye(6)  # resized on first use for another joint count
        self._v = 0.0  # weighted residual sum of squares, Nm²
        self._w_samples = 0.0  # sum of weights over samples
        self._w2_samples = 0.0  # sum of squared weights over samples
        self._w_rows = 0.0  # sum of weights over rows
        self.n_updates_ = 0
        self.n_repairs_ = 0
        self.time_: float | None = None
        self._dt = DEFAULT_SAMPLE_PERIOD_S
        self._next_checkpoint: float | None = None
        self._window: deque[tuple[float, float, int]] = deque()
        self._window_sse = 0.0
        self._window_rows = 0
        self._window_pops = 0
        self._snapshot_t: list[float] = []
        self._snapshot_theta: list[np.ndarray] = []
        self._rmse: list[float] = []

    def set_state(self, theta: np.ndarray, covariance: np.ndarray | float | None = None) -> None:
        """Continue from base parameters `theta` (r,) with P = `covariance` ((r, r), or a
        scalar s for s I; None: alpha I), capped by max_trace."""
        theta = np.asarray(theta, dtype=float).reshape(-1)
        if self._theta is None or len(self._theta) != len(theta):
            self.reset(len(theta), self.parameter_names if self._theta is not None else None)
        r = len(theta)
        if covariance is None:
            covariance = min(self.params.alpha, self._max_trace / r)
        p = np.asarray(covariance, dtype=float)
        self._theta = theta.copy()
        self._set_p(np.eye(r) * float(p) if p.ndim == 0 else 0.5 * (p + p.T))

    def _set_p(self, p: np.ndarray) -> None:
        """P = `p` (symmetric), scaled down to trace(P) = max_trace if larger."""
        trace = float(p.trace())
        if trace > self._max_trace:
            p = p * (self._max_trace / trace)
        self._p = np.ascontiguousarray(p)
        self._trace = float(self._p.trace())

    @staticmethod
    def single_threaded() -> threadpool_limits:
        """Context manager limiting BLAS to one thread: wrap an online loop of `update` calls
        in it (entering costs ~0.3 ms, so not once per update)."""
        return threadpool_limits(limits=1, user_api="blas")

    # ------------------------------------------------------------------ results
    def _require(self) -> np.ndarray:
        if self._theta is None:
            raise RuntimeError("the estimator has seen no data: call fit, update or reset first")
        return self._theta

    @property
    def coef_(self) -> np.ndarray:
        """(r,) current base parameter estimate (a copy)."""
        return self._require().copy()

    @property
    def covariance_(self) -> np.ndarray:
        """(r, r) current P (a copy); sigma² c P is the covariance of coef_ (module doc)."""
        self._require()
        return self._p.copy()

    @property
    def coef_std_(self) -> np.ndarray | None:
        """(r,) standard deviations sqrt(sigma² c diag P), or None before any update."""
        if self._theta is None or self._w_samples <= 0.0:
            return None
        r = len(self._theta)
        c = self._w2_samples / self._w_samples
        dof = max(self._w_rows - r * c, 1.0)
        sigma2 = self._v / dof
        return np.sqrt(np.maximum(sigma2 * c * np.diag(self._p), 0.0))

    @property
    def running_rmse(self) -> float:
        """RMSE (Nm) of the a-priori errors of the last `running_window_s` seconds."""
        if self._window_rows == 0:
            return float("nan")
        return math.sqrt(max(self._window_sse, 0.0) / self._window_rows)

    @property
    def snapshots_(self) -> tuple[np.ndarray, np.ndarray]:
        """(times (k,) s, thetas (k, r)) recorded every `checkpoint_s` s and at the end."""
        r = 0 if self._theta is None else len(self._theta)
        thetas = np.array(self._snapshot_theta) if self._snapshot_theta else np.empty((0, r))
        return np.array(self._snapshot_t, dtype=float), thetas

    @property
    def running_rmse_(self) -> tuple[np.ndarray, np.ndarray]:
        """(times (k,) s, running RMSE (k,) Nm) at the snapshot times."""
        return np.array(self._snapshot_t, dtype=float), np.array(self._rmse, dtype=float)

    # ------------------------------------------------------------------ estimation
    def fit(self, problem: LinearProblem) -> RecursiveLeastSquares:
        """Run over a whole recording (`problem.chunks()`, in time order); returns self."""
        self.reset(problem.n_parameters, problem.parameter_names)
        warm_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        warm_end: float | None = None
        warming = self.params.warm_start_s > 0.0
        step = self._step
        with self.single_threaded():
            for t, w, tau in problem.chunks():
                t = np.asarray(t, dtype=float)
                w = np.ascontiguousarray(w, dtype=float)
                tau = np.ascontiguousarray(tau, dtype=float)
                start = 0
                if warming:
                    if warm_end is None:
                        warm_end = float(t[0]) + self.params.warm_start_s
                    start = int(np.searchsorted(t, warm_end, side="left"))
                    warm_rows.append((t[:start], w[:start], tau[:start]))
                    if start == len(t):
                        continue
                    self._warm_start_from(warm_rows)
                    warming = False
                for k in range(start, len(t)):
                    step(w[k], tau[k], float(t[k]))
            if warming and warm_rows:  # the recording is shorter than the warm-start window
                self._warm_start_from(warm_rows)
        self._checkpoint(force=True)
        return self

    def _warm_start_from(self, rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        t = np.concatenate([r[0] for r in rows])
        if len(t):
            self.warm_start(
                np.concatenate([r[1] for r in rows]), np.concatenate([r[2] for r in rows]), t
            )

    def warm_start(
        self, phi: np.ndarray, y: np.ndarray, t: np.ndarray | None = None
    ) -> RecursiveLeastSquares:
        """Replace the state by batch LS on m samples: phi (m, n, r), y (m, n) Nm, t (m,) s
        (None: the assumed sample period). theta0 minimises ||phi theta - y||² +
        ||theta||²/alpha; P0 = (sum phi^T phi + I/alpha)^-1."""
        phi = np.asarray(phi, dtype=float)
        if phi.ndim == 2:
            phi = phi[:, None, :]
        y = np.asarray(y, dtype=float).reshape(phi.shape[0], phi.shape[1])
        m, n, r = phi.shape
        if self._theta is None or len(self._theta) != r:
            self.reset(r)
        rows = np.hstack([phi.reshape(m * n, r), y.reshape(m * n, 1)])
        ridge = np.hstack([np.eye(r) / math.sqrt(self.params.alpha), np.zeros((r, 1))])
        with self.single_threaded():
            factor = stacked_r([rows, ridge])
        r_w = factor[:r, :r]
        self._theta = np.linalg.solve(r_w, factor[:r, r])
        r_inv = np.linalg.solve(r_w, np.eye(r))
        p = r_inv @ r_inv.T
        self._set_p(0.5 * (p + p.T))
        self._v = float(factor[r, r] ** 2)
        self._w_samples = self._w2_samples = float(m)
        self._w_rows = float(m * n)
        self.n_updates_ += m
        if t is None:
            t_last = (self.time_ if self.time_ is not None else 0.0) + m * self._dt
        else:
            t = np.asarray(t, dtype=float)
            t_last = float(t[-1])
            if m > 1:
                self._dt = float((t[-1] - t[0]) / (m - 1))
        self.time_ = self._next_checkpoint = t_last
        self._checkpoint()
        return self

    def update(self, phi: np.ndarray, y: np.ndarray, t: float | None = None) -> np.ndarray:
        """One sample: phi (n, r) base regressor rows (or (r,)), y (n,) torques in Nm, t in s
        (None: the previous time + the last step). Returns the a-priori error y - phi theta
        (n,) in Nm; non-finite data raise ValueError and leave the state unchanged."""
        phi = np.asarray(phi, dtype=float)
        if phi.ndim == 1:
            phi = phi[None, :]
        y = np.asarray(y, dtype=float).reshape(-1)
        if phi.ndim != 2 or y.shape[0] != phi.shape[0]:
            raise ValueError(f"phi must be (n, r) and y (n,): got phi {phi.shape}, y {np.shape(y)}")
        if self._theta is None:
            self.reset(phi.shape[1])
        elif phi.shape[1] != len(self._theta):
            raise ValueError(f"phi has {phi.shape[1]} columns, the estimator {len(self._theta)}")
        if t is None:
            t = (self.time_ + self._dt) if self.time_ is not None else 0.0
        return self._step(phi, y, float(t))

    def _step(self, phi: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
        """The update itself; phi (n, r) and y (n,) float arrays, t in s."""
        p, theta = self._p, self._theta
        n = phi.shape[0]
        lam = self.params.forgetting
        if self._trace > lam * self._max_trace:  # anti-windup: forget less, trace <= bound
            lam = self._trace / self._max_trace
        eye = self._eye
        if eye.shape[0] != n:
            eye = self._eye = np.eye(n)
        dpotrf, dtrtrs = _cholesky_routines()
        for repaired in (False, True):
            p_phi = p @ phi.T  # (r, n) = (phi P)^T, P symmetric
            s = phi @ p_phi
            s += lam * eye
            chol, info = dpotrf(s, lower=1)
            if info == 0:
                break
            if repaired:
                raise FloatingPointError(f"innovation matrix not positive definite at t = {t} s")
            self._repair()  # S = lam I + phi P phi^T is PD whenever P is: repair P, once
            p = self._p
        error = y - phi @ theta
        g, _ = dtrtrs(chol, p_phi.T, lower=1)  # (n, r) = L^-1 phi P
        z, _ = dtrtrs(chol, error, lower=1)
        zz = float(z @ z)
        sse = float(error @ error)
        if not (math.isfinite(zz) and math.isfinite(sse)):
            raise ValueError(f"non-finite sample at t = {t} s (phi or y holds NaN/inf)")
        theta += g.T @ z
        p -= g.T @ g
        if lam != 1.0:
            p *= 1.0 / lam
        self.n_updates_ += 1
        if self.n_updates_ % _SYMMETRISE_EVERY == 0:
            p += p.T
            p *= 0.5
        self._trace = float(p.trace())
        self._v = lam * (self._v + zz)
        self._w_samples = lam * self._w_samples + 1.0
        self._w2_samples = lam * lam * self._w2_samples + 1.0
        self._w_rows = lam * self._w_rows + n
        # running RMSE of the a-priori error over the last running_window_s seconds
        window = self._window
        window.append((t, sse, n))
        self._window_sse += sse
        self._window_rows += n
        horizon = t - self.params.running_window_s
        while window[0][0] <= horizon:
            _, old_sse, old_rows = window.popleft()
            self._window_sse -= old_sse
            self._window_rows -= old_rows
            self._window_pops += 1
        if self._window_pops > len(window):  # exact sum again, no drift of the difference
            self._window_sse = math.fsum(item[1] for item in window)
            self._window_pops = 0
        if self.time_ is not None and t > self.time_:
            self._dt = t - self.time_
        self.time_ = t
        if self._next_checkpoint is None:
            self._next_checkpoint = t
        if t >= self._next_checkpoint:
            self._checkpoint()
        return error

    def _checkpoint(self, force: bool = False) -> None:
        if self._theta is None or self.time_ is None:
            return
        t = self.time_
        if force and self._snapshot_t and self._snapshot_t[-1] == t:
            return
        self._snapshot_t.append(t)
        self._snapshot_theta.append(self._theta.copy())
        self._rmse.append(self.running_rmse)
        step = self.params.checkpoint_s
        if self._next_checkpoint is None:
            self._next_checkpoint = t
        while self._next_checkpoint <= t:
            self._next_checkpoint += step

    def _repair(self) -> None:
        """Make P symmetric positive definite again (eigenvalues clipped to a floor)."""
        p = 0.5 * (self._p + self._p.T)
        values, vectors = np.linalg.eigh(p)
        floor = max(float(values[-1]), 1e-300) * 1e-12
        if not np.all(np.isfinite(values)):
            raise FloatingPointError("P is not finite: the estimator diverged")
        p = (vectors * np.maximum(values, floor)) @ vectors.T
        self._p = np.ascontiguousarray(0.5 * (p + p.T))
        self._trace = float(self._p.trace())
        self.n_repairs_ += 1


@cache
def _cholesky_routines() -> tuple:
    """LAPACK's dpotrf and dtrtrs, imported on first use (scipy.linalg takes 0.16 s)."""
    from scipy.linalg.lapack import dpotrf, dtrtrs

    return dpotrf, dtrtrs
