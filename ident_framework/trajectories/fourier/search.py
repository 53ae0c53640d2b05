"""The search of the `fourier` generator: the problem (coefficients and start pose, feasible
for the joint limits, nominal torques and workspace by construction) and the search (seeded
Monte-Carlo candidates, then CMA-ES penalising leaving the workspace).

Coverage (`circle_coverage`): the share of each joint's circle (q mod 2π, what the residual
learner's sin q / cos q see) in `ANGLE_BINS` arcs of 5° that some sample visits."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ident_framework.errors import UserError, per_joint_values
from ident_framework.hookspecs import ConditionObjective
from ident_framework.model.robot import RobotModel
from ident_framework.model.workspace import Workspace
from ident_framework.trajectories.fourier.params import FourierParams
from ident_framework.trajectories.fourier.series import (
    FourierTrajectory,
    constraint_basis,
    fourier_basis,
)

# a candidate made feasible and scored: q0 (n,) rad, z (m, n), workspace violation (m), cond,
# cost (log cond, plus the coverage term)
Evaluation = tuple[np.ndarray, np.ndarray, float, float, float]

_START_BATCH = 64  # random start poses drawn at once when looking for one inside the workspace
_START_BATCHES = 50
_FIT_ROUNDS = 4  # alternations of the workspace and torque fits
_SCAN_STEPS = 8  # factors tried at once by the workspace fit
_VIOLATION_COST_PER_M = 60.0  # refinement: added to log cond per m outside the workspace
_DRAWS_PER_TASK = 8  # random candidates a forked worker evaluates per message
_SEARCH_MARGIN_M = 0.01  # extra workspace clearance on the search's coarse grids


class SearchProblem:
    """Feasible-by-construction parametrisation of the search.

    A candidate x = (u (n,), z (m, n) normalised by the velocity limits): q0 = centre +
    clip(u, -1, 1) * half_range; coefficients [a; b]_j = N z_j (N the rest-constraint basis),
    each joint shrunk onto its limits, then all together until the nominal torques fit.
    Random candidates are shrunk into the workspace; refined ones report how far they leave
    it."""

    def __init__(self, robot: RobotModel, params: FourierParams):
        self.robot = robot
        self.params = params
        self.n = robot.n_joints
        self.n_harmonics = params.n_harmonics
        self.omega = 2.0 * math.pi * params.base_frequency_hz
        self.period = 1.0 / params.base_frequency_hz
        self.basis = constraint_basis(params.n_harmonics)  # (2L, m)
        self.m = self.basis.shape[1]
        low, high = position_window(robot, params)
        self.centre = 0.5 * (low + high)
        self.half_range = 0.5 * (high - low) * params.position_fraction
        limits = robot.limits
        self.velocity = limits.velocity * params.velocity_fraction
        self.acceleration = limits.acceleration * params.acceleration_fraction
        self.effort = limits.effort * params.torque_fraction
        self.limit_maps = self.maps(self.grid(params.n_limit_samples))
        self.eval_maps = self.maps(self.grid(params.n_eval_samples))
        self.workspace = (
            Workspace(robot, params.workspace) if params.workspace is not None else None
        )
        self._last_pose: tuple[bytes, float] = (b"", 0.0)
        # extra clearance (m) on the coarse grids, so the result is inside on the dense final
        # grid too; `_finish` sets it to 0
        self.padding = _SEARCH_MARGIN_M
        # joints that move no point relative to any region keep their amplitude when the
        # workspace fit shrinks the others
        self.bound = self._joints_moving_points(rng=np.random.default_rng(0))

    def grid(self, n_samples: int) -> np.ndarray:
        """n_samples equally spaced times (s) over one period, end excluded."""
        return np.arange(n_samples) * (self.period / n_samples)

    def maps(self, t: np.ndarray) -> list[np.ndarray]:
        """(len(t), m) maps from z to q - q0, dq and ddq."""
        return [m @ self.basis for m in fourier_basis(t, self.omega, self.n_harmonics)]

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q0 (n,) rad, z (m, n) rad/s) of a candidate vector."""
        u = np.clip(x[: self.n], -1.0, 1.0)
        z = x[self.n :].reshape(self.m, self.n) * self.velocity
        return self.centre + u * self.half_range, z

    def join(self, q0: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Candidate vector of (q0, z); inverse of `split` inside the bounds."""
        u = (q0 - self.centre) / self.half_range
        return np.concatenate([u, (z / self.velocity).ravel()])

    def random(self, rng: np.random.Generator) -> np.ndarray:
        """Random candidate vector: q0 uniform in the central half of the usable range and
        inside the workspace (drawn in batches until one is)."""
        if self.workspace is None:
            u = rng.uniform(-0.5, 0.5, size=self.n)
        else:
            for _ in range(_START_BATCHES):
                batch = rng.uniform(-0.5, 0.5, size=(_START_BATCH, self.n))
                margin = self.workspace.worst_margin(self.centre + batch * self.half_range)
                inside = np.flatnonzero(margin >= self.padding)
                if inside.size:
                    u = batch[inside[0]]
                    break
            else:
                raise UserError(
                    f"No start pose of {self.robot.name} inside trajectory.workspace was found in "
                    f"{_START_BATCHES * _START_BATCH} random poses within the central half of the "
                    "joint ranges (trajectory.position_limits): the workspace (floor_z_m, "
                    "clearance_m, base_column, boxes, half_spaces) leaves (almost) no room. Check "
                    "that the robot's base frame has z up with the floor at floor_z_m, or widen "
                    "the workspace (trajectory.workspace=null: joint limits only)."
                )
        return np.concatenate([u, rng.standard_normal(self.m * self.n)])

    def _joints_moving_points(self, rng: np.random.Generator, n_poses: int = 64) -> np.ndarray:
        """(n,) True for the joints whose motion changes some workspace margin (tried at
        `n_poses` random poses, each joint turned by random angles)."""
        if self.workspace is None:
            return np.zeros(self.n, dtype=bool)
        q = self.centre + rng.uniform(-1.0, 1.0, (n_poses, self.n)) * self.half_range
        reference = np.concatenate([m.ravel() for m in self.workspace.margins(q)])
        moving = np.zeros(self.n, dtype=bool)
        for j in range(self.n):
            turned = q.copy()
            turned[:, j] += rng.uniform(-np.pi, np.pi, n_poses)
            margins = np.concatenate([m.ravel() for m in self.workspace.margins(turned)])
            moving[j] = np.abs(margins - reference).max() > 1e-9
        return moving

    def pose_margin(self, q0: np.ndarray) -> float:
        """Workspace margin (m) of the pose q0 (rad), less `padding`; the last is cached."""
        if self.workspace is None:
            return math.inf
        key = q0.tobytes()
        if self._last_pose[0] != key:
            self._last_pose = (key, float(self.workspace.worst_margin(q0[None])[0]))
        return self._last_pose[1] - self.padding

    def workspace_margin(self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray]) -> float:
        """Smallest workspace margin (m) of (q0, z) at the times of `maps`, less `padding`."""
        if self.workspace is None:
            return math.inf
        return float(self.workspace.worst_margin(q0 + maps[0] @ z).min()) - self.padding

    def fit_workspace(
        self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray] | None = None,
        iterations: int = 4,
    ) -> np.ndarray:  # fmt: skip
        """z, the joints that move points (`bound`) shrunk by one factor s until the arm stays
        in the workspace at the times of `maps` (default: evaluation grid); q0 must lie inside.
        s is where the margin first turns negative from 0 to 1: a coarse scan, then regula
        falsi (Illinois) in the first bad interval."""
        maps = maps or self.eval_maps
        if self.workspace is None or self.workspace_margin(q0, z, maps) >= 0.0:
            return z
        free = np.where(self.bound, 0.0, 1.0)
        fixed = q0 + maps[0] @ (z * free)  # (G, n): the free joints' motion
        moving = maps[0] @ (z * self.bound)  # (G, n) per unit factor

        def margin(factors: np.ndarray) -> np.ndarray:
            poses = fixed[None] + factors[:, None, None] * moving[None]
            worst = self.workspace.worst_margin(poses.reshape(-1, self.n))
            return worst.reshape(len(factors), -1).min(axis=1) - self.padding

        scan = np.arange(1, _SCAN_STEPS + 1) / _SCAN_STEPS
        scanned = margin(scan)
        bad = int(np.argmax(scanned < 0.0))  # the last factor (1) is bad: z was rejected above
        low, low_margin = (
            (0.0, self.pose_margin(q0)) if bad == 0 else (scan[bad - 1], scanned[bad - 1])
        )
        high, high_margin = scan[bad], scanned[bad]
        if low_margin < 0.0:
            return 0.0 * z
        side = 0
        for _ in range(iterations):
            middle = (low * high_margin - high * low_margin) / (high_margin - low_margin)
            middle = min(max(middle, low + 0.05 * (high - low)), high - 0.05 * (high - low))
            value = float(margin(np.array([middle]))[0])
            if value >= 0.0:
                low, low_margin = middle, value
                if side == 1:
                    high_margin *= 0.5
                side = 1
            else:
                high, high_margin = middle, value
                if side == -1:
                    low_margin *= 0.5
                side = -1
            if high - low < 0.005:
                break
        return z * (free + low * self.bound)

    def joint_scale(self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray]) -> np.ndarray:
        """(n,) largest factor s per joint with s z_j within its position, velocity and
        acceleration limits at the times of `maps`."""
        position, velocity, acceleration = (m @ z for m in maps)
        tiny = 1e-300
        up = (self.centre + self.half_range - q0) / np.maximum(position.max(axis=0), tiny)
        down = (q0 - self.centre + self.half_range) / np.maximum(-position.min(axis=0), tiny)
        speed = self.velocity / np.maximum(np.abs(velocity).max(axis=0), tiny)
        accel = self.acceleration / np.maximum(np.abs(acceleration).max(axis=0), tiny)
        return np.minimum(np.minimum(up, down), np.minimum(speed, accel))

    def states(
        self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q, dq, ddq (rad, rad/s, rad/s²) at the times of `maps` (default: evaluation grid)."""
        position, velocity, acceleration = (m @ z for m in maps or self.eval_maps)
        return q0 + position, velocity, acceleration

    def torque_ratio(
        self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray] | None = None
    ) -> float:
        """max over time and joints of |tau| / usable effort (nominal inverse dynamics)."""
        tau = self.robot.inverse_dynamics(*self.states(q0, z, maps))
        return float(np.max(np.abs(tau) / self.effort))

    def fit_torque(
        self,
        q0: np.ndarray,
        z: np.ndarray,
        maps: list[np.ndarray] | None = None,
        iterations: int = 8,
    ) -> np.ndarray:
        """z, shrunk by one factor for all joints until the torques fit: first by 1 / (torque
        ratio), then by bisection (`iterations` inverse-dynamics passes at most)."""
        ratio = self.torque_ratio(q0, z, maps)
        if ratio <= 1.0:
            return z
        low, high = 0.0, 1.0
        for iteration in range(iterations):
            middle = 1.0 / ratio if iteration == 0 else 0.5 * (low + high)
            if self.torque_ratio(q0, middle * z, maps) <= 1.0:
                low = middle
            else:
                high = middle
            if high - low < 1e-3:
                break
        return low * z

    def fit_workspace_and_torque(
        self, q0: np.ndarray, z: np.ndarray, maps: list[np.ndarray] | None = None,
        iterations: int = 8,
    ) -> np.ndarray:  # fmt: skip
        """z shrunk by one factor until both the workspace and the torques fit at the times
        of `maps` (the torque fit may shrink it out of the workspace: then again)."""
        for _ in range(_FIT_ROUNDS):
            z = self.fit_workspace(q0, z, maps)
            fitted = self.fit_torque(q0, z, maps, iterations)
            if fitted is z or self.workspace_margin(q0, fitted, maps or self.eval_maps) >= 0.0:
                return fitted
            z = fitted
        return 0.0 * z

    def feasible(
        self, x: np.ndarray, maximise: bool = False
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """(q0, z, workspace violation in m) of candidate x made feasible on the search grids.
        With `maximise` (random candidates) each joint is scaled to its largest feasible
        amplitude and projected into the workspace (violation 0); otherwise (refinement) joints
        are only shrunk where they break a limit and the violation is returned (a smoother
        landscape for CMA-ES than projecting)."""
        q0, z = self.split(x)
        scale = self.joint_scale(q0, z, self.limit_maps)
        if maximise:
            return q0, self.fit_workspace_and_torque(q0, z * scale), 0.0
        z = self.fit_torque(q0, z * np.minimum(scale, 1.0))
        return q0, z, max(0.0, -self.workspace_margin(q0, z, self.eval_maps))

    def trajectory(self, q0: np.ndarray, z: np.ndarray) -> FourierTrajectory:
        coefficients = (self.basis @ z).T  # (n, 2L)
        return FourierTrajectory(
            q0=q0.copy(),
            a=coefficients[:, : self.n_harmonics],
            b=coefficients[:, self.n_harmonics :],
            base_frequency_hz=self.params.base_frequency_hz,
            n_periods=self.params.n_periods,
        )


def position_window(robot: RobotModel, params: FourierParams) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) position bounds (rad): the robot's, narrowed by `params.position_limits`."""
    limits = robot.limits
    for name, values in (
        ("position", limits.position),
        ("velocity", limits.velocity),
        ("acceleration", limits.acceleration),
    ):
        if not np.all(np.isfinite(values)) or (name != "position" and np.any(values <= 0.0)):
            raise UserError(
                f"The robot '{robot.name}' has no finite positive {name} limits "
                f"({np.asarray(values).tolist()}); the Fourier trajectory needs them. Give "
                "them in the robot model (acceleration: robot.acceleration_limits=[...])."
            )
    low, high = limits.position[:, 0].copy(), limits.position[:, 1].copy()
    if params.position_limits is not None:
        window = per_joint_values(
            params.position_limits, robot.n_joints, "trajectory.position_limits",
            robot_name=f"'{robot.name}'", fix="give one [min, max] per joint", row_shape=(2,),
        )  # fmt: skip
        low, high = np.maximum(low, window[:, 0]), np.minimum(high, window[:, 1])
        if np.any(low >= high):
            raise UserError(
                f"trajectory.position_limits {window.tolist()} leave no range inside the "
                f"robot's position limits {limits.position.tolist()} (rad)."
            )
    return low, high


class Search:
    """Seeded Monte-Carlo search plus CMA-ES refinement of log cond."""

    EIGEN_EVERY = 3  # generations between eigendecompositions of the CMA-ES covariance

    def __init__(
        self, problem: SearchProblem, objective: ConditionObjective, rng: np.random.Generator
    ):
        self.problem = problem
        self.objective = objective
        self.rng = rng
        self.best_cost = math.inf
        self.best: tuple[np.ndarray, np.ndarray] | None = None
        self.bar: Any = None  # a `progress.progress` (tqdm on a terminal)
        # (items, chunk) -> evaluate(item) for each, in order; the generator sets forked workers
        self.evaluations: Callable[[list[tuple[np.ndarray, bool]], int], Iterable[Evaluation]]
        self.evaluations = lambda items, chunk: map(self.evaluate, items)

    def evaluate(self, item: tuple[np.ndarray, bool]) -> Evaluation:
        """`item` (x, maximise) made feasible and scored (an `Evaluation`: the cost is log cond
        plus `coverage_weight` × the mean share of the circles not visited). Reads only the
        problem and objective: forked workers run it."""
        x, maximise = item
        q0, z, violation = self.problem.feasible(x, maximise=maximise)
        value = float(self.objective(*self.problem.states(q0, z)))
        cost = math.log(value) if value > 0.0 and math.isfinite(value) else math.inf
        weight = self.problem.params.coverage_weight
        if weight > 0.0:
            q = q0 + self.problem.limit_maps[0] @ z
            cost += weight * float(1.0 - circle_coverage(q).mean())
        return q0, z, violation, value, cost

    def account(self, evaluation: Evaluation) -> float:
        """Search cost of an evaluation (plus a workspace-violation penalty); tracks the first
        best candidate inside the workspace and the progress bar."""
        q0, z, violation, value, cost = evaluation
        if self.bar is not None:
            self.bar.update()
        if violation > 0.0:
            return cost + _VIOLATION_COST_PER_M * violation
        if cost < self.best_cost or self.best is None:
            self.best_cost, self.best = cost, (q0.copy(), z.copy())
            if self.bar is not None:
                self.bar.set_postfix_str(f"best cond {value:.4g}", refresh=False)
        return cost

    def population_size(self) -> int:
        """CMA-ES offspring per generation (the standard 4 + 3 ln(dimension))."""
        return 4 + int(3 * math.log(self.problem.n * (1 + self.problem.m)))

    def refine_evaluations(self, budget: int) -> int:
        """Objective evaluations `refine` makes with `budget` (whole generations)."""
        return budget - budget % self.population_size()

    def monte_carlo(self, n_candidates: int) -> np.ndarray:
        """Best candidate vector of `n_candidates` random ones at full amplitude."""
        best_x, best_cost = None, math.inf
        draws = [(self.problem.random(self.rng), True) for _ in range(n_candidates)]
        for evaluation in self.evaluations(draws, chunk=_DRAWS_PER_TASK):
            cost = self.account(evaluation)
            if cost < best_cost or best_x is None:
                best_x, best_cost = self.problem.join(*evaluation[:2]), cost
        assert best_x is not None
        return best_x

    def refine(self, x0: np.ndarray, budget: int, sigma: float) -> None:
        """CMA-ES (rank-mu and rank-one updates, cumulative step-size adaptation) from x0."""
        problem, rng = self.problem, self.rng
        dim = x0.size
        lam = self.population_size()
        mu = lam // 2
        weights = math.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        weights /= weights.sum()
        mueff = 1.0 / float(np.sum(weights**2))
        cc = (4 + mueff / dim) / (dim + 4 + 2 * mueff / dim)
        cs = (mueff + 2) / (dim + mueff + 5)
        c1 = 2 / ((dim + 1.3) ** 2 + mueff)
        cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((dim + 2) ** 2 + mueff))
        damps = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (dim + 1)) - 1) + cs
        chi_n = math.sqrt(dim) * (1 - 1 / (4 * dim) + 1 / (21 * dim**2))
        mean = x0.copy()
        pc, ps = np.zeros(dim), np.zeros(dim)
        cov = np.eye(dim)
        b_mat, d_vec, inv_sqrt = np.eye(dim), np.ones(dim), np.eye(dim)
        used, generation = 0, 0
        while used + lam <= self.refine_evaluations(budget):
            steps = (rng.standard_normal((lam, dim)) * d_vec) @ b_mat.T
            population = mean + sigma * steps
            costs = np.empty(lam)
            evaluations = self.evaluations([(x, False) for x in population], chunk=1)
            for k, evaluation in enumerate(evaluations):
                # Lamarckian repair: the evaluated (feasible) point replaces the sample
                population[k] = problem.join(*evaluation[:2])
                costs[k] = self.account(evaluation)
            used += lam
            generation += 1
            order = np.argsort(costs)[:mu]
            old = mean
            mean = weights @ population[order]
            y = (population[order] - old) / sigma
            y_w = (mean - old) / sigma
            ps = (1 - cs) * ps + math.sqrt(cs * (2 - cs) * mueff) * (inv_sqrt @ y_w)
            norm_ps = float(np.linalg.norm(ps))
            hsig = norm_ps / math.sqrt(1 - (1 - cs) ** (2 * generation)) / chi_n < (
                1.4 + 2 / (dim + 1)
            )
            pc = (1 - cc) * pc + hsig * math.sqrt(cc * (2 - cc) * mueff) * y_w
            cov = (
                (1 - c1 - cmu) * cov
                + c1 * (np.outer(pc, pc) + (1 - hsig) * cc * (2 - cc) * cov)
                + cmu * (y.T * weights) @ y
            )
            sigma *= math.exp(min(1.0, (cs / damps) * (norm_ps / chi_n - 1)))
            if generation % self.EIGEN_EVERY == 0:
                cov = 0.5 * (cov + cov.T)
                eigen, b_mat = np.linalg.eigh(cov)
                d_vec = np.sqrt(np.maximum(eigen, 1e-20))
                inv_sqrt = (b_mat / d_vec) @ b_mat.T


ANGLE_BINS = 72  # arcs of the circle: 2π / 72 = 5°


def angle_bins(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(T, n) index of the arc of the circle each angle q (rad, (T, n)) falls into."""
    wrapped = np.mod(np.asarray(q, dtype=float), 2.0 * np.pi)
    return np.minimum((wrapped * (bins / (2.0 * np.pi))).astype(np.intp), bins - 1)


def covered_arcs(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(bins, n) True where some sample of q (rad, (T, n)) lies in that arc of the joint's
    circle."""
    index = angle_bins(q, bins)
    covered = np.zeros((bins, index.shape[1]), dtype=bool)
    covered[index, np.arange(index.shape[1])[None, :]] = True
    return covered


def circle_coverage(q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(n,) fraction of each joint's circle (q mod 2π) the samples q (rad, (T, n)) visit."""
    return covered_arcs(q, bins).mean(axis=0)


def samples_covered(reference_q: np.ndarray, q: np.ndarray, bins: int = ANGLE_BINS) -> np.ndarray:
    """(n,) fraction of the samples of q (rad, (T, n)) whose angle lies, per joint, in an arc
    that reference_q (rad, (T', n): e.g. the training recordings) visits."""
    covered = covered_arcs(reference_q, bins)
    index = angle_bins(q, bins)
    return covered[index, np.arange(index.shape[1])[None, :]].mean(axis=0)
