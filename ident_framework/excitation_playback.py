"""Stream a joint trajectory to a UR robot through `ur_rtde`'s control interface.

`play` moves to the trajectory's start pose with a slow moveJ, then sends one servoJ per period
(default 500 Hz) with the control interface's initPeriod/waitPeriod timing, and always ends
with servoStop and stopScript: after the last point, on any exception, on Ctrl-C
(KeyboardInterrupt) and when `abort()` reports a reason (e.g. the recording lost its
connection). `control` is anything with the API of `rtde_control.RTDEControlInterface`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .interfaces import Trajectory


class JointMove:
    """The moveJ `play` starts with, as a trajectory: a straight line in joint space from
    q_from to q_to (rad), all joints synchronised, the largest joint move following a
    trapezoidal speed profile of `speed` rad/s and `acceleration` rad/s² (a triangle when the
    move is too short to reach `speed`). At rest before t = 0 and after `duration` s."""

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
