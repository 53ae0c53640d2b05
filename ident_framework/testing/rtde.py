"""Test helpers for the RTDE source: the emulator as its own process (`ur_rtde` holds the GIL
while it connects, so an emulator inside the test process would deadlock; each runs on its own
loopback address 127.0.6.x, port 30004), and a control interface that records commands."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np


@dataclass
class EmulatorProcess:
    host: str
    process: subprocess.Popen
    stderr: list[str] = field(default_factory=list)


@contextmanager
def running_emulator(host: str, *args: str, timeout_s: float = 60.0) -> Iterator[EmulatorProcess]:
    """Start the emulator on `host`, wait until ready, SIGTERM it at the end; exit code 0."""
    command = [sys.executable, "-m", "ident_framework.rtde.emulator", "--host", host, *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    emulator = EmulatorProcess(host, process)
    reader = threading.Thread(target=lambda: emulator.stderr.extend(process.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout_s
        line = process.stdout.readline() if process.stdout else ""
        if "ready" not in line or time.monotonic() > deadline:
            process.kill()
            reader.join(timeout=5)
            raise RuntimeError(f"emulator did not start: {line!r} {''.join(emulator.stderr)}")
        yield emulator
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        reader.join(timeout=5)
    assert code == 0, f"emulator exit code {code}: {''.join(emulator.stderr)[-2000:]}"


class RecordingControl:
    """`ur_rtde`'s RTDEControlInterface API, RECORDING the commands instead of moving a robot.
    initPeriod/waitPeriod keep a real `rate_hz` cycle like ur_rtde's. `fail_at`: raise a
    RuntimeError at that servoJ call (an exception mid-stream)."""

    def __init__(self, host: str = "", rate_hz: float = 500.0, fail_at: int | None = None):
        self.host = host
        self.period = 1.0 / rate_hz
        self.fail_at = fail_at
        self.calls: list[tuple[str, float, tuple]] = []  # (name, monotonic time, arguments)
        self.connected = True

    def _record(self, name: str, *args) -> None:
        self.calls.append((name, time.monotonic(), args))

    def moveJ(self, q, speed=1.05, acceleration=1.4, asynchronous=False):  # noqa: N802
        self._record("moveJ", list(q), speed, acceleration)
        return True

    def servoJ(self, q, speed, acceleration, time_s, lookahead_time, gain):  # noqa: N802
        if self.fail_at is not None and len(self.servo_commands()) == self.fail_at:
            raise RuntimeError("simulated failure of the control interface")
        self._record("servoJ", list(q), speed, acceleration, time_s, lookahead_time, gain)
        return True

    def servoStop(self, a=10.0):  # noqa: N802
        self._record("servoStop", a)
        return True

    def stopScript(self):  # noqa: N802
        self._record("stopScript")

    def initPeriod(self):  # noqa: N802
        return time.monotonic()

    def waitPeriod(self, start):  # noqa: N802
        """Like ur_rtde's: sleep most of the rest of the period, then spin to its end."""
        end = start + self.period
        rest = end - time.monotonic()  # read once: a second read may already be past the end
        if rest > 3e-4:
            time.sleep(rest - 3e-4)
        while time.monotonic() < end:
            pass

    def isConnected(self):  # noqa: N802
        return self.connected

    def disconnect(self):
        self._record("disconnect")
        self.connected = False

    # ---- inspection
    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]

    def servo_commands(self) -> list[tuple[float, np.ndarray]]:
        return [(t, np.asarray(args[0])) for name, t, args in self.calls if name == "servoJ"]


_REFERENCE_SCRIPT = """
import sys, time
import numpy as np
from ident_framework.rtde.torque_stream import TorqueStream
stream = TorqueStream(sys.argv[1], 6, 500.0)
print("connected", flush=True)
sys.stdin.readline()
stream.stop()
np.save(sys.argv[2], np.array(sorted(stream.rows), dtype=np.int64))
"""


@contextmanager
def every_package(host: str, path: str) -> Iterator[list[np.ndarray]]:
    """The controller timestamps (µs) of every package the emulator at `host` sends while the
    block runs, received over TCP by a process of its own: the truth a recording is compared
    with. The list holds one array after the block."""
    process = subprocess.Popen(
        [sys.executable, "-c", _REFERENCE_SCRIPT, host, path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    if process.stdout.readline().strip() != "connected":
        process.kill()
        raise RuntimeError(f"the reference connection to {host} failed")
    result: list[np.ndarray] = []
    try:
        yield result
    finally:
        process.stdin.write("\n")
        process.stdin.flush()
        process.wait(timeout=20)
    result.append(np.load(path))
