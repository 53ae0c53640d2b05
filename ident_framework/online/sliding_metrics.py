"""Running statistics of the streaming step in constant time and memory.

`SlidingFit`: over the last `window` samples, per joint j, RMSE_j = sqrt(mean e²) and
R²_j = 1 - Σ e² / Σ (τ - mean_j τ)², about each joint's own mean (the pooled R² too). Running
sums are recomputed exactly once per window length so that round-off cannot accumulate.
`LatencyStats`: a log-spaced histogram over the whole run and a ring of the recent values.
"""

from __future__ import annotations

import numpy as np

from ident_framework.online.ring_buffer import RingBuffer

_EDGES_S = np.logspace(-6, 1, 701)  # 1 µs .. 10 s, 100 bins per decade (2.3 % wide)


class SlidingFit:
    """Feed `update(tau_meas, tau_pred)` ((n,) Nm each) per sample; read rmse, r2, pooled."""

    def __init__(self, n_joints: int, window: int):
        self.n, self.window = n_joints, int(window)
        self._buffer = RingBuffer(self.window, 3 * n_joints)  # e², tau, tau²
        self._sums = np.zeros(3 * n_joints)
        self._since_exact = 0

    def update(self, tau_meas: np.ndarray, tau_pred: np.ndarray) -> None:
        e = tau_meas - tau_pred
        row = np.concatenate([e * e, tau_meas, tau_meas * tau_meas])
        if len(self._buffer) == self.window:
            self._sums -= self._buffer.oldest()
        self._buffer.append(row)
        self._sums += row
        self._since_exact += 1
        if self._since_exact >= self.window:
            self._sums = self._buffer.to_array().sum(axis=0)
            self._since_exact = 0

    def _parts(self) -> tuple[np.ndarray, np.ndarray]:
        n, m = self.n, max(len(self._buffer), 1)
        sse = self._sums[:n]
        sst = np.maximum(self._sums[2 * n :] - self._sums[n : 2 * n] ** 2 / m, 0.0)
        return sse, sst

    @property
    def rmse(self) -> np.ndarray:
        """(n,) Nm over the window (nan before any sample)."""
        if not len(self._buffer):
            return np.full(self.n, np.nan)
        return np.sqrt(np.maximum(self._parts()[0], 0.0) / len(self._buffer))

    @property
    def r2(self) -> np.ndarray:
        """(n,) per joint, each about its own mean (nan while a joint's torque is constant)."""
        sse, sst = self._parts()
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sst > 0, 1.0 - sse / sst, np.nan)

    @property
    def pooled_r2(self) -> float:
        sse, sst = self._parts()
        total = float(sst.sum())
        return 1.0 - float(sse.sum()) / total if total > 0 else float("nan")

    @property
    def pooled_rmse(self) -> float:
        m = len(self._buffer) * self.n
        return float(np.sqrt(max(float(self._parts()[0].sum()), 0.0) / m)) if m else float("nan")


class LatencyStats:
    """`add(seconds)` per sample; `summary()` gives count, median, p99, max (ms)."""

    def __init__(self, recent: int = 5000):
        self.counts = np.zeros(len(_EDGES_S) + 1, dtype=np.int64)
        self.maximum = 0.0
        self._recent = RingBuffer(recent, 1)

    def add(self, seconds: float) -> None:
        self.counts[int(np.searchsorted(_EDGES_S, seconds))] += 1
        self._recent.append(seconds)
        if seconds > self.maximum:
            self.maximum = seconds

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def quantile(self, q: float) -> float:
        """q-quantile (s) of the whole run, to the histogram's resolution (upper bin edge)."""
        total = self.count
        if not total:
            return float("nan")
        index = int(np.searchsorted(np.cumsum(self.counts), q * total, side="left"))
        return float(_EDGES_S[min(index, len(_EDGES_S) - 1)])

    def recent(self) -> tuple[float, float]:
        """(median, p99) in s of the most recent values."""
        values = self._recent.to_array()[:, 0]
        if not len(values):
            return float("nan"), float("nan")
        return float(np.median(values)), float(np.percentile(values, 99))

    def summary(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "median_ms": 1e3 * self.quantile(0.5),
            "p99_ms": 1e3 * self.quantile(0.99),
            "max_ms": 1e3 * self.maximum,
        }
