"""The zero-phase filter's numba loops: the fallback where the C kernel beside it
(`zero_phase_kernel.c`, the same operations per value) cannot be built (`c_kernels.py`)."""

from __future__ import annotations

import numpy as np

from ident_framework.c_kernels import numba_for_fallback

numba = numba_for_fallback()
njit = numba.njit

TILE = 16  # channels whose recursions run side by side


@njit(cache=True)
def filtfilt(sos, zi, x, pad, out):  # noqa: ANN001, ANN202 (compiled: numba types)
    """out[:, c] = zero-phase filter of x[:, c] (odd extension of `pad` samples at both ends,
    a forward pass, a backward pass), TILE channels side by side; out may be x itself."""
    n, channels = x.shape
    sections = sos.shape[0]
    ext = np.empty((n + 2 * pad, min(TILE, channels)))  # the forward pass's output
    z0 = np.empty((sections, TILE))
    z1 = np.empty((sections, TILE))
    v = np.empty(TILE)
    for c0 in range(0, channels, TILE):
        w = min(TILE, channels - c0)
        for k in range(w):  # the odd extension's first sample: 2 x0 - x[pad]
            v[k] = 2.0 * x[0, c0 + k] - x[pad, c0 + k]
        start(zi, v, w, z0, z1)
        for t in range(n + 2 * pad):
            if t < pad:
                for k in range(w):
                    v[k] = 2.0 * x[0, c0 + k] - x[pad - t, c0 + k]
            elif t < pad + n:
                for k in range(w):
                    v[k] = x[t - pad, c0 + k]
            else:
                for k in range(w):
                    v[k] = 2.0 * x[n - 1, c0 + k] - x[2 * n + pad - 2 - t, c0 + k]
            step(sos, v, w, z0, z1)
            for k in range(w):
                ext[t, k] = v[k]
        for k in range(w):
            v[k] = ext[n + 2 * pad - 1, k]
        start(zi, v, w, z0, z1)
        for t in range(n + 2 * pad - 1, pad - 1, -1):  # the samples before `pad`: not kept
            for k in range(w):
                v[k] = ext[t, k]
            step(sos, v, w, z0, z1)
            if t < pad + n:
                for k in range(w):
                    out[t - pad, c0 + k] = v[k]


@njit(cache=True, inline="always")
def start(zi, v, w, z0, z1):  # noqa: ANN001, ANN202
    """The sections' states in the steady state of the inputs v[:w]."""
    for s in range(zi.shape[0]):
        for k in range(w):
            z0[s, k] = zi[s, 0] * v[k]
            z1[s, k] = zi[s, 1] * v[k]


@njit(cache=True, inline="always")
def step(sos, v, w, z0, z1):  # noqa: ANN001, ANN202
    """One sample through the sections (transposed direct form II, as scipy.signal.sosfilt):
    v[:w] in, v[:w] out."""
    for s in range(sos.shape[0]):
        b0, b1, b2, a1, a2 = sos[s, 0], sos[s, 1], sos[s, 2], sos[s, 4], sos[s, 5]
        first, second = z0[s], z1[s]
        for k in range(w):
            y = b0 * v[k] + first[k]
            first[k] = b1 * v[k] - a1 * y + second[k]
            second[k] = b2 * v[k] - a2 * y
            v[k] = y
