"""Built-in trajectory generator `fourier`: an optimised finite Fourier series (Swevers et al.).

Per joint j, with w = 2 pi f (f the base frequency) and L harmonics,

    q_j(t)   = q0_j + sum_l [a_jl sin(w l t) - b_jl (cos(w l t) - 1)] / (w l)
    dq_j(t)  = sum_l  a_jl cos(w l t) + b_jl sin(w l t)
    ddq_j(t) = sum_l (-a_jl sin(w l t) + b_jl cos(w l t)) w l

The coefficients satisfy three linear constraints per joint,
sum_l a_jl = 0, sum_l l b_jl = 0 and sum_l b_jl / l = 0, so that the motion starts and ends
(after whole periods) at rest, dq = ddq = 0, at q0, and q0 is also its mean position (the offset
of Swevers' form). The reference therefore needs no ramps and is exactly periodic.

`generate` searches the coefficients and q0 for the lowest condition number of the base
regressor under position, velocity, acceleration and torque (nominal inverse dynamics) limits:
a seeded Monte-Carlo stage (random candidates, each joint scaled to its largest feasible
amplitude: velocity and acceleration are linear in the coefficients) followed by a CMA-ES
refinement of the best candidate. Every evaluated candidate is made feasible by construction:
each joint's coefficients are radially shrunk onto its position/velocity/acceleration limits and
all joints together are shrunk until the torques fit.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import null_space
from tqdm import tqdm

from .errors import UserError
from .hookspecs import hookimpl
from .interfaces import ConditionObjective
from .plain_data import to_plain
from .robot_model import RobotModel

_REST_TOLERANCE = 1e-9  # relative tolerance of the rest constraints of a loaded description


@dataclass
class FourierParams:
    """Parameters of the `fourier` trajectory generator.

    n_harmonics: harmonics L per joint (>= 2: three constraints need 2L > 3 coefficients).
    base_frequency_hz: f (Hz); one period lasts 1/f s.
    n_periods: whole periods in the trajectory (duration = n_periods / f s).
    n_candidates: Monte-Carlo candidates (random coefficients and q0, full amplitude).
    n_refine: objective evaluations of the CMA-ES refinement (0: none).
    refine_sigma: initial CMA-ES step, as a fraction of the joint limits.
    n_eval_samples: time samples per period at which the search evaluates the objective and
        the torques.
    n_limit_samples: time samples per period at which the search enforces the position,
        velocity and acceleration limits.
    check_rate_hz: sampling rate (Hz) of the final check of every limit.
    cond_rate_hz: sampling rate (Hz) of the dense condition number reported by `describe`.
    position_fraction: fraction of each joint's position range, about its centre, usable.
    velocity_fraction, acceleration_fraction, torque_fraction: fraction of the velocity
        (rad/s), acceleration (rad/s²) and effort (Nm) limits usable; torques are those of the
        robot model's nominal inverse dynamics (no friction).
    position_limits: optional per-joint [min, max] (rad) narrowing the robot's position limits,
        e.g. to keep a real arm clear of its table and of itself.
    progress: show a progress bar (stderr) with the best condition number so far.
    """

    n_harmonics: int = 5
    base_frequency_hz: float = 0.05
    n_periods: int = 1
    n_candidates: int = 1000
    n_refine: int = 4500
    refine_sigma: float = 0.1
    n_eval_samples: int = 150
    n_limit_samples: int = 1000
    check_rate_hz: float = 1000.0
    cond_rate_hz: float = 100.0
    position_fraction: float = 0.9
    velocity_fraction: float = 0.9
    acceleration_fraction: float = 0.9
    torque_fraction: float = 0.8
    position_limits: list[list[float]] | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        def check(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        def integer(value: Any, low: int) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= low

        check(
            integer(self.n_harmonics, 2),
            f"n_harmonics must be an integer >= 2, got {self.n_harmonics}",
        )
        for name in ("n_periods", "n_candidates", "n_limit_samples"):
            value = getattr(self, name)
            check(integer(value, 1), f"{name} must be an integer >= 1, got {value}")
        check(integer(self.n_refine, 0), f"n_refine must be an integer >= 0, got {self.n_refine}")
        check(
            integer(self.n_eval_samples, 2 * self.n_harmonics + 1),
            f"n_eval_samples must be an integer >= 2 n_harmonics + 1, got {self.n_eval_samples}",
        )
        for name in ("base_frequency_hz", "refine_sigma", "check_rate_hz", "cond_rate_hz"):
            value = getattr(self, name)
            check(math.isfinite(value) and value > 0.0, f"{name} must be > 0, got {value}")
        for name in (
            "position_fraction",
            "velocity_fraction",
            "acceleration_fraction",
            "torque_fraction",
        ):
            value = getattr(self, name)
            check(0.0 < value <= 1.0, f"{name} must be in (0, 1], got {value}")
        if self.position_limits is not None:
            for row in self.position_limits:
                check(
                    len(row) == 2 and all(math.isfinite(v) for v in row) and row[0] < row[1],
                    f"position_limits must be [min, max] pairs (rad) with min < max, got {row}",
                )


def _constraint_basis(n_harmonics: int) -> np.ndarray:
    """(2L, 2L-3) orthonormal basis of the coefficients [a; b] that start at rest at q0."""
    harmonics = np.arange(1, n_harmonics + 1, dtype=float)
    zeros = np.zeros(n_harmonics)
    constraints = np.array(
        [
            np.concatenate([np.ones(n_harmonics), zeros]),  # dq(0) = 0
            np.concatenate([zeros, harmonics]),  # ddq(0) = 0
            np.concatenate([zeros, 1.0 / harmonics]),  # q(0) = q0 = mean position
        ]
    )
    return null_space(constraints)


def _fourier_basis(
    t: np.ndarray, omega: float, n_harmonics: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(len(t), 2L) maps from [a; b] to q - q0 (rad), dq (rad/s) and ddq (rad/s²)."""
    wl = omega * np.arange(1, n_harmonics + 1, dtype=float)
    phase = np.outer(t, wl)
    sin, cos = np.sin(phase), np.cos(phase)
    position = np.hstack([sin / wl, (1.0 - cos) / wl])
    velocity = np.hstack([cos, sin])
    acceleration = np.hstack([-sin * wl, cos * wl])
    return position, velocity, acceleration


@dataclass
class FourierTrajectory:
    """Finite Fourier series per joint (see the module docstring), at rest at t = 0 and at
    t = duration. q0 (n,) rad; a, b (n, L) rad/s; base_frequency_hz Hz. `info` holds what the
    search measured (condition number, limit usage) and is reported by `describe`."""

    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    base_frequency_hz: float
    n_periods: int = 1
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.q0 = np.asarray(self.q0, dtype=float).reshape(-1)
        self.a = np.atleast_2d(np.asarray(self.a, dtype=float))
        self.b = np.atleast_2d(np.asarray(self.b, dtype=float))
        n, n_harmonics = self.a.shape
        if self.q0.shape != (n,) or self.b.shape != (n, n_harmonics):
            raise ValueError(
                f"Fourier trajectory shapes disagree: q0 {self.q0.shape}, a {self.a.shape}, "
                f"b {self.b.shape}; expected (n,), (n, L), (n, L)"
            )
        if not (self.base_frequency_hz > 0.0 and self.n_periods >= 1):
            raise ValueError("base_frequency_hz must be > 0 and n_periods >= 1")
        harmonics = np.arange(1, n_harmonics + 1)
        scale = max(
            1.0, float(np.abs(self.a).max(initial=0.0)), float(np.abs(self.b).max(initial=0.0))
        )
        residual = max(
            float(np.abs(self.a.sum(axis=1)).max(initial=0.0)),
            float(np.abs(self.b @ harmonics).max(initial=0.0)) / n_harmonics,
        )
        if residual > _REST_TOLERANCE * scale * n_harmonics:
            raise ValueError(
                "Fourier coefficients do not start at rest: need sum_l a_jl = 0 and "
                "sum_l l b_jl = 0 for every joint"
            )

    @property
    def n_joints(self) -> int:
        return self.a.shape[0]

    @property
    def n_harmonics(self) -> int:
        return self.a.shape[1]

    @property
    def omega(self) -> float:
        """Base angular frequency (rad/s)."""
        return 2.0 * math.pi * self.base_frequency_hz

    @property
    def duration(self) -> float:
        """Duration (s): whole periods."""
        return self.n_periods / self.base_frequency_hz

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q (rad), dq (rad/s), ddq (rad/s²) at times t (s), each (len(t), n). Outside
        [0, duration] the robot rests at q0."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        position, velocity, acceleration = _fourier_basis(t, self.omega, self.n_harmonics)
        coefficients = np.hstack([self.a, self.b]).T  # (2L, n)
        q = self.q0 + position @ coefficients
        dq = velocity @ coefficients
        ddq = acceleration @ coefficients
        outside = (t < 0.0) | (t > self.duration)
        if outside.any():
            q[outside] = self.q0
            dq[outside] = 0.0
            ddq[outside] = 0.0
        return q, dq, ddq

    def describe(self) -> dict[str, Any]:
        """YAML-safe description (plain floats and lists); `from_description` rebuilds it."""
        return {
            "generator": "fourier",
            "base_frequency_hz": float(self.base_frequency_hz),
            "n_harmonics": int(self.n_harmonics),
            "n_periods": int(self.n_periods),
            "duration_s": float(self.duration),
            "q0": [float(v) for v in self.q0],
            "a": [[float(v) for v in row] for row in self.a],
            "b": [[float(v) for v in row] for row in self.b],
            **to_plain(self.info),
        }

    @classmethod
    def from_description(cls, description: dict[str, Any]) -> FourierTrajectory:
        """Rebuild from `describe()` output (e.g. read back from YAML)."""
        known = {"generator", "base_frequency_hz", "n_harmonics", "n_periods", "duration_s"}
        known |= {"q0", "a", "b"}
        try:
            trajectory = cls(
                q0=np.asarray(description["q0"], dtype=float),
                a=np.asarray(description["a"], dtype=float),
                b=np.asarray(description["b"], dtype=float),
                base_frequency_hz=float(description["base_frequency_hz"]),
                n_periods=int(description.get("n_periods", 1)),
                info={k: v for k, v in description.items() if k not in known},
            )
        except KeyError as missing:
            raise ValueError(f"Fourier trajectory description lacks {missing}") from None
        return trajectory


class _Problem:
    """Feasible-by-construction parametrisation of the search.

    A candidate x = (u (n,), z (m, n) normalised by the velocity limits): q0 = centre +
    clip(u, -1, 1) * half_range; coefficients [a; b]_j = N z_j (N the rest-constraint basis),
    each joint radially shrunk onto its position/velocity/acceleration limits, then all joints
    together shrunk until the nominal torques fit."""

    def __init__(self, robot: RobotModel, params: FourierParams):
        self.robot = robot
        self.params = params
        self.n = robot.n_joints
        self.n_harmonics = params.n_harmonics
        self.omega = 2.0 * math.pi * params.base_frequency_hz
        self.period = 1.0 / params.base_frequency_hz
        self.basis = _constraint_basis(params.n_harmonics)  # (2L, m)
        self.m = self.basis.shape[1]
        low, high = _position_window(robot, params)
        self.centre = 0.5 * (low + high)
        self.half_range = 0.5 * (high - low) * params.position_fraction
        limits = robot.limits
        self.velocity = limits.velocity * params.velocity_fraction
        self.acceleration = limits.acceleration * params.acceleration_fraction
        self.effort = limits.effort * params.torque_fraction
        self.limit_maps = self.maps(self.grid(params.n_limit_samples))
        self.eval_t = self.grid(params.n_eval_samples)
        self.eval_maps = self.maps(self.eval_t)

    def grid(self, n_samples: int) -> np.ndarray:
        """n_samples equally spaced times (s) over one period, end excluded."""
        return np.arange(n_samples) * (self.period / n_samples)

    def maps(self, t: np.ndarray) -> list[np.ndarray]:
        """(len(t), m) maps from z to q - q0, dq and ddq."""
        return [m @ self.basis for m in _fourier_basis(t, self.omega, self.n_harmonics)]

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
        """Random candidate vector: q0 uniform in the central half of the usable range."""
        u = rng.uniform(-0.5, 0.5, size=self.n)
        return np.concatenate([u, rng.standard_normal(self.m * self.n)])

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

    def feasible(self, x: np.ndarray, maximise: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(q0, z) of candidate x made feasible on the search grids; with `maximise` each joint
        is scaled to its largest feasible amplitude, otherwise only shrunk where it violates."""
        q0, z = self.split(x)
        scale = self.joint_scale(q0, z, self.limit_maps)
        z = z * (scale if maximise else np.minimum(scale, 1.0))
        return q0, self.fit_torque(q0, z)

    def trajectory(self, q0: np.ndarray, z: np.ndarray) -> FourierTrajectory:
        coefficients = (self.basis @ z).T  # (n, 2L)
        return FourierTrajectory(
            q0=q0.copy(),
            a=coefficients[:, : self.n_harmonics],
            b=coefficients[:, self.n_harmonics :],
            base_frequency_hz=self.params.base_frequency_hz,
            n_periods=self.params.n_periods,
        )


def _position_window(robot: RobotModel, params: FourierParams) -> tuple[np.ndarray, np.ndarray]:
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
        window = np.asarray(params.position_limits, dtype=float)
        if window.shape != (robot.n_joints, 2):
            raise UserError(
                f"trajectory.position_limits has {len(window)} rows, the robot "
                f"'{robot.name}' has {robot.n_joints} joints: give one [min, max] per joint."
            )
        low, high = np.maximum(low, window[:, 0]), np.minimum(high, window[:, 1])
        if np.any(low >= high):
            raise UserError(
                f"trajectory.position_limits {window.tolist()} leave no range inside the "
                f"robot's position limits {limits.position.tolist()} (rad)."
            )
    return low, high


class _Search:
    """Seeded Monte-Carlo search plus CMA-ES refinement of log cond."""

    EIGEN_EVERY = 3  # generations between eigendecompositions of the CMA-ES covariance

    def __init__(self, problem: _Problem, objective: ConditionObjective, rng: np.random.Generator):
        self.problem = problem
        self.objective = objective
        self.rng = rng
        self.best_cost = math.inf
        self.best: tuple[np.ndarray, np.ndarray] | None = None
        self.bar: tqdm | None = None

    def cost(self, q0: np.ndarray, z: np.ndarray) -> float:
        """log cond of the feasible candidate (q0, z); tracks the best so far."""
        value = float(self.objective(*self.problem.states(q0, z)))
        cost = math.log(value) if value > 0.0 and math.isfinite(value) else math.inf
        if cost < self.best_cost or self.best is None:
            self.best_cost, self.best = cost, (q0.copy(), z.copy())
            if self.bar is not None:
                self.bar.set_postfix_str(f"best cond {value:.4g}", refresh=False)
        if self.bar is not None:
            self.bar.update()
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
        for _ in range(n_candidates):
            q0, z = self.problem.feasible(self.problem.random(self.rng), maximise=True)
            cost = self.cost(q0, z)
            if cost < best_cost or best_x is None:
                best_x, best_cost = self.problem.join(q0, z), cost
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
            for k in range(lam):
                q0, z = problem.feasible(population[k])
                # Lamarckian repair: the evaluated (feasible) point replaces the sample
                population[k] = problem.join(q0, z)
                costs[k] = self.cost(q0, z)
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


class FourierGenerator:
    """Trajectory generator `fourier`: see the module docstring."""

    def __init__(self, params: FourierParams):
        self.params = params

    def generate(
        self, robot: RobotModel, objective: ConditionObjective | None, seed: int
    ) -> FourierTrajectory:
        """Optimised trajectory for `robot` (with objective None: a random feasible one)."""
        params = self.params
        problem = _Problem(robot, params)
        rng = np.random.default_rng(seed)
        if objective is None:
            q0, z = problem.feasible(problem.random(rng), maximise=True)
            return self._finish(problem, q0, z, None, None, seed)
        search = _Search(problem, objective, rng)
        with tqdm(
            total=params.n_candidates + search.refine_evaluations(params.n_refine),
            desc="fourier excitation",
            file=sys.stderr,
            disable=None if params.progress else True,  # None: off when not a TTY
            mininterval=0.5,
        ) as bar:
            search.bar = bar
            x0 = search.monte_carlo(params.n_candidates)
            search.refine(x0, params.n_refine, params.refine_sigma)
        assert search.best is not None
        q0, z = search.best
        return self._finish(problem, q0, z, objective, math.exp(search.best_cost), seed)

    def _finish(
        self,
        problem: _Problem,
        q0: np.ndarray,
        z: np.ndarray,
        objective: ConditionObjective | None,
        cond_search: float | None,
        seed: int,
    ) -> FourierTrajectory:
        """Enforce every limit on the dense check grid; record cond and the limits' usage."""
        params, robot = self.params, problem.robot
        dense = problem.maps(np.arange(0.0, problem.period, 1.0 / params.check_rate_hz))
        scaled = z * np.minimum(problem.joint_scale(q0, z, dense), 1.0)
        tau = robot.inverse_dynamics(*problem.states(q0, scaled, dense))
        if np.any(np.abs(tau) > problem.effort):  # the search checked a coarser grid
            scaled = problem.fit_torque(q0, scaled, dense, iterations=12)
            tau = robot.inverse_dynamics(*problem.states(q0, scaled, dense))
        if not np.array_equal(scaled, z) and objective is not None:
            cond_search = float(objective(*problem.states(q0, scaled)))
        trajectory = problem.trajectory(q0, scaled)
        q, dq, ddq = problem.states(q0, scaled, dense)
        limits = robot.limits
        low, high = limits.position[:, 0], limits.position[:, 1]
        half = 0.5 * (high - low)
        info: dict[str, Any] = {
            "cond": None,
            "cond_search": cond_search,
            "limits_usage": {
                "position": np.abs(q - 0.5 * (low + high)).max(axis=0) / half,
                "velocity": np.abs(dq).max(axis=0) / limits.velocity,
                "acceleration": np.abs(ddq).max(axis=0) / limits.acceleration,
                "torque": np.abs(tau).max(axis=0) / limits.effort,
            },
            "position_range": np.stack([q.min(axis=0), q.max(axis=0)], axis=1),
            "search": {
                "seed": seed,
                "n_candidates": params.n_candidates,
                "n_refine": params.n_refine,
                "n_eval_samples": params.n_eval_samples,
            },
        }
        if objective is not None:
            cond_grid = np.arange(0.0, problem.period, 1.0 / params.cond_rate_hz)
            info["cond"] = float(objective(*trajectory.evaluate(cond_grid)))
        trajectory.info = to_plain(info)
        return trajectory


@hookimpl
def register_trajectory_generators(register) -> None:
    register("fourier", FourierGenerator, FourierParams)
