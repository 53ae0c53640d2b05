"""Triangular factors and solves on numpy's own LAPACK (no scipy.linalg import).

- `qr_r_in_place`, `qr_r_into`, `stacked_r`: the R factor of a QR (LAPACK dgeqrf through
  ``numpy.linalg.lapack_lite``); `solve_upper(r, b)`: back substitution.
- `spectral_solve`: ridge or truncated-SVD least squares from a triangular factor R_w = U S Vᵀ,
  ``beta = prior + V diag(f_i / s_i) Uᵀ (rhs − R_w prior)``.
- `one_blas_thread()`: context manager limiting BLAS to one thread, cheap to enter often.

Rationale: docs/design.md#triangular-factors-without-scipy
"""

from __future__ import annotations

import sys
from functools import cache, lru_cache
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

try:
    from numpy.linalg.lapack_lite import dgeqrf as _lite_dgeqrf
except ImportError:  # pragma: no cover - every NumPy wheel has it
    _lite_dgeqrf = None


def qr_r_in_place(stacked: np.ndarray) -> np.ndarray:
    """The upper-triangular R (n, n) of the QR decomposition of `stacked` (m, n), m >= n,
    which must be Fortran-ordered float64 and is overwritten."""
    n = stacked.shape[1]
    qr_in_place(stacked)
    r = stacked[:n].copy()
    np.copyto(r, 0.0, where=_strictly_lower(n))  # np.triu, without building its mask each time
    return r


def stacked_r(blocks: list[np.ndarray]) -> np.ndarray:
    """``np.linalg.qr(np.vstack(blocks), mode="r")`` of the row blocks (m_i, n): R (n, n)
    when m = sum m_i >= n (stacked straight into Fortran order, one copy fewer); the (m, n)
    upper trapezoid of NumPy's QR when m < n."""
    rows = sum(len(block) for block in blocks)
    if rows < blocks[0].shape[1]:
        return np.linalg.qr(np.vstack(blocks), mode="r")
    stacked = np.empty((rows, blocks[0].shape[1]), order="F")
    return qr_r_in_place(np.concatenate(blocks, out=stacked))


def qr_r_into(stacked: np.ndarray, out: np.ndarray) -> None:
    """`qr_r_in_place` written into `out` (n, n): no new array for R."""
    n = stacked.shape[1]
    qr_in_place(stacked)
    out[...] = stacked[:n]
    np.copyto(out, 0.0, where=_strictly_lower(n))


@cache
def _strictly_lower(n: int) -> np.ndarray:
    mask = np.tri(n, n, -1, dtype=bool)
    mask.flags.writeable = False
    return mask


def qr_in_place(stacked: np.ndarray) -> None:
    """LAPACK's dgeqrf of `stacked` (m, n), m >= n, Fortran-ordered float64, in place: R in
    its upper triangle of the top n rows, the Householder vectors below."""
    m, n = stacked.shape
    if m < n or stacked.dtype != np.float64 or not stacked.flags.f_contiguous:
        raise ValueError(f"a Fortran-ordered float64 (m, n) array with m >= n, got {m} x {n}")
    if _lite_dgeqrf is None:  # pragma: no cover
        from scipy.linalg.lapack import dgeqrf

        qr, _, _, info = dgeqrf(stacked, overwrite_a=1)
        stacked[...] = qr
    else:
        buffer = stacked.T  # C-ordered (n, m): the memory of the Fortran (m, n) matrix
        work = np.empty(_workspace(m, n))
        info = _lite_dgeqrf(m, n, buffer, m, np.empty(n), work, len(work), 0)["info"]
    if info != 0:
        raise np.linalg.LinAlgError(f"dgeqrf failed with info={info}")


@lru_cache(maxsize=4096)
def _workspace(m: int, n: int) -> int:
    """dgeqrf's optimal workspace (float64 entries) for an (m, n) matrix (its query, once)."""
    work = np.empty(1)
    _lite_dgeqrf(m, n, np.empty((n, m)), m, np.empty(n), work, -1, 0)
    return max(int(work[0]), n)


def solve_upper(r: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with r x = b, for an upper-triangular (k, k) `r` and b (k,) or (k, m);
    LinAlgError when a diagonal entry of r is zero."""
    return np.linalg.solve(r, b)


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


_BLAS_MODULES = ("numpy", "scipy.linalg", "torch")


@cache
def _controller(loaded: tuple[bool, ...]) -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """Context manager: the BLAS libraries of the process run on one thread inside it."""
    loaded = tuple(name in sys.modules for name in _BLAS_MODULES)
    return _controller(loaded).limit(limits=1, user_api="blas")
