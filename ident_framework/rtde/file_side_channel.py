"""`actual_current_as_torque` through `ur_rtde`'s own C++ file recorder (`startFileRecording`):
the side channel of `recorder.py` when the controller refuses our own RTDE connection. The
recorder writes the newest package on a timer of its own (not every package: it misses ~10 %
at 500 Hz); this class reads the side file as it grows and removes it at the end."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ident_framework.rtde.torque_stream import TORQUE_FIELD


class TorqueSideChannel:
    """`actual_current_as_torque` through `ur_rtde`'s C++ file recorder (see the module
    docstring); the interface of `torque_stream.TorqueStream` without `take_unseen`."""

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
