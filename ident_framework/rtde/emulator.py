"""An RTDE controller emulator for tests without a robot:
`python -m ident_framework.rtde.emulator --host 127.0.0.1 [--robot ur12e] [--port 30004]`.

Speaks the part of RTDE protocol version 2 (`protocol.py`) that `ur_rtde`'s receive interface
uses (`--controller-version` below 5.23 answers NOT_FOUND for `actual_current_as_torque`), with
data packages at the recipe frequency (at most 500 Hz; when behind, only the newest), from a
MuJoCo robot (`emulated_arm.py`) looping a slow motion or following `--trajectory FILE`.
Fault injection on the first `--drops` connections: `--drop-after N` packages or
`--drop-after-s S` s close it; `--delay-ms D` holds every `--delay-every`-th package back;
`--nan-after N` sends NaN joint vectors in `--nan-count` packages. Run several on 127.0.0.2,
... (`ur_rtde` always uses port 30004). SIGTERM or SIGINT: a summary on stderr, exit code 0.
"""

from __future__ import annotations

import argparse
import math
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.model.robot import load_robot
from ident_framework.rtde import protocol as rtde
from ident_framework.rtde.emulated_arm import RealTimeTwin, TwinSettings
from ident_framework.rtde.playback import default_motion, load_trajectory

MAX_FREQUENCY_HZ = 500.0
_MAX_PENDING_BYTES = 4 << 20  # a client that stops reading is disconnected beyond this
_SOURCE = "ident_framework RTDE emulator"
_NAN_FIELDS = (
    "actual_q", "actual_qd", "actual_current", "actual_current_as_torque", "target_q",
    "target_qd", "target_qdd", "target_current", "target_moment", "joint_temperatures",
)  # fmt: skip


@dataclass
class Faults:
    """Fault injection settings (see the module docstring); None or 0: off."""

    drop_after: int | None = None
    drop_after_s: float | None = None
    drops: int = 1
    delay_ms: float = 0.0
    delay_every: int = 100
    nan_after: int | None = None
    nan_count: int = 1


@dataclass
class Client:
    """One RTDE connection."""

    sock: socket.socket
    address: str
    inbox: bytearray = field(default_factory=bytearray)
    outbox: bytearray = field(default_factory=bytearray)
    names: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    packer: struct.Struct | None = None
    recipe_id: int = 0
    frequency: float = MAX_FREQUENCY_HZ
    phase: float = 0.0
    started: bool = False
    sent: int = 0
    started_at: float = 0.0
    hold_until: float = 0.0
    will_drop: bool = False


class Emulator:
    """The RTDE server loop: accept, answer setup messages, publish the twin's samples."""

    def __init__(
        self,
        twin: RealTimeTwin,
        host: str,
        port: int,
        version: tuple[int, int, int, int],
        faults: Faults,
        exit_after_s: float | None = None,
        verbose: bool = False,
    ):
        self.twin = twin
        self.version = version
        self.faults = faults
        self.exit_after_s = exit_after_s
        self.verbose = verbose
        self.period = 1.0 / twin.settings.record_rate_hz
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((host, port))
        except OSError as error:
            raise UserError(
                f"The RTDE emulator cannot listen on {host}:{port} ({error.strerror}). Another "
                "emulator or controller may use that address: pick another loopback address "
                "(--host 127.0.0.2, 127.0.0.3, ...)."
            ) from None
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, None)
        self.clients: dict[socket.socket, Client] = {}
        self.next_recipe_id = 1
        self.drops_left = faults.drops
        self.stopping = False
        self.stats = {"packages": 0, "skipped_late": 0, "max_late_ms": 0.0, "connections": 0}

    # ----------------------------------------------------------------- main loop
    def serve(self) -> None:
        start = time.monotonic()
        due = 0  # index of the next sample to publish
        while not self.stopping:
            deadline = start + due * self.period
            self._poll(deadline)
            now = time.monotonic()
            if now < deadline:
                continue
            behind = int((now - start) / self.period)  # the newest sample due by now
            sample = None
            for _ in range(behind - due + 1):
                sample = self.twin.advance()
            self.stats["skipped_late"] += behind - due
            self.stats["max_late_ms"] = max(self.stats["max_late_ms"], 1e3 * (now - deadline))
            due = behind + 1
            assert sample is not None
            self._publish(sample, now)
            if self.exit_after_s is not None and now - start >= self.exit_after_s:
                break
        self.close()

    def _poll(self, deadline: float) -> None:
        """Serve sockets until `deadline` (monotonic s) or the first event batch."""
        timeout = max(0.0, deadline - time.monotonic())
        for key, _ in self.selector.select(timeout):
            if key.data is None:
                self._accept()
            else:
                self._read(key.data)
        now = time.monotonic()
        for client in list(self.clients.values()):
            if client.outbox and client.hold_until <= now:
                self._flush(client)

    def _accept(self) -> None:
        try:
            sock, address = self.listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = Client(sock, f"{address[0]}:{address[1]}")
        self.clients[sock] = client
        self.selector.register(sock, selectors.EVENT_READ, client)
        self.stats["connections"] += 1
        self._log(f"client {client.address} connected")

    def _read(self, client: Client) -> None:
        try:
            chunk = client.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(client, "closed by the client")
            return
        client.inbox += chunk
        try:
            for command, payload in rtde.split_messages(client.inbox):
                self._handle(client, command, payload)
        except (ValueError, struct.error, IndexError) as error:
            self._drop(client, f"sent a malformed message ({error})")

    # ------------------------------------------------------------ the protocol
    def _handle(self, client: Client, command: int, payload: bytes) -> None:
        name = rtde.COMMAND_NAMES.get(command, f"unknown command {command}")
        self._log(f"{client.address}: {name}")
        if command == rtde.REQUEST_PROTOCOL_VERSION:
            (requested,) = struct.unpack(">H", payload[:2])
            accepted = requested == rtde.PROTOCOL_VERSION
            self._send(client, command, bytes([int(accepted)]))
        elif command == rtde.GET_URCONTROL_VERSION:
            self._send(client, command, struct.pack(">IIII", *self.version))
        elif command == rtde.CONTROL_PACKAGE_SETUP_OUTPUTS:
            self._setup_outputs(client, payload)
        elif command == rtde.CONTROL_PACKAGE_SETUP_INPUTS:
            names = payload.decode(errors="replace").strip(",").split(",")
            types = [
                rtde.OUTPUT_TYPES.get(n, rtde.NOT_FOUND) if n.startswith("input_") else
                rtde.NOT_FOUND
                for n in names
            ]  # fmt: skip
            recipe = 0 if rtde.NOT_FOUND in types else self._new_recipe_id()
            self._send(client, command, bytes([recipe]) + ",".join(types).encode())
        elif command == rtde.CONTROL_PACKAGE_START:
            ok = client.packer is not None
            if ok and not client.started:
                client.started, client.started_at = True, time.monotonic()
                client.will_drop = self._takes_drop()
            self._send(client, command, bytes([int(ok)]))
        elif command == rtde.CONTROL_PACKAGE_PAUSE:
            client.started = False
            self._send(client, command, b"\x01")
        elif command == rtde.TEXT_MESSAGE:
            text, source, level = rtde.unpack_text_message(payload)
            self._log(f"{client.address} says ({source}, level {level}): {text}", force=True)
        elif command == rtde.DATA_PACKAGE:
            pass  # inputs: accepted and ignored (nothing here reads input registers)
        elif client.started:  # a text message now cannot be mistaken for a setup reply
            self._text(client, f"unknown RTDE command {command}", rtde.WARNING_MESSAGE)

    def _setup_outputs(self, client: Client, payload: bytes) -> None:
        (frequency,) = struct.unpack(">d", payload[:8])
        names = [n.strip() for n in payload[8:].decode(errors="replace").split(",") if n.strip()]
        types = [rtde.offered_type(name, self.version) for name in names]
        if rtde.NOT_FOUND in types or not names:
            missing = [n for n, t in zip(names, types, strict=True) if t == rtde.NOT_FOUND]
            self._log(f"{client.address}: output recipe refused, NOT_FOUND: {missing}", force=True)
            client.packer = None
            reply = b"\x00" + ",".join(types).encode()
            self._send(client, rtde.CONTROL_PACKAGE_SETUP_OUTPUTS, reply)
            return
        if not (math.isfinite(frequency) and 0.0 < frequency <= MAX_FREQUENCY_HZ):
            self._log(
                f"{client.address}: frequency {frequency} Hz outside (0, 500], using 500 Hz",
                force=True,
            )
            frequency = MAX_FREQUENCY_HZ
        client.names, client.types, client.frequency = names, types, frequency
        client.packer = rtde.data_format(types)
        client.recipe_id = self._new_recipe_id()
        reply = bytes([client.recipe_id]) + ",".join(types).encode()
        self._send(client, rtde.CONTROL_PACKAGE_SETUP_OUTPUTS, reply)

    def _new_recipe_id(self) -> int:
        recipe = self.next_recipe_id
        self.next_recipe_id = self.next_recipe_id % 255 + 1
        return recipe

    def _takes_drop(self) -> bool:
        faults = self.faults
        if (faults.drop_after is None and faults.drop_after_s is None) or self.drops_left == 0:
            return False
        self.drops_left -= 1
        return True

    # -------------------------------------------------------------- publishing
    def _publish(self, sample: dict[str, Any], now: float) -> None:
        faults = self.faults
        for client in list(self.clients.values()):
            if not client.started or client.packer is None:
                continue
            client.phase += client.frequency / self.twin.settings.record_rate_hz
            if client.phase < 1.0 - 1e-9:
                continue
            client.phase -= 1.0
            if self._drop_due(client, now):
                self._text(
                    client,
                    f"fault injection: dropping the connection after {client.sent} packages",
                    rtde.ERROR_MESSAGE,
                )
                self._flush(client)
                self._drop(client, f"fault injection after {client.sent} packages")
                continue
            values = sample
            nan_start = faults.nan_after
            if nan_start is not None and 0 <= client.sent - nan_start < faults.nan_count:
                values = dict(sample)
                for name in _NAN_FIELDS:
                    values[name] = np.full(self.twin.nominal.n_joints, np.nan)
            if faults.delay_ms > 0 and client.sent > 0 and client.sent % faults.delay_every == 0:
                client.hold_until = now + faults.delay_ms / 1e3
            client.outbox += rtde.message(rtde.DATA_PACKAGE, self._pack(client, values))
            client.sent += 1
            self.stats["packages"] += 1
            if client.hold_until <= now:
                self._flush(client)

    def _drop_due(self, client: Client, now: float) -> bool:
        faults = self.faults
        return client.will_drop and (
            (faults.drop_after is not None and client.sent >= faults.drop_after)
            or (faults.drop_after_s is not None and now - client.started_at >= faults.drop_after_s)
        )

    def _pack(self, client: Client, sample: dict[str, Any]) -> bytes:
        values: list[Any] = [client.recipe_id]
        for name, kind in zip(client.names, client.types, strict=True):
            size = rtde.TYPE_SIZES.get(kind, 1)
            value = sample.get(name)
            if value is None:
                values.extend([0] * size)
            elif size == 1:
                values.append(value)
            else:
                values.extend(value)
        assert client.packer is not None
        return client.packer.pack(*values)

    # ---------------------------------------------------------------- sockets
    def _send(self, client: Client, command: int, payload: bytes) -> None:
        client.outbox += rtde.message(command, payload)
        self._flush(client)

    def _text(self, client: Client, text: str, level: int) -> None:
        self._send(client, rtde.TEXT_MESSAGE, rtde.pack_text_message(text, _SOURCE, level))

    def _flush(self, client: Client) -> None:
        if client.sock not in self.clients:
            return
        try:
            sent = client.sock.send(client.outbox)
            del client.outbox[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as error:
            self._drop(client, f"send failed ({error})")
            return
        if len(client.outbox) > _MAX_PENDING_BYTES:
            self._drop(client, "stopped reading (send buffer full)")

    def _drop(self, client: Client, reason: str) -> None:
        if self.clients.pop(client.sock, None) is None:
            return
        self.selector.unregister(client.sock)
        client.sock.close()
        self._log(f"client {client.address} disconnected: {reason}", force=True)

    def close(self) -> None:
        for client in list(self.clients.values()):
            if client.started:
                self._text(client, "controller shutting down", rtde.INFO_MESSAGE)
            self._drop(client, "emulator shutting down")
        self.selector.unregister(self.listener)
        self.listener.close()
        self.selector.close()

    def _log(self, text: str, force: bool = False) -> None:
        if force or self.verbose:
            print(f"[rtde_emulator] {text}", file=sys.stderr, flush=True)


def parse_version(text: str) -> tuple[int, int, int, int]:
    """'5.23.0' -> (5, 23, 0, 0): major, minor, bugfix, build."""
    parts = [int(p) for p in text.split(".")]
    if not 2 <= len(parts) <= 4 or any(p < 0 for p in parts):
        raise ValueError(f"controller version must look like 5.23.0, got {text!r}")
    return tuple((parts + [0, 0])[:4])  # type: ignore[return-value]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ident_framework.rtde.emulator",
        description="RTDE controller emulator backed by a real-time MuJoCo simulation.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=30004, help="TCP port (ur_rtde: 30004)")
    parser.add_argument("--robot", default="ur12e", help="ur12e | ur10e | ur5e | urdf | mjcf")
    parser.add_argument("--robot-path", default=None, help="model file for --robot urdf/mjcf")
    parser.add_argument("--seed", type=int, default=0, help="the simulated robot (as source.seed)")
    parser.add_argument("--noise-seed", type=int, default=1, help="measurement noise seed")
    parser.add_argument("--torque-noise-std", type=float, default=0.05, help="Nm")
    parser.add_argument("--controller-version", default="5.23.0", help="e.g. 5.23.0 or 5.22.1")
    parser.add_argument(
        "--trajectory", default=None, help="trajectory.yaml of a run or CSV of joint positions"
    )
    parser.add_argument(
        "--no-loop", action="store_true", help="hold the trajectory's last point at its end"
    )
    parser.add_argument("--drop-after", type=int, default=None, help="packages, then close")
    parser.add_argument("--drop-after-s", type=float, default=None, help="seconds, then close")
    parser.add_argument("--drops", type=int, default=1, help="connections to drop (-1: all)")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="hold back packages (ms)")
    parser.add_argument("--delay-every", type=int, default=100, help="every k-th package")
    parser.add_argument("--nan-after", type=int, default=None, help="NaN from package N on")
    parser.add_argument("--nan-count", type=int, default=1, help="packages sent with NaN")
    parser.add_argument("--exit-after-s", type=float, default=None, help="stop after S s")
    parser.add_argument("--verbose", action="store_true", help="log every message")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        version = parse_version(args.controller_version)
        if args.delay_every < 1 or args.nan_count < 1:
            raise ValueError("--delay-every and --nan-count must be >= 1")
        robot = load_robot(args.robot, args.robot_path)
        if robot.n_joints != 6:
            raise UserError(f"RTDE carries 6 joints; the robot {robot.name} has {robot.n_joints}.")
        if args.trajectory:
            trajectory = load_trajectory(args.trajectory, robot.n_joints, "--trajectory")
        else:
            trajectory = default_motion(robot)
        settings = TwinSettings(
            seed=args.seed,
            noise_seed=args.noise_seed,
            torque_noise_std=args.torque_noise_std,
            loop=not args.no_loop,
        )
        twin = RealTimeTwin(robot, trajectory, settings)
        faults = Faults(**{f.name: getattr(args, f.name) for f in fields(Faults)})
        emulator = Emulator(
            twin, args.host, args.port, version, faults, args.exit_after_s, args.verbose
        )
    except (UserError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: Any) -> None:
        emulator.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    looping = "looping" if twin.looping else "once, then holding its last point"
    print(
        f"RTDE emulator ready on {args.host}:{args.port}: {robot.name} (seed {args.seed}), "
        f"controller {'.'.join(map(str, version[:3]))}, {trajectory.duration:.1f} s "
        f"trajectory ({looping})",
        flush=True,
    )
    emulator.serve()
    stats = emulator.stats
    print(
        f"[rtde_emulator] stopped: {stats['connections']} connection(s), {stats['packages']} "
        f"packages sent, {stats['skipped_late']} skipped (late), max lateness "
        f"{stats['max_late_ms']:.2f} ms",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
