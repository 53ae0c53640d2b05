"""The projected regressor rows of one recording, kept from the factor pass so that its torque
prediction needs no second pass of Pinocchio."""

from __future__ import annotations

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.parallel_work import shared_zeros
from ident_framework.triangular import one_blas_thread

KEPT_ROWS_BYTES = 256 * 2**20  # keep a recording's projected regressor rows up to this size


class KeptRows:
    """Per joint j, A_j P_j (N, k_j) (row j's subtree part in its row space, see
    `linear_problem.joint_row_spaces`), and the own columns (N, n, e) of every row, in
    recording order; in memory shared with the factor pass's forked workers, which write
    their rows (`store`). `predict(theta)` = Y theta (N, n) in Nm, to rounding
    (A_j = A_j P_j P_j^T exactly)."""

    def __init__(self, builder: RegressorBuilder, spaces: list[np.ndarray], data: Dataset):
        n = builder.robot.n_joints
        self._q = data.q  # the recording these rows are of (by identity)
        self.n_samples = data.n_samples
        self.spaces = spaces
        self.subtree = [builder.subtree_columns(j) for j in range(n)]
        self.own_columns = [builder.own_columns(j) for j in range(n)]
        self.projected = [shared_zeros((data.n_samples, s.shape[1])) for s in spaces]
        self.own = shared_zeros((data.n_samples, n, len(self.own_columns[0]) if n else 0))

    @staticmethod
    def bytes_needed(builder: RegressorBuilder, n_samples: int, spaces: list[np.ndarray]) -> int:
        n = builder.robot.n_joints
        width = sum(s.shape[1] for s in spaces)
        width += sum(len(builder.own_columns(j)) for j in range(n))
        return 8 * width * n_samples

    def belongs_to(self, data: Dataset) -> bool:
        return data.q is self._q and data.n_samples == self.n_samples

    def store(self, rows: slice, projected: list[np.ndarray], own: np.ndarray) -> None:
        """The projected rows and own columns of the recording's `rows`."""
        for j, block in enumerate(projected):
            self.projected[j][rows] = block
        self.own[rows] = own

    def predict(self, theta: np.ndarray) -> np.ndarray:
        out = np.empty((self.n_samples, len(self.spaces)))
        with one_blas_thread():
            for j, (space, cols) in enumerate(zip(self.spaces, self.subtree, strict=True)):
                own = self.own[:, j] @ theta[self.own_columns[j]]
                out[:, j] = self.projected[j] @ (space.T @ theta[cols]) + own
        return out
