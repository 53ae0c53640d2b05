"""Safety check of a joint trajectory before a real robot moves along it.

`check_trajectory` samples the whole trajectory and compares it with the robot's joint
position, velocity and acceleration limits, with the torques the nominal model needs
(Pinocchio inverse dynamics, no friction) against `torque_fraction` × the effort limits, and
with a floor plane: no frame of a moving link (Pinocchio forward kinematics, base frame, z up)
may come below `floor_z_m`. The report lists the ranges, the duration and the minimum floor
clearance; `require_safe` refuses a violating trajectory naming the joint (or frame), the time
and by how much the limit is exceeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ident_framework.errors import UserError
from ident_framework.interfaces import Trajectory
from ident_framework.model.robot import RobotModel


@dataclass
class Violation:
    """The worst breach of one limit: `quantity` of `where` (a joint or frame) at time
    `time_s`, value and limit in `unit`."""

    quantity: str
    where: str
    time_s: float
    value: float
    limit: float
    unit: str

    @property
    def excess(self) -> float:
        return (
            abs(self.value) - abs(self.limit)
            if self.quantity != "floor"
            else (self.limit - self.value)
        )

    def describe(self) -> str:
        if self.quantity == "floor":
            return (
                f"frame '{self.where}' comes down to z = {self.value:.3f} m at t = "
                f"{self.time_s:.3f} s, {self.excess:.3f} m below the floor plane at "
                f"{self.limit:.3f} m"
            )
        return (
            f"joint '{self.where}' {self.quantity} reaches {self.value:.4g} {self.unit} at "
            f"t = {self.time_s:.3f} s, {self.excess:.4g} {self.unit} beyond its limit "
            f"{self.limit:.4g} {self.unit}"
        )


@dataclass
class SafetyReport:
    """Ranges per joint, durations, clearance and every violated limit (empty: safe)."""

    joint_names: tuple[str, ...]
    duration_s: float
    position_range: np.ndarray  # (n, 2) rad
    velocity_peak: np.ndarray  # (n,) rad/s
    acceleration_peak: np.ndarray  # (n,) rad/s²
    torque_peak: np.ndarray  # (n,) Nm, nominal model
    limits: dict[str, np.ndarray]
    min_clearance_m: float
    lowest_frame: str
    lowest_time_s: float
    violations: list[Violation] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.violations

    def lines(self) -> list[str]:
        """The printed summary: one row per joint, peaks beside their limits."""
        out = [
            f"trajectory: {self.duration_s:.2f} s; minimum floor clearance "
            f"{self.min_clearance_m:.3f} m (frame '{self.lowest_frame}' at "
            f"t = {self.lowest_time_s:.2f} s)",
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
    unit: str,
) -> list[Violation]:  # fmt: skip
    """One violation per joint whose |values| exceed `limit` (at the worst sample)."""
    excess = np.abs(values) - limit
    found = []
    for j in np.flatnonzero(excess.max(axis=0) > 0):
        k = int(np.argmax(excess[:, j]))
        found.append(Violation(label, names[j], float(times[k]), float(values[k, j]),
                               float(limit[j]), unit))  # fmt: skip
    return found


def frame_heights(robot: RobotModel, q: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(N, m) z (m, base frame) of every frame carried by a moving joint, and their names."""
    model = robot.pin_model
    data = model.createData()
    frames = [i for i, frame in enumerate(model.frames) if frame.parentJoint > 0]
    heights = np.empty((len(q), len(frames)))
    for k, row in enumerate(q):
        pin.framesForwardKinematics(model, data, row)
        heights[k] = [data.oMf[i].translation[2] for i in frames]
    return heights, [model.frames[i].name for i in frames]


def check_trajectory(
    robot: RobotModel,
    trajectory: Trajectory,
    floor_z_m: float,
    torque_fraction: float = 0.8,
    check_rate_hz: float = 250.0,
) -> SafetyReport:
    """Sample `trajectory` at `check_rate_hz` (and at its end) and check every limit."""
    times = np.arange(0.0, trajectory.duration, 1.0 / check_rate_hz)
    times = np.append(times, trajectory.duration)
    q, dq, ddq = (np.asarray(a, dtype=float) for a in trajectory.evaluate(times))
    names = tuple(robot.joint_names)
    limits = robot.limits
    torque_limit = torque_fraction * np.asarray(limits.effort, dtype=float)
    tau = robot.inverse_dynamics(q, dq, ddq)
    violations: list[Violation] = []
    low, high = limits.position[:, 0], limits.position[:, 1]
    for j in range(robot.n_joints):
        for bound, bad in ((low[j], q[:, j] < low[j]), (high[j], q[:, j] > high[j])):
            if bad.any():
                k = int(np.argmax(np.abs(q[:, j] - bound) * bad))
                violations.append(
                    Violation(
                        "position", names[j], float(times[k]), float(q[k, j]), float(bound), "rad"
                    )  # fmt: skip
                )
    violations += _worst(dq, limits.velocity, times, names, "velocity", "rad/s")
    violations += _worst(ddq, limits.acceleration, times, names, "acceleration", "rad/s²")
    violations += _worst(tau, torque_limit, times, names, "torque (nominal model)", "Nm")
    heights, frames = frame_heights(robot, q)
    k, f = np.unravel_index(int(np.argmin(heights)), heights.shape)
    lowest = float(heights[k, f])
    if lowest < floor_z_m:
        violations.append(Violation("floor", frames[f], float(times[k]), lowest, floor_z_m, "m"))
    return SafetyReport(
        joint_names=names,
        duration_s=float(trajectory.duration),
        position_range=np.stack([q.min(axis=0), q.max(axis=0)], axis=1),
        velocity_peak=np.abs(dq).max(axis=0),
        acceleration_peak=np.abs(ddq).max(axis=0),
        torque_peak=np.abs(tau).max(axis=0),
        limits={
            "velocity": limits.velocity,
            "acceleration": limits.acceleration,
            "torque": torque_limit,
        },  # fmt: skip
        min_clearance_m=lowest - floor_z_m,
        lowest_frame=frames[f],
        lowest_time_s=float(times[k]),
        violations=violations,
    )


def require_safe(report: SafetyReport, prefix: str = "source") -> None:
    """Raise a UserError naming the first (earliest) violation, and how many there are."""
    if report.safe:
        return
    ordered = sorted(report.violations, key=lambda v: v.time_s)
    first = ordered[0]
    others = f" ({len(ordered) - 1} more limit(s) violated)" if len(ordered) > 1 else ""
    raise UserError(
        f"The trajectory is refused before any motion: {first.describe()}{others}. Nothing was "
        "sent to the robot. Design a gentler excitation (e.g. trajectory.velocity_fraction, "
        "trajectory.torque_fraction, trajectory.position_limits) or, if the robot really is "
        f"mounted higher, set {prefix}.floor_z_m; torques are checked against "
        f"{prefix}.torque_fraction × the effort limits."
    )


def check_joint_move(
    robot: RobotModel, q_from: np.ndarray, q_to: np.ndarray, floor_z_m: float, n: int = 50
) -> tuple[float, str]:
    """Minimum floor clearance (m) and its frame along the straight joint-space move from
    q_from to q_to (what moveJ follows, up to timing)."""
    path = q_from + np.linspace(0.0, 1.0, n)[:, None] * (np.asarray(q_to) - q_from)
    heights, frames = frame_heights(robot, path)
    k, f = np.unravel_index(int(np.argmin(heights)), heights.shape)
    return float(heights[k, f]) - floor_z_m, frames[f]
