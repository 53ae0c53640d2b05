"""Sliding-window least squares, re-solved at every sample (`online.estimator.method=sliding_ls`).

With phi (n, r) regressor rows and y (n,) torques in Nm per sample:
theta_k = argmin sum_{i in window} ||y_i - phi_i theta||² + ridge ||theta - prior||², over the
last `window` to `window + block` samples. `restart_window` drops every block and keeps the
estimate as the prior; `shorten(blocks)` uses only the newest blocks (a shorter memory).

Rationale: docs/design.md#sliding-window-least-squares
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from scipy.linalg.lapack import dposv


class SlidingWindowLeastSquares:
    """LS over the last `window` samples (see the module docstring); `update` per sample."""

    def __init__(self, prior: np.ndarray, window: int, block: int, ridge: float):
        if window < 1 or block < 1 or not ridge > 0:
            raise ValueError(f"window, block >= 1 and ridge > 0 needed: {window}, {block}, {ridge}")
        self.window, self.block, self.ridge = int(window), int(block), float(ridge)
        self.max_blocks = max(math.ceil(self.window / self.block), 1)
        self.active_blocks = self.max_blocks
        self.r = len(prior)
        self._blocks: deque[tuple[np.ndarray, np.ndarray, float, int, int]] = deque()
        self.time_: float | None = None
        self.restart(prior)

    # ------------------------------------------------------------------ state
    def restart(self, prior: np.ndarray) -> None:
        """Forget every sample; estimate and prior = `prior` (r,)."""
        self.prior = np.asarray(prior, dtype=float).reshape(-1).copy()
        self._theta = self.prior.copy()
        self._blocks.clear()
        self._clear_partial()
        self._resum()

    def restart_window(self) -> None:
        """Forget every sample, keep the current estimate (as the new prior)."""
        self.restart(self._theta)

    def shorten(self, blocks: int | None) -> None:
        """Use only the newest `blocks` completed blocks (None: the whole window again)."""
        blocks = self.max_blocks if blocks is None else min(max(int(blocks), 1), self.max_blocks)
        if blocks != self.active_blocks:
            self.active_blocks = blocks
            self._resum()

    def _clear_partial(self) -> None:
        r = self.r
        self._a = np.zeros((r, r))
        self._b = np.zeros(r)
        self._yy = 0.0
        self._samples = self._rows = 0

    def _resum(self) -> None:
        """The window's sums from its completed blocks (never by subtraction)."""
        active = list(self._blocks)[-self.active_blocks :]
        r = self.r
        self._sum_a = sum((blk[0] for blk in active), np.zeros((r, r)))
        self._sum_b = sum((blk[1] for blk in active), np.zeros(r))
        self._sum_yy = math.fsum(blk[2] for blk in active)
        self._sum_samples = sum(blk[3] for blk in active)
        self._sum_rows = sum(blk[4] for blk in active)

    # ------------------------------------------------------------------ estimation
    def update(self, phi: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
        """One sample: phi (n, r), y (n,) Nm, t s. Returns the a-priori error y - phi theta
        (n,) Nm; the estimate is then the window's solution. Non-finite data raise ValueError
        and leave the state unchanged."""
        error = y - phi @ self._theta
        if not (np.isfinite(error).all() and np.isfinite(phi).all()):
            raise ValueError(f"non-finite sample at t = {t} s (phi or y holds NaN/inf)")
        self._a += phi.T @ phi
        self._b += phi.T @ y
        self._yy += float(y @ y)
        self._samples += 1
        self._rows += len(y)
        if self._samples >= self.block:
            self._blocks.append((self._a, self._b, self._yy, self._samples, self._rows))
            while len(self._blocks) > self.max_blocks:
                self._blocks.popleft()
            self._clear_partial()
            self._resum()
        self._theta = self._solve()
        self.time_ = float(t)
        return error

    def _normal_equations(self) -> tuple[np.ndarray, np.ndarray]:
        return self._sum_a + self._a, self._sum_b + self._b

    def _solve(self) -> np.ndarray:
        a, b = self._normal_equations()
        lhs = a + self.ridge * np.eye(self.r)
        rhs = b + self.ridge * self.prior
        _, x, info = dposv(lhs, rhs, lower=1)
        # A + ridge I not positive definite: lstsq
        return x if info == 0 else np.linalg.lstsq(lhs, rhs, rcond=None)[0]

    # ------------------------------------------------------------------ results
    @property
    def coef_(self) -> np.ndarray:
        """(r,) current estimate (a copy)."""
        return self._theta.copy()

    @property
    def samples(self) -> int:
        """Samples the current solution uses."""
        return self._sum_samples + self._samples

    @property
    def coef_std_(self) -> np.ndarray | None:
        """(r,) standard deviations sqrt(sigma² diag (A + ridge I)^-1), sigma² the window's
        residual variance (SSE / (rows - r)); None before enough rows."""
        rows = self._sum_rows + self._rows
        if rows <= self.r:
            return None
        a, b = self._normal_equations()
        theta = self._theta
        sse = max(self._sum_yy + self._yy - 2.0 * float(theta @ b) + float(theta @ a @ theta), 0.0)
        sigma2 = sse / (rows - self.r)
        inverse = np.linalg.inv(a + self.ridge * np.eye(self.r))
        return np.sqrt(np.maximum(sigma2 * np.diag(inverse), 0.0))
