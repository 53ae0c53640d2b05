"""Causal smoothing and differentiation with a known, exact delay: a sliding local polynomial.

At every new sample k the last M = 2h + 1 samples of each channel are fitted by a
least-squares polynomial of degree d in the recorded time (s), evaluated (value, derivative)
at the window's centre, sample k - h: a pure delay of h samples for every channel (at a uniform
rate, a Savitzky-Golay filter). The operator is cached while the time offsets do not change.

Rationale: docs/design.md#online-causal-filter
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FilteredSample:
    """The filter's output for the centre sample of its window (time t, s)."""

    t: float
    value: np.ndarray  # (c,) smoothed channels
    derivative: np.ndarray  # (c,) their time derivatives (units per s)
    raw: np.ndarray  # (c,) the channels as recorded at t


def window_samples(window_s: float, rate_hz: float, polyorder: int) -> int:
    """An odd window length (samples) of about `window_s` at `rate_hz`, at least polyorder + 3."""
    samples = int(round(window_s * rate_hz))
    samples = max(samples, polyorder + 3)
    return samples if samples % 2 else samples + 1


class CausalPolynomialFilter:
    """`push(t, x)` adds one sample (t in s, strictly increasing; x (c,)) and returns the
    `FilteredSample` of the sample `delay_samples` back once the window is full, else None."""

    def __init__(self, n_channels: int, window: int, polyorder: int):
        if window % 2 == 0 or window < polyorder + 2:
            raise ValueError(f"window must be odd and > polyorder + 1, got {window}")
        self.window, self.polyorder = window, polyorder
        self.delay_samples = (window - 1) // 2
        self._x = np.zeros((window, n_channels))
        self._t = np.zeros(window)
        self._count = 0
        self._head = 0  # next row to write (circular)
        self._offsets: np.ndarray | None = None  # time offsets of the cached operator
        self._operator = np.zeros((2, window))  # rows: value, derivative at the centre

    @property
    def delay_s(self) -> float | None:
        """The current delay in s (centre to newest sample), None before the window is full."""
        if self._count < self.window:
            return None
        newest = self._t[(self._head - 1) % self.window]
        return float(newest - self._t[(self._head + self.delay_samples) % self.window])

    def push(self, t: float, x: np.ndarray) -> FilteredSample | None:
        w = self.window
        self._t[self._head] = t
        self._x[self._head] = x
        self._head = (self._head + 1) % w
        self._count += 1
        if self._count < w:
            return None
        order = np.arange(self._head, self._head + w) % w  # oldest to newest
        times = self._t[order]
        centre = times[self.delay_samples]
        offsets = times - centre
        operator = self._operator_for(offsets)
        values = self._x[order]
        value, derivative = operator @ values
        return FilteredSample(float(centre), value, derivative, values[self.delay_samples].copy())

    def _operator_for(self, offsets: np.ndarray) -> np.ndarray:
        cached = self._offsets
        span = offsets[-1] - offsets[0]
        if cached is not None and np.max(np.abs(offsets - cached)) <= 1e-6 * span:
            return self._operator
        scale = 0.5 * span if span > 0 else 1.0
        vander = np.vander(offsets / scale, self.polyorder + 1, increasing=True)
        pinv = np.linalg.pinv(vander)  # (d+1, M): coefficients of the fit
        self._operator = np.vstack([pinv[0], pinv[1] / scale])
        self._offsets = offsets.copy()
        return self._operator


def cutoff_hz(window: int, polyorder: int, rate_hz: float) -> float:
    """Approximate -3 dB frequency of a Savitzky-Golay smoother (Schafer 2011):
    (d + 1) / (3.2 M - 4.6) × fs."""
    return (polyorder + 1) / (3.2 * window - 4.6) * rate_hz if window > 2 else math.inf
