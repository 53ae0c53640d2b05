"""When the estimator process of mode=online fits a twin, and with what: the recent window of
filtered samples (every `online.twin.decimation`-th: t, q, dq, ddq, tau), one fit at a time in
the worker process of `twin_worker.py`, the last result and the last valid one."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.config.online_settings import TwinSettings
from ident_framework.online.ring_buffer import RingBuffer
from ident_framework.online.streaming_estimator import StepResult
from ident_framework.online.twin_worker import fit_twin, init_worker

MIN_SAMPLES = 50  # rows of the window before a fit is worth starting
_START_TIMEOUT_S = 300.0  # the worker builds the robot and regressor once


class TwinSchedule:
    """The twin fits of one run. Methods that finish or refuse a fit return its event (a dict
    for `events.jsonl` and the dashboard), else None."""

    def __init__(
        self, settings: TwinSettings, rate_hz: float, n_joints: int, cfg: dict, run_dir: Path
    ):
        rows = max(int(settings.window_s * rate_hz / settings.decimation), 10)
        self.rows = RingBuffer(rows, 1 + 4 * n_joints)
        self.decimation = settings.decimation
        self._since_kept = 0
        self.future: Future | None = None
        self.last: dict[str, Any] | None = None  # the last fit's event (valid or not)
        self.valid: dict[str, Any] | None = None  # the last valid one, with its parameters
        self.fits = 0
        self.executor: ProcessPoolExecutor | None = None
        if settings.every_s is not None:  # started now, not in the middle of the stream
            self.executor = ProcessPoolExecutor(
                1, multiprocessing.get_context("spawn"), init_worker, (cfg, str(run_dir))
            )
            self.executor.submit(time.sleep, 0).result(timeout=_START_TIMEOUT_S)

    @property
    def pending(self) -> bool:
        return self.future is not None

    def add(self, result: StepResult) -> None:
        """Keep every `decimation`-th processed sample for the next fit."""
        self._since_kept += 1
        if self._since_kept >= self.decimation:
            self._since_kept = 0
            self.rows.append(
                np.concatenate([[result.t], result.q, result.dq, result.ddq, result.tau_filtered])
            )

    def restart_window(self) -> None:
        """After a detected change: the next twin is fitted on data after it only."""
        self.rows.clear()

    def submit(self, t: float, requested: bool = False) -> dict[str, Any] | None:
        """Start a fit of the window up to source time `t` (s), unless one is running or the
        window is too short; a requested fit with re-injection off is refused (an event)."""
        if self.executor is None:
            if not requested:
                return None
            reason = "twin re-injection is off (online.twin.every_s=null)"
            return {"kind": "twin", "t": t, "valid": False, "reasons": [reason]}
        if self.future is None and len(self.rows) >= MIN_SAMPLES:
            self.future = self.executor.submit(fit_twin, t, self.rows.to_array())
        return None

    def poll(self, t_now: float | None, wait_s: float | None = None) -> dict[str, Any] | None:
        """The finished fit's event (waiting up to `wait_s` s for it; None: not at all)."""
        future = self.future
        if future is None or (wait_s is None and not future.done()):
            return None
        try:
            result = future.result(timeout=wait_s)
        except Exception as error:  # noqa: BLE001 (a worker failure is an event, not a crash)
            reason = f"twin worker failed: {error!r}"
            result = {"kind": "twin", "t": t_now, "valid": False, "reasons": [reason]}
        self.future = None
        self.fits += 1
        standard = result.pop("standard", None)
        self.last = {**result, "wall_time": time.time()}
        if result.get("valid"):
            self.valid = {**self.last, "standard": standard}
        return dict(result)

    def finish(self, t_end: float | None, wait_s: float, say: Any) -> list[dict[str, Any]]:
        """The running fit, then one on the last window; the worker is shut down."""
        if self.executor is None:
            return []
        events = [self.poll(t_end, wait_s)]
        if t_end is not None and len(self.rows) >= MIN_SAMPLES:
            say("final twin fit on the last window")
            self.submit(t_end)
            events.append(self.poll(t_end, wait_s))
        self.executor.shutdown(wait=True, cancel_futures=True)
        return [e for e in events if e is not None]
