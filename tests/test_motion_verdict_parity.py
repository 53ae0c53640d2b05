"""One motion-safety verdict: a `source=rtde` dry run refuses exactly what a confirmed run
refuses, with the same message, over many random motions.

Each case is a random Fourier trajectory (random offsets and coefficients, some far beyond the
velocity, acceleration, position, torque or workspace limits) and a random current pose (some
leaving a straight joint move through the table, some unreadable). Both modes go through
`RtdeSource.check_motion`, the step `acquire` runs right after connecting in either mode. The
robot's pose comes from `PoseReceive`, a stand-in for the receive interface that only reports
a pose (the end-to-end cases in test_rtde_source.py read it with the real ur_rtde client from
the emulator); the reachability check meets a plain listening socket. Nothing here can move
anything: no control interface is ever created.

The verdict itself is cross-checked against an independent computation: Pinocchio's
per-sample frame placements and inverse dynamics at the same times, and a dense sampling of
the straight joint move.
"""

from __future__ import annotations

import dataclasses
import math
import socket
import threading

import numpy as np
import pinocchio as pin
import pytest

from ident_framework.errors import UserError
from ident_framework.model.motion_safety import APPROACH, TRAJECTORY, motion_verdict
from ident_framework.model.robot import load_robot
from ident_framework.model.ur_description import UR_HOME
from ident_framework.sources.rtde import RtdeSource, RtdeSourceParams, refusal_ending, safety_limits
from ident_framework.trajectories.fourier.series import FourierTrajectory
from ident_framework.trajectories.fourier.series import constraint_basis as _constraint_basis
from ident_framework.trajectories.fourier.series import fourier_basis as _fourier_basis

HOST = "127.0.6.40"
N_CASES = 120
PERIOD_S = 4.0
TOOL = np.array([0.0, 0.0, 0.1])  # the default tool point (conf/trajectory/fourier.yaml)
CHAIN = ("shoulder_link", "forearm_link", "wrist_1_link", "wrist_2_link", "wrist_3_link")


class PoseReceive:
    """Stand-in for the receive interface: a pose (rad), or None for a pose it cannot give."""

    def __init__(self, q: np.ndarray | None):
        self.q = q

    def getTimestamp(self) -> float:  # noqa: N802
        return 1.0

    def getActualQ(self) -> list[float]:  # noqa: N802
        if self.q is None:
            raise RuntimeError("the receive interface returned no data")
        return list(self.q)


@pytest.fixture(scope="module")
def listener():
    """Something listening on HOST:30004 for the reachability check: it accepts each
    connection and closes it at once (nothing is ever spoken)."""
    server = socket.create_server((HOST, 30004), backlog=16)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def robot():
    return load_robot("ur12e")


def _random_trajectory(rng: np.random.Generator, robot) -> FourierTrajectory:
    """Three harmonics per joint about a random offset: gentle ones near the home pose (peak
    speed 2-25 % of the velocity limit, mostly safe), wild ones anywhere in the joint ranges
    (peak speed 5-160 %)."""
    n, n_harmonics = robot.n_joints, 3
    gentle = rng.uniform() < 0.45
    if gentle:
        q0 = np.array(UR_HOME) + rng.normal(0.0, 0.15, n)
    else:
        q0 = rng.uniform(robot.limits.position[:, 0], robot.limits.position[:, 1]) * 0.95
    speeds = (0.02, 0.25) if gentle else (0.05, 1.6)
    basis = _constraint_basis(n_harmonics)
    omega = 2.0 * math.pi / PERIOD_S
    grid = np.linspace(0.0, PERIOD_S, 200)
    _, velocity, _ = _fourier_basis(grid, omega, n_harmonics)
    coefficients = np.empty((n, 2 * n_harmonics))
    for j in range(n):
        vector = basis @ rng.standard_normal(basis.shape[1])
        peak = np.abs(velocity @ vector).max()
        coefficients[j] = vector * robot.limits.velocity[j] * rng.uniform(*speeds) / peak
    return FourierTrajectory(q0, coefficients[:, :n_harmonics], coefficients[:, n_harmonics:],
                             1.0 / PERIOD_S)  # fmt: skip


def _random_pose(rng: np.random.Generator, robot, start: np.ndarray) -> np.ndarray:
    kind = rng.uniform()
    if kind < 0.4:
        return start + rng.normal(0.0, 0.02, robot.n_joints)
    if kind < 0.7:
        return np.array(UR_HOME) + rng.normal(0.0, 0.4, robot.n_joints)
    return rng.uniform(robot.limits.position[:, 0], robot.limits.position[:, 1]) * 0.9


def _points(robot, q: np.ndarray) -> np.ndarray:
    """(N, P, 3) the oracle's points: frame origins by Pinocchio, the tool, and two points on
    each segment between consecutive ones."""
    model, data = robot.pin_model, robot.pin_model.createData()
    ids = [model.getFrameId(name) for name in CHAIN]
    out = []
    for row in q:
        pin.framesForwardKinematics(model, data, row)
        origins = [data.oMf[i].translation.copy() for i in ids]
        origins.append(data.oMf[ids[-1]].act(TOOL))
        between = [
            a + s * (b - a)
            for a, b in zip(origins[:-1], origins[1:], strict=True)
            for s in (1 / 3, 2 / 3)
        ]
        out.append(origins + between)
    return np.array(out)


def _workspace_margin(points: np.ndarray) -> np.ndarray:
    """(N,) the oracle's smallest margin: floor z = 0 and the base column (radius 0.12 m,
    0.35 m high), clearance 0.1 m; the column for the elbow and beyond."""
    floor = points[..., 2] - 0.1
    column_points = [1, 2, 3, 4, 5] + list(range(8, 16))  # not the shoulder, not the upper arm
    p = points[:, column_points]
    column = np.maximum(
        np.hypot(p[..., 0], p[..., 1]) - 0.22, np.maximum(p[..., 2] - 0.45, -p[..., 2])
    )
    return np.minimum(floor.min(axis=1), column.min(axis=1))


def _oracle(robot, trajectory, current, torque_fraction, rate_hz=250.0):
    """{(phase, quantity)} violated, and whether the case is clear of a knife's edge: the
    approach move is sampled differently here (600 points along the line, not in time), so
    its smallest workspace margin must be 5 mm from 0; the rest is sampled at the same times
    as the check, only float rounding may differ."""
    found, edge = set(), []
    times = np.append(np.arange(0.0, trajectory.duration, 1.0 / rate_hz), trajectory.duration)
    q, dq, ddq = trajectory.evaluate(times)
    limits = robot.limits
    if np.any(q < limits.position[:, 0]) or np.any(q > limits.position[:, 1]):
        found.add((TRAJECTORY, "position"))
    if np.any(np.abs(dq) > limits.velocity):
        found.add((TRAJECTORY, "velocity"))
    if np.any(np.abs(ddq) > limits.acceleration):
        found.add((TRAJECTORY, "acceleration"))
    model, data = robot.pin_model, robot.pin_model.createData()
    tau = np.array([pin.rnea(model, data, *row) for row in zip(q, dq, ddq, strict=True)])
    excess = (np.abs(tau) - torque_fraction * limits.effort).max()
    if excess > 0.0:
        found.add((TRAJECTORY, "torque (nominal model)"))
    margin = _workspace_margin(_points(robot, q)).min()
    edge += [abs(excess) > 1e-6, abs(margin) > 1e-6]
    if margin < 0.0:
        found.add((TRAJECTORY, "workspace"))
    if current is not None:
        line = current + np.linspace(0.0, 1.0, 600)[:, None] * (q[0] - current)
        margin = _workspace_margin(_points(robot, line)).min()
        edge.append(abs(margin) > 5e-3)
        if margin < 0.0:
            found.add((APPROACH, "workspace"))
        # moveJ timing: the largest joint accelerates at 2 rad/s² to 1 rad/s, cruises, brakes
        q_a, dq_a, ddq_a = _move(current, q[0], 1.0, 2.0, rate_hz)
        tau = np.array([pin.rnea(model, data, *row) for row in zip(q_a, dq_a, ddq_a, strict=True)])
        excess = (np.abs(tau) - torque_fraction * limits.effort).max()
        edge.append(abs(excess) > 1e-6)
        if excess > 0.0:
            found.add((APPROACH, "torque (nominal model)"))
    return found, all(edge)


def _move(start, goal, speed, acceleration, rate_hz):
    """q, dq, ddq of a rest-to-rest trapezoidal-speed straight joint move, at rate_hz."""
    distance = np.abs(goal - start).max()
    ramp = min(speed / acceleration, math.sqrt(distance / acceleration))
    peak = acceleration * ramp
    total = distance / peak + ramp if distance > 0 else 0.0
    t = np.append(np.arange(0.0, total, 1.0 / rate_hz), total)
    s = np.empty_like(t)
    v = np.empty_like(t)
    a = np.zeros_like(t)
    for k, time in enumerate(t):
        if time < ramp:
            s[k], v[k], a[k] = 0.5 * acceleration * time**2, acceleration * time, acceleration
        elif time > total - ramp:
            left = total - time
            s[k], v[k], a[k] = (
                distance - 0.5 * acceleration * left**2,
                acceleration * left,
                -acceleration,
            )
        else:
            s[k], v[k] = peak * (time - 0.5 * ramp), peak
    a[[0, -1]] = 0.0
    unit = (goal - start) / distance if distance > 0 else np.zeros_like(start)
    return start + s[:, None] * unit, v[:, None] * unit, a[:, None] * unit


def _outcome(source: RtdeSource, robot, trajectory, receive) -> str | None:
    """The refusal message without its mode's ending sentence, or None when it passes."""
    try:
        source.check_motion(robot, trajectory, receive)
    except UserError as error:
        message = str(error)
        ending = refusal_ending(source.params.confirm_motion)
        assert message.endswith(ending), message
        return message[: -len(ending)]
    return None


def test_dry_run_and_confirmed_run_give_the_same_verdict(listener, robot):
    rng = np.random.default_rng(20261201)
    kinds: dict[str, int] = {}
    cross_checked = 0
    for case in range(N_CASES):
        trajectory = _random_trajectory(rng, robot)
        start = trajectory.evaluate(np.array([0.0]))[0][0]
        current = None if case % 10 == 9 else _random_pose(rng, robot, start)  # unreadable
        torque_fraction = float(rng.choice([0.8, 0.3]))
        params = RtdeSourceParams(host=HOST, torque_fraction=torque_fraction, movej_speed=1.0,
                                  movej_acceleration=2.0, require_rehearsal=False)  # fmt: skip
        dry = RtdeSource(params, log=lambda line: None)
        confirmed = RtdeSource(dataclasses.replace(params, confirm_motion=True),
                               log=lambda line: None)  # fmt: skip
        receive = PoseReceive(current)
        dry_outcome = _outcome(dry, robot, trajectory, receive)
        confirmed_outcome = _outcome(confirmed, robot, trajectory, receive)
        assert dry_outcome == confirmed_outcome, f"case {case}"

        # the same verdict computed directly, and checked against the independent oracle
        verdict = motion_verdict(robot, trajectory, current, safety_limits(params), 1.0, 2.0,
                                 None if current is not None else "x")  # fmt: skip
        if current is not None:
            assert verdict.refusal() == dry_outcome
        expected, clear = _oracle(robot, trajectory, current, torque_fraction)
        got = {(v.phase, v.quantity) for v in verdict.violations}
        if clear:
            assert got == expected, f"case {case}: verdict {got}, oracle {expected}"
            cross_checked += 1
        if current is None and not got:
            kind = "pose unknown"
            assert "current pose could not be read" in dry_outcome
            assert "the trajectory itself passed every check" in dry_outcome
        elif not got:
            kind = "pass"
            assert dry_outcome is None
        elif all(phase == APPROACH for phase, _ in got):
            kind = "approach only"
            assert dry_outcome.startswith("The motion is refused: during the approach move")
        else:
            kind = "trajectory"
            for _, quantity in got:
                kinds[quantity] = kinds.get(quantity, 0) + 1
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"\n{N_CASES} random motions ({cross_checked} cross-checked): {kinds}")
    assert cross_checked > 0.9 * N_CASES
    for kind in ("pass", "approach only", "pose unknown", "position", "velocity", "acceleration",
                 "torque (nominal model)", "workspace"):  # fmt: skip
        assert kinds.get(kind, 0) >= 2, (kind, kinds)


def test_dry_run_message_says_nothing_was_sent(listener, robot):
    """The dry-run refusal ends by saying so; the confirmed one says nothing was sent."""
    assert "dry run" in refusal_ending(False) and "nothing was sent" in refusal_ending(False)
    assert "source.confirm_motion=true refuses" in refusal_ending(False)
    assert refusal_ending(True) == " Nothing was sent to the robot."
    trajectory = _random_trajectory(np.random.default_rng(1), robot)
    source = RtdeSource(RtdeSourceParams(host=HOST), log=lambda line: None)
    wrapped = np.array(UR_HOME) + np.array([0.0, 2 * np.pi, 0, 0, 0, 0])  # same pose, other turn
    with pytest.raises(UserError, match="during the approach move .* below the floor plane"):
        source.check_motion(robot, _at(trajectory, np.array(UR_HOME)), PoseReceive(wrapped))


def _at(trajectory: FourierTrajectory, q0: np.ndarray) -> FourierTrajectory:
    """A slow version of `trajectory` about q0."""
    return FourierTrajectory(q0, 0.01 * trajectory.a, 0.01 * trajectory.b,
                             trajectory.base_frequency_hz)  # fmt: skip
