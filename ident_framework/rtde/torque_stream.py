"""`actual_current_as_torque` over a second RTDE connection of our own.

`ur_rtde` 1.6.5's Python binding has no getter for this field (PolyScope >= 5.23), and its C++
file recorder samples on a timer of its own that misses ~10 % of the 500 Hz packages. An RTDE
controller serves several clients at once, so this module opens its own output recipe
(`timestamp`, `actual_current_as_torque`) on the same port and keeps every package it receives,
keyed by the controller timestamp (µs), for `recorder.py` to join to the rows that `ur_rtde`'s
receive interface delivers. It speaks the same RTDE protocol version 2 as `ur_rtde` (messages
of `rtde_protocol`): protocol version, output setup, start, data packages, pause.
"""

from __future__ import annotations

import socket
import struct
import threading

import numpy as np

from ident_framework.rtde import protocol as rtde

FIELDS = ("timestamp", "actual_current_as_torque")


class TorqueStreamError(RuntimeError):
    """The controller refused the recipe or the connection failed."""


class TorqueStream:
    """Every (timestamp, actual_current_as_torque) package of the controller at `host`, received
    by a background thread. values: {timestamp µs: torque (n,) Nm}; latest_us: newest timestamp
    received. Same interface as `recorder.TorqueSideChannel`."""

    def __init__(
        self,
        host: str,
        n_joints: int,
        frequency_hz: float = 500.0,
        port: int = 30004,
        timeout_s: float = 2.0,
    ):
        self.n = n_joints
        self.values: dict[int, np.ndarray] = {}
        self.latest_us = -1
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
                    values = self._format.unpack(body)
                    stamp = int(round(values[1] * 1e6))
                    torque = np.array(values[2 : 2 + self.n], dtype=float)
                    with self._lock:
                        self.values[stamp] = torque
                        self.latest_us = max(self.latest_us, stamp)
        except (OSError, ValueError, struct.error) as error:
            if not self._stop.is_set():
                self.error = str(error)

    # ----------------------------------------------------------------- interface
    def poll(self) -> None:
        """Nothing to do: the thread receives continuously."""

    def pop(self, stamp_us: int) -> np.ndarray | None:
        with self._lock:
            return self.values.pop(stamp_us, None)

    def discard_before(self, stamp_us: int) -> None:
        """Forget torques older than `stamp_us` (their rows were written or dropped)."""
        with self._lock:
            for stamp in [s for s in self.values if s < stamp_us]:
                del self.values[stamp]

    def stop(self) -> None:
        """Pause the recipe and stop the thread (what arrived stays in `values`)."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        try:
            self._socket.sendall(rtde.message(rtde.CONTROL_PACKAGE_PAUSE))
        except OSError:
            pass

    def close(self) -> None:
        self._socket.close()
