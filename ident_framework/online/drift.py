"""Change detection on the a-priori residual: a two-sided CUSUM per joint, in sigma units.

Per joint, the a-priori residual e (Nm) over its running standard deviation sigma (EWMA, time
constant `sigma_window_s` s): z = e / sigma, S+ = max(0, S+ + z - k), S- = max(0, S- - z - k).
An alarm fires when either exceeds h (k, h in sigma); none during the first `warmup_s` s nor
within `holdoff_s` s of the last one, after which the statistics restart at 0. sigma is frozen
while a joint's statistic is above h/10; a joint slower than `min_speed` (rad/s) is held.

Rationale: docs/design.md#online-drift-detection
"""

from __future__ import annotations

import math

import numpy as np


class CusumDetector:
    """Feed `update(t, residual)` ((n,) Nm); returns the joints (0-based) that alarmed."""

    def __init__(
        self,
        n_joints: int,
        rate_hz: float,
        allowance_sigma: float,
        threshold_sigma: float,
        sigma_window_s: float,
        warmup_s: float,
        holdoff_s: float,
        min_speed: float = 0.0,
    ):
        self.min_speed = float(min_speed)
        self.k, self.h = float(allowance_sigma), float(threshold_sigma)
        self.warmup_s, self.holdoff_s = float(warmup_s), float(holdoff_s)
        self._beta = 1.0 - math.exp(-1.0 / (sigma_window_s * rate_hz))  # EWMA weight per sample
        self._var = np.zeros(n_joints)
        self._weight = 0.0  # bias correction of the EWMA start
        self.s_pos = np.zeros(n_joints)
        self.s_neg = np.zeros(n_joints)
        self._t0: float | None = None
        self._last_alarm = -math.inf

    @property
    def sigma(self) -> np.ndarray:
        """(n,) running residual standard deviation, Nm."""
        if self._weight <= 0:
            return np.full(len(self._var), np.nan)
        return np.sqrt(self._var / self._weight)

    @property
    def statistic(self) -> np.ndarray:
        """(n,) max(S+, S-) / h: 1 is the alarm level."""
        return np.maximum(self.s_pos, self.s_neg) / self.h

    def reset_statistics(self) -> None:
        self.s_pos[:] = 0.0
        self.s_neg[:] = 0.0

    def update(self, t: float, residual: np.ndarray, speed: np.ndarray | None = None) -> np.ndarray:
        """residual (n,) Nm; speed (n,) |dq| rad/s (None: all joints moving)."""
        if self._t0 is None:
            self._t0 = t
        beta = self._beta
        moving = np.ones(len(residual), bool) if speed is None else speed >= self.min_speed
        quiet = (np.maximum(self.s_pos, self.s_neg) < 0.1 * self.h) & moving
        if self._weight > 0:
            sigma = np.sqrt(self._var / self._weight)
            z = residual / np.maximum(sigma, 1e-12)
        else:
            z = np.zeros_like(residual)
        # sigma tracks e² only where no change is building up
        self._var = np.where(quiet, (1 - beta) * self._var + beta * residual * residual, self._var)
        self._weight = (1 - beta) * self._weight + beta
        armed = t - self._t0 >= self.warmup_s and t - self._last_alarm >= self.holdoff_s
        if not armed:
            self.reset_statistics()
            return np.empty(0, dtype=int)
        z = np.where(moving, z, 0.0)
        k = np.where(moving, self.k, 0.0)  # a resting joint's statistics are held
        np.maximum(self.s_pos + z - k, 0.0, out=self.s_pos)
        np.maximum(self.s_neg - z - k, 0.0, out=self.s_neg)
        fired = np.flatnonzero((self.s_pos > self.h) | (self.s_neg > self.h))
        if fired.size:
            self._last_alarm = t
            self.reset_statistics()
        return fired
