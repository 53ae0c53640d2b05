"""A joint move as a trajectory: the moveJ from the robot's current pose to a trajectory's start
(what `rtde/playback.play` sends first and what the motion safety verdict checks first)."""

from __future__ import annotations

import math

import numpy as np


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
