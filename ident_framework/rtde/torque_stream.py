"""Every package of the controller over a second RTDE connection of our own: the torque, and the
rows `ur_rtde`'s receive interface missed.

A background thread keeps every package of an output recipe with every recorded field, as a
row in the CSV column order of `recorder.column_groups`, keyed by the controller timestamp
(µs); `recorder.py` joins the torque (Nm) to the rows `ur_rtde` delivers and fills the others.

Rationale: docs/design.md#rtde-reception
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
from collections import OrderedDict

import numpy as np

from ident_framework.rtde import protocol as rtde

TORQUE_FIELD = "actual_current_as_torque"
# the recipe: the timestamp, then the recorded fields in CSV column order, each a 6-vector
_TIMESTAMP = struct.Struct(">d")  # after the recipe id
FIELDS = (
    "timestamp", "actual_q", "actual_qd", TORQUE_FIELD, "actual_current", "target_current",
    "target_moment", "joint_temperatures", "target_q", "target_qd", "target_qdd",
)  # fmt: skip


class TorqueStreamError(RuntimeError):
    """The controller refused the recipe or the connection failed."""


class TorqueStream:
    """Every package of the controller at `host`. rows: {timestamp µs: payload (`row` decodes
    it)}, oldest first. The interface of `recorder.TorqueSideChannel`, plus `take_unseen`."""

    full_rows = True

    def __init__(
        self,
        host: str,
        n_joints: int,
        frequency_hz: float = 500.0,
        port: int = 30004,
        timeout_s: float = 2.0,
    ):
        self.n = n_joints
        self.rows: OrderedDict[int, bytes] = OrderedDict()  # the packages, decoded when taken
        self.latest_us = -1
        self.first_us: int | None = None  # the first package's timestamp (µs)
        self.error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._buffer = bytearray()
        try:
            self._socket = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as error:
            raise TorqueStreamError(f"cannot connect to {host}:{port}: {error}") from None
        try:
            self._handshake(frequency_hz)
        except (OSError, ValueError, struct.error) as error:
            self._socket.close()
            raise TorqueStreamError(f"RTDE setup failed: {error}") from None
        self._thread = threading.Thread(target=self._run, name="rtde-torque", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ protocol
    def _request(self, command: int, payload: bytes = b"") -> bytes:
        self._socket.sendall(rtde.message(command, payload))
        while True:
            for kind, body in self._receive():
                if kind == command:
                    return body
                # text messages and anything else before the answer are skipped

    def _receive(self) -> list[tuple[int, bytes]]:
        chunk = self._socket.recv(65536)
        if not chunk:
            raise OSError("the controller closed the connection")
        self._buffer.extend(chunk)
        return rtde.split_messages(self._buffer)

    def _handshake(self, frequency_hz: float) -> None:
        accepted = self._request(
            rtde.REQUEST_PROTOCOL_VERSION, struct.pack(">H", rtde.PROTOCOL_VERSION)
        )
        if not accepted or not accepted[0]:
            raise ValueError(f"protocol version {rtde.PROTOCOL_VERSION} refused")
        answer = self._request(
            rtde.CONTROL_PACKAGE_SETUP_OUTPUTS,
            struct.pack(">d", frequency_hz) + ",".join(FIELDS).encode(),
        )
        self._recipe = answer[0]
        types = answer[1:].decode().split(",")
        if rtde.NOT_FOUND in types or len(types) != len(FIELDS):
            raise ValueError(f"the controller offers {dict(zip(FIELDS, types, strict=False))}")
        self._format = rtde.data_format(types)
        started = self._request(rtde.CONTROL_PACKAGE_START)
        if not started or not started[0]:
            raise ValueError("start refused")

    def _run(self) -> None:
        self._socket.settimeout(0.2)
        try:
            while not self._stop.is_set():
                try:
                    messages = self._receive()
                except TimeoutError:
                    continue
                for kind, body in messages:
                    if kind != rtde.DATA_PACKAGE or body[0] != self._recipe:
                        continue
                    # only the timestamp is decoded here: this thread holds the GIL briefly
                    stamp = int(round(_TIMESTAMP.unpack_from(body, 1)[0] * 1e6))
                    with self._lock:
                        self.rows[stamp] = body
                        self.latest_us = max(self.latest_us, stamp)
                        if self.first_us is None:
                            self.first_us = stamp
        except (OSError, ValueError, struct.error) as error:
            if not self._stop.is_set():
                self.error = str(error)

    # ----------------------------------------------------------------- interface
    def poll(self) -> None:
        """Nothing to do: the thread receives continuously."""

    def row(self, body: bytes) -> np.ndarray:
        """A package as a CSV row (timestamp s, q rad, qd rad/s, torque Nm, the rest)."""
        return np.array(self._format.unpack(body)[1:], dtype=float)

    def pop(self, stamp_us: int) -> np.ndarray | None:
        """The torque (n,) Nm of the package at `stamp_us` (forgotten then), or None."""
        with self._lock:
            body = self.rows.pop(stamp_us, None)
        return None if body is None else self.row(body)[1 + 2 * self.n : 1 + 3 * self.n]

    def take_unseen(self, before_us: float, keep: set[int] | dict) -> list[tuple[int, np.ndarray]]:
        """The rows older than `before_us` except those in `keep`, oldest first, forgotten here:
        the packages `ur_rtde`'s receive interface did not show (its poller passed them)."""
        with self._lock:
            older = itertools.takewhile(lambda stamp: stamp < before_us, self.rows)
            taken = [stamp for stamp in older if stamp not in keep]
            bodies = [(stamp, self.rows.pop(stamp)) for stamp in taken]
        return [(stamp, self.row(body)) for stamp, body in bodies]

    def discard_before(self, stamp_us: int) -> None:
        """Forget packages older than `stamp_us` (their rows were written or dropped)."""
        with self._lock:
            while self.rows and next(iter(self.rows)) < stamp_us:
                self.rows.popitem(last=False)

    def catch_up(self, stamp_us: int, timeout_s: float = 0.5) -> None:
        """Wait (at most `timeout_s`) until the package at `stamp_us` has arrived here."""
        deadline = time.monotonic() + timeout_s
        while self.latest_us < stamp_us and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.001)

    def stop(self) -> None:
        """Pause the recipe and stop the thread (what arrived stays in `rows`)."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        try:
            self._socket.sendall(rtde.message(rtde.CONTROL_PACKAGE_PAUSE))
        except OSError:
            pass

    def close(self) -> None:
        self._socket.close()
