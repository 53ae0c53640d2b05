"""Triangular factors and solves on numpy's own LAPACK, so that an identification does not
import scipy.linalg (0.16 s: SciPy's array-API layer imports every numpy submodule, f2py
and numpy.testing among them, measured with ``python -X importtime``).

`qr_r_in_place` is LAPACK's dgeqrf through ``numpy.linalg.lapack_lite`` (the routine
``numpy.linalg.qr`` used before NumPy 1.22, still shipped), in place on a Fortran-ordered
array like ``scipy.linalg.lapack.dgeqrf(a, overwrite_a=1)``; where that module is missing
(another NumPy build) it falls back to SciPy's. `solve_upper` solves with an upper-triangular
matrix: LAPACK's LU of a triangular matrix chooses no row exchange (every entry below the
diagonal is already zero), so it is back substitution, as ``scipy.linalg.solve_triangular``.

Regularised least squares from a triangular factor (`spectral_solve`): ridge (Tikhonov) toward
a prior and truncated SVD, the two remedies for an ill-conditioned regressor. Both are
spectral filters of the SVD R_w = U S Vᵀ of the regressor's triangular factor (the same
singular values and right vectors as the regressor W itself):

    beta = prior + V diag(f_i / s_i) Uᵀ (rhs − R_w prior)

with f_i = s_i² / (s_i² + λ²) for ridge (λ = `ridge` × s_max: scale free) and f_i = 1 for
s_i ≥ `truncate` × s_max, else 0, for truncated SVD (the dropped directions keep the prior's
value). ridge = truncate = 0 is ordinary least squares.

One BLAS thread (`one_blas_thread`) for the many small factorisations of estimation and
tuning: `threadpoolctl.threadpool_limits` scans every shared library of the process on each
call (~4 ms here with numpy, scipy, Pinocchio and MuJoCo loaded: 0.35 s of CPU in a
10^5-sample tuning that entered it 86 times); `one_blas_thread()` reuses a controller, built
again only when one of the modules that bring a BLAS along has been imported since.
"""

from __future__ import annotations

import sys
from functools import cache
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
    qr_in_place(stacked)
    return np.triu(stacked[: stacked.shape[1]])


def stacked_r(blocks: list[np.ndarray]) -> np.ndarray:
    """``np.linalg.qr(np.vstack(blocks), mode="r")`` of the row blocks (m_i, n): R (n, n)
    when m = sum m_i >= n, stacked straight into the Fortran order LAPACK works in (one copy
    fewer, no wrapper: the tuning's cross-validation calls it some 400 times on small
    factors); the (m, n) upper trapezoid of NumPy's QR when m < n."""
    rows = sum(len(block) for block in blocks)
    if rows < blocks[0].shape[1]:
        return np.linalg.qr(np.vstack(blocks), mode="r")
    stacked = np.empty((rows, blocks[0].shape[1]), order="F")
    row = 0
    for block in blocks:
        stacked[row : row + len(block)] = block
        row += len(block)
    return qr_r_in_place(stacked)


def qr_r_into(stacked: np.ndarray, out: np.ndarray) -> None:
    """`qr_r_in_place` written into `out` (n, n) (a streaming accumulator's R, overwritten at
    each update): no new array for R."""
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
        tau, work = np.empty(n), np.empty(1)
        _lite_dgeqrf(m, n, buffer, m, tau, work, -1, 0)  # workspace query
        work = np.empty(max(int(work[0]), n))
        info = _lite_dgeqrf(m, n, buffer, m, tau, work, len(work), 0)["info"]
    if info != 0:
        raise np.linalg.LinAlgError(f"dgeqrf failed with info={info}")


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
