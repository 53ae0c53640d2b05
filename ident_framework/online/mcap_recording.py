"""`online/run.mcap` of mode=online with `mcap=true`, written by a thread of its own from the
rows the estimator sends with the frames (`publisher.RecordingBuffer`). Log time: source, ns.

- `/online/joint_states`: every sample as received (q rad, dq rad/s, effort = the torque Nm);
- `/online/torque`: every processed sample: `measured`, `predicted` (a priori), `residual`, Nm;
- `/online/events`: the events of online/events.jsonl; `/online/drift`: the drift alarms.

A file without the summary section of `close()` (a killed run) is readable; `mcap recover`.
"""

from __future__ import annotations

import json
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.plain_data import to_plain
from ident_framework.reports.mcap_export import (
    event_schema,
    joint_state_message,
    joint_state_schema,
    json_channel,
    new_writer,
    stamp,
    torque_message,
    torque_schema,
)

TOPICS = ("/online/joint_states", "/online/torque", "/online/events", "/online/drift")
ONLINE_TORQUES = {
    "measured": "as recorded",
    "predicted": "the streaming estimate's a-priori prediction, before this sample's update",
    "residual": "measured - predicted",
}


class McapRecording:
    """Writes `put` records to `path` in its own thread until `close()`."""

    def __init__(self, path: Path, joint_names: list[str]):
        self.path = path
        self.joints = tuple(joint_names)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 (closed by close())
        try:
            self._writer = new_writer(self._file)
        except BaseException:
            self._file.close()
            path.unlink()
            raise
        writer = self._writer
        self._channels = {
            "states": json_channel(writer, TOPICS[0], joint_state_schema()),
            "torque": json_channel(writer, TOPICS[1], torque_schema(self.joints, ONLINE_TORQUES)),
            "events": json_channel(writer, TOPICS[2], event_schema()),
            "drift": json_channel(writer, TOPICS[3], event_schema()),
        }
        self.counts = dict.fromkeys(self._channels, 0)
        self._last_ns = 0
        self.error: str | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="online-mcap", daemon=True)
        self._thread.start()

    def put(self, record: dict[str, Any] | None, events: list[dict[str, Any]]) -> None:
        """Rows of one frame (`RecordingBuffer.rows()`, or None) and its events."""
        if record is not None or events:
            self._queue.put((record, events))

    def close(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Write what is queued, the summary section, close the file; the message counts."""
        self._queue.put(None)
        self._thread.join(timeout=timeout_s)
        self._writer.finish()
        self._file.close()
        return {"path": str(self.path), "messages": dict(self.counts), "error": self.error}

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if self.error is not None:
                continue  # drained, not written: said at close()
            record, events = item
            try:
                if record is not None:
                    self._write_rows(record["samples"], record["steps"])
                for event in events:
                    self._write_event(event)
            except (ValueError, OSError, TypeError) as error:  # e.g. a negative source time
                self.error = f"{type(error).__name__}: {error}"

    def _add(self, channel: str, at: int, data: bytes) -> None:
        self._writer.add_message(
            self._channels[channel], at, data, at, sequence=self.counts[channel]
        )
        self.counts[channel] += 1

    def _write_rows(self, samples: np.ndarray, steps: np.ndarray) -> None:
        n, joints = len(self.joints), list(self.joints)
        times = _ns(samples)
        for row, at in zip(samples.tolist(), times, strict=True):
            q, dq, tau = row[1 : 1 + n], row[1 + n : 1 + 2 * n], row[1 + 2 * n :]
            self._add("states", at, joint_state_message(stamp(at), joints, q, dq, tau))
        for row, at in zip(steps.tolist(), _ns(steps), strict=True):
            measured, predicted = row[1 : 1 + n], row[1 + n :]
            residual = [m - p for m, p in zip(measured, predicted, strict=True)]
            torques = {"measured": measured, "predicted": predicted, "residual": residual}
            self._add("torque", at, torque_message(stamp(at), self.joints, torques))
        if times:
            self._last_ns = max(self._last_ns, times[-1])

    def _write_event(self, event: dict[str, Any]) -> None:
        t = event.get("t")
        at = self._last_ns if t is None else int(round(float(t) * 1e9))
        data = json.dumps(to_plain(event)).encode()
        self._add("events", at, data)
        if event.get("kind") == "drift":
            self._add("drift", at, data)


def _ns(rows: np.ndarray) -> list[int]:
    """Source times (s, first column) as integer ns."""
    if not len(rows):
        return []
    return np.round(rows[:, 0] * 1e9).astype(np.int64).tolist()
