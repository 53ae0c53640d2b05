"""Latency statistics in constant memory: a log-spaced histogram over the whole run and a ring
of the most recent values (for the dashboard's live median and p99)."""

from __future__ import annotations

import numpy as np

from ident_framework.online.ring_buffer import RingBuffer

_EDGES_S = np.logspace(-6, 1, 701)  # 1 µs .. 10 s, 100 bins per decade (2.3 % wide)


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
