"""Live recording from `ur_rtde`'s receive interface to a CSV in the contract, sample by sample.

`LiveRecording` polls the interface and writes each new controller sample (a new `timestamp`,
s) as a row (`data/csv_log.CsvLogWriter`). A row is read consistently (two agreeing reads, the
timestamp unchanged); non-finite or inconsistent rows are counted as invalid, not written.
`actual_current_as_torque` (Nm), when the binding has no getter, comes from a side channel
joined by the controller timestamp: a second RTDE connection (`torque_stream.TorqueStream`,
which also fills the packages the poller missed) or `ur_rtde`'s file recorder. A lost
connection ends the segment; `run` reconnects up to `reconnect_attempts` times (a new segment
of the same file), else raises `RecordingLost`.

Rationale: docs/design.md#rtde-reception
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.data.csv_log import CsvLogWriter
from ident_framework.rtde.torque_stream import TORQUE_FIELD, TorqueStreamError

# Recorded fields (RTDE name -> ur_rtde getter), in CSV column order after timestamp, q, dq and
# (when recorded) the torque.
GETTERS = {
    "actual_q": "getActualQ",
    "actual_qd": "getActualQd",
    "actual_current": "getActualCurrent",
    "target_current": "getTargetCurrent",
    "target_moment": "getTargetMoment",
    "joint_temperatures": "getJointTemperatures",
    "target_q": "getTargetQ",
    "target_qd": "getTargetQd",
    "target_qdd": "getTargetQdd",
}
TORQUE_GETTER = "getActualCurrentAsTorque"
_POLL_S = 0.00025  # sleep between polls of the receive interface
_SIDE_WINDOW_S = 0.05  # a torque the side recorder has passed by this much will not come


class ConnectionLost(Exception):
    """The receive interface lost its connection (or stopped delivering samples)."""


class RecordingLost(Exception):
    """The connection was lost and not re-established; the message says what was kept."""


def receive_variables(with_torque: bool) -> list[str]:
    """The output recipe asked of the controller."""
    return ["timestamp", *GETTERS, *([TORQUE_FIELD] if with_torque else [])]


def column_groups(n_joints: int, with_torque: bool) -> list[tuple[str, int]]:
    """CSV column groups: timestamp, actual_q, actual_qd, [actual_current_as_torque], rest."""
    groups = [("timestamp", 1), ("actual_q", n_joints), ("actual_qd", n_joints)]
    if with_torque:
        groups.append((TORQUE_FIELD, n_joints))
    return groups + [(name, n_joints) for name in GETTERS if name not in ("actual_q", "actual_qd")]


@dataclass
class Segment:
    """One connection's share of the recording (timestamps in s, controller clock)."""

    first: float | None = None
    last: float | None = None
    received: int = 0  # distinct samples seen
    written: int = 0
    invalid: int = 0  # non-finite values, or never read consistently
    torque_missing: int = 0
    filled: int = 0  # written from the side channel: the receive interface never showed them
    end: str = "completed"  # or why it ended

    def expected(self, rate_hz: float) -> int:
        """Samples the controller sends at `rate_hz` between the first and last one seen."""
        if self.first is None or self.last is None:
            return 0
        return int(round((self.last - self.first) * rate_hz)) + 1


class TorqueSideChannel:
    """`actual_current_as_torque` through `ur_rtde`'s C++ file recorder (`startFileRecording`):
    the side channel when the controller refuses our own RTDE connection. The recorder writes
    the newest package on a timer (it misses ~10 % at 500 Hz); this reads its file as it grows
    and removes it at the end. The interface of `TorqueStream` without `take_unseen`."""

    full_rows = False  # only the torque: no rows of its own for the packages the poller missed

    def __init__(self, receive: Any, path: str, n_joints: int):
        self.receive, self.path, self.n = receive, path, n_joints
        receive.startFileRecording(path, ["timestamp", TORQUE_FIELD])
        self._handle = None
        self._partial = ""
        self.values: dict[int, np.ndarray] = {}
        self.latest_us = -1

    def poll(self) -> None:
        """Read what the C++ recorder has written since the last poll."""
        if self._handle is None:
            if not os.path.exists(self.path):
                return
            self._handle = open(self.path, encoding="utf-8")  # noqa: SIM115
            self._handle.readline()  # header
        text = self._partial + self._handle.read()
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            fields = line.split(",")
            if len(fields) != self.n + 1:
                continue
            try:
                values = np.array([float(v) for v in fields])
            except ValueError:
                continue
            stamp = int(round(values[0] * 1e6))
            self.values[stamp] = values[1:]
            self.latest_us = max(self.latest_us, stamp)

    def pop(self, stamp_us: int) -> np.ndarray | None:
        return self.values.pop(stamp_us, None)

    def discard_before(self, stamp_us: int) -> None:
        """Forget torques older than `stamp_us` (their rows were written or dropped)."""
        for stamp in [s for s in self.values if s < stamp_us]:
            del self.values[stamp]

    def stop(self) -> None:
        try:
            self.receive.stopFileRecording()
        except RuntimeError:
            pass
        self.poll()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        if os.path.exists(self.path):
            os.remove(self.path)


@dataclass
class RecordingReport:
    """What a recording achieved (see `summary`)."""

    path: str
    rate_hz: float
    torque_source: str
    segments: list[Segment] = field(default_factory=list)

    @property
    def written(self) -> int:
        return sum(s.written for s in self.segments)

    def summary(self) -> dict[str, Any]:
        """Samples written, expected at the nominal rate, dropped (within segments), the
        achieved rate, gaps between segments (reconnections, s)."""
        expected = sum(s.expected(self.rate_hz) for s in self.segments)
        covered = sum(
            (s.last - s.first) + 1.0 / self.rate_hz
            for s in self.segments
            if s.first is not None and s.last is not None
        )
        gaps = [
            b.first - a.last
            for a, b in zip(self.segments, self.segments[1:], strict=False)
            if a.last is not None and b.first is not None
        ]
        valid = [s for s in self.segments if s.first is not None]
        return {
            "path": self.path,
            "nominal_rate_hz": self.rate_hz,
            "torque_source": self.torque_source,
            "samples_written": self.written,
            "samples_expected": expected,
            "dropped_samples": expected - self.written,
            "dropped_fraction": (expected - self.written) / expected if expected else None,
            "samples_missed": expected - sum(s.received for s in self.segments),
            "invalid_samples": sum(s.invalid for s in self.segments),
            "torque_missing_samples": sum(s.torque_missing for s in self.segments),
            "samples_filled": sum(s.filled for s in self.segments),
            "achieved_rate_hz": self.written / covered if covered > 0 else None,
            "segments": len(self.segments),
            "reconnects": max(0, len(self.segments) - 1),
            "gaps_s": gaps,
            "first_timestamp_s": valid[0].first if valid else None,
            "last_timestamp_s": valid[-1].last if valid else None,
            "segment_ends": [s.end for s in self.segments],
        }


class SegmentRecorder:
    """Streams one receive interface's samples to the writer (one `Segment`)."""

    def __init__(
        self,
        receive: Any,
        writer: CsvLogWriter,
        n_joints: int,
        torque: str | None,
        side: Any,
        timeout_s: float,
        last_written: float,
    ):
        """torque: "getter" (the binding has one), "side" (from `side`, a side channel such as
        `TorqueSideChannel`) or None (not recorded); last_written: timestamp of the last row
        already in the file (s)."""
        self.receive, self.writer, self.n = receive, writer, n_joints
        self.torque = torque
        self.timeout_s = timeout_s
        self.segment = Segment()
        self.last_written = last_written
        self._last_seen: float | None = None
        self._seen_at = time.monotonic()
        self._pending: OrderedDict[int, np.ndarray] = OrderedDict()
        self._getters = [getattr(receive, name) for name in GETTERS.values()]
        self._torque_getter = getattr(receive, TORQUE_GETTER) if torque == "getter" else None
        self.side = side if torque == "side" else None
        # the side channel keeps complete rows: the packages the poller missed come from there
        self._fills = bool(getattr(self.side, "full_rows", False))
        self._filled: dict[int, np.ndarray] = {}  # pending rows taken from the side channel

    def poll(self) -> bool:
        """Record the newest sample if it is new; True if one was. Raises ConnectionLost."""
        receive = self.receive
        try:
            stamp = receive.getTimestamp()
            if stamp == self._last_seen:
                if self.side is not None:
                    self._resolve(final=False)
                if not receive.isConnected():
                    raise ConnectionLost("the controller closed the connection")
                if time.monotonic() - self._seen_at > self.timeout_s:
                    raise ConnectionLost(f"no new sample for {self.timeout_s:g} s")
                return False
            consistent = False
            for _ in range(5):  # a package may arrive while the fields are read
                values = [fn() for fn in self._getters]
                torque = self._torque_getter() if self._torque_getter is not None else None
                check = [fn() for fn in self._getters]
                again = receive.getTimestamp()
                # ur_rtde updates the fields one by one as it parses a package: a row is
                # taken only when two full reads agree and the timestamp did not change.
                if again == stamp and values == check:  # lists of floats: a cheap compare
                    consistent = True
                    break
                stamp = again
        except RuntimeError as error:
            raise ConnectionLost(str(error)) from None
        self._last_seen, self._seen_at = stamp, time.monotonic()
        segment = self.segment
        if segment.first is None and self._fills and not self._side_has(stamp):
            return True  # the segment starts with the first package both connections have
        segment.received += 1
        if segment.first is None:
            segment.first = stamp
        segment.last = stamp
        parts = [np.asarray(values[0]), np.asarray(values[1])]
        if torque is not None:
            parts.append(np.asarray(torque))
        parts.extend(np.asarray(v) for v in values[2:])
        row = np.concatenate([[stamp], *parts])
        valid = consistent and bool(np.all(np.isfinite(row)))
        if not valid and not self._fills:
            segment.invalid += 1
            return True
        if stamp <= self.last_written:
            return True
        if self.side is None:
            self._write(row)
        else:
            if valid:  # else the side channel's own copy of the package is written (or not)
                self._pending[int(round(stamp * 1e6))] = row
            self._resolve(final=False)
        return True

    def _side_has(self, stamp: float) -> bool:
        """Whether the side channel's packages reach back to `stamp` (s)."""
        first = self.side.first_us
        return first is not None and first <= int(round(stamp * 1e6))

    def _write(self, row: np.ndarray) -> None:
        self.writer.write(row)
        self.segment.written += 1
        self.last_written = float(row[0])

    def _take_unseen(self, final: bool) -> None:
        """Add to the pending rows the side channel's packages the poller passed without
        seeing (all up to the last one seen when `final`), complete rows of their own."""
        segment = self.segment
        if segment.first is None or segment.last is None:
            return
        last_us = int(round(segment.last * 1e6))
        unseen = self.side.take_unseen(last_us + 1 if final else last_us, self._pending)
        first_us = int(round(segment.first * 1e6))
        written_us = self.last_written * 1e6 if math.isfinite(self.last_written) else -math.inf
        fresh = {s: row for s, row in unseen if s > first_us and s > written_us + 0.5}
        if fresh:
            self._filled.update(fresh)
            self._pending = OrderedDict(sorted({**self._pending, **fresh}.items()))

    def _resolve(self, final: bool) -> None:
        """Write pending rows (oldest first) whose torque arrived; drop those it never will."""
        side = self.side
        assert side is not None
        side.poll()
        window = int(_SIDE_WINDOW_S * 1e6)
        # the side channel's thread adds packages meanwhile, in controller-time order: every
        # package up to `horizon` was there before the unseen ones were taken, so a row up to it
        # cannot be written ahead of an older one that is still on its way here
        horizon = math.inf if final else side.latest_us
        if self._fills:
            self._take_unseen(final)
        while self._pending:
            stamp, row = next(iter(self._pending.items()))
            if self._fills and stamp > horizon:
                break
            if stamp in self._filled:  # complete from the side channel
                del self._pending[stamp], self._filled[stamp]
                if np.all(np.isfinite(row)):
                    self.segment.filled += 1
                    self._write(row)
                else:
                    self.segment.invalid += 1
                continue
            torque = side.pop(stamp)
            if torque is None and not (final or side.latest_us >= stamp + window):
                break
            del self._pending[stamp]
            if torque is None or not np.all(np.isfinite(torque)):
                self.segment.torque_missing += 1
                continue
            self._write(np.concatenate([row[: 1 + 2 * self.n], torque, row[1 + 2 * self.n :]]))
        if math.isfinite(self.last_written):  # torques of rows already written or dropped
            side.discard_before(int(self.last_written * 1e6) - window)

    def finish(self, end: str) -> None:
        """End the segment: join what the side channel still has, flush the file."""
        self.segment.end = end
        if self.side is not None:
            if self.segment.last is not None and hasattr(self.side, "catch_up"):
                self.side.catch_up(int(round(self.segment.last * 1e6)))
            self.side.stop()
            self._resolve(final=True)
            self.side.close()
        self.writer.flush()


@dataclass
class RecordingSettings:
    """rate_hz: recipe frequency; timeout_s: no new sample for this long = connection lost;
    reconnect_attempts, reconnect_delay_s: after a loss; flush_interval_s: CSV flush."""

    rate_hz: float = 500.0
    timeout_s: float = 1.0
    reconnect_attempts: int = 3
    reconnect_delay_s: float = 1.0
    flush_interval_s: float = 0.1


class LiveRecording:
    """A recording to `path` over one or more connections. connect(): a connected receive
    interface; torque: "getter", "side" or None (see `SegmentRecorder`); side_channel(): our
    own connection for torque "side" (`TorqueStream`), else (or when it fails) ur_rtde's file
    recorder."""

    def __init__(
        self,
        connect: Callable[[], Any],
        receive: Any,
        path: str,
        n_joints: int,
        torque: str | None,
        settings: RecordingSettings,
        torque_source: str,
        log: Callable[[str], None] = print,
        side_channel: Callable[[], Any] | None = None,
    ):
        self.connect, self.receive = connect, receive
        self.side_channel = side_channel
        self.path, self.n, self.torque = path, n_joints, torque
        self.settings = settings
        self.log = log
        self.writer = CsvLogWriter(
            path, column_groups(n_joints, torque is not None), settings.flush_interval_s
        )
        self.report = RecordingReport(path, settings.rate_hz, torque_source)
        self.lost = threading.Event()
        self.error: str | None = None
        self._recorder = self._new_recorder()

    def _new_recorder(self) -> SegmentRecorder:
        side = self._side_channel() if self.torque == "side" else None
        lasts = [s.last for s in self.report.segments if s.written and s.last is not None]
        recorder = SegmentRecorder(
            self.receive,
            self.writer,
            self.n,
            self.torque,
            side,
            self.settings.timeout_s,
            last_written=max(lasts, default=-math.inf),
        )
        self.report.segments.append(recorder.segment)
        return recorder

    def _side_channel(self) -> Any:
        if self.side_channel is not None:
            try:
                return self.side_channel()
            except TorqueStreamError as error:
                self.log(
                    f"note: no torque connection of our own ({error}); using ur_rtde's file "
                    "recorder, which misses some samples"
                )
        index = len(self.report.segments)
        return TorqueSideChannel(self.receive, f"{self.path}.torque_side_{index}.csv", self.n)

    def run(self, duration_s: float, stop: threading.Event | None = None, reconnect=True) -> None:
        """Record for `duration_s` s of wall time (or until `stop` is set). On a lost
        connection: reconnect (when `reconnect`) or raise RecordingLost."""
        end = time.monotonic() + duration_s
        while time.monotonic() < end and not (stop is not None and stop.is_set()):
            try:
                if not self._recorder.poll():
                    time.sleep(_POLL_S)
            except ConnectionLost as error:
                self._recorder.finish(f"connection lost: {error}")
                self._disconnect()
                self.log(f"RTDE connection lost ({error}); {self.kept()}")
                if not reconnect or not self._reconnect(end):
                    self.error = str(error)
                    self.lost.set()
                    raise RecordingLost(str(error)) from None
        self._recorder.finish("completed")

    def _reconnect(self, end: float) -> bool:
        settings = self.settings
        for attempt in range(1, settings.reconnect_attempts + 1):
            time.sleep(settings.reconnect_delay_s)
            if time.monotonic() >= end:
                return False
            try:
                self.receive = self.connect()
            except Exception as error:  # noqa: BLE001 (any failure: try again)
                self.log(
                    f"reconnect attempt {attempt}/{settings.reconnect_attempts} failed: {error}"
                )
                continue
            self.log(f"reconnected (attempt {attempt}); recording continues in {self.path}")
            self._recorder = self._new_recorder()
            return True
        return False

    def _disconnect(self) -> None:
        try:
            self.receive.disconnect()
        except RuntimeError:
            pass

    def kept(self) -> str:
        """One sentence: what is on disk so far."""
        summary = self.report.summary()
        if not summary["samples_written"]:
            return f"nothing was recorded yet ({self.path} has only its header)"
        return (
            f"the recording up to the loss is complete on disk: {summary['samples_written']} "
            f"samples, controller time {summary['first_timestamp_s']:.3f} s to "
            f"{summary['last_timestamp_s']:.3f} s, in {self.path}"
        )

    def close(self) -> dict[str, Any]:
        """Close the file and the connection; the recording's summary."""
        self.writer.close()
        self._disconnect()
        return self.report.summary()


class RecordingThread(threading.Thread):
    """Runs a LiveRecording in the background (while the main thread streams the motion);
    `recording.lost` is set when the connection is lost (no reconnection during motion)."""

    def __init__(self, recording: LiveRecording, duration_s: float):
        super().__init__(name="rtde-recording", daemon=True)
        self.recording, self.duration_s = recording, duration_s
        self.stop = threading.Event()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.recording.run(self.duration_s, self.stop, reconnect=False)
        except RecordingLost:
            pass
        except BaseException as error:  # noqa: BLE001 (reported by the main thread)
            self.failure = error
            self.recording.lost.set()


def recording_directory() -> Path:
    """The run directory when Hydra runs the job, else the current directory."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path.cwd()
