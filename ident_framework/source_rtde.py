"""Built-in data source `rtde`: a real UR e-Series robot through `ur_rtde` (`source=rtde
source.host=192.168.x.x`).

What `acquire` does, in order:
1. The trajectory (the engine's excitation, or `trajectory_path`) is checked against the
   robot's position, velocity, acceleration and torque limits and a floor plane
   (`motion_safety.py`); a summary is printed and a violating trajectory is refused.
2. It connects `rtde_receive.RTDEReceiveInterface(host, 500 Hz, fields)` (an unreachable host
   fails at once with a hint) and records timestamp, actual_q, actual_qd, actual_current,
   target_current, target_moment, joint temperatures, targets and, when the controller offers
   it (PolyScope >= 5.23), actual_current_as_torque, streaming every sample to a CSV in the
   contract (`rtde_recorder.py`).
3. Only with `confirm_motion=true` the robot moves: the rehearsal gate (when required and
   available), moveJ to the start pose, then servoJ at 500 Hz while recording
   (`excitation_playback.py`), servoStop + stopScript on any exception, Ctrl-C or lost
   connection. Without it (the default) it is a dry run: nothing is sent to the control
   interface; the receive interface still records for the trajectory's duration (or
   `duration_s`), i.e. whatever the robot does meanwhile.
4. The CSV is read back (`csv_log.read_csv_log`); the dataset's metadata["acquisition"] holds
   the achieved rate and the dropped samples, which the run's metrics report.

The recording stays on disk whatever happens (`recording_path`, default the run directory),
and can be identified again later with `source=csv source.path=<the recording>`.
"""

from __future__ import annotations

import importlib
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .csv_log import read_csv_log
from .dataset import Dataset
from .errors import UserError
from .excitation_playback import PlaybackAborted, ServoSettings, play
from .hookspecs import hookimpl
from .interfaces import Trajectory
from .launch_path import resolve_launch_path
from .motion_safety import check_joint_move, check_trajectory, require_safe
from .rehearsal_gate import require_passed_rehearsal
from .robot_model import RobotModel
from .rtde_recorder import (
    TORQUE_FIELD,
    TORQUE_GETTER,
    LiveRecording,
    RecordingLost,
    RecordingSettings,
    RecordingThread,
    receive_variables,
)
from .rtde_torque_stream import TorqueStream
from .trajectory_file import load_trajectory

RTDE_PORT = 30004
TORQUE_MODES = ("auto", "actual_current_as_torque", "actual_current")
_NOT_FOUND_TEXT = "not found by the controller"


@dataclass
class RtdeSourceParams:
    """See conf/source/rtde.yaml for every key with its unit and default."""

    host: str | None = None
    frequency_hz: float = 500.0
    torque: str = "auto"
    current_to_torque: list[float] | None = None
    trajectory_path: str | None = None
    duration_s: float | None = None
    recording_path: str | None = None
    confirm_motion: bool = False
    require_rehearsal: bool = True
    rehearsal_dir: str | None = None
    floor_z_m: float = 0.0
    torque_fraction: float = 0.8
    check_rate_hz: float = 250.0
    servo_rate_hz: float = 500.0
    lookahead_time: float = 0.1
    gain: float = 300.0
    movej_speed: float = 0.2
    movej_acceleration: float = 0.5
    connect_timeout_s: float = 3.0
    timeout_s: float = 1.0
    reconnect_attempts: int = 3
    reconnect_delay_s: float = 1.0
    flush_interval_s: float = 0.1

    def __post_init__(self) -> None:
        if not self.host or not str(self.host).strip() or str(self.host).strip() == "???":
            raise ValueError("host is required: give source.host=<the robot's IP address>")
        self.host = str(self.host).strip()
        if self.torque not in TORQUE_MODES:
            raise ValueError(f"torque must be one of {list(TORQUE_MODES)}, got {self.torque!r}")
        if self.torque == "actual_current" and self.current_to_torque is None:
            raise ValueError(
                "torque=actual_current needs current_to_torque=[k_0,...] (Nm/A per joint)"
            )
        if self.current_to_torque is not None and not all(
            math.isfinite(k) and k > 0 for k in self.current_to_torque
        ):
            raise ValueError(f"current_to_torque must be > 0 Nm/A, got {self.current_to_torque}")
        if not 0.0 < self.frequency_hz <= 500.0:
            raise ValueError(f"frequency_hz must be in (0, 500], got {self.frequency_hz}")
        positive = (
            "check_rate_hz", "servo_rate_hz", "gain", "movej_speed", "movej_acceleration",
            "connect_timeout_s", "timeout_s", "flush_interval_s",
        )  # fmt: skip
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0, got {value}")
        if not 0.0 < self.torque_fraction <= 1.0:
            raise ValueError(f"torque_fraction must be in (0, 1], got {self.torque_fraction}")
        if not 0.03 <= self.lookahead_time <= 0.2:
            raise ValueError(f"lookahead_time must be in [0.03, 0.2] s, got {self.lookahead_time}")
        if not 100.0 <= self.gain <= 2000.0:
            raise ValueError(f"gain must be in [100, 2000], got {self.gain}")
        if self.movej_speed > 1.0:
            raise ValueError(f"movej_speed must be <= 1 rad/s (slow), got {self.movej_speed}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"duration_s must be > 0 s, got {self.duration_s}")
        if self.reconnect_attempts < 0 or self.reconnect_delay_s < 0:
            raise ValueError("reconnect_attempts and reconnect_delay_s must be >= 0")
        for name in ("trajectory_path", "recording_path", "rehearsal_dir"):
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                setattr(self, name, None)


def _ur_rtde(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise UserError(
            f"source=rtde needs the ur_rtde package (module {module}), which is not installed: "
            'pip install ur_rtde (or the project\'s extra: pip install -e ".[rtde]").'
        ) from None


def default_receive(host: str, frequency: float, variables: list[str]) -> Any:
    """The real `ur_rtde` receive interface."""
    return _ur_rtde("rtde_receive").RTDEReceiveInterface(host, frequency, variables)


def default_control(host: str) -> Any:
    """The real `ur_rtde` control interface (uploads its script and can move the robot)."""
    return _ur_rtde("rtde_control").RTDEControlInterface(host)


def unreachable(host: str, detail: str) -> UserError:
    return UserError(
        f"Cannot reach the robot controller at {host}:{RTDE_PORT} (source.host): {detail}. "
        "Check the robot's network: the cable, the robot's IP address and that this computer "
        f"is on the same subnet (ping {host}); check that the robot is powered on and in "
        "remote control (PolyScope: Settings > System > Remote Control enabled, and the "
        "pendant switched to Remote), then run again."
    )


def check_reachable(host: str, timeout_s: float) -> None:
    """A plain TCP connection to the RTDE port (ur_rtde would block for minutes on a host
    that does not answer); UserError when it fails."""
    try:
        with socket.create_connection((host, RTDE_PORT), timeout=timeout_s):
            pass
    except TimeoutError:
        raise unreachable(host, f"no answer within {timeout_s:g} s") from None
    except OSError as error:
        raise unreachable(host, error.strerror or str(error)) from None


def recording_directory() -> Path:
    """The run directory when Hydra runs the job, else the current directory."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path.cwd()


class RtdeSource:
    """Data source `rtde` (see the module docstring). receive_factory(host, rate, fields) and
    control_factory(host) build the interfaces (default: `ur_rtde`'s); tests pass others."""

    def __init__(
        self,
        params: RtdeSourceParams,
        receive_factory: Callable[[str, float, list[str]], Any] = default_receive,
        control_factory: Callable[[str], Any] = default_control,
        log: Callable[[str], None] = print,
    ):
        self.params = params
        self.receive_factory = receive_factory
        self.control_factory = control_factory
        self.log = log
        # With a trajectory file the engine designs no excitation.
        self.moves_robot = params.trajectory_path is None
        # Fail at once on an unreachable robot, not after the excitation design.
        check_reachable(params.host, params.connect_timeout_s)

    # --------------------------------------------------------------------- acquire
    def acquire(
        self, robot: RobotModel, trajectory: Trajectory | None, role: str = "identification"
    ) -> Dataset:
        params = self.params
        if robot.n_joints != 6:
            raise UserError(
                f"RTDE carries 6 joints; the robot {robot.name} has {robot.n_joints}. Use "
                "source=rtde with a 6-joint UR robot model."
            )
        if params.trajectory_path is not None:
            trajectory = load_trajectory(
                resolve_launch_path(params.trajectory_path), robot.n_joints
            )
        if trajectory is not None:
            report = check_trajectory(
                robot, trajectory, params.floor_z_m, params.torque_fraction, params.check_rate_hz
            )
            for line in report.lines():
                self.log(line)
            require_safe(report)
        elif params.confirm_motion:
            raise UserError(
                "source.confirm_motion=true but there is no trajectory to play: give "
                "source.trajectory_path=FILE or let the engine design an excitation."
            )
        duration = params.duration_s or (trajectory.duration if trajectory is not None else None)
        if duration is None:
            raise UserError(
                "Nothing tells how long to record: give source.duration_s=SECONDS (or a "
                "trajectory, whose duration is then used)."
            )
        if params.confirm_motion and params.require_rehearsal:
            directory = params.rehearsal_dir
            require_passed_rehearsal(
                robot, Path(resolve_launch_path(directory)) if directory else None
            )

        path = self._recording_path(role)
        receive, torque_mode, torque_source = self._connect()
        self.log(f"torque from {torque_source}")
        if trajectory is not None:
            self._check_start_move(robot, receive, trajectory)
        recording = LiveRecording(
            lambda: self._connect(torque_mode is not None)[0],
            receive,
            str(path),
            robot.n_joints,
            torque_mode,
            RecordingSettings(
                rate_hz=params.frequency_hz,
                timeout_s=params.timeout_s,
                reconnect_attempts=params.reconnect_attempts,
                reconnect_delay_s=params.reconnect_delay_s,
                flush_interval_s=params.flush_interval_s,
            ),
            torque_source,
            self.log,
            side_channel=lambda: TorqueStream(params.host, robot.n_joints, params.frequency_hz),
        )
        motion: dict[str, Any] = {"confirmed": params.confirm_motion}
        try:
            if params.confirm_motion:
                assert trajectory is not None
                motion.update(self._move_and_record(trajectory, recording))
            else:
                checked = "the trajectory was checked and " if trajectory is not None else ""
                self.log(
                    f"DRY RUN (source.confirm_motion=false): {checked}nothing was sent to the "
                    "robot's control interface. Recording what the robot does for "
                    f"{duration:.1f} s into {path}"
                )
                recording.run(duration, reconnect=params.reconnect_attempts > 0)
        except RecordingLost as error:
            summary = recording.close()
            raise UserError(self._lost_message(recording, summary, str(error), motion)) from None
        except BaseException:
            recording.close()
            raise
        summary = recording.close()
        self.log(
            f"recorded {summary['samples_written']} samples at {summary['achieved_rate_hz']:.1f}"
            f" Hz (nominal {params.frequency_hz:g} Hz), {summary['dropped_samples']} dropped, "
            f"{summary['reconnects']} reconnection(s): {path}"
        )
        return self._dataset(robot, path, summary, motion, role)

    def connect(self) -> tuple[Any, str | None, str]:
        """A connected receive interface for listening only (mode=online): the interface, how
        torque is read ("getter", "side" or None: from the currents) and its description."""
        return self._connect()

    # ------------------------------------------------------------------ helpers
    def _connect(self, with_torque: bool | None = None) -> tuple[Any, str | None, str]:
        """A connected receive interface, how torque is recorded ("getter", "side" or None)
        and a description of the torque source."""
        params = self.params
        check_reachable(params.host, params.connect_timeout_s)
        want = params.torque != "actual_current" if with_torque is None else with_torque
        try:
            receive = self.receive_factory(
                params.host, params.frequency_hz, receive_variables(want)
            )
        except RuntimeError as error:
            if _NOT_FOUND_TEXT not in str(error):
                raise unreachable(params.host, f"ur_rtde failed to connect ({error})") from None
            if not want or params.torque == "actual_current_as_torque":
                raise UserError(
                    f"The controller at {params.host} does not offer fields this recording "
                    f"needs ({str(error).splitlines()[0]}). actual_current_as_torque needs "
                    "PolyScope >= 5.23: update the robot software, or record currents with "
                    "source.torque=actual_current source.current_to_torque=[k_0,...] (Nm/A)."
                ) from None
            return self._connect(with_torque=False)
        if not want:
            if params.current_to_torque is None:
                self._disconnect(receive)
                raise UserError(
                    f"The controller at {params.host} does not offer actual_current_as_torque "
                    "(PolyScope >= 5.23), so torques must come from the motor currents: give "
                    "source.current_to_torque=[k_0,...,k_5] (Nm/A per joint)."
                )
            gains = ", ".join(f"{k:g}" for k in params.current_to_torque)
            return receive, None, f"actual_current × source.current_to_torque [{gains}] Nm/A"
        mode = "getter" if hasattr(receive, TORQUE_GETTER) else "side"
        via = (
            ""
            if mode == "getter"
            else " (ur_rtde's Python binding has no getter: a second RTDE connection of ours)"
        )
        return receive, mode, f"{TORQUE_FIELD} (Nm, measured by the controller){via}"

    @staticmethod
    def _disconnect(receive: Any) -> None:
        try:
            receive.disconnect()
        except RuntimeError:
            pass

    def _recording_path(self, role: str) -> Path:
        if self.params.recording_path is not None:
            path = Path(resolve_launch_path(self.params.recording_path))
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = recording_directory() / f"rtde_{role}_{stamp}.csv"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(
                f"Cannot create the folder of the recording {path} (source.recording_path): "
                f"{error.strerror}."
            ) from None
        if path.exists():
            raise UserError(
                f"The recording file {path} (source.recording_path) exists already; a recording "
                "never overwrites one. Give another path or move the old file."
            )
        return path

    def _check_start_move(self, robot: RobotModel, receive: Any, trajectory: Trajectory) -> None:
        """The moveJ from the current pose to the start pose must clear the floor too."""
        current = np.asarray(receive.getActualQ(), dtype=float)
        start = np.asarray(trajectory.evaluate(np.array([0.0]))[0][0])
        clearance, frame = check_joint_move(robot, current, start, self.params.floor_z_m)
        distance = float(np.abs(start - current).max())
        self.log(
            f"start pose {distance:.3f} rad away (largest joint move); floor clearance on the "
            f"way {clearance:.3f} m (frame '{frame}')"
        )
        if clearance < 0 and self.params.confirm_motion:
            raise UserError(
                f"The move from the robot's current pose to the trajectory's start would take "
                f"frame '{frame}' {-clearance:.3f} m below the floor plane "
                f"(source.floor_z_m={self.params.floor_z_m}). Nothing was sent: jog the robot "
                "to a pose above the start first."
            )

    def _move_and_record(self, trajectory: Trajectory, recording: LiveRecording) -> dict:
        params = self.params
        settings = ServoSettings(
            rate_hz=params.servo_rate_hz,
            lookahead_time=params.lookahead_time,
            gain=params.gain,
            movej_speed=params.movej_speed,
            movej_acceleration=params.movej_acceleration,
        )
        tail_s = 0.5  # keep recording while the robot settles after the last command
        thread = RecordingThread(recording, trajectory.duration + 60.0)
        control = self.control_factory(params.host)
        self.log(
            f"MOVING the robot (source.confirm_motion=true): moveJ to the start pose at "
            f"{params.movej_speed:g} rad/s, then servoJ at {params.servo_rate_hz:g} Hz for "
            f"{trajectory.duration:.1f} s"
        )

        def abort() -> str | None:
            if recording.lost.is_set():
                return f"the RTDE receive connection was lost ({recording.error})"
            return None

        try:
            report = play(control, trajectory, settings, abort, on_start=thread.start)
            time.sleep(tail_s)
        except PlaybackAborted as error:
            self.log(f"motion aborted and the robot told to stop: {error}")
            raise RecordingLost(str(error)) from None
        except KeyboardInterrupt:
            self.log("Ctrl-C: motion aborted and the robot told to stop (servoStop, stopScript)")
            raise
        finally:
            thread.stop.set()
            if thread.is_alive():
                thread.join()
            try:
                control.disconnect()
            except Exception:  # noqa: BLE001 (the robot is already stopped)
                pass
        if thread.failure is not None:
            raise thread.failure
        return {"servo_commands": report.commands, "stop_commanded": report.stop_commanded}

    def _lost_message(
        self, recording: LiveRecording, summary: dict, error: str, motion: dict
    ) -> str:
        stopped = (
            " The robot was told to stop (servoStop, stopScript)."
            if motion.get("confirmed")
            else " Nothing had been sent to the robot (dry run)."
        )
        attempts = self.params.reconnect_attempts
        retry = (
            f" Reconnecting failed after {attempts} attempt(s)."
            if attempts and not motion.get("confirmed")
            else ""
        )
        usable = (
            f" To identify from what was kept: source=csv source.path={summary['path']}."
            if summary["samples_written"]
            else ""
        )
        return (
            f"The RTDE connection to {self.params.host} was lost ({error}).{stopped}{retry} "
            f"What was kept: {recording.kept()} ({summary['samples_written']} rows, each "
            f"complete).{usable} Check the robot's network and that it is in remote control, "
            "then run again."
        )

    def _dataset(
        self, robot: RobotModel, path: Path, summary: dict, motion: dict, role: str
    ) -> Dataset:
        params = self.params
        torque_column = (
            TORQUE_FIELD if summary["torque_source"].startswith(TORQUE_FIELD) else "actual_current"
        )
        prefix = "source." if role == "identification" else "validation."
        if summary["samples_written"] < 2:
            raise UserError(
                f"The RTDE recording {path} holds {summary['samples_written']} sample(s): the "
                f"controller at {params.host} sent (almost) nothing. Check that the robot is "
                "powered on and not in a protective stop."
            )
        dataset = read_csv_log(
            str(path),
            tuple(robot.joint_names),
            current_to_torque=params.current_to_torque,
            torque_column=torque_column,
            config_prefix=prefix,
        )
        dataset.metadata.update(
            source="rtde",
            host=params.host,
            role=role,
            acquisition={**summary, "motion": motion},
        )
        return dataset


@hookimpl
def register_data_sources(register) -> None:
    register("rtde", RtdeSource, RtdeSourceParams)
