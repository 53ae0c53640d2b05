"""Safety check of a robot motion before a real robot moves along it.

`check_trajectory` compares a sampled trajectory with the joint position (rad), velocity
(rad/s) and acceleration (rad/s²) limits, the nominal inverse-dynamics torque (Nm) against
`torque_fraction` × the effort limits, and the workspace (`model/workspace.py`).
`motion_verdict` judges a whole motion as `source=rtde` plays it: the moveJ from the current
pose to the start (`JointMove`), then the trajectory; it refuses when the pose is unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ident_framework.hookspecs import Trajectory
from ident_framework.model.robot import RobotModel
from ident_framework.model.workspace import Workspace, WorkspaceParams

APPROACH = "approach move"
TRAJECTORY = "trajectory"


class JointMove:
    """The moveJ `play` starts with, as a trajectory: a straight joint-space line from q_from to
    q_to (rad), the largest joint move on a trapezoidal speed profile of `speed` rad/s and
    `acceleration` rad/s² (a triangle when too short), at rest outside 0..`duration` s."""

    def __init__(self, q_from: np.ndarray, q_to: np.ndarray, speed: float, acceleration: float):
        self.q_from = np.asarray(q_from, dtype=float)
        self.q_to = np.asarray(q_to, dtype=float)
        self.speed, self.acceleration = float(speed), float(acceleration)
        self.distance = float(np.abs(self.q_to - self.q_from).max(initial=0.0))  # rad
        if self.distance >= speed**2 / acceleration:
            self.ramp_s = speed / acceleration
            self.duration = self.distance / speed + self.ramp_s
        else:
            self.ramp_s = math.sqrt(self.distance / acceleration)
            self.duration = 2.0 * self.ramp_s
        self.peak = self.acceleration * self.ramp_s  # rad/s of the largest joint move

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q (rad), dq (rad/s), ddq (rad/s²) at times t (s), each (len(t), n)."""
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        a, ramp, end = self.acceleration, self.ramp_s, self.duration
        rising, falling = t < ramp, t > end - ramp
        s = np.where(rising, 0.5 * a * t**2, self.peak * (t - 0.5 * ramp))
        s = np.where(falling, self.distance - 0.5 * a * (end - t) ** 2, s)
        v = np.where(rising, a * t, np.where(falling, a * (end - t), self.peak))
        acc = np.where(rising, a, np.where(falling, -a, 0.0))
        acc = np.where((t <= 0.0) | (t >= end), 0.0, acc)
        v = np.where((t <= 0.0) | (t >= end), 0.0, v)
        direction = (
            (self.q_to - self.q_from) / self.distance if self.distance > 0.0 else self.q_to * 0.0
        )
        return (
            self.q_from + s[:, None] * direction,
            v[:, None] * direction,
            acc[:, None] * direction,
        )


@dataclass
class SafetyLimits:
    """What a motion is checked against: the workspace (null: none), the share of the effort
    limits the nominal torques may use, the check's sampling rate (Hz); the config keys named
    in messages."""

    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
    torque_fraction: float = 0.8
    check_rate_hz: float = 250.0
    workspace_key: str = "trajectory.workspace"
    torque_key: str = "source.torque_fraction"


@dataclass
class Violation:
    """The worst breach of one limit: `quantity` of `where` (a joint or a point) at `time_s` of
    its `phase`, value and limit in `unit`; a workspace violation has its sentence in `text`
    and value = the margin (m, < 0)."""

    quantity: str
    where: str
    time_s: float
    value: float
    limit: float
    unit: str
    phase: str = TRAJECTORY
    text: str = ""

    @property
    def excess(self) -> float:
        if self.quantity == "workspace":
            return -self.value
        if self.quantity == "position":
            return abs(self.value - self.limit)
        return abs(self.value) - abs(self.limit)

    def describe(self) -> str:
        where = (
            f"during the {APPROACH} (moveJ from the current pose), "
            if self.phase == APPROACH
            else ""
        )
        if self.quantity == "workspace":
            return where + self.text
        return (
            f"{where}joint '{self.where}' {self.quantity} reaches {self.value:.4g} {self.unit} "
            f"at t = {self.time_s:.3f} s, {self.excess:.4g} {self.unit} beyond its limit "
            f"{self.limit:.4g} {self.unit}"
        )


@dataclass
class SafetyReport:
    """Ranges, peaks, floor clearance, workspace margin and violations of one phase."""

    phase: str
    joint_names: tuple[str, ...]
    duration_s: float
    position_range: np.ndarray  # (n, 2) rad
    velocity_peak: np.ndarray  # (n,) rad/s
    acceleration_peak: np.ndarray  # (n,) rad/s²
    torque_peak: np.ndarray  # (n,) Nm, nominal model
    limits: dict[str, np.ndarray]
    min_floor_clearance_m: float | None  # lowest point above the floor plane (None: no floor)
    lowest_point: str
    lowest_time_s: float
    min_margin_m: float | None  # smallest workspace margin, clearance kept (None: no regions)
    violations: list[Violation] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.violations

    def headline(self) -> str:
        floor = (
            "no floor plane"
            if self.min_floor_clearance_m is None
            else f"minimum floor clearance {self.min_floor_clearance_m:.3f} m (point "
            f"'{self.lowest_point}' at t = {self.lowest_time_s:.2f} s)"
        )
        margin = (
            ""
            if self.min_margin_m is None
            else f"; smallest workspace margin beyond the clearance {self.min_margin_m:.3f} m"
        )
        return f"{self.phase}: {self.duration_s:.2f} s; {floor}{margin}"

    def lines(self) -> list[str]:
        """The printed summary: one row per joint, peaks beside their limits."""
        out = [
            self.headline(),
            f"{'joint':<20} {'q min':>7} {'q max':>7} rad  {'|dq|/limit':>13} rad/s  "
            f"{'|ddq|/limit':>13} rad/s²  {'|tau|/limit':>13} Nm",
        ]
        for j, name in enumerate(self.joint_names):
            low, high = self.position_range[j]
            out.append(
                f"{name:<20} {low:7.3f} {high:7.3f}      "
                f"{self.velocity_peak[j]:6.3f}/{self.limits['velocity'][j]:<6.3f}        "
                f"{self.acceleration_peak[j]:6.2f}/{self.limits['acceleration'][j]:<6.2f}         "
                f"{self.torque_peak[j]:6.1f}/{self.limits['torque'][j]:<6.1f}"
            )
        return out


def _worst(
    values: np.ndarray, limit: np.ndarray, times: np.ndarray, names: tuple[str, ...], label: str,
    unit: str, phase: str,
) -> list[Violation]:  # fmt: skip
    """One violation per joint whose |values| exceed `limit` (at the worst sample)."""
    excess = np.abs(values) - limit
    found = []
    for j in np.flatnonzero(excess.max(axis=0) > 0):
        k = int(np.argmax(excess[:, j]))
        found.append(Violation(label, names[j], float(times[k]), float(values[k, j]),
                               float(limit[j]), unit, phase))  # fmt: skip
    return found


def _position_violations(
    q: np.ndarray, position: np.ndarray, times: np.ndarray, names: tuple[str, ...], phase: str
) -> list[Violation]:
    found = []
    low, high = position[:, 0], position[:, 1]
    for j in range(q.shape[1]):
        for bound, bad in ((low[j], q[:, j] < low[j]), (high[j], q[:, j] > high[j])):
            if bad.any():
                k = int(np.argmax(np.abs(q[:, j] - bound) * bad))
                found.append(Violation("position", names[j], float(times[k]), float(q[k, j]),
                                       float(bound), "rad", phase))  # fmt: skip
    return found


def _workspace_violations(
    workspace: Workspace, points: np.ndarray, times: np.ndarray, phase: str
) -> tuple[list[Violation], float | None]:
    """One violation per region (its worst point and sample), and the smallest margin (m)."""
    params, clearance = workspace.params, workspace.params.clearance_m
    names = workspace.point_names
    found: list[Violation] = []
    smallest = None
    for region, margin in zip(workspace.regions, workspace.margins_at(points), strict=True):
        k, p = np.unravel_index(int(np.argmin(margin)), margin.shape)
        value = float(margin[k, p])
        smallest = value if smallest is None else min(smallest, value)
        if value >= 0.0:
            continue
        point = int(region.points[p])
        x, y, z = points[k, point]
        name, t = names[point], float(times[k])
        if region.kind == "floor":
            text = f"point '{name}' comes down to z = {z:.3f} m at t = {t:.3f} s, " + (
                f"{params.floor_z_m - z:.3f} m below {region.description}"
                if z < params.floor_z_m
                else f"{-value:.3f} m inside the {clearance:g} m clearance above "
                f"{region.description}"
            )
        elif region.kind == "column":
            text = (
                f"point '{name}' comes within {np.hypot(x, y):.3f} m of the base z axis at "
                f"z = {z:.3f} m, t = {t:.3f} s: {-value:.3f} m inside {region.description} "
                f"with its {clearance:g} m clearance"
            )
        else:
            text = (
                f"point '{name}' at ({x:.3f}, {y:.3f}, {z:.3f}) m, t = {t:.3f} s, is "
                f"{-value:.3f} m outside {region.description} with its {clearance:g} m clearance"
            )
        found.append(Violation("workspace", name, t, value, 0.0, "m", phase, text))
    return found, smallest


def check_trajectory(
    robot: RobotModel,
    trajectory: Trajectory,
    limits: SafetyLimits,
    phase: str = TRAJECTORY,
    workspace: Workspace | None = None,
) -> SafetyReport:
    """Sample `trajectory` at `limits.check_rate_hz` (and at its end) and check every limit.
    `workspace`: the workspace of `limits` bound to `robot` (built when None)."""
    duration = float(trajectory.duration)
    times = np.append(np.arange(0.0, duration, 1.0 / limits.check_rate_hz), duration)
    q, dq, ddq = (np.asarray(a, dtype=float) for a in trajectory.evaluate(times))
    names = tuple(robot.joint_names)
    joint_limits = robot.limits
    torque_limit = limits.torque_fraction * np.asarray(joint_limits.effort, dtype=float)
    tau = robot.inverse_dynamics(q, dq, ddq)
    violations = _position_violations(q, joint_limits.position, times, names, phase)
    violations += _worst(dq, joint_limits.velocity, times, names, "velocity", "rad/s", phase)
    violations += _worst(ddq, joint_limits.acceleration, times, names, "acceleration", "rad/s²",
                         phase)  # fmt: skip
    violations += _worst(tau, torque_limit, times, names, "torque (nominal model)", "Nm", phase)
    if workspace is None and limits.workspace is not None:
        workspace = Workspace(robot, limits.workspace, limits.workspace_key)
    clearance, lowest, lowest_time, margin = None, "", 0.0, None
    if workspace is not None:
        points = workspace.positions(q)
        found, margin = _workspace_violations(workspace, points, times, phase)
        violations += found
        if workspace.params.floor_z_m is not None:
            heights = points[..., 2]
            k, p = np.unravel_index(int(np.argmin(heights)), heights.shape)
            clearance = float(heights[k, p]) - workspace.params.floor_z_m
            lowest, lowest_time = workspace.point_names[p], float(times[k])
    return SafetyReport(
        phase=phase,
        joint_names=names,
        duration_s=duration,
        position_range=np.stack([q.min(axis=0), q.max(axis=0)], axis=1),
        velocity_peak=np.abs(dq).max(axis=0),
        acceleration_peak=np.abs(ddq).max(axis=0),
        torque_peak=np.abs(tau).max(axis=0),
        limits={
            "velocity": joint_limits.velocity,
            "acceleration": joint_limits.acceleration,
            "torque": torque_limit,
        },  # fmt: skip
        min_floor_clearance_m=clearance,
        lowest_point=lowest,
        lowest_time_s=lowest_time,
        min_margin_m=margin,
        violations=violations,
    )


@dataclass
class MotionVerdict:
    """The verdict on the approach move (None when the pose is unknown: `pose_problem`) and the
    trajectory."""

    trajectory: SafetyReport
    approach: SafetyReport | None
    approach_move: JointMove | None
    pose_problem: str | None
    limits: SafetyLimits

    @property
    def violations(self) -> list[Violation]:
        """Every violation in the order of the motion (approach, then trajectory, by time)."""
        approach = sorted(self.approach.violations, key=lambda v: v.time_s) if self.approach else []
        return approach + sorted(self.trajectory.violations, key=lambda v: v.time_s)

    @property
    def safe(self) -> bool:
        return self.approach is not None and not self.violations

    def lines(self) -> list[str]:
        """What was checked, as printed before a motion (or a dry run)."""
        if self.approach_move is None:
            approach = [
                f"{APPROACH}: NOT checked: the robot's current pose could not be read "
                f"({self.pose_problem})"
            ]
        else:
            move = self.approach_move
            approach = [
                f"{APPROACH} (moveJ from the current pose at {move.speed:g} rad/s): largest joint "
                f"move {move.distance:.3f} rad; {self.approach.headline().split('; ', 1)[1]}"
            ]
        return approach + self.trajectory.lines()

    def refusal(self) -> str | None:
        """The refusal message, or None when the motion may be played."""
        violations = self.violations
        if violations:
            first = violations[0]
            others = (
                f" ({len(violations) - 1} more limit(s) violated)" if len(violations) > 1 else ""
            )
            return f"The motion is refused: {first.describe()}{others}. {self._advice(first)}"
        if self.approach is None:
            return (
                "The motion is refused: the robot's current pose could not be read "
                f"({self.pose_problem}), so the {APPROACH} from it to the trajectory's start was "
                "not checked; the trajectory itself passed every check (joint limits, nominal "
                "torques, workspace). Check the RTDE connection and run again."
            )
        return None

    def _advice(self, first: Violation) -> str:
        workspace = self.limits.workspace_key
        if first.phase == APPROACH:
            start = np.round(self.approach_move.q_to, 3).tolist() if self.approach_move else []
            return (
                "Jog the robot to a pose from which the straight joint move (moveJ) to the "
                f"trajectory's start q = {start} rad stays clear, e.g. a pose above the start, "
                "then run again."
            )
        return (
            "Design a gentler excitation (e.g. trajectory.velocity_fraction, "
            f"trajectory.torque_fraction, trajectory.position_limits, {workspace}) or, if the "
            f"robot's surroundings differ (another floor height, a tool), set {workspace} "
            f"(floor_z_m, tool_offset_m, ...), which the check reads too; torques are checked "
            f"against {self.limits.torque_key} × the effort limits."
        )


def motion_verdict(
    robot: RobotModel,
    trajectory: Trajectory,
    current_q: np.ndarray | None,
    limits: SafetyLimits,
    movej_speed: float,
    movej_acceleration: float,
    pose_problem: str | None = None,
) -> MotionVerdict:
    """The verdict on moving from `current_q` (rad; None: unknown, `pose_problem` says why) to
    the start of `trajectory` by a moveJ (rad/s, rad/s²), then along `trajectory`."""
    workspace = (
        Workspace(robot, limits.workspace, limits.workspace_key)
        if limits.workspace is not None
        else None
    )
    report = check_trajectory(robot, trajectory, limits, TRAJECTORY, workspace)
    approach = move = None
    if current_q is not None:
        start = np.asarray(trajectory.evaluate(np.array([0.0]))[0][0], dtype=float)
        move = JointMove(np.asarray(current_q, dtype=float), start, movej_speed,
                         movej_acceleration)  # fmt: skip
        approach = check_trajectory(robot, move, limits, APPROACH, workspace)
    elif pose_problem is None:
        pose_problem = "no pose given"
    return MotionVerdict(report, approach, move, pose_problem if move is None else None, limits)
