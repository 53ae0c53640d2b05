"""What a UR robot (or the RTDE emulator) plays, and how: trajectories from files, a slow default
motion, and streaming a trajectory through `ur_rtde`'s control interface.

- `load_trajectory` reads a run's `trajectory.yaml` (`fourier` or `point_to_point`), or a CSV
  of `timestamp` (s) and joint positions (rad: `target_q_j`, else `actual_q_j`, else `q_j`),
  interpolated by a cubic spline (dq, ddq its derivatives).
- `default_motion`: the emulator's (and the online simulated robot's) slow periodic motion
  about a home pose.
- `play(control, ...)`: moveJ to the start pose, then one servoJ per period (default 500 Hz)
  with initPeriod/waitPeriod; always ends with servoStop and stopScript (after the last point,
  on any exception, on Ctrl-C, and when `abort()` returns a reason). `control` has the API of
  `rtde_control.RTDEControlInterface`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from ident_framework.errors import UserError
from ident_framework.hookspecs import Trajectory, TrajectoryGenerator
from ident_framework.model.robot import RobotModel

_POSITION_GROUPS = ("target_q", "actual_q", "q")


class SampledTrajectory:
    """A motion through sampled joint positions q (N, n) rad at times t (N,) s (shifted to
    start at 0), as a cubic spline; held at the end points outside [0, duration]."""

    def __init__(self, t: np.ndarray, q: np.ndarray, origin: str = ""):
        from scipy.interpolate import CubicSpline  # ~0.2 s, not on every command's path

        t = np.asarray(t, dtype=float)
        self.t0 = float(t[0])
        self.spline = CubicSpline(t - self.t0, np.asarray(q, dtype=float), axis=0)
        self.duration = float(t[-1] - t[0])
        self.origin = origin
        self.n_samples = len(t)

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        inside = (t > 0.0) & (t < self.duration)
        q = self.spline(t)
        dq = self.spline(t, 1) * inside[:, None]
        ddq = self.spline(t, 2) * inside[:, None]
        return q, dq, ddq

    def describe(self) -> dict[str, Any]:
        return {
            "generator": "samples",
            "path": self.origin,
            "duration_s": self.duration,
            "n_samples": self.n_samples,
        }


def load_trajectory(path: str, n_joints: int, key: str = "source.trajectory_path") -> Trajectory:
    """The trajectory in `path` (YAML description or CSV samples, see the module docstring)
    for an arm of `n_joints` joints; `key` is the config key named in messages."""
    where = f"The trajectory file '{path}' ({key})"
    if not os.path.isfile(path):
        raise UserError(
            f"{where} does not exist. Give a trajectory.yaml written by a run, or a CSV with "
            "timestamp and target_q_* (or actual_q_*) columns."
        )
    try:
        if path.lower().endswith((".yaml", ".yml")):
            trajectory = _from_yaml(path, where)
        else:
            trajectory = _from_csv(path, n_joints, where)
    except (ValueError, KeyError, TypeError, yaml.YAMLError) as error:
        raise UserError(f"{where} cannot be read as a trajectory: {error}.") from None
    q, _, _ = trajectory.evaluate(np.array([0.0]))
    if q.shape[1] != n_joints:
        raise UserError(
            f"{where} moves {q.shape[1]} joints, but the robot has {n_joints}. Use a trajectory "
            "designed for this robot."
        )
    return trajectory


def _from_yaml(path: str, where: str) -> Trajectory:
    with open(path, encoding="utf-8") as handle:
        description = yaml.safe_load(handle)
    if not isinstance(description, dict):
        raise ValueError("the YAML is not a mapping")
    from ident_framework.config.registry import get_registry

    generator = description.get("generator")
    readable = get_registry().names("trajectory")
    if generator not in readable:
        raise UserError(
            f"{where} describes a trajectory of generator {generator!r}; readable are "
            f"{readable} (the trajectory.yaml of a run), or a CSV of samples."
        )
    return _generator(generator).rebuild(description)


def _from_csv(path: str, n_joints: int, where: str) -> SampledTrajectory:
    with open(path, encoding="utf-8-sig") as handle:
        header = handle.readline().strip()
    delimiter = "," if "," in header else None
    names = [name.strip() for name in (header.split(",") if delimiter else header.split())]
    time_column = next((n for n in ("timestamp", "time", "t") if n in names), None)
    group = next((g for g in _POSITION_GROUPS if f"{g}_0" in names), None)
    if time_column is None or group is None:
        raise UserError(
            f"{where} needs a 'timestamp' column (s) and joint positions target_q_0.. (or "
            f"actual_q_0.., q_0..) in rad; its header is {names[:12]}."
        )
    columns = [names.index(time_column)] + [names.index(f"{group}_{j}") for j in range(n_joints)]
    data = np.loadtxt(path, delimiter=delimiter, skiprows=1, usecols=columns, ndmin=2)
    if len(data) < 4 or not np.all(np.isfinite(data)) or np.any(np.diff(data[:, 0]) <= 0):
        raise UserError(
            f"{where} needs at least 4 rows of finite values with strictly increasing timestamps."
        )
    return SampledTrajectory(data[:, 0], data[:, 1:], origin=os.path.abspath(path))


def default_motion(
    robot: RobotModel, amplitude_rad: float = 0.25, period_s: float = 12.0
) -> Trajectory:
    """A slow, safe, periodic motion about a home pose (UR: arm up, `UR_HOME`; other arms: the
    middle of each joint's range), peak excursion `amplitude_rad` per joint, one period of
    `period_s` s, at rest at its start and end: the `fourier` option's `slow_motion`."""
    return _generator("fourier").slow_motion(robot, amplitude_rad, period_s)


def _generator(name: str) -> TrajectoryGenerator:
    """The trajectory generator `name`, with its default settings, from the plugin registry."""
    from ident_framework.config.registry import get_registry

    info = get_registry().get("trajectory", name)
    return info.create(info.schema())


class PlaybackAborted(Exception):
    """The motion was stopped before its end (the robot was told to stop)."""


@dataclass
class ServoSettings:
    """rate_hz: servoJ commands per s; lookahead_time: s (0.03-0.2, ur_rtde's servoJ);
    gain: proportional gain (100-2000); movej_speed (rad/s), movej_acceleration (rad/s²):
    the move to the start pose; servo_stop_deceleration: rad/s² of servoStop."""

    rate_hz: float = 500.0
    lookahead_time: float = 0.1
    gain: float = 300.0
    movej_speed: float = 0.2
    movej_acceleration: float = 0.5
    servo_stop_deceleration: float = 10.0


@dataclass
class PlaybackReport:
    commands: int
    duration_s: float
    completed: bool
    stop_commanded: bool
    reason: str = ""


def stop_robot(control: Any, deceleration: float) -> bool:
    """servoStop then stopScript, each attempted even if the other fails; True if both
    calls were made without error."""
    ok = True
    for call in (lambda: control.servoStop(deceleration), control.stopScript):
        try:
            call()
        except Exception:  # noqa: BLE001 (keep trying to stop)
            ok = False
    return ok


def play(
    control: Any,
    trajectory: Trajectory,
    settings: ServoSettings,
    abort: Callable[[], str | None] = lambda: None,
    on_start: Callable[[], None] = lambda: None,
) -> PlaybackReport:
    """Move to the start, then stream `trajectory` (see the module docstring). `on_start` is
    called once the robot is at the start pose (e.g. to start recording). Raises
    PlaybackAborted when `abort()` returns a reason or the control interface disconnects."""
    period = 1.0 / settings.rate_hz
    n = int(np.floor(trajectory.duration * settings.rate_hz + 1e-9)) + 1
    q_ref = np.asarray(trajectory.evaluate(np.arange(n) * period)[0], dtype=float)
    commands = 0
    started = time.monotonic()
    try:
        control.moveJ(q_ref[0].tolist(), settings.movej_speed, settings.movej_acceleration)
        on_start()
        started = time.monotonic()
        for k in range(n):
            cycle = control.initPeriod()
            reason = abort()
            if reason:
                raise PlaybackAborted(reason)
            if not control.isConnected():
                raise PlaybackAborted("the control interface lost its connection")
            control.servoJ(q_ref[k].tolist(), 0.0, 0.0, period, settings.lookahead_time,
                           settings.gain)  # fmt: skip
            commands += 1
            control.waitPeriod(cycle)
    finally:
        stopped = stop_robot(control, settings.servo_stop_deceleration)
    return PlaybackReport(commands, time.monotonic() - started, True, stopped)
