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
from functools import cache

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
    weights, first, last = _operators(window, polyorder, deriv, float(delta))
    out = np.empty_like(flat)
    inner = out[half : len(flat) - half]
    inner[:] = weights[0] * flat[: len(flat) - 2 * half]
    for k in range(1, window):
        inner += weights[k] * flat[k : len(flat) - 2 * half + k]
    out[:half] = first @ flat[:window]
    out[len(flat) - half :] = last @ flat[-window:]
    return out.reshape(x.shape)


@cache
def _operators(
    window: int, polyorder: int, deriv: int, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the centred window's weights (window,), the first and the last half window's
    operators (half, window)): the deriv-th derivative, at each position, of the polynomial
    of `polyorder` least-squares fitted to a whole window, as linear maps of its samples."""
    half = window // 2
    offsets = np.arange(-half, half + 1, dtype=float)
    target = np.zeros(polyorder + 1)
    target[deriv] = math.factorial(deriv) / delta**deriv
    weights = np.linalg.lstsq(offsets ** np.arange(polyorder + 1)[:, None], target, rcond=None)[0]
    positions = np.arange(window, dtype=float)
    # coefficients = pinv(V) @ values for V the (window, polyorder + 1) Vandermonde matrix
    fit = np.linalg.pinv(positions[:, None] ** np.arange(polyorder + 1))
    powers = np.arange(polyorder + 1)
    factor = np.array([math.perm(p, deriv) for p in powers], dtype=float)
    shifted = np.maximum(powers - deriv, 0)
    derivative = factor * positions[:, None] ** shifted / delta**deriv  # (window, order + 1)
    edges = derivative @ fit
    for operator in (weights, edges):
        operator.flags.writeable = False
    return weights, edges[:half], edges[window - half :]
