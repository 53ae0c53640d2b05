"""Built-in data source `rtde`: a real UR e-Series robot through `ur_rtde` (`source=rtde
source.host=192.168.x.x`).

`acquire`: connects (an unreachable host fails at once); checks the whole motion (moveJ to
the start, then the trajectory) against the joint limits and `workspace`, refusing a violating
motion with the same message in a dry and a confirmed run; records to a CSV in the contract
(`rtde/recorder.py`); only with `confirm_motion=true` moves the robot (rehearsal gate, moveJ,
servoJ; servoStop + stopScript on any exception, Ctrl-C or lost connection), else records
what the robot does; reads the CSV back. The recording stays on disk (`recording_path`,
default the run directory) for `source=csv source.path=<the recording>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.hookspecs import Trajectory, hookimpl
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model.motion_safety import MotionVerdict, SafetyLimits, motion_verdict
from ident_framework.model.robot import RobotModel
from ident_framework.model.workspace import WorkspaceParams
from ident_framework.params import Params, param
from ident_framework.rtde.connection import (
    check_reachable,
    current_pose,
    default_control,
    default_receive,
    lost_connection_message,
    unreachable,
)
from ident_framework.rtde.playback import PlaybackAborted, ServoSettings, load_trajectory, play
from ident_framework.rtde.recorder import (
    TORQUE_FIELD,
    TORQUE_GETTER,
    LiveRecording,
    RecordingLost,
    RecordingSettings,
    RecordingThread,
    receive_variables,
    recording_directory,
)
from ident_framework.rtde.rehearsal_gate import require_passed_rehearsal
from ident_framework.rtde.torque_stream import TorqueStream

TORQUE_MODES = ("auto", "actual_current_as_torque", "actual_current")
_NOT_FOUND_TEXT = "not found by the controller"


def _blank_is_none(value: Any) -> Any:
    return None if not str(value).strip() else value


def _host_given(params: RtdeSourceParams) -> None:
    if not params.host or not str(params.host).strip() or str(params.host).strip() == "???":
        raise ValueError("host is required: give source.host=<the robot's IP address>")
    params.host = str(params.host).strip()


def _current_needs_constants(params: RtdeSourceParams) -> None:
    if params.torque == "actual_current" and params.current_to_torque is None:
        raise ValueError("torque=actual_current needs current_to_torque=[k_0,...] (Nm/A per joint)")


def _floor_moved(params: RtdeSourceParams) -> None:
    if params.floor_z_m is not None:
        raise ValueError(
            "floor_z_m is now trajectory.workspace.floor_z_m, one floor for the excitation "
            "design and this check (source.workspace follows trajectory.workspace): give "
            f"trajectory.workspace.floor_z_m={params.floor_z_m:g} instead"
        )


def _default_workspace(params: RtdeSourceParams) -> None:
    if params.workspace is None:  # the check always has a workspace: the default one
        params.workspace = WorkspaceParams()


@dataclass
class RtdeSourceParams(Params):
    """See conf/source/rtde.yaml for every key with its unit and default."""

    host: str | None = None
    frequency_hz: float = param(500.0, gt=0, le=500, unit="Hz")
    torque: str = param("auto", choices=TORQUE_MODES)
    current_to_torque: list[float] | None = param(None, each=True, gt=0, unit="Nm/A")
    trajectory_path: str | None = param(None, convert=_blank_is_none)
    duration_s: float | None = param(None, gt=0, unit="s")
    recording_path: str | None = param(None, convert=_blank_is_none)
    confirm_motion: bool = False
    require_rehearsal: bool = True
    rehearsal_dir: str | None = param(None, convert=_blank_is_none)
    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
    floor_z_m: float | None = None  # replaced by workspace.floor_z_m (trajectory.workspace)
    torque_fraction: float = param(0.8, gt=0, le=1)
    check_rate_hz: float = param(250.0, gt=0, unit="Hz")
    servo_rate_hz: float = param(500.0, gt=0, unit="Hz")
    lookahead_time: float = param(0.1, ge=0.03, le=0.2, unit="s")
    gain: float = param(300.0, ge=100, le=2000)
    movej_speed: float = param(0.2, gt=0, le=1, unit="rad/s", note="slow")
    movej_acceleration: float = param(0.5, gt=0, unit="rad/s²")
    connect_timeout_s: float = param(3.0, gt=0, unit="s")
    timeout_s: float = param(1.0, gt=0, unit="s")
    reconnect_attempts: int = param(3, ge=0)
    reconnect_delay_s: float = param(1.0, ge=0, unit="s")
    flush_interval_s: float = param(0.1, gt=0, unit="s")
    rules = (_host_given, _current_needs_constants, _floor_moved, _default_workspace)


def safety_limits(params: RtdeSourceParams) -> SafetyLimits:
    """What the source checks a motion against (the same in a dry and a confirmed run)."""
    return SafetyLimits(
        workspace=params.workspace,
        torque_fraction=params.torque_fraction,
        check_rate_hz=params.check_rate_hz,
        workspace_key="trajectory.workspace",
        torque_key="source.torque_fraction",
    )


def refusal_ending(confirmed: bool) -> str:
    """The sentence a refusal ends with: the verdict is the same, only this differs."""
    if confirmed:
        return " Nothing was sent to the robot."
    return (
        " This was a dry run (source.confirm_motion=false): nothing was sent to the robot, and "
        "a run with source.confirm_motion=true refuses this motion with the same message."
    )


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
        trajectory, duration = self._motion_and_duration(robot, trajectory)
        path = self._recording_path(role)
        receive, torque_mode, torque_source = self.connect()
        try:
            if trajectory is not None:
                self.check_motion(robot, trajectory, receive)
            if params.confirm_motion and params.require_rehearsal:
                self._require_rehearsal(robot)
            elif trajectory is not None and params.require_rehearsal:
                self._note_rehearsal(robot)
        except BaseException:
            self._disconnect(receive)
            raise
        self.log(f"torque from {torque_source}")
        recording = self._live_recording(robot, receive, path, torque_mode, torque_source)
        motion: dict[str, Any] = {"confirmed": params.confirm_motion}
        try:
            if params.confirm_motion:
                assert trajectory is not None
                motion.update(self._move_and_record(trajectory, recording))
            else:
                checked = (
                    "the motion (the move from the current pose to the start, then the "
                    "trajectory) passed the safety check a confirmed run makes, and "
                    if trajectory is not None
                    else ""
                )
                self.log(
                    f"DRY RUN (source.confirm_motion=false): {checked}nothing was sent to the "
                    "robot's control interface. Recording what the robot does for "
                    f"{duration:.1f} s into {path}"
                )
                recording.run(duration, reconnect=params.reconnect_attempts > 0)
        except RecordingLost as error:
            summary = recording.close()
            message = lost_connection_message(
                params.host,
                str(error),
                recording.kept(),
                summary,
                confirmed=bool(motion.get("confirmed")),
                reconnect_attempts=params.reconnect_attempts,
            )
            raise UserError(message) from None
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

    # ------------------------------------------------------------------ helpers
    def _motion_and_duration(
        self, robot: RobotModel, trajectory: Trajectory | None
    ) -> tuple[Trajectory | None, float]:
        """(the motion to play: `trajectory_path` or the engine's, how long to record in s)."""
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
        if trajectory is None and params.confirm_motion:
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
        return trajectory, duration

    def _live_recording(
        self,
        robot: RobotModel,
        receive: Any,
        path: Path,
        torque_mode: str | None,
        torque_source: str,
    ) -> LiveRecording:
        params = self.params
        return LiveRecording(
            lambda: self.connect(torque_mode is not None)[0],
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

    def connect(self, with_torque: bool | None = None) -> tuple[Any, str | None, str]:
        """A connected receive interface, how torque is recorded ("getter", "side" or None)
        and a description of the torque source (also mode=online's listening connection)."""
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
            return self.connect(with_torque=False)
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

    def check_motion(
        self, robot: RobotModel, trajectory: Trajectory, receive: Any
    ) -> MotionVerdict:
        """The safety verdict on the whole motion, printed; UserError when it refuses it."""
        params = self.params
        current, problem = current_pose(receive, robot.n_joints, params.timeout_s)
        verdict = motion_verdict(
            robot, trajectory, current, safety_limits(params), params.movej_speed,
            params.movej_acceleration, problem,
        )  # fmt: skip
        for line in verdict.lines():
            self.log(line)
        refusal = verdict.refusal()
        if refusal is not None:
            raise UserError(refusal + refusal_ending(params.confirm_motion))
        return verdict

    def _require_rehearsal(self, robot: RobotModel) -> None:
        directory = self.params.rehearsal_dir
        require_passed_rehearsal(robot, Path(resolve_launch_path(directory)) if directory else None)

    def _note_rehearsal(self, robot: RobotModel) -> None:
        """In a dry run: say whether a confirmed run would find the rehearsal it needs."""
        try:
            self._require_rehearsal(robot)
        except UserError as error:
            self.log(f"note: a run with source.confirm_motion=true would stop here: {error}")

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
