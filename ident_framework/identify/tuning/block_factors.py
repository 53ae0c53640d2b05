"""Per fold, the triangular factor of every candidate column at once.

For one preprocessing the rows (one joint's equation at one sample) are streamed once through
the regressor into one QR factor per cell (`folds.FoldPlan.cells`). Columns: the rigid-body
ones, each joint's candidates (friction shapes, rotor inertia, offset), the low-passed torque
and the torque as recorded (Nm). A candidate's factor over any folds is the QR of the stacked
column slices, never refactored from the data.

Rationale: docs/design.md#tuning-by-cross-validation
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.tuning.folds import FoldLayout
from ident_framework.model.base_parameters import TriangularAccumulator
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.parallel_work import forked_map, worker_count
from ident_framework.triangular import one_blas_thread, stacked_r

CHUNK = 2000  # rows per regressor call
JOINT_GROUPS = 2  # the joints' factors, in groups (fixed: same rounding on any core count)


@dataclass(frozen=True)
class OwnColumns:
    """A joint's own candidate columns: `names` (e.g. "fv", "fc[tanh 0.003]", "Ia", "offset")
    and `values(data, rows, joints=None)` -> (len(rows), n, len(names)) (`joints`: a mask of
    the joints needed); `shared`: columns shared by several joints' rows (a coupled motor's),
    `shared_values(data, rows)` -> (len(rows), n, len(shared)); `load`: indices of columns
    given per Nm of load, multiplied by the nominal model's |tau_load| of their row."""

    names: tuple[str, ...]
    values: Callable[..., np.ndarray]
    shared: tuple[str, ...] = ()
    shared_values: Callable[[Dataset, np.ndarray], np.ndarray] | None = None
    load: tuple[int, ...] = ()
    # per joint, the indices (into `names`) of the columns its factor holds (None: all)
    active: tuple[tuple[int, ...], ...] | None = None

    def used(self, joint: int) -> np.ndarray:
        """The indices (into `names`) of the columns joint `joint`'s factor holds."""
        if self.active is None:
            return np.arange(len(self.names))
        return np.asarray(self.active[joint], dtype=int)

    def index(self, name: str) -> int:
        return self.names.index(name)


@dataclass
class FoldFactors:
    """Per cell c: `merged[c]` (P, P) factor of [inertial | own columns of every joint |
    shared | tau_filtered | tau_recorded] over the cell's rows; `per_joint[c][j]` the same for
    joint j's rows; `counts[c, j]` joint j's rows in cell c. Joint j's own column i is at
    10 n + j e + i. `layout`: the folds over the cells (None: each cell is a fold)."""

    merged: list[np.ndarray]
    per_joint: list[list[np.ndarray]]
    counts: np.ndarray
    n_joints: int
    own: OwnColumns
    layout: FoldLayout | None = None

    @property
    def folds(self) -> FoldLayout:
        return self.layout or FoldLayout.single(len(self.merged))

    @cached_property
    def whole(self) -> np.ndarray:
        """The factor of every cell's rows together."""
        return stacked_r(self.merged)

    @cached_property
    def groups(self) -> list[list[tuple[int, np.ndarray]]]:
        """Per partition of `folds`: (fold, the factor of its cells) for each of its folds, and
        (-1, the factor of the cells in none of them: e.g. the kind partition's fast rows). A
        fold's training factor is the merge of its partition's other groups."""
        layout, out = self.folds, []
        for p in range(layout.n_partitions):
            members = [(k, layout.cells[k]) for k, q in enumerate(layout.partition) if q == p]
            in_folds = {c for _, cells in members for c in cells}
            rest = tuple(c for c in range(len(self.merged)) if c not in in_folds)
            members += [(-1, rest)] if rest else []
            out.append([(k, stacked_r([self.merged[c] for c in cells])) for k, cells in members])
        return out

    @property
    def grouped(self) -> bool:
        """Whether a fold holds several cells (or some cell is in no fold): else every cell
        is a fold of one partition and its factor is the fold's own."""
        layout = self.folds
        return len(self.merged) != len(layout.cells) or any(
            cells != (k,) for k, cells in enumerate(layout.cells)
        )

    @cached_property
    def training(self) -> list[np.ndarray]:
        """Per fold of `folds`, the factor of its training rows over every column: the merge
        of its partition's other row groups (`groups`)."""
        layout = self.folds
        groups = self.groups if self.grouped else [list(enumerate(self.merged))]
        with one_blas_thread():
            return [
                stacked_r([g for f, g in groups[layout.partition[k]] if f != k])
                for k in range(len(layout.cells))
            ]

    @property
    def samples(self) -> int:
        """Samples used (rows of all joints / n)."""
        return int(self.counts.sum()) // self.n_joints

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
    and the cell of each sample (N,) or of each joint's row (N, n) (-1: in no cell)."""

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
    layout: FoldLayout | None = None,
) -> FoldFactors:
    """The factors of every cell (`n_folds` of them) over the preprocessed recordings, every
    stride-th sample in a cell so that at most about `max_samples` are used. `spaces`: the
    joints' row spaces (`linear_problem.joint_row_spaces`); `layout`: the folds over the cells
    (None: each cell is a fold)."""
    n = builder.robot.n_joints
    groups = joint_groups(spaces, own)
    if worker_count(len(groups)) == 1:  # one pass: each chunk's rigid-body rows computed once
        groups = [tuple(range(n))]

    def factors_of(joints: tuple[int, ...]) -> tuple[dict[int, list[np.ndarray]], np.ndarray]:
        return group_factors(builder, recordings, n_folds, own, spaces, max_samples, joints)

    merged, per_joint, counts = merge_groups(forked_map(factors_of, groups), n, n_folds)
    return FoldFactors(merged, per_joint, counts, n, own, layout)


def joint_groups(spaces: list[np.ndarray], own: OwnColumns) -> list[tuple[int, ...]]:
    """The joints in `JOINT_GROUPS` groups of about equal cost (their factors' columns), each
    group's factors a task (`group_factors`)."""
    e = len(own.names)
    return _balanced([space.shape[1] + e for space in spaces], JOINT_GROUPS)


def group_factors(
    builder: RegressorBuilder,
    recordings: list[FoldRows],
    n_folds: int,
    own: OwnColumns,
    spaces: list[np.ndarray],
    max_samples: int | None,
    joints: tuple[int, ...],
) -> tuple[dict[int, list[np.ndarray]], np.ndarray]:
    """`fold_factors`' factors of the joints `joints` alone: ({joint: its factor per cell},
    rows per cell and joint (n_folds, n), zero for the other joints)."""
    n = builder.robot.n_joints
    cells = [_per_joint(r.labels, n) for r in recordings]
    total = sum(int(np.sum(c[:, 0] >= 0)) for c in cells)
    stride = max(1, -(-total // max_samples)) if max_samples else 1
    kept = [np.flatnonzero(c[:, 0] >= 0)[::stride] for c in cells]
    return _joint_factors(builder, recordings, kept, n_folds, own, spaces, joints)


def merge_groups(
    groups: Iterable[tuple[dict[int, list[np.ndarray]], np.ndarray]], n: int, n_folds: int
) -> tuple[list[np.ndarray], list[list[np.ndarray]], np.ndarray]:
    """(merged, per_joint, counts) of `FoldFactors` from every group's `group_factors`."""
    per_joint_of: dict[int, list[np.ndarray]] = {}
    counts = np.zeros((n_folds, n), dtype=int)
    for factors, group_counts in groups:
        per_joint_of.update(factors)
        counts += group_counts
    per_joint = [[per_joint_of[j][f] for j in range(n)] for f in range(n_folds)]
    with one_blas_thread():
        merged = [stacked_r(joints) for joints in per_joint]
    return merged, per_joint, counts


def _balanced(costs: list[int], groups: int) -> list[tuple[int, ...]]:
    """The joints split in `groups` groups of about equal total cost (largest first)."""
    members: list[list[int]] = [[] for _ in range(max(1, min(groups, len(costs))))]
    totals = [0] * len(members)
    for j in sorted(range(len(costs)), key=lambda j: -costs[j]):
        k = totals.index(min(totals))
        members[k].append(j)
        totals[k] += costs[j]
    return [tuple(sorted(m)) for m in members]


def _joint_factors(
    builder: RegressorBuilder,
    recordings: list[FoldRows],
    kept: list[np.ndarray],
    n_folds: int,
    own: OwnColumns,
    spaces: list[np.ndarray],
    joints: tuple[int, ...],
) -> tuple[dict[int, list[np.ndarray]], np.ndarray]:
    """({joint: its factor (r, P) per cell, in `FoldFactors`' column layout} for `joints`,
    and the rows of each cell and joint (n_folds, n): zero for the other joints). `kept`: per
    recording, the samples used (in time order). The rigid-body rows are computed a chunk at
    a time, each joint's projected into its row space `spaces[j]` (no array of every row:
    memory first touched is costly, in a forked worker above all)."""
    n = builder.robot.n_joints
    e, s = len(own.names), len(own.shared)
    wanted = np.zeros(n, dtype=bool)
    wanted[list(joints)] = True
    subtree = [builder.subtree_columns(j) for j in range(n)]
    blocks = [builder.subtree_block(j) for j in range(n)]
    used = {j: own.used(j) for j in joints}
    taken = {j: np.concatenate([used[j], e + np.arange(s)]) for j in joints}  # + shared
    accumulators = {
        j: [
            TriangularAccumulator(spaces[j].shape[1] + len(used[j]) + s + 2) for _ in range(n_folds)
        ]
        for j in joints
    }
    counts = np.zeros((n_folds, n), dtype=int)
    with one_blas_thread():
        for recording, samples in zip(recordings, kept, strict=True):
            labels = _per_joint(recording.labels, n)
            for j in joints:
                counts[:, j] += np.bincount(labels[samples, j], minlength=n_folds)
            own_values = own.values(recording.data, samples, wanted)
            if s:
                shared = own.shared_values(recording.data, samples)
                own_values = np.concatenate([own_values, shared], axis=-1)
            data = recording.data
            for start in range(0, len(samples), CHUNK):
                rows = samples[start : start + CHUNK]
                rigid = builder.rigid_body(data.q[rows], data.dq[rows], data.ddq[rows])
                own_part = own_values[start : start + CHUNK]
                if own.load:  # per Nm of load: times the nominal model's |tau_load| (Nm)
                    loads = np.abs(builder.load_torque(rigid, data.ddq[rows]))
                    own_part[:, :, list(own.load)] *= loads[:, :, None]
                for j in joints:
                    rigid_rows = rigid[:, j, blocks[j]] @ spaces[j]
                    for cell, mine in _cell_runs(labels[rows, j]):
                        accumulators[j][cell].add_blocks(
                            rigid_rows[mine],
                            own_part[mine, j][:, taken[j]],
                            data.tau[rows[mine], j],
                            recording.tau_recorded[rows[mine], j],
                        )
                del rigid  # before the next chunk's: one buffer, not two
    size = 10 * n + n * e + s + 2
    factors: dict[int, list[np.ndarray]] = {}
    for j in joints:
        factors[j] = []
        for accumulator in accumulators[j]:
            r = accumulator.factor
            k, u = spaces[j].shape[1], len(used[j])
            full = np.zeros((r.shape[0], size))
            full[:, subtree[j]] = r[:, :k] @ spaces[j].T
            full[:, 10 * n + j * e + used[j]] = r[:, k : k + u]
            full[:, 10 * n + n * e : 10 * n + n * e + s] = r[:, k + u : k + u + s]
            full[:, -2:] = r[:, -2:]
            factors[j].append(full)
    return factors, counts


def _cell_runs(cell: np.ndarray) -> list[tuple[int, slice | np.ndarray]]:
    """(cell, its rows) for each cell of a chunk's row labels `cell` (increasing cells, rows in
    order): slices (views) when the labels never decrease (rows are in time order, and cells
    mostly are), else index arrays."""
    if not len(cell):
        return []
    if cell[0] == cell[-1] and (cell == cell[0]).all():  # one cell (most chunks)
        return [(int(cell[0]), slice(0, len(cell)))]
    order = None if (np.diff(cell) >= 0).all() else np.argsort(cell, kind="stable")
    ordered = cell if order is None else cell[order]
    bounds = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(cell)]
    return [
        (int(ordered[lo]), slice(lo, hi) if order is None else order[lo:hi])
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def _per_joint(labels: np.ndarray, n: int) -> np.ndarray:
    """(N, n) cells: per-sample labels (N,) repeated for every joint."""
    labels = np.asarray(labels)
    return np.repeat(labels[:, None], n, axis=1) if labels.ndim == 1 else labels
