"""Twin write-back step: the robot's model with the identified parameters, when they are
physically valid, checked in MuJoCo against the validation data."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.result import TwinWriteBack
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.twin.check import twin_metrics
from ident_framework.twin.export import (
    coupling_note,
    identified_dynamics,
    twin_model,
    twin_problems,
)

log = logging.getLogger(__name__)


def write_back(
    robot: RobotModel,
    builder: RegressorBuilder,
    theta: np.ndarray,
    mass_share: np.ndarray | None,
    validation: Dataset,
    physical_prediction: np.ndarray,
    timed: Callable[[str], AbstractContextManager[Any]],
) -> tuple[TwinWriteBack, dict[str, Any]]:
    """(the twin or why it was refused, its metrics.json entry: `twin` (`twin_metrics`, and
    `coupling` when a coupled transmission is only approximated) or `twin_not_written`).
    `timed(step)` times the write and check (a `StepTimer`)."""
    dynamics = identified_dynamics(robot, builder.parameter_names, theta, builder.couplings)
    refused = twin_problems(robot, dynamics, mass_share)
    if refused:
        return TwinWriteBack(None, refused), {"twin_not_written": refused}
    with timed("twin"):
        twin = twin_model(robot, dynamics)
        metrics = twin_metrics(twin, robot, validation, physical_prediction)
    note = coupling_note(robot, builder.couplings)
    if note is not None:
        log.warning("twin: %s", note)
        metrics = {**metrics, "coupling": note}
    return TwinWriteBack(twin, []), {"twin": metrics}
