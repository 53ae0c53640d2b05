"""Estimator side of the view: frames of the latest state, ~25 per second of wall time.

`add(result)` per processed sample keeps one trace point per 1/trace_hz s of source time;
`send` puts a due frame on the queue without blocking. A full queue defers the frame (its
traces wait for the next one; `frames_deferred`); an estimator behind the source `skip`s
frames (`frames_skipped`). With `mcap=true`, `RecordingBuffer` keeps every sample and step
until a frame carries them to the web process (`mcap_recording.py`), dropping the oldest (and
counting them) beyond `max_rows`.
"""

from __future__ import annotations

import queue
import time
from typing import Any

import numpy as np

from ident_framework.online.streaming_estimator import StepResult
from ident_framework.online.streams import Sample


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


class RecordingBuffer:
    """Rows since the last frame: samples (t, q, dq, tau as received) and steps (t, tau as
    recorded, tau predicted a priori) of the filter's centre sample."""

    def __init__(self, n_joints: int, max_rows: int):
        self.n, self.max_rows = n_joints, max_rows
        self._samples: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        self._steps: list[tuple[float, np.ndarray, np.ndarray]] = []
        self.dropped_samples = self.dropped_steps = 0
        self.samples = self.steps = 0  # sent so far

    def sample(self, sample: Sample) -> None:
        self._samples.append((sample.t, sample.q, sample.dq, sample.tau))
        if len(self._samples) > self.max_rows:
            del self._samples[0]
            self.dropped_samples += 1

    def step(self, result: StepResult) -> None:
        self._steps.append((result.t, result.tau_meas, result.tau_pred))
        if len(self._steps) > self.max_rows:
            del self._steps[0]
            self.dropped_steps += 1

    def rows(self) -> dict[str, np.ndarray]:
        """The rows kept so far: `samples` (k, 1 + 3n) and `steps` (m, 1 + 2n)."""
        return {
            "samples": _stack(self._samples, 1 + 3 * self.n),
            "steps": _stack(self._steps, 1 + 2 * self.n),
        }

    def sent(self, rows: dict[str, Any]) -> None:
        """The rows of `rows()` reached the web process: forget them."""
        self.samples += len(rows["samples"])
        self.steps += len(rows["steps"])
        del self._samples[: len(rows["samples"])]
        del self._steps[: len(rows["steps"])]


def _stack(rows: list[tuple], width: int) -> np.ndarray:
    """Rows (t, arrays...) as one (len(rows), width) array."""
    out = np.empty((len(rows), width))
    for k, (t, *arrays) in enumerate(rows):
        out[k, 0], out[k, 1:] = t, np.concatenate(arrays)
    return out
