"""Web side of mode=online: the estimator's latest frame and a bounded history.

A reader thread `ingest`s every frame; the broadcaster merges those since its last tick
(`take_pending`, `merge_frames`). The history (traces, fit, parameters, events) is kept in ring
buffers of `dashboard.history_s` s for a page that (re)loads (`history`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import numpy as np

from ident_framework.config.online_settings import DashboardSettings
from ident_framework.online.ring_buffer import RingBuffer

STATE_KEYS = ("t", "tau_meas", "tau_pred", "rmse", "r2")
_RECENT_EVENTS = 50


def merge_frames(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """One frame from several: the newest scalars, the traces and events of all of them."""
    merged = dict(frames[-1])
    if len(frames) > 1:
        traces = [f["trace"] for f in frames]
        merged["trace"] = {
            "t": [t for tr in traces for t in tr["t"]],
            "tau_meas": _join([tr["tau_meas"] for tr in traces]),
            "tau_pred": _join([tr["tau_pred"] for tr in traces]),
        }
        merged["events"] = [e for f in frames for e in f["events"]]
        thetas = [f["theta"] for f in frames if f.get("theta") is not None]
        merged["theta"] = thetas[-1] if thetas else None
        merged["frames_merged"] = len(frames)
    return merged


def _join(per_frame: list[list[list[float]]]) -> list[list[float]]:
    present = [p for p in per_frame if p]
    if not present:
        return []
    return [[v for p in present for v in p[j]] for j in range(len(present[0]))]


class ServiceState:
    """Thread-safe store of the latest frame, the history and the service's status."""

    def __init__(self, info: dict[str, Any], settings: DashboardSettings):
        self.info = info
        self.settings = settings
        self.n = n = len(info["joint_names"])
        r = len(info["parameter_names"])
        self._lock = threading.Lock()
        history = settings.history_s
        self.trace = RingBuffer(int(history * settings.trace_hz) + 1, 1 + 2 * n)
        self.fit = RingBuffer(int(history * settings.publish_hz) + 1, 2 + 2 * n)
        self.theta = RingBuffer(int(history * settings.publish_hz / 5) + 1, 1 + r)
        self.events: deque[dict[str, Any]] = deque(maxlen=2000)
        self.latest: dict[str, Any] | None = None
        self.pending: list[dict[str, Any]] = []
        self.status = "running"
        self.final: dict[str, Any] | None = None
        self.error: str | None = None
        self.started = time.time()

    def ingest(self, frame: dict[str, Any]) -> None:
        trace = frame["trace"]
        with self._lock:
            if trace["t"]:
                rows = np.column_stack(
                    [trace["t"], np.asarray(trace["tau_meas"]).T, np.asarray(trace["tau_pred"]).T]
                )
                self.trace.extend(rows)
            if frame.get("t") is not None:
                rmse, r2, pooled = _floats(frame["rmse"]), _floats(frame["r2"]), frame["pooled_r2"]
                self.fit.append(np.array([frame["t"], *rmse, *r2, _float(pooled)]))
                if frame.get("theta") is not None:
                    self.theta.append(np.concatenate([[frame["t"]], frame["theta"]]))
            self.events.extend(frame["events"])
            self.latest = frame
            self.pending.append(frame)
            if len(self.pending) > 256:  # the broadcaster is not running: keep it bounded
                del self.pending[:-256]

    def take_pending(self) -> list[dict[str, Any]]:
        with self._lock:
            frames, self.pending = self.pending, []
        return frames

    def end(self, final: dict[str, Any] | None, error: str | None = None) -> None:
        with self._lock:
            self.status = "ended" if error is None else "failed"
            self.final, self.error = final, error

    def state(self) -> dict[str, Any]:
        """`GET /api/state`: the latest frame's contract fields, the counters and the status."""
        with self._lock:
            latest = dict(self.latest or {})
            events = list(self.events)[-_RECENT_EVENTS:]
            status = self.status
        document: dict[str, Any] = {key: latest.get(key) for key in STATE_KEYS}
        document.update({k: v for k, v in latest.items() if k not in ("trace", "kind", "theta")})
        document["events"] = events
        for key in ("updates", "skipped_updates", "samples_received"):
            document[key] = latest.get(key, 0)
        document.update(
            status=status,
            robot=self.info["robot"],
            joint_names=self.info["joint_names"],
            stream=self.info["stream"],
        )
        return document

    def history(self, seconds: float | None = None) -> dict[str, Any]:
        """`GET /api/history`: the kept traces, fit, parameters (as columns) and all events."""
        with self._lock:
            trace, fit, theta = self.trace.to_array(), self.fit.to_array(), self.theta.to_array()
            events = list(self.events)
        if seconds is not None and len(trace):
            t_end = trace[-1, 0]
            trace = trace[trace[:, 0] >= t_end - seconds]
            fit = fit[fit[:, 0] >= t_end - seconds] if len(fit) else fit
            theta = theta[theta[:, 0] >= t_end - seconds] if len(theta) else theta
        n = self.n
        return {
            "trace": {
                "t": trace[:, 0].tolist(),
                "tau_meas": trace[:, 1 : 1 + n].T.tolist(),
                "tau_pred": trace[:, 1 + n :].T.tolist(),
            },
            "fit": {
                "t": fit[:, 0].tolist(),
                "rmse": fit[:, 1 : 1 + n].T.tolist(),
                "r2": fit[:, 1 + n : 1 + 2 * n].T.tolist(),
                "pooled_r2": fit[:, -1].tolist(),
            },
            "theta": {"t": theta[:, 0].tolist(), "values": theta[:, 1:].T.tolist()},
            "events": events,
        }


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _floats(values: Any) -> list[float]:
    return [_float(v) for v in values]
