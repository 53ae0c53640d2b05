"""What the estimator process of mode=online sets up before its first sample: the checks of the
source, the starting parameters, the sample stream (scheduling: `scheduling.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.errors import UserError
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.modes.pipeline import design_excitation
from ident_framework.reports.run_files import ONLINE_FOLDER, ONLINE_RECORDING
from ident_framework.rtde.emulated_arm import is_periodic
from ident_framework.rtde.playback import default_motion

STREAMING_SOURCES = ("mujoco", "csv", "rtde")


def say(message: str) -> None:
    """A line of the estimator process on the service's output."""
    print(f"[online] {message}", flush=True)


def check_source(config: RunConfig) -> str:
    """The name of the source, when mode=online can stream from it (else a UserError)."""
    source_name = config.plugins["source"].info.name
    if source_name not in STREAMING_SOURCES:
        raise UserError(
            f"mode=online streams from source=mujoco, csv or rtde; the data source "
            f"'{source_name}' (source=...) reads whole recordings only."
        )
    if config.online.payload_change is not None and source_name != "mujoco":
        raise UserError(
            "online.payload_change plants a payload change in the simulated robot: it needs "
            f"source=mujoco (this run uses source={source_name}). Drop it for a real robot "
            "or a recording."
        )
    return source_name


def load_initial_parameters(run: str, parameter_names: list[str]) -> np.ndarray:
    """Standard parameters of an earlier run (`online.initial_run=DIR`)."""
    from ident_framework.modes.predict import load_saved_model

    try:
        saved = load_saved_model(run)
    except UserError as error:
        raise UserError(f"online.initial_run={run}: {error}") from None
    if list(saved.builder.parameter_names) != list(parameter_names):
        raise UserError(
            f"The run {run} (online.initial_run) was identified with other regressor columns "
            f"({len(saved.builder.parameter_names)} parameters, e.g. "
            f"{saved.builder.parameter_names[-3:]}) than this run ({len(parameter_names)}, "
            f"e.g. {parameter_names[-3:]}): use the same robot, friction and regressor options, "
            "or start from the nominal model (online.initial_run=null)."
        )
    return saved.theta


def open_stream(
    config: RunConfig, robot: RobotModel, builder: RegressorBuilder, run_dir: Path
) -> Any:
    """The sample stream of the run's source (`streams.py`, `rtde_stream.py`)."""
    online = config.online
    name = config.plugins["source"].info.name
    params = config.plugins["source"].params
    if name == "mujoco":
        from ident_framework.online.streams import MujocoStream

        if params.model_path is not None:
            raise UserError(
                "mode=online simulates the seeded robot of source=mujoco (source.seed, "
                "source.payload_mass_kg, ...); source.model_path is not supported there. "
                "Drop source.model_path, or stream a recording of that model with source=csv."
            )
        if online.trajectory == "excitation":
            say("designing the excitation trajectory (trajectory=...; looped)")
            trajectory = design_excitation(config, robot, builder, config.seed)
        elif online.trajectory == "validation_motion":
            trajectory = validation_motion(config, robot)
        else:
            trajectory = default_motion(robot)
        return MujocoStream(
            robot, trajectory, params, online.time_factor, online.max_lag_s, online.payload_change
        )
    if name == "csv":
        from ident_framework.online.streams import CsvStream

        data = config.plugins["source"].create().acquire(robot, None, "identification")
        return CsvStream(data, online.time_factor, online.max_lag_s)
    from ident_framework.online.rtde_stream import RtdeStream

    source = config.plugins["source"].create()
    source.log = say
    recording = run_dir / ONLINE_FOLDER / ONLINE_RECORDING
    return RtdeStream(source, robot.n_joints, recording, online.max_lag_s, say)


def validation_motion(config: RunConfig, robot: RobotModel) -> Any:
    """online.trajectory=validation_motion: the motion of validation.trajectory (by default
    point-to-point moves with slow segments and holds), seeded as a batch run's validation
    (config.seed + 1), played there and back so that it loops."""
    choice = config.validation.trajectory
    if choice is None:
        raise UserError(
            "online.trajectory=validation_motion streams the validation motion of "
            "validation=mujoco (validation.trajectory); this run's validation has none. Add "
            "validation=mujoco, or use online.trajectory=excitation or default_motion."
        )
    say(f"validation motion (validation.trajectory={choice.info.name}; there and back, looped)")
    motion = choice.create().generate(robot, None, config.seed + 1)
    there_and_back = getattr(motion, "there_and_back", None)
    if there_and_back is not None:
        return there_and_back()
    if not is_periodic(motion):
        raise UserError(
            f"online.trajectory=validation_motion: the validation motion of "
            f"validation.trajectory={choice.info.name} does not end where it starts, at rest, "
            "so it cannot loop. Use validation.trajectory=point_to_point, or "
            "online.trajectory=excitation or default_motion."
        )
    return motion
