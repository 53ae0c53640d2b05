"""Base parameters: the identifiable linear combinations of the standard parameters.

By SVD of the stacked regressor W (N*n x p) = U S V^T: the columns of V whose singular value
exceeds `tolerance` × the largest span the identifiable subspace; beta = V_r^T theta are the
base parameters and W V_r is the base regressor (W theta = W V_r beta exactly, because W is
zero on the other directions). W itself is never stored: the SVD is taken of the triangular
factor R of W's QR decomposition, which has the same singular values and right vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dgeqrf

DEFAULT_TOLERANCE = 1e-8


@dataclass(frozen=True)
class BaseParameters:
    """projection: (p, r) orthonormal V_r; singular_values: all p of them, descending."""

    projection: np.ndarray
    singular_values: np.ndarray
    standard_names: list[str]
    tolerance: float

    @property
    def rank(self) -> int:
        return self.projection.shape[1]

    @property
    def n_standard(self) -> int:
        return self.projection.shape[0]

    @property
    def names(self) -> list[str]:
        return [f"beta_{i + 1}" for i in range(self.rank)]

    def to_base(self, theta: np.ndarray) -> np.ndarray:
        """Base parameters beta = V_r^T theta of standard parameters theta."""
        return self.projection.T @ theta

    def to_standard(self, beta: np.ndarray) -> np.ndarray:
        """Minimum-norm standard parameters V_r beta (unidentifiable directions zero)."""
        return self.projection @ beta

    def combinations(self, threshold: float = 1e-6) -> list[str]:
        """Human-readable combination of standard parameters in each base parameter."""
        out = []
        for column in self.projection.T:
            order = np.argsort(-np.abs(column))
            terms = [
                f"{column[i]:+.4g}*{self.standard_names[i]}"
                for i in order
                if abs(column[i]) > threshold * np.abs(column).max()
            ]
            out.append(" ".join(terms))
        return out

    @classmethod
    def from_r_factor(
        cls, r_factor: np.ndarray, standard_names: list[str], tolerance: float = DEFAULT_TOLERANCE
    ) -> BaseParameters:
        """From the (p, p) triangular factor of the stacked regressor's QR decomposition."""
        _, singular, vt = np.linalg.svd(r_factor)
        rank = int(np.sum(singular > tolerance * singular[0])) if singular.size else 0
        return cls(vt[:rank].T.copy(), singular, list(standard_names), tolerance)


def condition_number(r_factor: np.ndarray, projection: np.ndarray) -> float:
    """2-norm condition number of the base regressor W V_r, from W's triangular factor R
    (W V_r and R V_r have the same singular values). Unscaled, as in the source study."""
    singular = np.linalg.svd(r_factor @ projection, compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0 else float("inf")


class TriangularAccumulator:
    """Streaming QR: keeps only R of the rows seen so far (memory independent of N).

    Add row blocks of shape (m, c); `factor` is the (c, c) upper-triangular R with
    R^T R = sum of A^T A over all blocks. Each update is one LAPACK dgeqrf of [R; A].
    """

    def __init__(self, n_columns: int):
        self.n_columns = n_columns
        self.r = np.zeros((n_columns, n_columns), order="F")
        self.n_rows = 0

    def add(self, rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        c = self.n_columns
        stacked = np.empty((c + rows.shape[0], c), order="F")
        stacked[:c] = self.r
        stacked[c:] = rows
        qr, _, _, info = dgeqrf(stacked, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dgeqrf failed with info={info}")
        self.r = np.asfortranarray(np.triu(qr[:c]))
        self.n_rows += rows.shape[0]

    @property
    def factor(self) -> np.ndarray:
        """The (c, c) upper-triangular factor (zero rows while fewer rows than columns)."""
        return np.ascontiguousarray(self.r)
