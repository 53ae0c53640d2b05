"""Connecting to a UR controller: the `ur_rtde` interfaces (the `rtde` extra) and a quick
reachability check of the RTDE port."""

from __future__ import annotations

import importlib
import socket
import time
from typing import Any

import numpy as np

from ident_framework.errors import UserError

RTDE_PORT = 30004  # the only port ur_rtde's receive interface talks to


def ur_rtde_module(module: str) -> Any:
    """The `ur_rtde` module `module`, or a UserError naming the install command."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise UserError(
            f"source=rtde needs the ur_rtde package (module {module}), which is not installed: "
            'pip install ur_rtde (or the project\'s extra: pip install -e ".[rtde]").'
        ) from None


def default_receive(host: str, frequency: float, variables: list[str]) -> Any:
    """The real `ur_rtde` receive interface."""
    return ur_rtde_module("rtde_receive").RTDEReceiveInterface(host, frequency, variables)


def default_control(host: str) -> Any:
    """The real `ur_rtde` control interface (uploads its script and can move the robot)."""
    return ur_rtde_module("rtde_control").RTDEControlInterface(host)


def unreachable(host: str, detail: str) -> UserError:
    """The error for a controller that does not answer at `host`."""
    return UserError(
        f"Cannot reach the robot controller at {host}:{RTDE_PORT} (source.host): {detail}. "
        "Check the robot's network: the cable, the robot's IP address and that this computer "
        f"is on the same subnet (ping {host}); check that the robot is powered on and in "
        "remote control (PolyScope: Settings > System > Remote Control enabled, and the "
        "pendant switched to Remote), then run again."
    )


def check_reachable(host: str, timeout_s: float) -> None:
    """A TCP connection to the RTDE port (ur_rtde blocks for minutes on a silent host)."""
    try:
        with socket.create_connection((host, RTDE_PORT), timeout=timeout_s):
            pass
    except TimeoutError:
        raise unreachable(host, f"no answer within {timeout_s:g} s") from None
    except OSError as error:
        raise unreachable(host, error.strerror or str(error)) from None


def lost_connection_message(
    host: str,
    error: str,
    kept: str,
    summary: dict,
    confirmed: bool,
    reconnect_attempts: int,
) -> str:
    """The message of a recording whose connection was lost: whether the robot was told to
    stop, what was kept (`kept`, the recording's summary) and how to use it."""
    stopped = (
        " The robot was told to stop (servoStop, stopScript)."
        if confirmed
        else " Nothing had been sent to the robot (dry run)."
    )
    retry = (
        f" Reconnecting failed after {reconnect_attempts} attempt(s)."
        if reconnect_attempts and not confirmed
        else ""
    )
    usable = (
        f" To identify from what was kept: source=csv source.path={summary['path']}."
        if summary["samples_written"]
        else ""
    )
    return (
        f"The RTDE connection to {host} was lost ({error}).{stopped}{retry} "
        f"What was kept: {kept} ({summary['samples_written']} rows, each "
        f"complete).{usable} Check the robot's network and that it is in remote control, "
        "then run again."
    )


def current_pose(
    receive: Any, n_joints: int, timeout_s: float
) -> tuple[np.ndarray | None, str | None]:
    """(the robot's joint positions in rad, None) from the receive interface, or (None, why
    not) when they cannot be read (waits up to `timeout_s` s for a first package)."""
    deadline = time.monotonic() + timeout_s
    try:
        while hasattr(receive, "getTimestamp") and not receive.getTimestamp() > 0.0:
            if time.monotonic() > deadline:
                return None, f"no package from the controller within {timeout_s:g} s"
            time.sleep(0.01)
        q = np.asarray(receive.getActualQ(), dtype=float)
    except (RuntimeError, TypeError, ValueError) as error:
        return None, f"getActualQ failed: {error}"
    if q.shape != (n_joints,) or not np.all(np.isfinite(q)):
        return None, f"getActualQ gave {np.asarray(q).tolist()}, not {n_joints} finite angles"
    return q, None
