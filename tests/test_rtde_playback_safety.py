"""Safety checks and servoJ playback, against a control interface that records commands.

The control interface is the one boundary that needs a physical arm: `RecordingControl` has
ur_rtde's RTDEControlInterface API and records what would be sent, with real timing.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import yaml

from ident_framework.data.csv_log import CsvLogWriter, read_csv_log
from ident_framework.errors import UserError
from ident_framework.model.motion_safety import (
    JointMove,
    SafetyLimits,
    check_trajectory,
    motion_verdict,
)
from ident_framework.model.robot import load_robot
from ident_framework.model.ur_description import UR_HOME
from ident_framework.model.workspace import Workspace, WorkspaceParams
from ident_framework.rtde import protocol as rtde
from ident_framework.rtde.playback import (
    PlaybackAborted,
    ServoSettings,
    default_motion,
    load_trajectory,
    play,
)
from ident_framework.testing.rtde import RecordingControl


@pytest.fixture(scope="module")
def robot():
    return load_robot("ur12e")


def test_default_motion_is_safe_and_slow(robot):
    motion = default_motion(robot)
    report = check_trajectory(robot, motion, SafetyLimits())
    assert report.safe, [v.describe() for v in report.violations]
    assert np.all(report.velocity_peak < 0.3)  # rad/s: slow
    assert report.min_floor_clearance_m > 0.15 and report.min_margin_m > 0.0
    assert len(report.lines()) == 2 + robot.n_joints


@pytest.mark.parametrize("name", ["fourier", "point_to_point"])
def test_trajectories_are_rebuilt_through_the_registry(robot, name, tmp_path):
    """Every built-in generator's slow motion is safe and at rest at its ends, and its
    `trajectory.yaml` reads back, through the registry, to the same motion."""
    from ident_framework.config.registry import get_registry

    info = get_registry().get("trajectory", name)
    motion = info.create(info.schema()).slow_motion(robot, 0.2, 8.0)
    assert check_trajectory(robot, motion, SafetyLimits()).safe
    t = np.linspace(0.0, motion.duration, 801)
    q, dq, _ = motion.evaluate(t)
    assert np.allclose(q[0], UR_HOME) and np.allclose(q[-1], UR_HOME)
    assert np.abs(dq[[0, -1]]).max() < 1e-9 and np.abs(q - UR_HOME).max() <= 0.2 * 1.001
    path = tmp_path / "trajectory.yaml"
    path.write_text(yaml.safe_dump(motion.describe()))
    rebuilt = load_trajectory(str(path), robot.n_joints)
    assert type(rebuilt) is type(motion)
    assert np.array_equal(rebuilt.evaluate(t)[0], q)
    path.write_text(yaml.safe_dump({**motion.describe(), "generator": "spline"}))
    with pytest.raises(UserError, match=r"generator 'spline'; readable are \['fourier'"):
        load_trajectory(str(path), robot.n_joints)


def test_violations_name_joint_time_and_excess(robot):
    """A fast version of the default motion breaks the velocity limit; the refusal names the
    joint, the time of the worst sample and by how much (known from the trajectory itself)."""
    fast = default_motion(robot, amplitude_rad=1.0, period_s=2.0)
    report = check_trajectory(robot, fast, SafetyLimits(workspace=None, torque_fraction=1.0))
    velocity = [v for v in report.violations if v.quantity == "velocity"]
    assert velocity
    t = np.arange(0.0, fast.duration, 1.0 / 250.0)
    _, dq, _ = fast.evaluate(t)
    worst = velocity[0]
    j = list(robot.joint_names).index(worst.where)
    assert abs(worst.value) == pytest.approx(np.abs(dq[:, j]).max(), rel=1e-3)
    assert worst.excess == pytest.approx(abs(worst.value) - robot.limits.velocity[j])
    verdict = motion_verdict(robot, fast, UR_HOME, SafetyLimits(workspace=None), 0.2, 0.5)
    assert re.search(r"joint '\w+' (velocity|acceleration) reaches .* at t = ", verdict.refusal())


def test_floor_plane_refuses_a_low_point(robot):
    """Raising the floor to 1 cm below the lowest point of the default motion plus the
    clearance refuses it, naming the point, its height and by how much it is too low."""
    motion = default_motion(robot)
    params = WorkspaceParams(base_column=None)
    safe = check_trajectory(robot, motion, SafetyLimits(params))
    heights = Workspace(robot, params).positions(motion.evaluate(np.array([safe.lowest_time_s]))[0])
    lowest = heights[..., 2].min()
    assert lowest == pytest.approx(safe.min_floor_clearance_m)
    raised = WorkspaceParams(floor_z_m=lowest - params.clearance_m + 0.01, base_column=None)
    report = check_trajectory(robot, motion, SafetyLimits(raised))
    [violation] = report.violations
    assert violation.quantity == "workspace" and violation.excess == pytest.approx(0.01, abs=1e-3)
    assert re.search(r"point '.+' comes down to z = .* m inside the 0\.1 m clearance above the "
                     r"floor plane", violation.describe())  # fmt: skip


def test_approach_move_is_a_slow_straight_joint_move(robot):
    """The moveJ model: straight in joint space, the largest joint at most movej_speed and
    movej_acceleration, at rest at both ends; a trapezoid (or a triangle when short)."""
    start, goal = np.array(UR_HOME), np.array(UR_HOME) + np.array([0.0, 0.3, -1.0, 0, 0, 0.2])
    for distance_scale in (1.0, 0.05):
        move = JointMove(start, start + distance_scale * (goal - start), 0.2, 0.5)
        t = np.linspace(0.0, move.duration, 2001)
        q, dq, ddq = move.evaluate(t)
        np.testing.assert_allclose(q[[0, -1]], [start, start + distance_scale * (goal - start)],
                                   atol=1e-12)  # fmt: skip
        assert np.abs(dq).max() <= 0.2 + 1e-12 and np.abs(ddq).max() <= 0.5 + 1e-12
        np.testing.assert_allclose(dq[[0, -1]], 0.0, atol=1e-12)
        direction = (goal - start) / np.abs(goal - start).max()
        along = (q - start) @ direction / (direction @ direction)
        np.testing.assert_allclose(q, start + along[:, None] * direction, atol=1e-12)
        # finite differences of the position are the velocity (away from the corners)
        np.testing.assert_allclose(np.gradient(q[:, 2], t)[5:-5], dq[5:-5, 2], atol=2e-3)
    assert JointMove(start, goal, 0.2, 0.5).duration == pytest.approx(1.0 / 0.2 + 0.2 / 0.5)


def _check_stream(control: RecordingControl, robot, rate_hz: float) -> dict:
    commands = control.servo_commands()
    times = np.array([t for t, _ in commands])
    q = np.array([c for _, c in commands])
    steps = np.abs(np.diff(q, axis=0))
    rate = (len(times) - 1) / (times[-1] - times[0])
    limits = robot.limits
    # The median period is the schedule; the mean also counts preemptions of a busy machine.
    assert np.median(np.diff(times)) == pytest.approx(1.0 / rate_hz, rel=0.05)
    assert rate > 0.8 * rate_hz
    assert np.all(steps <= limits.velocity / rate_hz * 1.01)  # continuity: no jumps
    assert np.all((q >= limits.position[:, 0]) & (q <= limits.position[:, 1]))
    return {"rate_hz": rate, "max_period_s": float(np.diff(times).max())}


def test_playback_streams_at_500_hz_and_always_stops(robot):
    motion = default_motion(robot, period_s=2.0, amplitude_rad=0.1)
    control = RecordingControl()
    report = play(control, motion, ServoSettings())
    names = control.names()
    assert names[0] == "moveJ" and names[-2:] == ["servoStop", "stopScript"]
    assert np.allclose(control.calls[0][2][0], motion.evaluate(np.array([0.0]))[0][0])
    assert report.commands == len(control.servo_commands()) == 1001
    stats = _check_stream(control, robot, 500.0)
    print(f"servoJ stream: {stats['rate_hz']:.1f} Hz, longest period {stats['max_period_s']:.4f}s")


def test_stop_is_commanded_on_an_exception_mid_stream(robot):
    control = RecordingControl(fail_at=100)
    with pytest.raises(RuntimeError, match="simulated failure"):
        play(control, default_motion(robot, period_s=2.0), ServoSettings())
    assert len(control.servo_commands()) == 100
    assert control.names()[-2:] == ["servoStop", "stopScript"]


def test_stop_is_commanded_on_abort_and_ctrl_c(robot):
    control = RecordingControl()
    calls = iter(range(10**6))
    with pytest.raises(PlaybackAborted, match="lost"):
        play(control, default_motion(robot), ServoSettings(),
             abort=lambda: "connection lost" if next(calls) == 50 else None)  # fmt: skip
    assert control.names()[-2:] == ["servoStop", "stopScript"]

    class Interrupting(RecordingControl):
        def waitPeriod(self, start):  # noqa: N802
            if len(self.servo_commands()) == 20:
                raise KeyboardInterrupt
            super().waitPeriod(start)

    control = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        play(control, default_motion(robot), ServoSettings())
    assert control.names()[-2:] == ["servoStop", "stopScript"]


def test_protocol_types_and_controller_versions():
    assert rtde.offered_type("actual_current_as_torque", (5, 23, 0)) == "VECTOR6D"
    assert rtde.offered_type("actual_current_as_torque", (5, 22, 1)) == rtde.NOT_FOUND
    assert rtde.offered_type("joint_mode", (5, 0, 0)) == "VECTOR6INT32"
    assert rtde.offered_type("no_such_field", (5, 23, 0)) == rtde.NOT_FOUND
    packer = rtde.data_format(["DOUBLE", "VECTOR6D", "INT32", "UINT64"])
    assert packer.size == 1 + 8 + 48 + 4 + 8
    buffer = bytearray(rtde.message(rtde.TEXT_MESSAGE, rtde.pack_text_message("hi", "me", 2)))
    buffer += rtde.message(rtde.CONTROL_PACKAGE_START, b"\x01")[:2]  # incomplete second one
    [(command, payload)] = rtde.split_messages(buffer)
    assert command == rtde.TEXT_MESSAGE
    assert rtde.unpack_text_message(payload) == ("hi", "me", 2)
    assert len(buffer) == 2


def test_streaming_writer_is_readable_while_open(tmp_path):
    """Rows flushed during the recording are on disk and valid before the file is closed."""
    path = tmp_path / "live.csv"
    groups = [("timestamp", 1), ("actual_q", 6), ("actual_qd", 6), ("actual_current_as_torque", 6)]
    writer = CsvLogWriter(path, groups, flush_interval_s=0.0)
    for k in range(5):
        writer.write([1000.0 + 0.002 * k, *([0.1 * k] * 6), *([0.0] * 6), *([math.pi] * 6)])
    data = read_csv_log(path, [f"j{j}" for j in range(6)])
    writer.close()
    assert data.n_samples == 5
    assert np.allclose(np.diff(data.timestamp), 0.002)
    assert np.allclose(data.tau, math.pi)
