"""Cubic-spline interpolation of sampled signals (jittery logs onto a uniform grid and back)."""

from __future__ import annotations

import numpy as np


def cubic_spline(t: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`values` (M, ...) at increasing times `t` (M,) s, interpolated at `at` (K,) s by a
    not-a-knot cubic spline along axis 0 (scipy.interpolate is imported only here: only
    jittery logs need it, and it costs ~0.2 s)."""
    from scipy.interpolate import CubicSpline

    return CubicSpline(t, values, axis=0)(at)


def preload() -> None:
    """Import scipy.interpolate now (~0.4 s with the scipy.linalg it pulls in): before forking
    workers that will resample, so that they inherit it instead of each importing it."""
    import scipy.interpolate  # noqa: F401
