"""Stream a joint trajectory to a UR robot through `ur_rtde`'s control interface.

`play` moves to the trajectory's start pose with a slow moveJ, then sends one servoJ per period
(default 500 Hz) with the control interface's initPeriod/waitPeriod timing, and always ends
with servoStop and stopScript: after the last point, on any exception, on Ctrl-C
(KeyboardInterrupt) and when `abort()` reports a reason (e.g. the recording lost its
connection). `control` is anything with the API of `rtde_control.RTDEControlInterface`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.hookspecs import Trajectory


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
