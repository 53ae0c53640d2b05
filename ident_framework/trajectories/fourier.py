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
regressor under position, velocity, acceleration and torque (nominal inverse dynamics) limits
and inside the workspace (`model/workspace.py`: floor, base column, boxes, half-spaces, with a
clearance, for the arm's points by batched forward kinematics): a seeded Monte-Carlo stage
(random candidates, q0 drawn inside the workspace, each joint scaled to its largest feasible
amplitude: velocity and acceleration are linear in the coefficients, then the joints that move
points shrunk together into the workspace) followed by a CMA-ES refinement of the best
candidate. Every evaluated candidate is made feasible for the joint and torque limits by
construction (each joint's coefficients radially shrunk onto its position/velocity/acceleration
limits, all joints together shrunk until the torques fit); in the refinement, leaving the
workspace is penalised instead, and only candidates inside it can become the result. The search
grids are coarse (n_eval_samples per period) and keep 1 cm more clearance; the result is then
enforced on the check_rate_hz grid and checked with the safety check `source=rtde` runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import ConditionObjective, hookimpl
from ident_framework.model.robot import RobotModel
from ident_framework.model.workspace import WorkspaceParams
from ident_framework.trajectories.fourier_series import FourierTrajectory

if TYPE_CHECKING:
    from ident_framework.trajectories.fourier_search import SearchProblem

__all__ = [
    "FourierGenerator",
    "FourierParams",
    "FourierTrajectory",
    "register_trajectory_generators",
]

_FINAL_SHRINKS = 5  # 2 % shrinks allowed when the final check finds a hair of a violation


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
    position_limits: optional per-joint [min, max] (rad) narrowing the robot's position limits.
    coverage_weight: weight w of the angle-coverage term of the search: it minimises
        log cond + w × (mean over joints of the share of the joint's circle, q mod 2π in 5°
        arcs, that the excitation does not visit; `angle_coverage.py`). 0: cond alone. For a
        residual learner on sin q / cos q (a position-dependent effect such as cogging), which
        cannot know the effect at angles no recording visited. A random motion (no objective,
        e.g. `validation=mujoco_fourier`) ignores it.
    workspace: where the arm may go (floor, base column, boxes, half-spaces with a clearance;
        `model/workspace.py`), kept in the search on the evaluation grid and enforced and checked on
        the final check grid; null: joint limits only.
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
    coverage_weight: float = 0.0
    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
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
        check(
            isinstance(self.coverage_weight, (int, float))
            and not isinstance(self.coverage_weight, bool)
            and math.isfinite(self.coverage_weight)
            and self.coverage_weight >= 0.0,
            f"coverage_weight must be a number >= 0 (0: cond alone), got {self.coverage_weight}",
        )
        if self.position_limits is not None:
            for row in self.position_limits:
                check(
                    len(row) == 2 and all(math.isfinite(v) for v in row) and row[0] < row[1],
                    f"position_limits must be [min, max] pairs (rad) with min < max, got {row}",
                )


class FourierGenerator:
    """Trajectory generator `fourier`: see the module docstring."""

    def __init__(self, params: FourierParams):
        self.params = params

    def generate(
        self, robot: RobotModel, objective: ConditionObjective | None, seed: int
    ) -> FourierTrajectory:
        """Optimised trajectory for `robot` (with objective None: a random feasible one)."""
        # the search's modules are imported here, when a motion is designed: a run that only
        # validates this config (e.g. one that reads a recording) does not import them
        from threadpoolctl import threadpool_limits

        from ident_framework.parallel_work import forked_pool
        from ident_framework.progress import progress
        from ident_framework.trajectories.fourier_search import Search, SearchProblem

        params = self.params
        problem = SearchProblem(robot, params)
        rng = np.random.default_rng(seed)
        if objective is None:
            q0, z, _ = problem.feasible(problem.random(rng), maximise=True)
            return self._finish(problem, q0, z, None, None, seed)
        search = Search(problem, objective, rng)
        # small matrices (the objective's SVD fallback, CMA-ES's eigendecompositions): threaded
        # BLAS only contends, 10-20x slower per call on a busy 2-core machine. The candidates
        # are evaluated on forked workers (a CMA-ES generation at a time; every random draw
        # and every choice stays here, in the same order: the same result as serially)
        with (
            threadpool_limits(limits=1, user_api="blas"),
            forked_pool(search.evaluate, batch=search.population_size()) as evaluations,
            progress(
                total=params.n_candidates + search.refine_evaluations(params.n_refine),
                desc="fourier excitation",
                unit="candidate",
                enabled=params.progress,
                mininterval=0.5,
            ) as bar,
        ):
            search.bar = bar
            search.evaluations = evaluations
            x0 = search.monte_carlo(params.n_candidates)
            search.refine(x0, params.n_refine, params.refine_sigma)
        assert search.best is not None
        q0, z = search.best
        cond_search = (  # the best cost holds the coverage term too
            math.exp(search.best_cost)
            if params.coverage_weight == 0.0
            else float(objective(*problem.states(q0, z)))
        )
        return self._finish(problem, q0, z, objective, cond_search, seed)

    def _finish(
        self,
        problem: SearchProblem,
        q0: np.ndarray,
        z: np.ndarray,
        objective: ConditionObjective | None,
        cond_search: float | None,
        seed: int,
    ) -> FourierTrajectory:
        """Enforce every limit on the dense check grid, check the result with the safety check
        `source=rtde` runs (`motion_safety.check_trajectory`); record cond, the limits' usage
        and the workspace clearance."""
        from ident_framework.plain_data import to_plain
        from ident_framework.trajectories.angle_coverage import circle_coverage
        from ident_framework.trajectories.motion_safety import SafetyLimits, check_trajectory

        params, robot = self.params, problem.robot
        dense = problem.maps(np.arange(0.0, problem.period, 1.0 / params.check_rate_hz))
        problem.padding = 0.0
        scaled = z * np.minimum(problem.joint_scale(q0, z, dense), 1.0)
        # the search checked coarser grids
        scaled = problem.fit_workspace_and_torque(q0, scaled, dense, iterations=12)
        limits = SafetyLimits(params.workspace, params.torque_fraction, params.check_rate_hz)
        for _ in range(_FINAL_SHRINKS):
            report = check_trajectory(
                robot, problem.trajectory(q0, scaled), limits, workspace=problem.workspace
            )
            if report.safe:
                break
            scaled = 0.98 * scaled  # a hair between the grids: shrink a little and check again
        else:
            raise UserError(
                "The designed excitation does not pass the safety check: "
                f"{report.violations[0].describe()}. This should not happen; please report it "
                "with the config (e.g. try another seed meanwhile)."
            )
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
            "angle_coverage": circle_coverage(q),
            "safety_check": {
                "check_rate_hz": params.check_rate_hz,
                "min_floor_clearance_m": report.min_floor_clearance_m,
                "lowest_point": report.lowest_point or None,
                "min_workspace_margin_m": report.min_margin_m,
            },
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
