"""Listening to a running UR robot over RTDE (source=rtde in mode=online; nothing is commanded).

A reception thread records as `rtde/recorder.py` does, to `online/recording.csv`, and hands
each row (q rad, dq rad/s, torque Nm) to the estimator; `arrival` is when the row was complete.
Samples no connection received and rows without a torque count as skipped updates. A lost
connection is re-established up to `source.reconnect_attempts` times.

Rationale: docs/design.md#rtde-reception
"""

from __future__ import annotations

import math
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.data.csv_log import CsvLogWriter
from ident_framework.errors import UserError
from ident_framework.online.streams import Sample
from ident_framework.rtde.recorder import (
    ConnectionLost,
    RecordingReport,
    Segment,
    SegmentRecorder,
    TorqueSideChannel,
    column_groups,
)
from ident_framework.rtde.torque_stream import TorqueStream, TorqueStreamError

_POLL_S = 0.00025


class _ForwardingWriter:
    """A CSV writer that also keeps each written row for the stream (bounded)."""

    def __init__(self, writer: CsvLogWriter):
        self.writer = writer
        self.rows: deque[tuple[np.ndarray, float]] = deque(maxlen=10_000)

    def write(self, row: np.ndarray) -> None:
        self.writer.write(row)
        self.rows.append((np.asarray(row, dtype=float), time.perf_counter()))

    def flush(self) -> None:
        self.writer.flush()


class RtdeStream:
    """Samples of a running robot; iterate until `stop()`. `source`: the source=rtde object."""

    def __init__(self, source: Any, n_joints: int, recording: Path, max_lag_s: float, log=print):
        self.source, self.n, self.log = source, n_joints, log
        params = source.params
        if params.confirm_motion:
            raise UserError(
                "mode=online only listens to the robot and never moves it, but "
                "source.confirm_motion=true asks for motion. Drop source.confirm_motion (the "
                "robot keeps doing its own work while the service listens)."
            )
        self.rate_hz = float(params.frequency_hz)
        self.time_factor = 1.0  # the robot's own clock
        # two threads share the interpreter: let the poller in within 0.2 ms, not 5 ms
        sys.setswitchinterval(0.0002)
        self.receive, self.torque_mode, self.torque_source = source.connect()
        self.log(
            f"RTDE: listening to {params.host} at {self.rate_hz:g} Hz; torque from "
            f"{self.torque_source}"
        )
        recording.parent.mkdir(parents=True, exist_ok=True)
        self.path = recording
        self._writer = _ForwardingWriter(
            CsvLogWriter(
                str(recording),
                column_groups(n_joints, self.torque_mode is not None),
                params.flush_interval_s,
            )
        )
        self.segments: list[Segment] = []
        self._recorder = self._new_recorder(-math.inf)
        self._stopping = False
        self._reception: threading.Thread | None = None
        self._rows: queue.SimpleQueue = queue.SimpleQueue()
        self._max_queue = max(int(max_lag_s * self.rate_hz), 1)
        self.behind = 0  # rows dropped because the estimator was more than max_lag_s behind
        self.received = 0
        self.cpu_s = 0.0  # the reception thread's CPU time, s

    def _side(self) -> Any:
        if self.torque_mode != "side":
            return None
        try:
            return TorqueStream(self.source.params.host, self.n, self.rate_hz)
        except TorqueStreamError as error:
            self.log(f"note: no torque connection of our own ({error}); using ur_rtde's recorder")
            return TorqueSideChannel(self.receive, f"{self.path}.torque_side.csv", self.n)

    def _new_recorder(self, last_written: float) -> SegmentRecorder:
        recorder = SegmentRecorder(
            self.receive,
            self._writer,
            self.n,
            self.torque_mode,
            self._side(),
            self.source.params.timeout_s,
            last_written,
        )
        self.segments.append(recorder.segment)
        return recorder

    @property
    def skipped(self) -> int:
        """Samples the controller sent that no complete row holds (missed, invalid, no torque),
        and rows dropped because the estimator was more than max_lag_s behind."""
        missed = sum(max(s.expected(self.rate_hz) - s.written, 0) for s in self.segments)
        return missed + self.behind

    def describe(self) -> dict[str, Any]:
        return {
            "source": "rtde",
            "host": self.source.params.host,
            "rate_hz": self.rate_hz,
            "torque_source": self.torque_source,
            "recording": str(self.path),
        }

    def stop(self) -> None:
        self._stopping = True

    def __iter__(self) -> Iterator[Sample]:
        """Samples from the reception thread, in order, until `stop()` or a lost connection."""
        n = self.n
        gains = self.source.params.current_to_torque
        torque_columns = slice(1 + 2 * n, 1 + 3 * n)
        reception = threading.Thread(target=self._receive, name="rtde-reception", daemon=True)
        self._reception = reception
        reception.start()
        try:
            while True:
                try:
                    item = self._rows.get(timeout=0.1)
                except queue.Empty:
                    if not reception.is_alive():
                        return
                    continue
                if item is None:
                    return
                row, arrival = item
                tau = row[torque_columns]
                if self.torque_mode is None:
                    tau = tau * np.asarray(gains, dtype=float)
                self.received += 1
                yield Sample(float(row[0]), row[1 : 1 + n], row[1 + n : 1 + 2 * n], tau, arrival)
        finally:
            self._stopping = True
            reception.join(timeout=5)

    def _receive(self) -> None:
        """The reception loop (its own thread: polling never waits for the estimator)."""
        rows, out = self._writer.rows, self._rows
        cpu0 = time.thread_time()
        try:
            while not self._stopping:
                self.cpu_s = time.thread_time() - cpu0
                try:
                    fresh = self._recorder.poll()
                except ConnectionLost as error:
                    if not self._reconnect(str(error)):
                        return
                    continue
                while rows:
                    item = rows.popleft()
                    if out.qsize() >= self._max_queue:  # the estimator is too far behind
                        self.behind += 1
                        continue
                    out.put(item)
                if not fresh:
                    time.sleep(_POLL_S)
        finally:
            out.put(None)

    def _reconnect(self, error: str) -> bool:
        self._recorder.finish(f"connection lost: {error}")
        self.log(f"RTDE connection lost ({error})")
        params = self.source.params
        for attempt in range(1, params.reconnect_attempts + 1):
            time.sleep(params.reconnect_delay_s)
            if self._stopping:
                return False
            try:
                self.receive, self.torque_mode, _ = self.source.connect()
            except UserError as failure:
                self.log(f"reconnect attempt {attempt} failed: {failure}")
                continue
            last = max((s.last for s in self.segments if s.last is not None), default=-math.inf)
            self._recorder = self._new_recorder(last)
            self.log(f"reconnected (attempt {attempt})")
            return True
        return False

    def close(self) -> dict[str, Any]:
        # the reception thread first, so that nothing is written while the counts are summed
        self._stopping = True
        if self._reception is not None:
            self._reception.join(timeout=5)
        try:
            self._recorder.finish("completed")
        except Exception:  # noqa: BLE001 (the connection may already be gone)
            pass
        self._writer.writer.close()
        try:
            self.receive.disconnect()
        except RuntimeError:
            pass
        summary = RecordingReport(str(self.path), self.rate_hz, "", self.segments).summary()
        # undelivered: recorded after the estimator had stopped (still queued, or torque late)
        summary["samples_undelivered"] = summary["samples_written"] - self.received
        keys = (
            "samples_expected", "samples_written", "samples_undelivered", "dropped_samples",
            "dropped_fraction", "samples_filled", "samples_missed", "invalid_samples",
            "torque_missing_samples", "reconnects",
        )  # fmt: skip
        return {**{key: summary[key] for key in keys}, "recording": str(self.path)}
