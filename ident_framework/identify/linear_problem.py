"""From a preprocessed dataset to the least-squares problem in base parameters, and its
solution by the configured estimator (`estimate`).

One pass accumulates, per joint, the triangular factor of [Y_j | tau_j] in the standard
parameters; the base parameters come from the SVD of the stacked factor, onto which the
per-joint factors are projected. Sample-by-sample estimators get a re-stream of base-regressor
chunks. The pass keeps the projected rows (`KeptRows`, up to KEPT_ROWS_BYTES) for prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.hookspecs import Estimator, LinearProblem, StandardModel, conform
from ident_framework.model import friction_terms
from ident_framework.model.base_parameters import (
    BaseParameters,
    TriangularAccumulator,
    condition_number,
)
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.parallel_work import forked_map, shared_zeros
from ident_framework.progress import progress as progress_bar
from ident_framework.triangular import one_blas_thread, stacked_r


def chunk_slices(n_samples: int, chunk_size: int) -> Iterator[slice]:
    for start in range(0, n_samples, chunk_size):
        yield slice(start, min(start + chunk_size, n_samples))


def _tasks(n_samples: int, chunk_size: int) -> list[list[slice]]:
    """The chunks in tasks of about TASK_SAMPLES samples (fixed: results do not depend on how
    many workers run them)."""
    slices = list(chunk_slices(n_samples, chunk_size))
    per_task = max(1, TASK_SAMPLES // chunk_size)
    return [slices[i : i + per_task] for i in range(0, len(slices), per_task)]


def stack_factors(factors: list[np.ndarray]) -> np.ndarray:
    """Triangular factor R with RᵀR = Σ FᵢᵀFᵢ of several factors (e.g. the per-joint ones)."""
    with one_blas_thread():  # small matrices: threads only contend
        return stacked_r(factors)


# q, dq, ddq, tau: (m, n) each; optionally the rows' friction basis (m, n, k) as a fifth item
Chunk = tuple[np.ndarray, ...]


STRUCTURAL_TOLERANCE = 1e-12  # relative singular value below which a row direction is void
KEPT_ROWS_BYTES = 256 * 2**20  # keep a recording's projected regressor rows up to this size


def joint_row_spaces(builder: RegressorBuilder, n_states: int = 400, seed: int = 0) -> list:
    """Per joint j, an orthonormal basis (c_j, r_j) of the space in which row j of the rigid-
    body regressor lives within joint j's subtree columns, from random states; memoised on the
    robot model (it depends only on the robot)."""
    memo = builder.robot.__dict__.setdefault("_joint_row_spaces", {})
    if (n_states, seed) not in memo:
        q, dq, ddq = random_states(builder.robot, n_states, seed)
        bases = []
        with one_blas_thread():  # small SVDs: threads only contend
            rigid = builder.rigid_body(q, dq, ddq)
            for j in range(builder.robot.n_joints):
                block = rigid[:, j, builder.subtree_columns(j)]
                _, singular, vt = np.linalg.svd(block, full_matrices=False)
                rank = (
                    int(np.sum(singular > STRUCTURAL_TOLERANCE * singular[0]))
                    if singular.size
                    else 0
                )
                bases.append(np.ascontiguousarray(vt[:rank].T))
        memo[n_states, seed] = bases
    return memo[n_states, seed]


def random_states(
    robot: RobotModel, n_states: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q rad, dq rad/s, ddq rad/s²), each (n_states, n): uniform within the joint limits
    (positions clipped to ±pi), seeded: the states that reveal the regressor's structure."""
    rng = np.random.default_rng(seed)
    low, high = np.clip(robot.limits.position, -np.pi, np.pi).T
    n = robot.n_joints
    q = rng.uniform(low, high, (n_states, n))
    dq = rng.uniform(-1.0, 1.0, (n_states, n)) * robot.limits.velocity
    ddq = rng.uniform(-1.0, 1.0, (n_states, n)) * robot.limits.acceleration
    return q, dq, ddq


TASK_SAMPLES = 10_000  # samples per task of the factor pass and of prediction


class _KeptOf:
    """What `build_problem` kept of one recording (recognised by identity of its q)."""

    def __init__(self, data: Dataset) -> None:
        self._q = data.q
        self.n_samples = data.n_samples

    def belongs_to(self, data: Dataset) -> bool:
        return data.q is self._q and data.n_samples == self.n_samples and not self.released

    released = False

    def release(self) -> None:
        """Let go of what was kept (e.g. once the predictions are made): `predict_torque`
        then computes the rows again."""
        self.released = True


class KeptRows(_KeptOf):
    """Per joint j, A_j P_j (N, k_j) (row j's subtree part in its row space,
    `joint_row_spaces`), and the own columns (N, n, e) of every row, in shared memory that the
    factor pass's forked workers write. `predict(theta)` = Y theta (N, n) in Nm."""

    def __init__(self, builder: RegressorBuilder, spaces: list[np.ndarray], data: Dataset):
        super().__init__(data)
        n = builder.robot.n_joints
        self.spaces = spaces
        self.subtree = [builder.subtree_columns(j) for j in range(n)]
        self.own_columns = [builder.own_columns(j) for j in range(n)]
        self.projected = [shared_zeros((data.n_samples, s.shape[1])) for s in spaces]
        self.own = shared_zeros((data.n_samples, n, len(self.own_columns[0]) if n else 0))

    def release(self) -> None:
        super().release()
        self.projected, self.own = [], np.empty((0, 0, 0))

    def predict(self, theta: np.ndarray) -> np.ndarray:
        out = np.empty((self.n_samples, len(self.spaces)))
        with one_blas_thread():
            for j, (space, cols) in enumerate(zip(self.spaces, self.subtree, strict=True)):
                own = self.own[:, j] @ theta[self.own_columns[j]]
                out[:, j] = self.projected[j] @ (space.T @ theta[cols]) + own
        return out


class JointAccumulators:
    """Per joint j, the streaming QR of the projected rows [A_j P_j | own_j | tau_j]: `add`
    chunks, `factors` the square roots in the standard parameters."""

    def __init__(self, builder: RegressorBuilder) -> None:
        n = builder.robot.n_joints
        self.builder = builder
        self.subtree = [builder.subtree_columns(j) for j in range(n)]
        self.blocks = [builder.subtree_block(j) for j in range(n)]
        self.own_columns = [builder.own_columns(j) for j in range(n)]
        self.spaces = joint_row_spaces(builder)
        self.accumulators = [
            TriangularAccumulator(self.spaces[j].shape[1] + len(self.own_columns[j]) + 1)
            for j in range(n)
        ]
        self.n_samples = 0

    def rows_of(self, chunk: Chunk) -> tuple[list[np.ndarray], np.ndarray]:
        """(per joint j the projected rows A_j P_j (m, k_j), the own columns (m, n, e)) of a
        chunk (q, dq, ddq, tau[, friction])."""
        q, dq, ddq = chunk[:3]
        rigid = self.builder.rigid_body(q, dq, ddq)
        own = self.builder.own_terms(dq, ddq, chunk[4] if len(chunk) > 4 else None, rigid)
        pairs = zip(self.blocks, self.spaces, strict=True)
        return [rigid[:, j, block] @ space for j, (block, space) in enumerate(pairs)], own

    def add(self, chunk: Chunk, keep: KeptRows | None = None, rows: slice | None = None) -> None:
        """One chunk (q, dq, ddq, tau[, friction]); its projected rows into `keep` at `rows`."""
        q, tau = chunk[0], chunk[3]
        projected, own = self.rows_of(chunk)
        for j, accumulator in enumerate(self.accumulators):
            accumulator.add_blocks(projected[j], own[:, j], tau[:, j])
        if keep is not None and rows is not None:
            for j, block in enumerate(projected):
                keep.projected[j][rows] = block
            keep.own[rows] = own
        self.n_samples += len(q)

    def factors(self) -> list[np.ndarray]:
        """Per joint, R_j (p+1, p+1) in the standard parameters and the torque."""
        p = self.builder.n_parameters
        out = []
        for j, accumulator in enumerate(self.accumulators):
            r = accumulator.factor
            k = self.spaces[j].shape[1]
            full = np.zeros((p + 1, p + 1))
            rows = slice(0, r.shape[0])
            full[rows, self.subtree[j]] = r[:, :k] @ self.spaces[j].T
            full[rows, self.own_columns[j]] = r[:, k:-1]
            full[rows, p] = r[:, -1]
            out.append(full)
        return out


def accumulate_joint_factors(
    builder: RegressorBuilder,
    chunks: Iterable[Chunk],
    total: int | None = None,
    progress=False,
) -> tuple[list[np.ndarray], int]:
    """(per joint j, R_j (p+1, p+1) with R_jᵀR_j = [Y_j | tau_j]ᵀ[Y_j | tau_j] over all chunks,
    streamed; the number of samples). Only the projected rows [A_j P_j | own_j | tau_j] are
    factored (`joint_row_spaces`), mapped back with P_jᵀ at the end."""
    accumulators = JointAccumulators(builder)
    with one_blas_thread():  # small QR factorisations: BLAS threads only contend
        for chunk in progress_bar(
            chunks, total=total, desc="regressor", unit="chunk", enabled=progress, leave=False
        ):
            accumulators.add(chunk)
    return accumulators.factors(), accumulators.n_samples


def factor_pass(
    builder: RegressorBuilder,
    data: Dataset,
    chunk_size: int,
    friction: np.ndarray | None,
    keep: KeptRows | None,
    progress: bool = False,
) -> tuple[list[np.ndarray], int]:
    """`accumulate_joint_factors` over a dataset in memory, in tasks on forked workers, merged
    in task order; `keep`: where the workers write the projected rows."""
    tasks = _tasks(data.n_samples, chunk_size)

    def work(task: list[slice]) -> list[np.ndarray]:
        accumulators = JointAccumulators(builder)
        with one_blas_thread():
            for rows in task:
                accumulators.add(chunk_at(data, rows, friction), keep, rows)
        return [a.factor for a in accumulators.accumulators]  # projected

    with progress_bar(
        total=data.n_samples, desc="regressor", unit="sample", enabled=progress, leave=False
    ) as bar:
        sizes = [sum(s.stop - s.start for s in task) for task in tasks]
        parts = forked_map(work, tasks, done=lambda i: bar.update(sizes[i]))
    merged = JointAccumulators(builder)
    with one_blas_thread():
        for j, accumulator in enumerate(merged.accumulators):
            for part in parts:  # in task order
                accumulator.add(part[j])
    return merged.factors(), data.n_samples


def project_to_base(
    joint_factors: list[np.ndarray],
    standard_names: list[str],
    tolerance: float,
    method: str = "svd",
) -> tuple[BaseParameters, list[np.ndarray], float]:
    """Base parameters from the stacked factor, the per-joint factors of [W_j B | tau_j],
    and cond(W V_r) (V_r of the SVD, whatever the base method)."""
    p = len(standard_names)
    total = stack_factors(joint_factors)[:p, :p]
    svd_base = BaseParameters.from_r_factor(total, standard_names, tolerance, "svd")
    cond = condition_number(total, svd_base.basis)
    base = (
        svd_base
        if method == "svd"
        else BaseParameters.from_r_factor(total, standard_names, tolerance, method)
    )
    augmented = np.zeros((p + 1, base.rank + 1))
    augmented[:p, : base.rank] = base.basis
    augmented[p, base.rank] = 1.0
    return base, [np.linalg.qr(f @ augmented, mode="r") for f in joint_factors], cond


def parallel_friction_basis(
    data: Dataset,
    basis: Callable[..., np.ndarray] | Sequence[Callable[..., np.ndarray]],
    uses_acceleration: bool,
    rows: np.ndarray | None = None,
    joints: Sequence[np.ndarray | None] | None = None,
    into: tuple[np.ndarray, Sequence[int]] | None = None,
) -> np.ndarray:
    """(N, n, k) friction columns `basis(t, dq, ddq)` from the unfiltered velocity of `data`'s
    recordings (ddq by np.gradient when `uses_acceleration`), low-passed like the torque
    (`parallel_filter.py`), at `data`'s rows (or at increasing `rows` of them). A sequence of
    functions: their columns concatenated; `joints` per function a mask (n,) of the joints
    wanted (None: all), passed as function(t, dq, ddq, mask); the others are zero. `into`:
    write into an array instead (`ParallelFilter.apply`)."""
    last: list[np.ndarray] = []  # [dq, its ddq] of the segment the parts are evaluated on

    def acceleration(t: np.ndarray, dq: np.ndarray) -> np.ndarray | None:
        if not uses_acceleration:
            return None
        if not last or last[0] is not dq:
            last[:] = [dq, np.gradient(dq, t, axis=0)]
        return last[1]

    def raw(
        function: Callable[..., np.ndarray], mask: np.ndarray | None = None
    ) -> Callable[..., np.ndarray]:
        def raw_columns(t: np.ndarray, dq: np.ndarray) -> np.ndarray:
            return function(t, dq, acceleration(t, dq), *(() if mask is None else (mask,)))

        return raw_columns

    if callable(basis):
        parts = raw(basis)
    else:
        masks = [None] * len(basis) if joints is None else joints
        parts = [raw(function, mask) for function, mask in zip(basis, masks, strict=True)]
    return data.parallel_filter.apply(parts, rows, joints, into)


def recording_friction(builder: RegressorBuilder, data: Dataset) -> np.ndarray | None:
    """The friction basis of a whole recording (N, n, k): filtered in parallel with the torque
    when asked for and the data were filtered, else at the recorded velocity for a sequential
    model or one with temperature columns (`data.temperature`, °C); None otherwise (computed
    chunk by chunk)."""
    if builder.parallel_friction and data.parallel_filter is not None:
        whole = parallel_friction_basis(data, builder.friction_basis, builder.uses_acceleration)
    elif builder.sequential or builder.uses_temperature:
        whole = builder.friction_basis(
            data.timestamp if builder.sequential else None, data.dq, data.ddq
        )
    else:
        return None
    if not builder.uses_temperature:
        return whole
    if data.temperature is None:
        where = ", ".join(data.recording_paths)
        raise UserError(
            f"The friction model has a temperature term (friction.temperature=on), but the "
            f"data ({where}) record no joint temperatures: add the joint_temperatures_0..."
            f"{builder.robot.n_joints - 1} columns (°C) to the recording, or set "
            "friction.temperature=off (or auto)."
        )
    if getattr(builder.friction, "reference_temperature", 0.0) is None:
        raise UserError(
            "The friction's temperature term (friction.temperature=on) has no reference "
            "temperature in this mode: set friction.reference_temperature=T (°C, one or one "
            "per joint), or friction.temperature=off."
        )
    return friction_terms.with_temperature(builder.friction, whole, data.temperature)


def dataset_chunks(
    data: Dataset, chunk_size: int, friction: np.ndarray | None = None
) -> Iterator[Chunk]:
    for rows in chunk_slices(data.n_samples, chunk_size):
        yield chunk_at(data, rows, friction)


def chunk_at(data: Dataset, rows: slice, friction: np.ndarray | None = None) -> Chunk:
    """The chunk (q, dq, ddq, tau[, friction]) of `data`'s `rows`."""
    chunk = (data.q[rows], data.dq[rows], data.ddq[rows], data.tau[rows])
    return chunk if friction is None else (*chunk, friction[rows])


def standard_model(
    builder: RegressorBuilder, joint_factors: list[np.ndarray], base: BaseParameters
) -> StandardModel:
    """The physical parameterisation behind `base` (see `hookspecs.StandardModel`)."""
    n = builder.robot.n_joints
    k = len(builder.friction.parameter_names)
    kinds = ["inertial"] * builder.n_inertial + ["friction"] * (n * k)
    joints = [i // 10 for i in range(builder.n_inertial)] + [i // k for i in range(n * k)]
    for flag, kind in ((builder.armature, "armature"), (builder.torque_offset, "offset")):
        if flag:
            kinds += [kind] * n
            joints += list(range(n))
    motor = ["friction"] * k + ["armature"] * builder.armature  # a coupled motor's columns
    for coupling in builder.couplings:
        kinds += motor
        joints += [coupling.driven] * len(motor)
    nominal = builder.standard_parameters(
        builder.robot.inertial_parameters(), armature=builder.robot.armature()
    )
    return StandardModel(
        names=builder.parameter_names,
        kinds=kinds,
        joints=joints,
        n_links=n,
        nominal=nominal,
        r_factors=joint_factors,
        basis=base.basis,
        combination=base.combination,
    )


class KeptFriction(_KeptOf):
    """The friction columns (N, n, k) `build_problem` computed (low-passed like the torque),
    kept when the projected rows are too many (`KEPT_ROWS_BYTES`), so that `predict_torque`
    of that dataset need not compute them again."""

    def __init__(self, data: Dataset, friction: np.ndarray) -> None:
        super().__init__(data)
        self.friction: np.ndarray | None = friction

    def release(self) -> None:
        super().release()
        self.friction = None


def build_problem(
    builder: RegressorBuilder,
    data: Dataset,
    chunk_size: int,
    tolerance: float,
    progress: bool = True,
    method: str = "svd",
) -> tuple[LinearProblem, BaseParameters, float]:
    """(least-squares problem in base parameters, base parameters, cond of W·V_r)."""
    if data.ddq is None:
        raise ValueError("accelerations missing: preprocess the dataset first")
    friction = recording_friction(builder, data)
    keep = None
    spaces = joint_row_spaces(builder)
    width = sum(s.shape[1] for s in spaces)
    width += sum(len(builder.own_columns(j)) for j in range(builder.robot.n_joints))
    if 8 * width * data.n_samples <= KEPT_ROWS_BYTES:
        keep = KeptRows(builder, spaces, data)
    joint_factors, n_samples = factor_pass(builder, data, chunk_size, friction, keep, progress)
    base, base_factors, cond = project_to_base(
        joint_factors, builder.parameter_names, tolerance, method
    )

    standard = standard_model(builder, joint_factors, base)
    kept = keep if keep is not None or friction is None else KeptFriction(data, friction)
    # the friction columns reach `chunks` through `kept` when it holds them (released with it)
    own = None if isinstance(kept, KeptFriction) else friction
    del friction

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        columns = own
        if isinstance(kept, KeptFriction):
            columns = recording_friction(builder, data) if kept.released else kept.friction
        for rows in chunk_slices(data.n_samples, chunk_size):
            regressor = _regressor(builder, data, rows, columns)
            yield data.timestamp[rows], regressor @ base.basis, data.tau[rows]

    problem = LinearProblem(base_factors, n_samples, base.names, chunks, standard, kept)
    return problem, base, cond


def predict_torque(
    builder: RegressorBuilder,
    data: Dataset,
    theta: np.ndarray,
    chunk_size: int,
    kept: KeptRows | KeptFriction | None = None,
) -> np.ndarray:
    """(N, n) model torque Y(q, dq, ddq) @ theta in Nm, theta in standard parameters; from
    `kept` (what `build_problem` kept of this very dataset and builder) when given."""
    theta = np.asarray(theta, dtype=float)
    if kept is not None and kept.belongs_to(data):
        if isinstance(kept, KeptRows):
            return kept.predict(theta)
        friction = kept.friction  # not released: belongs_to
    else:
        friction = recording_friction(builder, data)
    tasks = _tasks(data.n_samples, chunk_size)
    out = shared_zeros(data.tau.shape) if len(tasks) > 1 else np.empty_like(data.tau)

    def work(task: list[slice]) -> None:
        for rows in task:
            out[rows] = _regressor(builder, data, rows, friction) @ theta

    forked_map(work, tasks)
    return out


def _regressor(
    builder: RegressorBuilder, data: Dataset, rows: slice, friction: np.ndarray | None
) -> np.ndarray:
    """Y of `data`'s `rows`, with the recording's friction columns `friction` when given."""
    friction_rows = None if friction is None else friction[rows]
    return builder.compute(data.q[rows], data.dq[rows], data.ddq[rows], friction_rows)


def require_samples(data: Dataset, n_parameters: int, role: str) -> None:
    """UserError when `data` has fewer samples than the model has parameters."""
    if data.n_samples < n_parameters:
        where = data.metadata.get("path", data.metadata.get("source", "the recording"))
        raise UserError(
            f"The {role} data ({where}) has {data.n_samples} samples after preprocessing, fewer "
            f"than the {n_parameters} parameters of the model: the identification would be "
            "underdetermined. Record a longer motion (tens of seconds) or use fewer regressor "
            "columns (friction=none, regressor.armature=false)."
        )


def estimate(
    selected: Any, problem: LinearProblem, base: BaseParameters
) -> tuple[Estimator, np.ndarray]:
    """(fitted estimator, standard parameters theta) of the selected estimator plugin: its
    `standard_coef_`, else its base parameters mapped to the minimum-norm standard vector."""
    info, fitted = selected.info, selected.create().fit(problem)
    estimator = conform(info.kind, fitted, info.name, info.distribution, fitted=True)
    if estimator.standard_coef_ is not None:
        return estimator, np.asarray(estimator.standard_coef_)
    return estimator, base.to_standard(np.asarray(estimator.coef_))
