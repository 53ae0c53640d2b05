"""Per fold, the triangular factor of every candidate column at once.

For one preprocessing of the identification data, the rows of each fold are streamed once
through the regressor. Every column any candidate may use is in the factor: the rigid-body
columns, and per joint the joint's own candidates (friction columns of every friction shape,
rotor inertia, offset), then two right-hand sides: the low-passed torque (what the estimator
fits) and the torque as recorded (what held-out error is measured against). A candidate is a
subset of the columns: the factor of that subset over any union of folds is the QR of the
stacked column slices of the folds' factors, exact and small (`cross_validation.py`); nothing
is refactored from the data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.blas_threads import one_blas_thread
from ident_framework.model.base_parameters import TriangularAccumulator
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.triangular import stacked_r

CHUNK = 2000  # rows per regressor call


@dataclass(frozen=True)
class OwnColumns:
    """A joint's own candidate columns: `names` (per joint, e.g. "fv", "fc[tanh 0.003]",
    "Ia", "offset") and `values(data, rows)` -> (len(rows), n, len(names)) at those rows of a
    preprocessed dataset; `shared`: columns whose parameter is shared by several joints' rows
    (a coupled motor's, `model/coupling.py`), `shared_values(data, rows)` -> (len(rows), n,
    len(shared)); `load`: the indices (into `names`) of columns given per Nm of load, which
    are multiplied by |tau_load| of their row, the nominal robot model's rigid-body + rotor
    torque (`RegressorBuilder.load_torque`: the load-dependent friction's columns)."""

    names: tuple[str, ...]
    values: Callable[[Dataset, np.ndarray], np.ndarray]
    shared: tuple[str, ...] = ()
    shared_values: Callable[[Dataset, np.ndarray], np.ndarray] | None = None
    load: tuple[int, ...] = ()

    def index(self, name: str) -> int:
        return self.names.index(name)


@dataclass
class FoldFactors:
    """Per fold f: `merged[f]` (P, P) factor of [inertial | own columns of every joint |
    tau_filtered | tau_recorded] over the fold's rows, all joints; `per_joint[f][j]` the same
    for joint j's rows only; `counts[f]` samples. Column layout: 10 n inertial, then joint j's
    own columns at 10 n + j e + i, then the shared columns (`OwnColumns.shared`), then the two
    torque columns."""

    merged: list[np.ndarray]
    per_joint: list[list[np.ndarray]]
    counts: np.ndarray
    n_joints: int
    own: OwnColumns

    @property
    def n_inertial(self) -> int:
        return 10 * self.n_joints

    @property
    def tau_filtered(self) -> int:
        return self.merged[0].shape[1] - 2

    @property
    def tau_recorded(self) -> int:
        return self.merged[0].shape[1] - 1

    def own_column(self, joint: int, name: str) -> int:
        return self.n_inertial + joint * len(self.own.names) + self.own.index(name)

    def shared_column(self, index: int) -> int:
        return self.n_inertial + self.n_joints * len(self.own.names) + index


@dataclass(frozen=True)
class FoldRows:
    """One preprocessed recording: its data, the torque as recorded at its rows (N, n) Nm,
    and the fold of each row (N,) (-1: in no fold)."""

    data: Dataset
    tau_recorded: np.ndarray
    labels: np.ndarray


def fold_factors(
    builder: RegressorBuilder,
    recordings: list[FoldRows],
    n_folds: int,
    own: OwnColumns,
    spaces: list[np.ndarray],
    max_samples: int | None = None,
) -> FoldFactors:
    """The factors of every fold over the preprocessed recordings, every stride-th row of
    each fold's rows so that at most about `max_samples` rows are used in all. `spaces`: the
    joints' structural row spaces (`linear_problem.joint_row_spaces`)."""
    n = builder.robot.n_joints
    e, s = len(own.names), len(own.shared)
    subtree = [builder.subtree_columns(j) for j in range(n)]
    blocks = [builder.subtree_block(j) for j in range(n)]
    accumulators = [
        [TriangularAccumulator(spaces[j].shape[1] + e + s + 2) for j in range(n)]
        for _ in range(n_folds)
    ]
    total = sum(int(np.sum(r.labels >= 0)) for r in recordings)
    stride = max(1, -(-total // max_samples)) if max_samples else 1
    counts = np.zeros(n_folds, dtype=int)
    with one_blas_thread():
        for recording in recordings:
            kept = np.flatnonzero(recording.labels >= 0)[::stride]
            # grouped by fold (the QR factor of a fold does not depend on its rows' order), so
            # that a chunk holds one or two folds: few, tall updates instead of one per block
            kept = kept[np.argsort(recording.labels[kept], kind="stable")]
            counts += np.bincount(recording.labels[kept], minlength=n_folds)
            own_values = own.values(recording.data, kept)
            if s:
                shared = own.shared_values(recording.data, kept)
                own_values = np.concatenate([own_values, shared], axis=-1)
            data = recording.data
            for start in range(0, len(kept), CHUNK):
                rows = kept[start : start + CHUNK]
                rigid = builder.rigid_body(data.q[rows], data.dq[rows], data.ddq[rows])
                own_part = own_values[start : start + CHUNK]
                if own.load:
                    own_part = own_part.copy()
                    load = np.abs(builder.load_torque(rigid, data.ddq[rows]))
                    own_part[:, :, list(own.load)] *= load[:, :, None]
                fold = recording.labels[rows]
                bounds = [0, *(np.flatnonzero(np.diff(fold)) + 1).tolist(), len(rows)]
                for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                    mine = slice(lo, hi)
                    for j in range(n):
                        accumulators[fold[lo]][j].add_blocks(
                            rigid[mine, j, blocks[j]] @ spaces[j],
                            own_part[mine, j],
                            data.tau[rows[mine], j],
                            recording.tau_recorded[rows[mine], j],
                        )
        size = 10 * n + n * e + s + 2
        merged, per_joint = [], []
        for f in range(n_folds):
            joints = []
            for j in range(n):
                r = accumulators[f][j].factor
                k = spaces[j].shape[1]
                full = np.zeros((r.shape[0], size))
                full[:, subtree[j]] = r[:, :k] @ spaces[j].T
                full[:, 10 * n + j * e : 10 * n + (j + 1) * e] = r[:, k : k + e]
                full[:, 10 * n + n * e : 10 * n + n * e + s] = r[:, k + e : k + e + s]
                full[:, -2:] = r[:, -2:]
                joints.append(full)
            per_joint.append(joints)
            merged.append(stacked_r(joints))
    return FoldFactors(merged, per_joint, counts, n, own)
