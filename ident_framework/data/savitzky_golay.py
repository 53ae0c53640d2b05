"""Savitzky-Golay differentiation along axis 0, in numpy.

The same as ``scipy.signal.savgol_filter(x, window, polyorder, deriv, delta, axis=0)`` in its
default mode "interp" (equal to rounding; tests compare both): inside, the least-squares
polynomial of each centred window differentiated at its centre (one weighted sum per
sample); in the first and last half windows, the polynomial fitted to the first and last
whole window, differentiated at each sample. Written here so that preprocessing does not
import scipy.signal (~0.5 s, see zero_phase_lowpass).
"""

from __future__ import annotations

import math

import numpy as np


def savgol_derivative(
    x: np.ndarray, window: int, polyorder: int, deriv: int = 1, delta: float = 1.0
) -> np.ndarray:
    """d^deriv x / dt^deriv (N, ...) of samples `x` (N, ...) `delta` s apart, by local
    polynomials of `polyorder` over odd `window` samples (N ≥ window > polyorder)."""
    if window % 2 != 1 or not polyorder < window <= len(x):
        raise ValueError(f"Savitzky-Golay window {window} for order {polyorder}, {len(x)} samples")
    x = np.asarray(x, dtype=float)
    # contiguous: a column block of a wider array (as preprocessing passes) runs 4 x slower
    flat = np.ascontiguousarray(x.reshape(len(x), -1))
    half = window // 2
    offsets = np.arange(-half, half + 1, dtype=float)
    target = np.zeros(polyorder + 1)
    target[deriv] = math.factorial(deriv) / delta**deriv
    weights = np.linalg.lstsq(offsets ** np.arange(polyorder + 1)[:, None], target, rcond=None)[0]
    out = np.empty_like(flat)
    inner = out[half : len(flat) - half]
    inner[:] = weights[0] * flat[: len(flat) - 2 * half]
    for k in range(1, window):
        inner += weights[k] * flat[k : len(flat) - 2 * half + k]
    out[:half] = _edge(flat[:window], np.arange(half), polyorder, deriv, delta)
    out[len(flat) - half :] = _edge(
        flat[-window:], np.arange(window - half, window), polyorder, deriv, delta
    )
    return out.reshape(x.shape)


def _edge(
    values: np.ndarray, at: np.ndarray, polyorder: int, deriv: int, delta: float
) -> np.ndarray:
    """The deriv-th derivative, at sample positions `at`, of the polynomials of `polyorder`
    fitted to the columns of `values` (window, ch) at positions 0 … window-1."""
    coefficients = np.polyfit(np.arange(len(values)), values, polyorder)  # highest power first
    for _ in range(deriv):
        powers = np.arange(len(coefficients) - 1, 0, -1)[:, None]
        coefficients = coefficients[:-1] * powers
    powers = np.arange(len(coefficients) - 1, -1, -1)
    return (at[:, None].astype(float) ** powers) @ coefficients / delta**deriv
