"""Regularised least squares from a triangular factor: ridge (Tikhonov) toward a prior and
truncated SVD, the two remedies for an ill-conditioned regressor.

Both are spectral filters of the SVD R_w = U S Vᵀ of the regressor's triangular factor (the
same singular values and right vectors as the regressor W itself):

    beta = prior + V diag(f_i / s_i) Uᵀ (rhs − R_w prior)

with f_i = s_i² / (s_i² + λ²) for ridge (λ = `ridge` × s_max: scale free) and f_i = 1 for
s_i ≥ `truncate` × s_max, else 0, for truncated SVD (the dropped directions keep the prior's
value). ridge = truncate = 0 is ordinary least squares.
"""

from __future__ import annotations

import numpy as np


def spectral_solve(
    r_w: np.ndarray,
    rhs: np.ndarray,
    prior: np.ndarray | None = None,
    ridge: float = 0.0,
    truncate: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """(beta, covariance factor G with cov(beta) = s² G Gᵀ, kept rank) minimising
    |R_w beta − rhs|² (+ (ridge s_max)² |beta − prior|²), directions with s_i < truncate s_max
    left at the prior. r_w (k, k), rhs (k,), prior (k,) (None: zero)."""
    prior = np.zeros(r_w.shape[1]) if prior is None else np.asarray(prior, dtype=float)
    u, s, vt = np.linalg.svd(r_w, full_matrices=False)
    s_max = s[0] if s.size else 1.0
    keep = s > max(truncate, 1e-14) * s_max
    lam2 = (ridge * s_max) ** 2
    gain = np.zeros_like(s)
    gain[keep] = s[keep] / (s[keep] ** 2 + lam2)
    beta = prior + vt.T @ (gain * (u.T @ (rhs - r_w @ prior)))
    return beta, vt.T * gain, int(keep.sum())


def check_strengths(ridge: float, truncate: float) -> None:
    """ValueError for a negative ridge or a truncation threshold outside [0, 1)."""
    if not (np.isfinite(ridge) and ridge >= 0.0):
        raise ValueError(f"ridge must be >= 0 (a share of the largest singular value), got {ridge}")
    if not (np.isfinite(truncate) and 0.0 <= truncate < 1.0):
        raise ValueError(
            f"truncate must be in [0, 1) (a share of the largest singular value), got {truncate}"
        )
