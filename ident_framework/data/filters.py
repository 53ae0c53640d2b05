"""The signal filters of the preprocessing, without scipy.signal: `butterworth_lowpass` and
`zero_phase_filter` equal ``scipy.signal.butter(..., output="sos")`` and ``sosfiltfilt(sos, x,
axis=0)`` to rounding (the recursion in `zero_phase_kernel.c`, or numba's
`zero_phase_kernel.py`, bit for bit the same); `savgol_derivative` equals ``savgol_filter(x,
window, polyorder, deriv, delta, axis=0)`` in mode "interp" (its rows in `savgol_kernel.c`, or
numpy, bit for bit the same); `cubic_spline` (scipy.interpolate)
maps jittery logs onto a uniform grid and back. Rationale: docs/design.md#signal-filters
"""

from __future__ import annotations

import ctypes
import math
from ctypes import c_int, c_int64, c_void_p
from functools import cache

import numpy as np

from ident_framework import c_kernels

# sos, zi, sections, x, n, channels, x's strides, pad, out, out's strides (in elements)
_ARGUMENTS = [c_void_p, c_void_p, c_int64, c_void_p, c_int64, c_int64, c_int64, c_int64, c_int64]
_SIGNATURES = {"zero_phase_filter": (c_int, [*_ARGUMENTS, c_void_p, c_int64, c_int64])}
_SAVGOL_SIGNATURES = {
    "savgol_inner": (None, [c_void_p, c_int64, c_void_p, c_int64, c_int64, c_void_p])
}


def butterworth_lowpass(order: int, cutoff_hz: float, rate_hz: float) -> np.ndarray:
    """(ceil(order / 2), 6) second-order sections [b0, b1, b2, 1, a1, a2] of the digital
    Butterworth low-pass of `order`, -3 dB at `cutoff_hz` for samples at `rate_hz` (as
    scipy.signal.butter's "sos" output)."""
    if order < 1 or not 0 < cutoff_hz < rate_hz / 2:
        raise ValueError(f"Butterworth order {order} at {cutoff_hz} Hz for {rate_hz} Hz")
    fs2 = 2.0 * rate_hz
    warped = fs2 * math.tan(math.pi * cutoff_hz / rate_hz)  # rad/s, analog cut-off
    k = np.arange(order)
    analog = warped * np.exp(1j * np.pi * (2 * k + order + 1) / (2 * order))
    digital = (fs2 + analog) / (fs2 - analog)
    gain = float(np.real(warped**order / np.prod(fs2 - analog)))
    upper = digital[digital.imag > 1e-14 * np.abs(digital)]
    real = np.real(digital[np.abs(digital.imag) <= 1e-14 * np.abs(digital)])
    sections = [[1.0, 2.0, 1.0, 1.0, -2.0 * p.real, abs(p) ** 2] for p in upper]
    sections += [[1.0, 2.0, 1.0, 1.0, -r, 0.0] for r in real]
    radius = [abs(p) for p in upper] + [abs(r) for r in real]
    sos = np.array([sections[i] for i in np.argsort(radius, kind="stable")])
    if order % 2:  # an odd count of zeros at z = -1: the last section has one
        sos[-1, :3] = [1.0, 1.0, 0.0]
    sos[0, :3] *= gain
    return sos


def pad_length(sos: np.ndarray) -> int:
    """Samples of odd extension at each end (scipy.signal.sosfiltfilt's default)."""
    taps = 2 * len(sos) + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    return 3 * taps


def zero_phase_filter(sos: np.ndarray, x: np.ndarray | list[np.ndarray]) -> np.ndarray:
    """`x` (N, ...) filtered forward and backward along axis 0 by the sections `sos`
    (N > pad_length(sos)). A list of (N, k_i) arrays is filtered as their column stack
    (N, sum k_i), without stacking them first."""
    if isinstance(x, list):
        parts = [np.asarray(a, dtype=float) for a in x]
        shape = (len(parts[0]), sum(part.shape[1] for part in parts))
    else:
        whole = np.asarray(x, dtype=float)
        parts, shape = [whole.reshape(len(whole), -1)], whole.shape
    out = np.empty((len(parts[0]), sum(part.shape[1] for part in parts)))
    column = 0
    for part in parts:
        _run_kernel(sos, part, out[:, column : column + part.shape[1]])
        column += part.shape[1]
    return out.reshape(shape)


def zero_phase_filter_parts(sos: np.ndarray, parts: list[np.ndarray]) -> list[np.ndarray]:
    """`zero_phase_filter` of each (N, k_i) array of `parts`."""
    return [zero_phase_filter(sos, np.asarray(a, dtype=float)) for a in parts]


def zero_phase_filter_channels(sos: np.ndarray, x: np.ndarray) -> np.ndarray:
    """`zero_phase_filter` of the channels in the rows of `x` (ch, N): (ch, N)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    _run_kernel(sos, x.T, out.T)
    return out


def zero_phase_filter_in_place(sos: np.ndarray, x: np.ndarray) -> None:
    """`x` (N, ch) float64 (any element strides, e.g. columns of a wider array) replaced by
    its `zero_phase_filter`, without a copy of it."""
    _run_kernel(sos, x, x)


def _run_kernel(sos: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """`out` (N, ch) = the zero-phase filter of `x` (N, ch) (float64, any strides)."""
    pad = pad_length(sos)
    if len(x) <= pad:
        raise ValueError(f"{len(x)} samples; the filter's padding needs more than {pad}")
    sections = np.ascontiguousarray(np.asarray(sos, dtype=float) / np.asarray(sos)[:, 3:4])
    if not x.shape[1]:
        return
    zi = _steady_state(sections)
    library = c_kernel()
    if library is None:
        from ident_framework.data.zero_phase_kernel import filtfilt  # numba: ~0.25 s to start

        filtfilt(sections, zi, x, pad, out)
        return
    x = x if _strided_in_elements(x) else np.ascontiguousarray(x, dtype=np.float64)
    target = out if _strided_in_elements(out) else np.empty(out.shape)
    status = library.zero_phase_filter(
        sections.ctypes.data, zi.ctypes.data, len(sections), x.ctypes.data, *x.shape,
        *(stride // 8 for stride in x.strides), pad, target.ctypes.data,
        *(stride // 8 for stride in target.strides),
    )  # fmt: skip
    if status != 0:
        raise MemoryError("the zero-phase filter's C kernel is out of memory")
    if target is not out:
        out[...] = target


def c_kernel() -> ctypes.CDLL | None:
    """The C kernel (`zero_phase_kernel.c`), or None: numba's then runs (`c_kernels.py`)."""
    return c_kernels.load(__package__, "zero_phase_kernel.c", _SIGNATURES)


def savgol_kernel() -> ctypes.CDLL | None:
    """The C kernel of `savgol_derivative` (`savgol_kernel.c`), or None: numpy then runs."""
    return c_kernels.load(__package__, "savgol_kernel.c", _SAVGOL_SIGNATURES)


def _strided_in_elements(a: np.ndarray) -> bool:
    """Whether the C kernel can address float64 `a` by element strides."""
    return a.dtype == np.float64 and a.flags.aligned and all(s % 8 == 0 for s in a.strides)


def _steady_state(sos: np.ndarray) -> np.ndarray:
    """(sections, 2) each section's state (transposed direct form II) in the steady state of a
    unit input to the cascade: scipy.signal.sosfilt_zi, section by section (the whole
    cascade's (I - A) is ill-conditioned for poles near 1)."""
    zi, level = np.zeros((len(sos), 2)), 1.0  # the section's input for a unit input
    for i, (b0, b1, b2, _, a1, a2) in enumerate(sos):
        local = np.array([[-a1, 1.0], [-a2, 0.0]])
        drive = np.array([b1 - a1 * b0, b2 - a2 * b0])
        zi[i] = np.linalg.solve(np.eye(2) - local, drive) * level
        level *= (b0 + b1 + b2) / (1.0 + a1 + a2)
    return zi


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
    library = savgol_kernel()
    if library is not None:  # one pass over the rows; the same sums as the loop below
        library.savgol_inner(
            weights.ctypes.data, window, flat.ctypes.data, *flat.shape, out.ctypes.data
        )
    else:
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
    """(the centred window's weights (window,), the first and last half window's operators
    (half, window)): the deriv-th derivative of the least-squares polynomial of a window."""
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


def cubic_spline(t: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`values` (M, ...) at increasing times `t` (M,) s, interpolated at `at` (K,) s by a
    not-a-knot cubic spline along axis 0."""
    from scipy.interpolate import CubicSpline

    return CubicSpline(t, values, axis=0)(at)


def preload() -> None:
    """Import scipy.interpolate now, before forking workers that will resample."""
    import scipy.interpolate  # noqa: F401
