"""Built-in trajectory generator `fourier`: an optimised finite Fourier series (Swevers et al.).

Per joint j, with w = 2 pi f (f the base frequency, Hz) and L harmonics (q in rad, t in s),

    q_j(t)   = q0_j + sum_l [a_jl sin(w l t) - b_jl (cos(w l t) - 1)] / (w l)
    dq_j(t)  = sum_l  a_jl cos(w l t) + b_jl sin(w l t)
    ddq_j(t) = sum_l (-a_jl sin(w l t) + b_jl cos(w l t)) w l

with sum_l a_jl = 0, sum_l l b_jl = 0 and sum_l b_jl / l = 0: at rest at q0, its mean, at
both ends. `generate` searches coefficients and q0 for the lowest cond of the base regressor
within the limits and workspace (`search.py`), then runs `source=rtde`'s safety check.

Rationale: docs/design.md#fourier-excitation-search
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import ConditionObjective, hookimpl
from ident_framework.model.robot import RobotModel
from ident_framework.model.ur_description import home_pose
from ident_framework.trajectories.fourier.params import FourierParams
from ident_framework.trajectories.fourier.series import (
    FourierTrajectory,
    constraint_basis,
    fourier_basis,
)

if TYPE_CHECKING:
    from ident_framework.trajectories.fourier.search import SearchProblem

__all__ = [
    "FourierGenerator",
    "FourierParams",
    "FourierTrajectory",
    "register_trajectory_generators",
]

_FINAL_SHRINKS = 5  # 2 % shrinks allowed when the final check finds a hair of a violation


class FourierGenerator:
    """Trajectory generator `fourier`: see the module docstring."""

    def __init__(self, params: FourierParams):
        self.params = params

    def generate(
        self, robot: RobotModel, objective: ConditionObjective | None, seed: int
    ) -> FourierTrajectory:
        """Optimised trajectory for `robot` (with objective None: a random feasible one)."""
        # imported only when a motion is designed
        from threadpoolctl import threadpool_limits

        from ident_framework.parallel_work import forked_pool
        from ident_framework.progress import progress
        from ident_framework.trajectories.fourier.search import Search, SearchProblem

        params = self.params
        problem = SearchProblem(robot, params)
        rng = np.random.default_rng(seed)
        if objective is None:
            q0, z, _ = problem.feasible(problem.random(rng), maximise=True)
            return self._finish(problem, q0, z, None, None, seed)
        search = Search(problem, objective, rng)
        # small matrices: threaded BLAS only contends. Candidates are evaluated on forked
        # workers; every draw and choice stays here, in order: the same result as serially
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

    def rebuild(self, description: dict[str, Any]) -> FourierTrajectory:
        """The trajectory of a `describe()` (a run's `trajectory.yaml`)."""
        return FourierTrajectory.from_description(description)

    def slow_motion(
        self, robot: RobotModel, amplitude_rad: float = 0.25, period_s: float = 12.0
    ) -> FourierTrajectory:
        """A slow periodic motion about `home_pose`: three harmonics per joint, peak
        excursion `amplitude_rad` per joint, one period of `period_s` s, at rest at its start
        and end (loops smoothly)."""
        q0 = home_pose(robot.joint_names, robot.limits.position)
        n_harmonics = 3
        basis = constraint_basis(n_harmonics)  # (2L, 2L - 3) coefficients at rest at t = 0
        omega = 2.0 * math.pi / period_s
        position, _, _ = fourier_basis(np.linspace(0.0, period_s, 400), omega, n_harmonics)
        coefficients = np.empty((robot.n_joints, 2 * n_harmonics))
        for joint in range(robot.n_joints):
            angle = 2.0 * math.pi * joint / robot.n_joints
            vector = basis @ np.array([math.cos(angle), math.sin(angle), 0.5])[: basis.shape[1]]
            coefficients[joint] = vector * amplitude_rad / np.abs(position @ vector).max()
        return FourierTrajectory(
            q0=q0,
            a=coefficients[:, :n_harmonics],
            b=coefficients[:, n_harmonics:],
            base_frequency_hz=1.0 / period_s,
            info={"purpose": "RTDE emulator default motion"},
        )

    def _finish(
        self,
        problem: SearchProblem,
        q0: np.ndarray,
        z: np.ndarray,
        objective: ConditionObjective | None,
        cond_search: float | None,
        seed: int,
    ) -> FourierTrajectory:
        """Enforce every limit on the dense check grid, run `source=rtde`'s safety check, and
        record cond, the limits' usage and the workspace clearance."""
        from ident_framework.model.motion_safety import SafetyLimits, check_trajectory
        from ident_framework.plain_data import to_plain
        from ident_framework.trajectories.fourier.search import circle_coverage

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
