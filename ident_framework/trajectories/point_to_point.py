"""Built-in trajectory generator `point_to_point`: rest-to-rest moves between random waypoints.

Validation motions like robot programs: synchronised quintic (minimum-jerk) moves with short
holds, slow (a few % of the velocity limit) or fast (about half) in the proportion
`slow_fraction`. Moves keep the position, velocity and acceleration limits (a quintic over D
rad and T s peaks at 15/8·D/T rad/s and 10/√3·D/T² rad/s²), the effort limits (nominal
inverse dynamics) and the workspace (checked every 5 mrad with 5 mm more clearance); the
whole motion then passes `source=rtde`'s safety check.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ident_framework.errors import UserError
from ident_framework.hookspecs import ConditionObjective, hookimpl
from ident_framework.model.motion_safety import SafetyLimits, check_trajectory
from ident_framework.model.robot import RobotModel
from ident_framework.model.ur_description import home_pose
from ident_framework.model.workspace import Workspace, WorkspaceParams, position_limit_pairs
from ident_framework.params import Params, param

PEAK_SPEED = 15.0 / 8.0  # max of ds/dtau for the quintic s(tau) = 10tau³ - 15tau⁴ + 6tau⁵
PEAK_ACCELERATION = 10.0 / math.sqrt(3.0)  # max of |d²s/dtau²|
_TORQUE_SAMPLES = 41  # samples per move for the torque check
_MAX_TRIES = 30  # redraws of a move (then it is shrunk)
_PATH_STEP_RAD = 0.005  # workspace samples along a move: at most this apart in its largest joint
_PATH_MARGIN_M = 0.005  # extra clearance of the moves, so the final (time-sampled) check passes


_SPEED = "[min, max], fractions of the velocity limit"


def _range(factory: Any, note: str = "[min, max]", **check: Any) -> Any:
    """A [min, max] field."""
    return param(factory=factory, each=True, length=2, note=note, **check)


def _ranges_ordered(params: PointToPointParams) -> None:
    for name in ("move_s", "hold_s", "slow_speed", "fast_speed"):
        low, high = getattr(params, name)
        if not low <= high:
            raise ValueError(f"{name} must be [min, max] with min <= max, got {[low, high]}")


def _move_fits_duration(params: PointToPointParams) -> None:
    if not params.duration_s > params.move_s[0] + 2 * params.hold_s[0]:
        raise ValueError(
            f"duration_s ({params.duration_s} s) must exceed one move and two holds "
            f"({params.move_s[0] + 2 * params.hold_s[0]} s)"
        )


@dataclass
class PointToPointParams(Params):
    """duration_s: total length (s); move_s: [min, max] duration of one move (s); hold_s:
    [min, max] rest between moves (s); slow_fraction: share of slow moves (0..1); slow_speed,
    fast_speed: [min, max] peak joint speed of a slow / fast move as a fraction of each joint's
    velocity limit; position_margin_rad: distance kept from the position limits (rad);
    start_range: the start configuration is drawn from this central fraction of each joint's
    range; acceleration_margin, torque_margin: usable fraction of the acceleration and effort
    limits (the torque check uses the nominal model, which knows no payload or friction);
    position_limits: optional per-joint [min, max] (rad) narrowing the position limits;
    workspace: where the arm may go (`model/workspace.py`), null: joint limits only."""

    duration_s: float = param(20.0, gt=0, unit="s")
    move_s: list[float] = _range(lambda: [0.8, 2.5], gt=0, unit="s")
    hold_s: list[float] = _range(lambda: [0.2, 0.6], ge=0, unit="s")
    slow_fraction: float = param(0.35, ge=0, le=1)
    slow_speed: list[float] = _range(lambda: [0.03, 0.10], gt=0, le=1, note=_SPEED)
    fast_speed: list[float] = _range(lambda: [0.4, 0.8], gt=0, le=1, note=_SPEED)
    position_margin_rad: float = param(0.1, ge=0, unit="rad")
    start_range: float = param(0.5, gt=0, le=1)
    acceleration_margin: float = param(0.8, gt=0, le=1)
    torque_margin: float = param(0.7, gt=0, le=1)
    position_limits: list[list[float]] | None = None
    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
    rules = (_ranges_ordered, _move_fits_duration, position_limit_pairs)


def _quintic(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """s, ds/dtau, d²s/dtau² of the rest-to-rest quintic on tau in [0, 1]."""
    t2 = tau * tau
    return (
        t2 * tau * (10.0 - 15.0 * tau + 6.0 * t2),
        30.0 * t2 * (1.0 - 2.0 * tau + t2),
        60.0 * tau * (1.0 - 3.0 * tau + 2.0 * t2),
    )


class PointToPointTrajectory:
    """Quintic rest-to-rest pieces through `waypoints` (m+1, n) rad at `knots` (m+1,) s.

    Piece i goes from waypoints[i] at knots[i] to waypoints[i+1] at knots[i+1] (equal
    waypoints: a hold). Starts and ends at rest; duration = knots[-1]."""

    def __init__(self, knots: ArrayLike, waypoints: ArrayLike, slow: ArrayLike | None = None):
        self.knots = np.asarray(knots, dtype=float)
        self.waypoints = np.asarray(waypoints, dtype=float)
        if self.knots.ndim != 1 or len(self.knots) < 2 or np.any(np.diff(self.knots) <= 0):
            raise ValueError("knots must be at least two strictly increasing times in s")
        if self.waypoints.shape[0] != len(self.knots) or self.waypoints.ndim != 2:
            raise ValueError(
                f"waypoints has shape {self.waypoints.shape}, expected ({len(self.knots)}, n)"
            )
        self.knots = self.knots - self.knots[0]
        self.duration = float(self.knots[-1])
        # per piece: True for a slow move, False for a fast move or a hold (for reports/tests)
        self.slow = (
            np.zeros(len(self.knots) - 1, dtype=bool) if slow is None else np.asarray(slow, bool)
        )

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q (rad), dq (rad/s), ddq (rad/s²) at times t (s), each (len(t), n); held at the
        end points outside [0, duration]."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        piece = np.clip(np.searchsorted(self.knots, t, side="right") - 1, 0, len(self.knots) - 2)
        start, length = self.knots[piece], np.diff(self.knots)[piece]
        tau = np.clip((t - start) / length, 0.0, 1.0)
        s, ds, dds = _quintic(tau)
        distance = self.waypoints[piece + 1] - self.waypoints[piece]
        q = self.waypoints[piece] + distance * s[:, None]
        dq = distance * (ds / length)[:, None]
        ddq = distance * (dds / length**2)[:, None]
        return q, dq, ddq

    def there_and_back(self) -> PointToPointTrajectory:
        """The motion followed by the same pieces in reverse order: back to its start, at
        rest, along the same (checked) path; a periodic motion that loops without a jump."""
        steps = np.diff(self.knots)
        knots = np.concatenate([[0.0], np.cumsum(np.concatenate([steps, steps[::-1]]))])
        waypoints = np.concatenate([self.waypoints, self.waypoints[-2::-1]])
        slow = np.concatenate([self.slow, self.slow[::-1]])
        return PointToPointTrajectory(knots, waypoints, slow)

    def describe(self) -> dict[str, Any]:
        return {
            "generator": "point_to_point",
            "duration_s": self.duration,
            "knots_s": [float(v) for v in self.knots],
            "waypoints_rad": [[float(v) for v in row] for row in self.waypoints],
            "slow": [bool(v) for v in self.slow],
        }

    @classmethod
    def from_description(cls, description: dict[str, Any]) -> PointToPointTrajectory:
        slow = description.get("slow") or None
        return cls(description["knots_s"], description["waypoints_rad"], slow)


class PointToPointGenerator:
    """Draws a point-to-point motion from a seed; the identification objective is ignored."""

    def __init__(self, params: PointToPointParams):
        self.params = params

    def rebuild(self, description: dict[str, Any]) -> PointToPointTrajectory:
        """The trajectory of a `describe()` (a run's `trajectory.yaml`)."""
        return PointToPointTrajectory.from_description(description)

    def slow_motion(
        self, robot: RobotModel, amplitude_rad: float = 0.25, period_s: float = 12.0
    ) -> PointToPointTrajectory:
        """From `home_pose` every joint moves by `amplitude_rad` and back, then by
        -`amplitude_rad` and back: four rest-to-rest moves of `period_s` / 4 s each."""
        home = home_pose(robot.joint_names, robot.limits.position)
        waypoints = [home, home + amplitude_rad, home, home - amplitude_rad, home]
        return PointToPointTrajectory(np.linspace(0.0, period_s, 5), waypoints, [True] * 4)

    def generate(
        self, robot: RobotModel, objective: ConditionObjective | None, seed: int
    ) -> PointToPointTrajectory:
        del objective  # validation motions are not optimised for excitation
        p = self.params
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x9292]))
        low, high = self._range(robot)
        self._workspace = None
        if p.workspace is not None:
            padded = dataclasses.replace(
                p.workspace, clearance_m=p.workspace.clearance_m + _PATH_MARGIN_M
            )
            self._workspace = Workspace(robot, padded)
        velocity = np.asarray(robot.limits.velocity, dtype=float)
        acceleration = np.asarray(robot.limits.acceleration, dtype=float) * p.acceleration_margin
        effort = np.asarray(robot.limits.effort, dtype=float) * p.torque_margin

        start = self._start(robot, rng, low, high, effort)
        knots, waypoints, slow = [0.0], [start], []

        def hold(seconds: float) -> None:
            if seconds <= 1e-9:  # hold_s = [0, 0]: moves follow each other directly
                return
            knots.append(knots[-1] + seconds)
            waypoints.append(waypoints[-1])
            slow.append(False)

        hold(rng.uniform(*p.hold_s))
        phase = rng.uniform()  # slow moves: floor(slow_fraction * i + phase) of the first i
        n_moves = n_slow = 0
        while True:
            length = rng.uniform(*p.move_s)
            closing = rng.uniform(*p.hold_s)
            if knots[-1] + length + closing > p.duration_s:
                break
            is_slow = n_slow < math.floor(p.slow_fraction * (n_moves + 1) + phase)
            target = self._move(
                robot, rng, waypoints[-1], length, is_slow, low, high, velocity,
                acceleration, effort,
            )  # fmt: skip
            knots.append(knots[-1] + length)
            waypoints.append(target)
            slow.append(is_slow)
            hold(closing)
            n_moves += 1
            n_slow += is_slow
        if p.duration_s - knots[-1] > 1e-9:
            hold(p.duration_s - knots[-1])
        motion = PointToPointTrajectory(np.array(knots), np.array(waypoints), np.array(slow))
        self._check(robot, motion)
        return motion

    # ------------------------------------------------------------------ helpers
    def _range(self, robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
        """Usable position range per joint (rad): the limits (narrowed by position_limits)
        minus the margin."""
        limits = np.asarray(robot.limits.position, dtype=float)
        margin = self.params.position_margin_rad
        low, high = limits[:, 0] + margin, limits[:, 1] - margin
        if self.params.position_limits is not None:
            window = np.asarray(self.params.position_limits, dtype=float)
            if window.shape != (robot.n_joints, 2):
                raise UserError(
                    f"position_limits has {len(window)} rows, the robot '{robot.name}' has "
                    f"{robot.n_joints} joints: give one [min, max] per joint."
                )
            low, high = np.maximum(low, window[:, 0]), np.minimum(high, window[:, 1])
        if np.any(high < low):
            bad = [robot.joint_names[j] for j in np.flatnonzero(high < low)]
            raise ValueError(f"position_margin_rad leaves no range for joints {bad}")
        return low, high

    def _inside(self, q: np.ndarray) -> bool:
        """Whether every pose q (N, n) rad lies in the workspace (with the path margin)."""
        return self._workspace is None or bool(self._workspace.worst_margin(q).min() >= 0.0)

    def _path_inside(self, origin: np.ndarray, distance: np.ndarray) -> bool:
        """Whether the straight joint move origin -> origin + distance stays in the workspace."""
        if self._workspace is None:
            return True
        steps = max(2, int(np.ceil(np.abs(distance).max() / _PATH_STEP_RAD)) + 1)
        return self._inside(origin + np.linspace(0.0, 1.0, steps)[:, None] * distance)

    def _check(self, robot: RobotModel, motion: PointToPointTrajectory) -> None:
        """The safety check of the whole motion (workspace and joint limits, not the torque:
        the moves keep torque_margin, which may be above the check's share)."""
        limits = SafetyLimits(self.params.workspace, torque_fraction=1.0)
        report = check_trajectory(robot, motion, limits)
        if not report.safe:
            raise UserError(
                "The point-to-point motion does not pass the safety check: "
                f"{report.violations[0].describe()}. This should not happen; please report it "
                "with the config (e.g. try another seed meanwhile)."
            )

    def _torque_ok(self, robot: RobotModel, q, dq, ddq, effort: np.ndarray) -> bool:
        return bool(np.all(np.abs(robot.inverse_dynamics(q, dq, ddq)) <= effort))

    def _start(self, robot, rng, low, high, effort) -> np.ndarray:
        centre, half = 0.5 * (low + high), 0.5 * (high - low) * self.params.start_range
        zero = np.zeros((1, robot.n_joints))
        for _ in range(_MAX_TRIES * 10):
            q = rng.uniform(centre - half, centre + half)
            if self._inside(q[None]) and self._torque_ok(robot, q[None], zero, zero, effort):
                return q
        raise UserError(
            f"No start configuration of {robot.name} within the central "
            f"{self.params.start_range:.0%} of the joint ranges, inside the workspace and within "
            f"{self.params.torque_margin:.0%} of the effort limits at rest was found: raise "
            "start_range or torque_margin, or widen the workspace (trajectory.workspace)."
        )

    def _move(
        self, robot, rng, origin, length, is_slow, low, high, velocity, acceleration, effort
    ) -> np.ndarray:
        """Target of one synchronised quintic move of `length` s from `origin` (rad)."""
        p = self.params
        speeds = p.slow_speed if is_slow else p.fast_speed
        tau = np.linspace(0.0, 1.0, _TORQUE_SAMPLES)
        s, ds, dds = _quintic(tau)
        distance = np.zeros_like(origin)
        for attempt in range(_MAX_TRIES + 8):
            if attempt < _MAX_TRIES:
                peak = rng.uniform(*speeds, size=origin.shape) * velocity
                distance = peak * length / PEAK_SPEED * rng.choice([-1.0, 1.0], origin.shape)
                flip = (origin + distance > high) | (origin + distance < low)
                distance[flip] *= -1.0
                distance = np.clip(origin + distance, low, high) - origin
                distance *= min(
                    1.0,
                    float(np.min(acceleration * length**2 / (PEAK_ACCELERATION * np.abs(distance)
                                                                  + 1e-300))),
                )  # fmt: skip
            else:
                distance = 0.5 * distance  # shrink a move that keeps exceeding the torque
            q = origin + distance * s[:, None]
            dq = distance * (ds / length)[:, None]
            ddq = distance * (dds / length**2)[:, None]
            if self._path_inside(origin, distance) and self._torque_ok(robot, q, dq, ddq, effort):
                return origin + distance
        return origin.copy()


@hookimpl
def register_trajectory_generators(register) -> None:
    register("point_to_point", PointToPointGenerator, PointToPointParams)
