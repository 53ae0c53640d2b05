"""Estimator side of the online MCAP recording (`mcap=true`): every sample and every processed
step, kept between two dashboard frames and sent with the next frame to the web process, which
writes them (`mcap_recording.py`) off the estimator's critical path.

Per sample the estimator only appends references to a list (no copy, no encoding); the arrays
are stacked once per frame (~20 samples at 500 Hz and 25 frames/s). When frames cannot go out
(the web side is behind) the rows wait for the next one; beyond `max_rows` the oldest are
dropped and counted (`dropped_samples`, `dropped_steps`), so memory stays bounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.online.streaming_estimator import StepResult
from ident_framework.online.streams import Sample


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
        n = self.n
        samples = np.empty((len(self._samples), 1 + 3 * n))
        for k, (t, q, dq, tau) in enumerate(self._samples):
            samples[k, 0], samples[k, 1 : 1 + n], samples[k, 1 + n : 1 + 2 * n] = t, q, dq
            samples[k, 1 + 2 * n :] = tau
        steps = np.empty((len(self._steps), 1 + 2 * n))
        for k, (t, tau_meas, tau_pred) in enumerate(self._steps):
            steps[k, 0], steps[k, 1 : 1 + n], steps[k, 1 + n :] = t, tau_meas, tau_pred
        return {"samples": samples, "steps": steps}

    def sent(self, rows: dict[str, Any]) -> None:
        """The rows of `rows()` reached the web process: forget them."""
        self.samples += len(rows["samples"])
        self.steps += len(rows["steps"])
        del self._samples[: len(rows["samples"])]
        del self._steps[: len(rows["steps"])]
