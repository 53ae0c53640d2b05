"""How much of each joint's circle of angles a motion visits.

A joint's angle q (rad) is taken modulo 2π (what sin q and cos q, the residual learner's
position features, see) and the circle is cut into `ANGLE_BINS` equal arcs (5° each). A motion
covers an arc when one of its samples falls into it, so the samples must lie closer together
than one arc (0.087 rad; the Fourier search's limit grid: 1000 samples per period).
"""

from __future__ import annotations

import numpy as np

ANGLE_BINS = 72  # arcs of the circle: 2π / 72 = 5°


def angle_bins(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(T, n) index of the arc of the circle each angle q (rad, (T, n)) falls into."""
    wrapped = np.mod(np.asarray(q, dtype=float), 2.0 * np.pi)
    return np.minimum((wrapped * (bins / (2.0 * np.pi))).astype(np.intp), bins - 1)


def covered_arcs(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(bins, n) True where some sample of q (rad, (T, n)) lies in that arc of the joint's
    circle."""
    index = angle_bins(q, bins)
    covered = np.zeros((bins, index.shape[1]), dtype=bool)
    covered[index, np.arange(index.shape[1])[None, :]] = True
    return covered


def circle_coverage(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(n,) fraction of each joint's circle (q mod 2π) the samples q (rad, (T, n)) visit."""
    return covered_arcs(q, bins).mean(axis=0)


def samples_covered(reference_q: np.ndarray, q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(n,) fraction of the samples of q (rad, (T, n)) whose angle lies, per joint, in an arc
    that reference_q (rad, (T', n): e.g. the training recordings) visits."""
    covered = covered_arcs(reference_q, bins)
    index = angle_bins(q, bins)
    return covered[index, np.arange(index.shape[1])[None, :]].mean(axis=0)
