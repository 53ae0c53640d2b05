"""Estimator side of the online MCAP recording (`mcap=true`): every sample and processed step,
kept (as references, stacked once per frame) until a dashboard frame carries them to the web
process (`mcap_recording.py`). Beyond `max_rows` waiting rows the oldest are dropped and
counted (`dropped_samples`, `dropped_steps`).
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
