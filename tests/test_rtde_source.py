"""The `rtde` data source with the REAL `ur_rtde` receive interface against the RTDE emulator.

Each emulator is its own process on its own loopback address (127.0.6.x): `ur_rtde` holds the
GIL while it connects. The control interface is replaced by `RecordingControl`, which has
ur_rtde's RTDEControlInterface API and RECORDS the commands (moving a robot needs a physical
arm): the tests check the commanded stream (rate, continuity, limits) and that stop is always
commanded.
"""

from __future__ import annotations

import json
import re
import socket
import struct
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.data.csv_log import read_csv_log
from ident_framework.errors import UserError
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.rtde import protocol as rtde
from ident_framework.rtde.playback import default_motion
from ident_framework.sources.rtde import RtdeSource, RtdeSourceParams, refusal_ending
from ident_framework.testing.cli import run_cli
from ident_framework.testing.rtde import RecordingControl, every_package, running_emulator
from ident_framework.trajectories.fourier import FourierGenerator, FourierTrajectory
from ident_framework.trajectories.fourier.params import FourierParams

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def robot():
    return load_robot("ur12e")


def _write_yaml(path: Path, trajectory) -> Path:
    path.write_text(yaml.safe_dump(trajectory.describe(), sort_keys=False))
    return path


def _never_control(host: str):
    raise AssertionError(f"the control interface was opened for {host} in a dry run")


def test_end_to_end_recording_is_identified_offline(tmp_path, robot):
    """The emulator follows a 20 s excitation; the real ur_rtde receive interface records it at
    500 Hz through source=rtde; `source=csv source.path=<recording>` identifies it and validates
    on the emulator's simulated robot (seed 0, the validation=mujoco default)."""
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    objective = make_condition_objective(builder, seed=3, n_random=300)
    generator = FourierGenerator(FourierParams(n_candidates=60, n_refine=0, progress=False))
    excitation = generator.generate(robot, objective, seed=3)
    exc = _write_yaml(tmp_path / "excitation.yaml", excitation)
    recording = tmp_path / "recording.csv"
    with running_emulator("127.0.6.1", "--trajectory", str(exc)) as emulator:
        params = RtdeSourceParams(host="127.0.6.1", duration_s=20.0, recording_path=str(recording))
        data = RtdeSource(params, control_factory=_never_control).acquire(robot, None)
    print("".join(line for line in emulator.stderr if "stopped" in line).strip())
    acquisition = data.metadata["acquisition"]
    print(
        f"\nrecorded {acquisition['samples_written']} samples, achieved "
        f"{acquisition['achieved_rate_hz']:.1f} Hz, dropped {acquisition['dropped_samples']} of "
        f"{acquisition['samples_expected']} ({acquisition['torque_missing_samples']} without "
        f"torque, {acquisition['samples_missed']} never seen)"
    )
    assert data.metadata["torque_source"] == "actual_current_as_torque"
    assert acquisition["achieved_rate_hz"] > 250.0
    assert data.duration > 19.0
    # Known truth: the targets are the excitation at the controller's clock (it loops every 20 s),
    # and the timestamps lie on the 2 ms grid of a 500 Hz controller.
    q_ref = excitation.evaluate(np.mod(data.timestamp, excitation.duration))[0]
    assert np.abs(data.q_target - q_ref).max() < 1e-7
    assert np.allclose(np.round(data.timestamp / 0.002) * 0.002, data.timestamp, atol=1e-6)
    # RTDE's joint_temperatures (°C, the emulator's I²R thermal model) reach the dataset
    assert data.temperature is not None and data.temperature.shape == data.q.shape
    assert np.all(data.temperature >= 25.0) and np.all(data.temperature < 130.0)
    assert np.ptp(data.temperature, axis=0).max() > 0.1  # the loaded joints warm up

    run = tmp_path / "run"
    result = run_cli("source=csv", f"source.path={recording}", f"hydra.run.dir={run}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    validation = metrics["validation"]["physical"]
    per_joint = np.round(validation["r2_per_joint"], 4)
    print(f"offline identification: validation R² {validation['r2']:.5f}, RMSE "
          f"{validation['rmse']:.4f} Nm, per joint {per_joint}")  # fmt: skip
    assert validation["r2"] >= 0.99


def test_lost_connection_reconnects_and_keeps_a_valid_file(tmp_path, robot):
    """The emulator drops the first connection after 5 s; the dry-run recording reconnects and
    continues in the same file, which stays valid (strictly increasing, a gap at the drop)."""
    recording = tmp_path / "recording.csv"
    with running_emulator("127.0.6.2", "--drop-after-s", "5"):
        params = RtdeSourceParams(
            host="127.0.6.2", duration_s=8.0, recording_path=str(recording),
            reconnect_attempts=2, reconnect_delay_s=0.3,
        )  # fmt: skip
        data = RtdeSource(params, control_factory=_never_control).acquire(robot, None)
    acquisition = data.metadata["acquisition"]
    assert acquisition["segments"] == 2 and acquisition["reconnects"] == 1
    assert acquisition["segment_ends"][0].startswith("connection lost")
    assert len(acquisition["gaps_s"]) == 1 and acquisition["gaps_s"][0] > 0.3
    reread = read_csv_log(recording, robot.joint_names)
    assert reread.n_samples == data.n_samples == acquisition["samples_written"]


def test_lost_connection_during_motion_stops_the_robot_and_keeps_the_recording(tmp_path, robot):
    """confirm_motion=true with the recording control interface: the receive connection drops
    after 5 s, the motion is aborted, servoStop + stopScript are commanded, the recording up to
    the drop loads with csv_log, and the message says what was kept and where."""
    motion = _write_yaml(tmp_path / "motion.yaml", default_motion(robot))
    recording = tmp_path / "recording.csv"
    control = RecordingControl()
    with running_emulator("127.0.6.3", "--drop-after-s", "5", "--trajectory", str(motion)):
        params = RtdeSourceParams(
            host="127.0.6.3", trajectory_path=str(motion), recording_path=str(recording),
            confirm_motion=True, require_rehearsal=False, reconnect_attempts=0,
        )  # fmt: skip
        source = RtdeSource(params, control_factory=lambda host: control)
        with pytest.raises(UserError) as caught:
            source.acquire(robot, None)
    message = str(caught.value)
    assert "was lost" in message and "What was kept" in message and str(recording) in message
    assert "servoStop" in message
    kept = read_csv_log(recording, robot.joint_names)
    assert 3.0 < kept.duration < 5.5
    names = control.names()
    assert names[0] == "moveJ"
    assert names[-3:] == ["servoStop", "stopScript", "disconnect"]
    commands = control.servo_commands()
    times = np.array([t for t, _ in commands])
    q = np.array([c for _, c in commands])
    assert np.median(np.diff(times)) == pytest.approx(0.002, rel=0.05)
    assert np.all(np.abs(np.diff(q, axis=0)) <= robot.limits.velocity * 0.002 * 1.01)
    assert np.all((q >= robot.limits.position[:, 0]) & (q <= robot.limits.position[:, 1]))
    print(f"\nservoJ: {len(commands)} commands, {(len(times) - 1) / (times[-1] - times[0]):.1f} Hz"
          f" before the stop; kept {kept.n_samples} samples ({kept.duration:.2f} s)")  # fmt: skip


def test_dry_run_sends_nothing_and_violations_are_refused(tmp_path, robot):
    safe = _write_yaml(tmp_path / "safe.yaml", default_motion(robot))
    fast = _write_yaml(tmp_path / "fast.yaml", default_motion(robot, 1.0, 2.0))
    with running_emulator("127.0.6.4"):
        params = RtdeSourceParams(
            host="127.0.6.4", trajectory_path=str(safe), duration_s=1.0,
            recording_path=str(tmp_path / "dry.csv"),
        )  # fmt: skip
        data = RtdeSource(params, control_factory=_never_control).acquire(robot, None)
        assert data.metadata["acquisition"]["motion"] == {"confirmed": False}
        assert data.n_samples > 200

        # A limit-violating trajectory is refused before anything is connected or written.
        refused = tmp_path / "refused.csv"
        params = RtdeSourceParams(
            host="127.0.6.4", trajectory_path=str(fast), recording_path=str(refused),
            confirm_motion=True, require_rehearsal=False,
        )  # fmt: skip
        with pytest.raises(
            UserError, match=r"joint '\w+' \w+ reaches .* at t = \d+\.\d+ s, .* beyond"
        ):
            RtdeSource(params, control_factory=_never_control).acquire(robot, None)
        assert not refused.exists()

        # Without a passed rehearsal of this robot model a confirmed motion stops before the
        # robot is contacted (an empty registry folder).
        params = RtdeSourceParams(
            host="127.0.6.4", trajectory_path=str(safe), recording_path=str(refused),
            confirm_motion=True, rehearsal_dir=str(tmp_path / "rehearsals"),
        )  # fmt: skip
        with pytest.raises(UserError, match="No passed rehearsal .* mode=rehearse"):
            RtdeSource(params, control_factory=_never_control).acquire(robot, None)
        assert not refused.exists()


def test_older_controller_nan_and_delayed_packages(tmp_path, robot):
    """PolyScope 5.22: actual_current_as_torque is NOT_FOUND (each field answered with its RTDE
    type), so torque comes from currents x motor constants; a NaN package is skipped and
    counted; delayed packages arrive in bursts and show up as dropped samples."""
    args = ("--controller-version", "5.22.1", "--nan-after", "100", "--delay-ms", "30",
            "--delay-every", "200")  # fmt: skip
    with running_emulator("127.0.6.5", *args):
        with socket.create_connection(("127.0.6.5", 30004), timeout=5) as raw:
            names = "timestamp,actual_q,joint_mode,robot_mode,actual_digital_input_bits," \
                    "actual_current_as_torque,no_such_field"  # fmt: skip
            raw.sendall(rtde.message(rtde.REQUEST_PROTOCOL_VERSION, struct.pack(">H", 2)))
            raw.sendall(rtde.message(rtde.CONTROL_PACKAGE_SETUP_OUTPUTS,
                                     struct.pack(">d", 500.0) + names.encode()))  # fmt: skip
            buffer, replies = bytearray(), []
            while len(replies) < 2:
                buffer += raw.recv(4096)
                replies += rtde.split_messages(buffer)
        payload = dict(replies)[rtde.CONTROL_PACKAGE_SETUP_OUTPUTS]
        assert payload[0] == 0  # no recipe: fields were not found
        assert payload[1:].decode().split(",") == [
            "DOUBLE", "VECTOR6D", "VECTOR6INT32", "INT32", "UINT64", "NOT_FOUND", "NOT_FOUND"
        ]  # fmt: skip

        params = RtdeSourceParams(host="127.0.6.5", duration_s=1.0)
        with pytest.raises(UserError, match=r"PolyScope >= 5\.23.*current_to_torque"):
            RtdeSource(params, control_factory=_never_control).acquire(robot, None)
        gains = [13.2, 13.2, 9.3, 4.6, 4.6, 4.6]
        params = RtdeSourceParams(
            host="127.0.6.5", duration_s=2.0, current_to_torque=gains,
            recording_path=str(tmp_path / "currents.csv"),
        )  # fmt: skip
        data = RtdeSource(params, control_factory=_never_control).acquire(robot, None)
    acquisition = data.metadata["acquisition"]
    assert acquisition["torque_source"].startswith("actual_current ×")
    assert data.metadata["torque_source"] == "actual_current"
    assert acquisition["invalid_samples"] == 1
    assert acquisition["dropped_samples"] >= 1
    assert np.all(np.isfinite(data.tau))


def emulator_skipped(stderr: list[str]) -> int:
    """Packages the emulator never sent (it was late: `N skipped (late)` in its summary)."""
    [count] = re.findall(r"(\d+) skipped \(late\)", "".join(stderr))
    return int(count)


def test_packages_a_late_poll_missed_come_from_our_own_connection(tmp_path, robot):
    """ur_rtde's receive interface keeps only the newest package. Here a Python thread beside
    the poller holds the GIL for 15 ms out of every 30 ms (switch interval 20 ms), so the poller
    never sees a large share of the packages; our own RTDE connection receives every one (TCP),
    and the recording still holds every package the emulator sent (it skips some itself when the
    machine is busy: those no client gets), in order, each with its own values: the target joint
    positions are the emulator's motion at the controller's clock, the torque over the current
    is each joint's motor constant."""
    import sys
    import threading
    import time

    recording = tmp_path / "starved.csv"
    stop = threading.Event()

    def busy() -> None:  # the GIL held 15 ms, then released 15 ms (half a core)
        while not stop.is_set():
            end = time.perf_counter() + 0.015
            while time.perf_counter() < end:
                pass
            time.sleep(0.015)

    interval = sys.getswitchinterval()
    with running_emulator("127.0.6.7") as emulator:
        with every_package("127.0.6.7", str(tmp_path / "sent.npy")) as sent:
            params = RtdeSourceParams(
                host="127.0.6.7", duration_s=3.0, recording_path=str(recording)
            )
            source = RtdeSource(params, control_factory=_never_control)
            thread = threading.Thread(target=busy, daemon=True)
            sys.setswitchinterval(0.02)
            thread.start()
            try:
                data = source.acquire(robot, None)
            finally:
                stop.set()
                thread.join()
                sys.setswitchinterval(interval)
    acquisition = data.metadata["acquisition"]
    skipped = emulator_skipped(emulator.stderr)
    print(f"\nstarved poller: {acquisition['samples_written']} rows of "
          f"{acquisition['samples_expected']}, receive interface missed "
          f"{acquisition['samples_missed']}, filled {acquisition['samples_filled']}, emulator "
          f"skipped {skipped}")  # fmt: skip
    assert acquisition["samples_missed"] - skipped > 0.2 * acquisition["samples_expected"]
    assert acquisition["samples_filled"] >= acquisition["samples_missed"] - skipped
    assert acquisition["dropped_samples"] <= skipped
    assert acquisition["torque_missing_samples"] == 0
    assert acquisition["samples_written"] > 0.5 * 3.0 * 500
    t = data.timestamp
    assert np.all(np.diff(t) > 0) and np.allclose(np.round(t / 0.002) * 0.002, t, atol=1e-6)
    # every package the emulator sent within the recording is in it (a connection of its own
    # process received them all)
    written = np.round(t * 1e6).astype(np.int64)
    [truth] = sent
    truth = truth[(truth >= written[0]) & (truth <= written[-1])]
    assert np.setdiff1d(truth, written).size == 0 and np.setdiff1d(written, truth).size == 0
    motion = default_motion(robot)
    q_ref = motion.evaluate(np.mod(t, motion.duration))[0]
    assert np.abs(data.q_target - q_ref).max() < 1e-7
    header = recording.read_text().splitlines()[0].split(",")
    table = np.loadtxt(recording, delimiter=",", skiprows=1)
    torque = table[:, [header.index(f"actual_current_as_torque_{j}") for j in range(6)]]
    current = table[:, [header.index(f"actual_current_{j}") for j in range(6)]]
    ratio = torque / current
    assert np.allclose(ratio, np.median(ratio, axis=0), rtol=1e-8)


def test_unreachable_host_message(tmp_path):
    with pytest.raises(UserError) as caught:
        RtdeSource(RtdeSourceParams(host="127.0.6.99", connect_timeout_s=1.0))
    message = str(caught.value)
    assert "127.0.6.99:30004" in message and "network" in message and "remote control" in message
    run = tmp_path / "run"
    result = run_cli("source=rtde", "source.host=127.0.6.99", f"hydra.run.dir={run}", cwd=tmp_path)
    assert result.returncode == 2
    assert "remote control" in result.stderr and "Traceback" not in result.stderr
    assert not run.exists() or not any(run.iterdir())


def test_torque_falls_back_to_ur_rtde_file_recorder(tmp_path, robot, monkeypatch):
    """When the controller refuses our own torque connection, actual_current_as_torque comes
    through ur_rtde's file recorder instead (it misses some packages: those rows are dropped
    and counted, the file stays valid)."""
    import ident_framework.sources.rtde as source_rtde
    from ident_framework.rtde.torque_stream import TorqueStreamError

    def refused(*args, **kwargs):
        raise TorqueStreamError("refused by the test")

    monkeypatch.setattr(source_rtde, "TorqueStream", refused)
    notes: list[str] = []
    recording = tmp_path / "fallback.csv"
    with running_emulator("127.0.6.6"):
        params = RtdeSourceParams(host="127.0.6.6", duration_s=2.0, recording_path=str(recording))
        source = RtdeSource(params, control_factory=_never_control)
        source.log = notes.append
        data = source.acquire(robot, None)
    acquisition = data.metadata["acquisition"]
    print(f"\nfile-recorder fallback: {acquisition['samples_written']} rows, "
          f"{acquisition['torque_missing_samples']} without torque")  # fmt: skip
    assert any("file recorder" in note for note in notes), notes
    assert data.n_samples > 500 and np.all(np.isfinite(data.tau))
    assert read_csv_log(recording, robot.joint_names).n_samples == data.n_samples


def _refusal(stderr: str) -> str:
    """The refusal paragraph the command line printed (after 'error: ')."""
    [line] = [row for row in stderr.splitlines() if row.startswith("error: The motion is refused")]
    return line[len("error: ") :]


def test_cli_dry_run_and_confirmed_run_refuse_the_same_approach_move(tmp_path, robot):
    """The emulated robot rests at the home pose with its shoulder one turn further (+2π: the
    same place); the trajectory file is a slow motion about the home pose. The trajectory is
    safe, but the moveJ to its start would swing the arm down through the table. The dry run
    (real ur_rtde receive interface reading the pose from the emulator) refuses it with the
    confirmed run's message, says it was a dry run, and neither writes a recording. (The two
    runs read the pose at different moments of the simulated robot, which holds its pose to
    ~1e-5 rad: the numbers may differ in their last digit, the time by a few 4 ms samples.)
    The refusal comes before any control interface is opened; a confirmed run that passed would
    open ur_rtde's real RTDEControlInterface, which needs a physical arm: that boundary is
    tested in-process with RecordingControl (test_dry_and_confirmed_run_pass_and_refuse_...)."""
    home = default_motion(robot, amplitude_rad=1e-6)  # the emulated robot holds still
    wrapped = FourierTrajectory(home.q0 + np.array([0.0, 2 * np.pi, 0, 0, 0, 0]), home.a, home.b,
                                home.base_frequency_hz)  # fmt: skip
    motion = _write_yaml(tmp_path / "motion.yaml", home)
    resting = _write_yaml(tmp_path / "resting.yaml", wrapped)
    outcomes = {}
    with running_emulator("127.0.6.7", "--trajectory", str(resting)):
        for confirm in ("false", "true"):
            run = tmp_path / f"run_{confirm}"
            result = run_cli(
                "source=rtde", "source.host=127.0.6.7", f"source.trajectory_path={motion}",
                f"source.confirm_motion={confirm}", "source.require_rehearsal=false",
                "validation=split", f"hydra.run.dir={run}", cwd=tmp_path,
            )  # fmt: skip
            assert result.returncode == 2, result.stderr[-2000:]
            assert "Traceback" not in result.stderr
            assert not list(run.glob("rtde_*.csv"))
            outcomes[confirm] = _refusal(result.stderr)
            assert "approach move (moveJ from the current pose at 0.2 rad/s)" in result.stdout
    dry, confirmed = outcomes["false"], outcomes["true"]
    print(f"\ndry run: {dry}\nconfirmed: {confirmed}")
    assert dry.startswith("The motion is refused: during the approach move")
    assert "below the floor plane" in dry
    assert dry.endswith(refusal_ending(False)) and confirmed.endswith(refusal_ending(True))
    dry, confirmed = dry[: -len(refusal_ending(False))], confirmed[: -len(refusal_ending(True))]
    number = r"-?\d+\.\d+"
    assert re.sub(number, "#", dry) == re.sub(number, "#", confirmed)
    # when the arm first crosses the floor: the approach crosses it at a shallow angle, so a
    # pose read ~1e-5 rad apart moves that instant by a few 4 ms check samples
    at = r"at t = (-?\d+\.\d+) s"
    np.testing.assert_allclose(
        float(re.search(at, dry)[1]), float(re.search(at, confirmed)[1]), atol=0.05
    )
    np.testing.assert_allclose(
        [float(v) for v in re.findall(number, re.sub(at, "", dry))],
        [float(v) for v in re.findall(number, re.sub(at, "", confirmed))],
        atol=0.01,
    )


def test_dry_and_confirmed_run_pass_and_refuse_the_same_motions(tmp_path, robot):
    """The real ur_rtde receive interface reads the pose from the emulator; the control
    interface is `RecordingControl` (moving needs a physical arm: the one boundary not
    exercised here). From a pose one shoulder turn away (+2π, the moveJ would sweep the arm
    through the table) both modes refuse with the same verdict and no control interface is
    opened; from the home pose both pass, the dry run opens none and the confirmed run plays
    moveJ then servoJ through the recording one."""
    motion = default_motion(robot, amplitude_rad=0.05, period_s=2.0)
    zero, hz = 0.0 * motion.a, motion.base_frequency_hz
    wrapped = FourierTrajectory(motion.q0 + np.array([0.0, 2 * np.pi, 0, 0, 0, 0]), zero, zero, hz)
    still = FourierTrajectory(motion.q0, zero, zero, hz)
    path = _write_yaml(tmp_path / "motion.yaml", motion)
    outcomes: dict[tuple[str, bool], str | None] = {}
    for place, resting, host in (("wrapped", wrapped, "127.0.6.9"), ("home", still, "127.0.6.10")):
        resting_path = _write_yaml(tmp_path / f"resting_{place}.yaml", resting)
        with running_emulator(host, "--trajectory", str(resting_path)):
            for confirm in (False, True):
                control = RecordingControl()
                opened: list[str] = []

                def factory(address: str, control=control, opened=opened) -> RecordingControl:
                    opened.append(address)
                    return control

                params = RtdeSourceParams(
                    host=host, trajectory_path=str(path), confirm_motion=confirm,
                    require_rehearsal=False,
                    recording_path=str(tmp_path / f"{place}_{confirm}.csv"),
                )  # fmt: skip
                try:
                    RtdeSource(params, control_factory=factory, log=lambda line: None).acquire(
                        robot, None
                    )
                    outcomes[place, confirm] = None
                except UserError as error:
                    text = str(error)
                    assert text.endswith(refusal_ending(confirm)), text
                    outcomes[place, confirm] = text[: -len(refusal_ending(confirm))]
                if outcomes[place, confirm] is not None or not confirm:
                    assert opened == [] and control.names() == [], (place, confirm)
                else:
                    assert opened == [host] and control.names()[0] == "moveJ"
                    assert "servoJ" in control.names()
    number = r"-?\d+\.\d+"
    dry, confirmed = outcomes["wrapped", False], outcomes["wrapped", True]
    assert dry is not None and dry.startswith("The motion is refused: during the approach move")
    assert re.sub(number, "#", dry) == re.sub(number, "#", confirmed)
    assert outcomes["home", False] is None and outcomes["home", True] is None


def test_cli_dry_run_of_the_default_excitation_passes_the_check(tmp_path):
    """`source=rtde` with no options but the host: the default excitation (designed inside the
    default workspace) and the move to its start from the emulator's pose pass the check."""
    with running_emulator("127.0.6.8"):
        run = tmp_path / "run"
        result = run_cli("source=rtde", "source.host=127.0.6.8", "source.duration_s=2",
                         "validation=split", f"hydra.run.dir={run}", cwd=tmp_path)  # fmt: skip
    # what follows the check (identifying 2 s of whatever the emulated robot did) may fail on
    # the data as a user error (exit 2, one paragraph, no traceback): e.g. timestamp gaps when
    # this busy machine delays the emulator leave pieces too short to filter. The check came
    # first, and it is what this test is about.
    assert "The motion is refused" not in result.stderr, result.stderr[-3000:]
    if result.returncode != 0:
        assert result.returncode == 2, result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        errors = [row for row in result.stderr.splitlines() if row.startswith("error: ")]
        assert len(errors) == 1, result.stderr[-3000:]
    lines = [row for row in result.stdout.splitlines() if row.startswith(("approach", "traj"))]
    print("\n" + "\n".join(lines))
    assert "passed the safety check a confirmed run makes" in result.stdout
    assert len(lines) == 2 and "minimum floor clearance" in lines[1]
    clearance = float(lines[1].split("minimum floor clearance ")[1].split(" m")[0])
    assert clearance >= 0.1
