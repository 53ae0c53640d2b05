"""Base parameters: the identifiable linear combinations of the standard parameters.

Rank and identifiable subspace come from the SVD of the triangular factor R of the stacked
regressor W (singular values above `tolerance` × the largest count). Bases: `svd`, beta =
V_r^T theta (orthonormal); `qr` (Gautier), r independent standard parameters picked by a
column-pivoted QR, the dependent ones regrouped into them (e.g. `ZZ2 + 1*Ia_2`). `combination`
(r, p) maps standard to base parameters (beta = C theta), `basis` (p, r) maps back.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ident_framework.triangular import one_blas_thread, qr_r_into

DEFAULT_TOLERANCE = 1e-8
# identifiable_share within this of 1 counts as identifiable alone, below it as not at all
SHARE_TOLERANCE = 1e-6
METHODS = ("svd", "qr")


@dataclass(frozen=True)
class BaseParameters:
    """basis (p, r), combination (r, p), names (r), singular values of W (p, descending)."""

    basis: np.ndarray
    combination: np.ndarray
    names: list[str]
    singular_values: np.ndarray
    standard_names: list[str]
    tolerance: float
    method: str = "svd"

    @property
    def rank(self) -> int:
        return self.basis.shape[1]

    @property
    def n_standard(self) -> int:
        return self.basis.shape[0]

    def to_base(self, theta: np.ndarray) -> np.ndarray:
        """Base parameters beta = C theta of standard parameters theta."""
        return self.combination @ theta

    def to_standard(self, beta: np.ndarray) -> np.ndarray:
        """Standard parameters B beta reproducing beta (unidentifiable parts zero)."""
        return self.basis @ beta

    def combinations(self, threshold: float = 1e-6) -> list[str]:
        """Each base parameter as a readable combination of standard parameters."""
        out = []
        for row in self.combination:
            scale = np.abs(row).max()
            order = np.argsort(-np.abs(row), kind="stable")
            if self.method == "qr":
                order = np.flatnonzero(np.abs(row) > threshold * scale)
            terms = [
                f"{row[i]:+.6g}*{self.standard_names[i]}"
                for i in order
                if abs(row[i]) > threshold * scale
            ]
            out.append(" ".join(terms))
        return out

    def identifiable_share(self) -> np.ndarray:
        """(p,) per standard parameter, the norm of its unit vector's projection onto the
        identifiable subspace: 1 identifiable on its own, 0 not at all, between: only in
        combination with others."""
        return self._identifiable_share.copy()

    @cached_property
    def _identifiable_share(self) -> np.ndarray:
        with one_blas_thread():  # a small SVD: OpenBLAS's second thread stalls on a busy host
            svd_basis = np.linalg.svd(self.combination, full_matrices=False)[2].T
        return np.linalg.norm(svd_basis, axis=1)

    def identifiable_alone(self) -> np.ndarray:
        """(p,) True where a standard parameter is identifiable on its own."""
        return self.identifiable_share() > 1.0 - SHARE_TOLERANCE

    @classmethod
    def from_r_factor(
        cls,
        r_factor: np.ndarray,
        standard_names: list[str],
        tolerance: float = DEFAULT_TOLERANCE,
        method: str = "svd",
    ) -> BaseParameters:
        """From the (p, p) triangular factor of the stacked regressor's QR decomposition."""
        try:
            _, singular, vt = np.linalg.svd(r_factor)
        except np.linalg.LinAlgError:  # LAPACK gesdd may not converge on a rank-deficient R
            import scipy.linalg  # 0.16 s to import: only here (see `triangular.py`)

            _, singular, vt = scipy.linalg.svd(r_factor, lapack_driver="gesvd")
        rank = int(np.sum(singular > tolerance * singular[0])) if singular.size else 0
        if method == "svd":
            v_r = _fixed_signs(vt[:rank].T.copy())
            names = [f"beta_{i + 1}" for i in range(rank)]
            return cls(v_r, v_r.T.copy(), names, singular, list(standard_names), tolerance)
        if method != "qr":
            raise ValueError(f"unknown base parameter method {method!r}; use one of {METHODS}")
        # Independent columns by column-pivoted QR; the rest regroup into them exactly:
        # W_D = W_I X  =>  W theta = W_I (theta_I + X theta_D).
        import scipy.linalg  # numpy has no column-pivoted QR (the default method is svd)

        _, _, pivots = scipy.linalg.qr(r_factor, pivoting=True, mode="economic")
        independent = np.sort(pivots[:rank])
        dependent = np.setdiff1d(np.arange(r_factor.shape[1]), independent)
        regroup = np.linalg.lstsq(r_factor[:, independent], r_factor[:, dependent], rcond=None)[0]
        regroup[np.abs(regroup) < 1e-10 * max(np.abs(regroup).max(initial=0.0), 1.0)] = 0.0
        p = r_factor.shape[1]
        combination = np.zeros((rank, p))
        combination[np.arange(rank), independent] = 1.0
        combination[:, dependent] = regroup
        basis = np.zeros((p, rank))
        basis[independent, np.arange(rank)] = 1.0
        names = [standard_names[i] for i in independent]
        return cls(basis, combination, names, singular, list(standard_names), tolerance, "qr")


def _fixed_signs(basis: np.ndarray) -> np.ndarray:
    """`basis` with each column's sign fixed (its product with a fixed generic weight vector
    positive), so that factorisations of the same rows agree in sign."""
    weights = 0.5 + np.modf(np.arange(1, basis.shape[0] + 1) * 0.6180339887498949)[0]
    signs = np.sign(weights @ basis)
    signs[signs == 0] = 1.0
    return basis * signs


def condition_number(r_factor: np.ndarray, basis: np.ndarray) -> float:
    """2-norm condition number (unscaled) of the base regressor W V (V: an orthonormal basis of
    the identifiable subspace), from W's triangular factor R."""
    singular = np.linalg.svd(r_factor @ basis, compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0 else float("inf")


class TriangularAccumulator:
    """Streaming QR: keeps only R (c, c) of the rows seen so far, R^T R = sum of A^T A over
    the row blocks A (m, c) added (one `triangular.qr_r_into` of [R; A] each)."""

    def __init__(self, n_columns: int):
        self.n_columns = n_columns
        self.r = np.zeros((n_columns, n_columns), order="F")
        self.n_rows = 0

    def add(self, rows: np.ndarray) -> None:
        if rows.size:
            self.add_blocks(rows)

    def add_blocks(self, *blocks: np.ndarray) -> None:
        """Add rows given as column blocks side by side ((m, w_i) or (m,)), without first
        joining them."""
        m = blocks[0].shape[0]
        stacked = np.empty((self.n_columns + m, self.n_columns), order="F")
        stacked[: self.n_columns] = self.r
        column = 0
        for block in blocks:
            width = 1 if block.ndim == 1 else block.shape[1]
            target = stacked[self.n_columns :, column : column + width]
            target[...] = block.reshape(m, width)
            column += width
        if column != self.n_columns:
            raise ValueError(f"{column} columns given, accumulator has {self.n_columns}")
        qr_r_into(stacked, self.r)
        self.n_rows += m

    @property
    def factor(self) -> np.ndarray:
        """The (c, c) upper-triangular factor (zero rows while fewer rows than columns)."""
        return np.ascontiguousarray(self.r)
