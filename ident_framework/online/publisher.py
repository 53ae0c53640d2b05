"""Estimator side of the view: frames of the latest state, ~25 per second of wall time.

`add(result)` per processed sample keeps one trace point per 1/trace_hz s of source time;
`send` puts a due frame on the queue without blocking. A full queue defers the frame (its
traces wait for the next one; `frames_deferred`); an estimator behind the source `skip`s
frames (`frames_skipped`).
"""

from __future__ import annotations

import queue
import time
from typing import Any

import numpy as np

from ident_framework.online.streaming_estimator import StepResult


class Publisher:
    def __init__(self, outbox: Any, publish_hz: float, trace_hz: float, n_joints: int):
        self.outbox = outbox
        self.period = 1.0 / publish_hz
        self.trace_period = 1.0 / trace_hz
        self.n = n_joints
        self._next_wall = time.perf_counter()
        self._next_trace = -np.inf
        self._trace: list[np.ndarray] = []
        self.events: list[dict[str, Any]] = []
        self.seq = 0
        self.frames_sent = 0
        self.frames_deferred = 0
        self.frames_skipped = 0
        self._last_sent = time.perf_counter()
        self.latest: StepResult | None = None

    def add(self, result: StepResult) -> None:
        self.latest = result
        if result.t >= self._next_trace:
            self._trace.append(np.concatenate([[result.t], result.tau_meas, result.tau_pred]))
            self._next_trace = result.t + self.trace_period

    def event(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def due(self) -> bool:
        return time.perf_counter() >= self._next_wall

    def overdue(self, seconds: float) -> bool:
        """No frame has gone out for `seconds` (s of wall time)."""
        return time.perf_counter() - self._last_sent >= seconds

    def skip(self) -> None:
        """Let this frame's turn pass (the traces and events wait for the next one)."""
        self.wait()
        self.frames_skipped += 1

    def wait(self) -> None:
        """Let this frame's turn pass without counting it skipped (nothing to show yet)."""
        self._next_wall = max(self._next_wall + self.period, time.perf_counter())

    def trace(self) -> dict[str, list]:
        if not self._trace:
            return {"t": [], "tau_meas": [], "tau_pred": []}
        rows = np.array(self._trace)
        n = self.n
        return {
            "t": rows[:, 0].tolist(),
            "tau_meas": rows[:, 1 : 1 + n].T.tolist(),  # per joint
            "tau_pred": rows[:, 1 + n :].T.tolist(),
        }

    def send(self, frame: dict[str, Any]) -> bool:
        """Queue `frame` (with the traces and events so far); False when deferred."""
        self.wait()
        frame["seq"] = self.seq
        frame["trace"] = self.trace()
        frame["events"] = list(self.events)
        try:
            self.outbox.put_nowait(frame)
        except queue.Full:
            self.frames_deferred += 1
            return False
        self.seq += 1
        self.frames_sent += 1
        self._last_sent = time.perf_counter()
        self._trace.clear()
        self.events.clear()
        return True
