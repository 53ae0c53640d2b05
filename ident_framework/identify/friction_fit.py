"""Nonlinear friction parameters by variable projection (separable nonlinear least squares).

tau = W(theta) beta + e is linear in beta and nonlinear in theta, the friction model's
nonlinear parameters per joint (a Stribeck velocity in rad/s, LuGre's shape). For every theta
the best beta is a linear least-squares solution; `scipy.optimize.least_squares` minimises
r(theta) = tau - W(theta) beta*(theta) (Nm) over theta within the plugin's bounds (equal
bounds: held) from its starting points.

Rationale (cheap evaluations, residual choice): docs/design.md#nonlinear-friction-fit
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import chunk_slices, joint_row_spaces, stack_factors
from ident_framework.model import friction_terms
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.progress import progress as progress_bar

COULOMB_DEAD_BAND = 0.01  # rad/s, sign(dq) of the Coulomb-viscous start (as the built-in's default)
RELATIVE_STEP = 1e-6  # forward-difference step, relative to the parameter value
MAX_EVALUATIONS = 200  # residual evaluations of least_squares (each with a cheap Jacobian)


def coulomb_viscous_basis(dq: np.ndarray) -> np.ndarray:
    """(N, n, 2) columns [dq, sign(dq)] (sign 0 below COULOMB_DEAD_BAND): the starting model."""
    return np.stack([dq, np.where(np.abs(dq) > COULOMB_DEAD_BAND, np.sign(dq), 0.0)], axis=-1)


def _triangular(block: np.ndarray) -> np.ndarray:
    """Upper-triangular factor of `block` with a non-negative diagonal (unique: continuous in
    the block, as finite differences need)."""
    r = np.linalg.qr(block, mode="r")
    signs = np.where(np.diag(r) < 0, -1.0, 1.0)
    return r * signs[:, None]


@dataclass
class _Blocks:
    """One friction basis seen through the projected problem: per joint the friction part of
    the top rows (m_j, k), and the bottom factor R_c (k+1, k+1)."""

    top: list[np.ndarray]
    bottom: list[np.ndarray]


class ProjectedProblem:
    """The least-squares problem of one recording, reduced so that trying a friction basis
    costs O(N·k·m_j) per joint. Columns: the builder's fixed ones (inertial, armature, offset),
    then the friction columns joint by joint."""

    def __init__(self, builder: RegressorBuilder, data: Dataset, chunk_size: int):
        robot = builder.robot
        self.n = n = robot.n_joints
        self.t = np.asarray(data.timestamp, dtype=float)
        self.dq = np.asarray(data.dq, dtype=float)
        # friction columns filtered like the torque (see linear_problem.recording_friction)
        self.parallel = data.parallel_filter if builder.parallel_friction else None
        k = len(builder.friction.parameter_names)
        friction_columns = {int(c) for j in range(n) for c in builder.own_columns(j)[:k]}
        fixed = [c for c in range(builder.n_parameters) if c not in friction_columns]
        self.fixed_names = [builder.parameter_names[c] for c in fixed]
        position = {c: i for i, c in enumerate(fixed)}
        self.n_fixed = len(fixed)
        spaces = joint_row_spaces(builder)
        subtree = [builder.subtree_columns(j) for j in range(n)]
        own_fixed = [builder.own_columns(j)[k:] for j in range(n)]
        rows: list[list[np.ndarray]] = [[] for _ in range(n)]
        with threadpool_limits(limits=1, user_api="blas"):
            for part in chunk_slices(data.n_samples, chunk_size):
                q, dq, ddq = data.q[part], data.dq[part], data.ddq[part]
                rigid = builder.rigid_body(q, dq, ddq)
                own = builder.own_terms(dq, ddq, np.zeros((*dq.shape, k)))[:, :, k:]
                for j in range(n):
                    rows[j].append(np.hstack([rigid[:, j, subtree[j]] @ spaces[j], own[:, j]]))
        self.q_factors, self.fixed_top, self.tau_top, self.tau = [], [], [], []
        for j in range(n):
            x = np.vstack(rows[j])
            q_j, r_j = np.linalg.qr(x)
            tau_j = np.asarray(data.tau[:, j], dtype=float)
            r = spaces[j].shape[1]
            top = np.zeros((r_j.shape[0], self.n_fixed))
            top[:, [position[int(c)] for c in subtree[j]]] = r_j[:, :r] @ spaces[j].T
            top[:, [position[int(c)] for c in own_fixed[j]]] = r_j[:, r:]
            self.q_factors.append(q_j)
            self.fixed_top.append(top)
            self.tau_top.append(q_j.T @ tau_j)
            self.tau.append(tau_j)

    def columns(self, function: Any) -> np.ndarray:
        """function(t (M,), dq (M, n)) -> (M, c, k) friction columns, evaluated on the
        recording in time order (filtered in parallel with the torque when asked for)."""
        if self.parallel is not None:
            return self.parallel.apply(function)
        return function(self.t, self.dq)

    def blocks(self, friction: np.ndarray, joints: list[int] | None = None) -> _Blocks:
        """Reduced blocks of a friction basis (N, n', k); column c belongs to joint
        joints[c] (default: column j is joint j)."""
        joints = list(range(friction.shape[1])) if joints is None else joints
        top, bottom = [], []
        for column, j in enumerate(joints):
            f = friction[:, column, :]
            q_j = self.q_factors[j]
            g = q_j.T @ f
            rest = np.column_stack([f, self.tau[j]]) - q_j @ np.column_stack([g, self.tau_top[j]])
            top.append(g)
            bottom.append(_triangular(rest))
        return _Blocks(top, bottom)

    def stacked(self, blocks: _Blocks, k: int) -> list[np.ndarray]:
        """Per joint the rows [S_j | s_j] in the reduced column layout (fixed, then friction of
        every joint), width n_fixed + n k + 1."""
        width = self.n_fixed + self.n * k
        out = []
        for j in range(self.n):
            m = self.fixed_top[j].shape[0]
            rows = np.zeros((m + k + 1, width + 1))
            columns = slice(self.n_fixed + j * k, self.n_fixed + (j + 1) * k)
            rows[:m, : self.n_fixed] = self.fixed_top[j]
            rows[:m, columns] = blocks.top[j]
            rows[:m, -1] = self.tau_top[j]
            rows[m:, columns] = blocks.bottom[j][:, :k]
            rows[m:, -1] = blocks.bottom[j][:, k]
            out.append(rows)
        return out

    def base(self, blocks: _Blocks, k: int, tolerance: float) -> np.ndarray:
        """(width, r) basis of the identifiable parameter combinations of these blocks."""
        rows = self.stacked(blocks, k)
        width = self.n_fixed + self.n * k
        names = self.fixed_names + [f"friction_{i}" for i in range(self.n * k)]
        total = stack_factors(rows)[:width, :width]
        return BaseParameters.from_r_factor(total, names, tolerance, "svd").basis


class _Solver:
    """The linear least-squares solve of one projected problem in a fixed base."""

    def __init__(self, problem: ProjectedProblem, k: int, base: np.ndarray):
        self.problem, self.k, self.base = problem, k, base
        n_fixed = problem.n_fixed
        self.fixed_base = [top @ base[:n_fixed] for top in problem.fixed_top]
        self.friction_base = [
            base[n_fixed + j * k : n_fixed + (j + 1) * k] for j in range(problem.n)
        ]

    def joint_rows(self, j: int, top: np.ndarray, bottom: np.ndarray) -> tuple[np.ndarray, ...]:
        """Joint j's rows of (Z, z) in base coordinates."""
        fb = self.friction_base[j]
        z_rows = np.vstack([self.fixed_base[j] + top @ fb, bottom[:, : self.k] @ fb])
        return z_rows, np.concatenate([self.problem.tau_top[j], bottom[:, self.k]])

    def solve(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """(reduced residual Z x* - z, x*) of the stacked joint rows (x*: base coordinates)."""
        z_matrix = np.vstack([r[0] for r in rows])
        z = np.concatenate([r[1] for r in rows])
        x, *_ = np.linalg.lstsq(z_matrix, z, rcond=None)
        return z_matrix @ x - z, x


@dataclass
class FrictionFit:
    """values (n, m): fitted nonlinear parameters per joint; sse: sum of squared torque
    residuals (Nm²) at them; sse_start: at the chosen start; sse_coulomb_viscous: with
    Coulomb-viscous friction instead; sse_per_joint; start_index (n,): each joint's start;
    at_bounds: (joint, parameter) pairs ending on a bound."""

    names: tuple[str, ...]
    values: np.ndarray
    starts: np.ndarray
    start_index: np.ndarray
    sse: float
    sse_start: float
    sse_coulomb_viscous: float
    sse_per_joint: np.ndarray
    coulomb_viscous: dict[str, np.ndarray]
    evaluations: int
    message: str
    at_bounds: list[tuple[int, str]]

    def to_dict(self, joint_names: list[str]) -> dict[str, Any]:
        return {
            "nonlinear_names": list(self.names),
            "values": {
                joint: dict(zip(self.names, map(float, row), strict=True))
                for joint, row in zip(joint_names, self.values, strict=True)
            },
            "sse": self.sse,
            "sse_start": self.sse_start,
            "sse_coulomb_viscous": self.sse_coulomb_viscous,
            "sse_per_joint": self.sse_per_joint.tolist(),
            "start_index": self.start_index.tolist(),
            "coulomb_viscous_start": {k: v.tolist() for k, v in self.coulomb_viscous.items()},
            "evaluations": self.evaluations,
            "message": self.message,
            "at_bounds": [f"{joint_names[j]}.{name}" for j, name in self.at_bounds],
        }


def coulomb_viscous_start(
    problem: ProjectedProblem, tolerance: float
) -> tuple[dict[str, np.ndarray], float]:
    """Per-joint viscous (Nm·s/rad) and Coulomb (Nm) friction of the Coulomb-viscous
    identification of the same data, and its sum of squared residuals (Nm²)."""
    blocks = problem.blocks(problem.columns(lambda t, dq: coulomb_viscous_basis(dq)))
    solver = _Solver(problem, 2, problem.base(blocks, 2, tolerance))
    rows = [solver.joint_rows(j, blocks.top[j], blocks.bottom[j]) for j in range(problem.n)]
    rho, x = solver.solve(rows)
    friction = (solver.base @ x)[problem.n_fixed :].reshape(problem.n, 2)
    return {"viscous": friction[:, 0], "coulomb": friction[:, 1]}, float(rho @ rho)


class SeparableFit:
    """The torque residual r(theta) and its Jacobian for one friction model on one recording;
    theta flattened joint-major from (n, m) values per joint."""

    def __init__(self, builder: RegressorBuilder, data: Dataset, chunk_size: int, tolerance: float):
        self.model = model = builder.friction
        self.names = friction_terms.nonlinear_names(model)
        self.n, self.m = builder.robot.n_joints, len(self.names)
        self.k = len(model.parameter_names)
        self.problem = ProjectedProblem(builder, data, chunk_size)
        self.coulomb_viscous, self.sse_coulomb_viscous = coulomb_viscous_start(
            self.problem, tolerance
        )
        lower, upper = (np.asarray(b, dtype=float) for b in model.nonlinear_bounds())
        self.lower, self.upper = lower, upper
        self.free = np.flatnonzero(lower < upper)  # the others are held (equal bounds)
        starts = np.asarray(
            model.initial_nonlinear(
                self.coulomb_viscous["viscous"], self.coulomb_viscous["coulomb"]
            ),
            dtype=float,
        )
        self.starts = np.clip(starts.reshape(-1, self.n, self.m), lower, upper)
        # the identifiable combinations, from the first start (structural)
        first = self.problem.blocks(self.basis(self.starts[0]))
        self.solver = _Solver(self.problem, self.k, self.problem.base(first, self.k, tolerance))
        self._cache: dict[str, Any] = {}
        self.evaluations = 0

    def basis(self, values: np.ndarray) -> np.ndarray:
        """Friction basis of (joint, parameter set) columns: values (c, m), column c of joint
        c % n (several parameter sets in one evaluation)."""
        repeats = len(values) // self.n
        return self.problem.columns(
            lambda t, dq: friction_terms.basis(self.model, t, np.tile(dq, (1, repeats)), values)
        )

    def _rows(self, blocks: _Blocks, offset: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
        return [
            self.solver.joint_rows(j, blocks.top[offset + j], blocks.bottom[offset + j])
            for j in range(self.n)
        ]

    def joint_sse(self, values: np.ndarray) -> np.ndarray:
        """(n,) each joint's sum of squared residuals (Nm²) at values (n, m)."""
        return self._joint_sse(self._rows(self.problem.blocks(self.basis(values))))

    def _joint_sse(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        rho, _ = self.solver.solve(rows)
        sizes = [r[0].shape[0] for r in rows]
        return np.array([np.sum(part**2) for part in np.split(rho, np.cumsum(sizes)[:-1])])

    def best_start(self) -> tuple[np.ndarray, np.ndarray]:
        """(values (n, m), start index (n,)): per joint the start with the lowest share of the
        residual (all starts in one basis evaluation)."""
        n, starts = self.n, self.starts
        blocks = self.problem.blocks(
            self.basis(starts.reshape(-1, self.m)), [c % n for c in range(len(starts) * n)]
        )
        shares = [self._joint_sse(self._rows(blocks, s * n)) for s in range(len(starts))]
        index = np.argmin(np.array(shares), axis=0)
        return starts[index, np.arange(n)], index

    def torque_residual(self, friction: np.ndarray, x: np.ndarray) -> np.ndarray:
        """(N·n,) residual tau - W beta, joint-major, of the friction basis (N, n, k) and the
        base-coordinate solution x (beta = B x)."""
        problem, k = self.problem, self.k
        beta = self.solver.base @ x
        fixed, coefficients = beta[: problem.n_fixed], beta[problem.n_fixed :].reshape(self.n, k)
        out = []
        for j in range(self.n):
            model = problem.q_factors[j] @ (problem.fixed_top[j] @ fixed)
            out.append(problem.tau[j] - model - friction[:, j] @ coefficients[j])
        return np.concatenate(out)

    def residual(self, flat: np.ndarray) -> np.ndarray:
        """The torque residual (N·n,) of the best linear parameters at the flattened nonlinear
        values (n·m,), joint-major (variable projection's functional)."""
        friction = self.basis(flat.reshape(self.n, self.m))
        rows = self._rows(self.problem.blocks(friction))
        _, x = self.solver.solve(rows)
        r = self.torque_residual(friction, x)
        self._cache.update(flat=flat.copy(), rows=rows, friction=friction, r=r)
        self.evaluations += 1
        return r

    def jacobian(self, flat: np.ndarray) -> np.ndarray:
        """Forward differences of `residual`, parameter i of every joint moved at once (one
        basis evaluation), one small solve per column."""
        if "flat" not in self._cache or not np.array_equal(self._cache["flat"], flat):
            self.residual(flat)
        rows, friction, r = self._cache["rows"], self._cache["friction"], self._cache["r"]
        n, m = self.n, self.m
        values = flat.reshape(n, m)
        step = RELATIVE_STEP * np.maximum(np.abs(values), 1e-12)
        step = np.where(values + step > self.upper, -step, step)
        shifted = []
        for i in self.free:
            moved = values.copy()
            moved[:, i] += step[:, i]
            shifted.append(moved)
        moved_basis = self.basis(np.vstack(shifted))
        blocks = self.problem.blocks(moved_basis, [c % n for c in range(len(shifted) * n)])
        out = np.zeros((len(r), n * m))  # a held parameter's columns stay zero
        for s, i in enumerate(self.free):
            for j in range(n):
                replaced = list(rows)
                replaced[j] = self.solver.joint_rows(
                    j, blocks.top[s * n + j], blocks.bottom[s * n + j]
                )
                _, x = self.solver.solve(replaced)
                columns = friction.copy()
                columns[:, j] = moved_basis[:, s * n + j]
                out[:, j * m + i] = (self.torque_residual(columns, x) - r) / step[j, i]
        return out


def fit_nonlinear_friction(
    builder: RegressorBuilder,
    data: Dataset,
    chunk_size: int,
    tolerance: float,
    progress: bool = True,
) -> FrictionFit:
    """Fit the builder's friction model's nonlinear parameters to preprocessed `data` (with
    accelerations) by variable projection."""
    # imported before the BLAS limit, which covers only the libraries loaded by then
    from scipy.optimize import least_squares  # ~0.15 s: only nonlinear friction needs it

    with threadpool_limits(limits=1, user_api="blas"):
        fit = SeparableFit(builder, data, chunk_size, tolerance)
        n, m, names = fit.n, fit.m, fit.names
        x0, start_index = fit.best_start()
        bar = progress_bar(desc="friction fit", unit="eval", enabled=progress, leave=False)

        free = np.zeros((n, m), dtype=bool)
        free[:, fit.free] = True
        free = free.ravel()  # the fitted entries of the flattened values (joint-major)

        def full(x: np.ndarray) -> np.ndarray:
            flat = x0.ravel().copy()
            flat[free] = x
            return flat

        def residual(x: np.ndarray) -> np.ndarray:
            bar.update()
            return fit.residual(full(x))

        r0 = fit.residual(x0.ravel())
        if free.any():
            result = least_squares(
                residual,
                x0.ravel()[free],
                jac=lambda x: fit.jacobian(full(x))[:, free],
                bounds=(np.tile(fit.lower, n)[free], np.tile(fit.upper, n)[free]),
                x_scale=np.maximum(np.abs(x0.ravel()[free]), 1e-12),
                method="trf",
                max_nfev=MAX_EVALUATIONS,
            )
            evaluations, message, fitted = int(result.nfev), str(result.message), result.x
        else:  # every parameter held: nothing to fit
            evaluations, message, fitted = 1, "every nonlinear parameter held", x0.ravel()[free]
        bar.close()
        values = full(fitted).reshape(n, m)
        sse_per_joint = fit.joint_sse(values)
    span = fit.upper - fit.lower
    at_bounds = [
        (j, names[i])
        for j in range(n)
        for i in fit.free
        if min(values[j, i] - fit.lower[i], fit.upper[i] - values[j, i]) <= 1e-6 * span[i]
    ]
    return FrictionFit(
        names=names,
        values=values,
        starts=fit.starts,
        start_index=start_index,
        sse=float(sse_per_joint.sum()),
        sse_start=float(r0 @ r0),
        sse_coulomb_viscous=fit.sse_coulomb_viscous,
        sse_per_joint=sse_per_joint,
        coulomb_viscous=fit.coulomb_viscous,
        evaluations=evaluations,
        message=message,
        at_bounds=at_bounds,
    )


def shape_for_tuning(config: Any, builder: RegressorBuilder, recorded: Dataset) -> RegressorBuilder:
    """`builder` at its friction's nonlinear parameters fitted to the raw identification data
    `recorded` with the configured preprocessing: the shape `tuning=cv` scores candidates
    with. The final fit starts again from the configured values."""
    from ident_framework.data.preprocessing import preprocess

    train = preprocess(recorded, config.preprocessing)
    fit = fit_nonlinear_friction(
        builder, train, config.chunk_size, config.base_parameters.tolerance, progress=False
    )
    return builder.with_nonlinear(fit.values)
