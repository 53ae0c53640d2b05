"""What an identification produces (`modes/pipeline.identify`): the identified model, its
data, torque predictions, metrics (metrics.json), diagnostics and the twin write-back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.progress import stage_line

if TYPE_CHECKING:
    from ident_framework.config.run_config import RunConfig
    from ident_framework.data.dataset import Dataset
    from ident_framework.hookspecs import Estimator, ResidualLearner, Trajectory
    from ident_framework.identify.friction_fit import FrictionFit
    from ident_framework.model.base_parameters import BaseParameters
    from ident_framework.model.regressor import RegressorBuilder
    from ident_framework.model.robot import RobotModel


class StepTimer:
    """Wall time per pipeline step, in s, each reported as it ends (`progress.stage_line`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.seconds[step] = self.seconds.get(step, 0.0) + elapsed
            stage_line(step, elapsed)


@dataclass
class TorquePredictions:
    """Joint torque predictions (N, n) in Nm of the identified model on one dataset: the
    physical model's, and the fusion (physical + residual learner) when a learner ran."""

    physical: np.ndarray
    fusion: np.ndarray | None = None

    @property
    def final(self) -> np.ndarray:
        """The prediction the run reports as its own (`tau_pred`): fusion when present."""
        return self.physical if self.fusion is None else self.fusion


@dataclass
class IdentifiedModel:
    """The identified model. theta: standard parameters in `builder.parameter_names` order;
    builder carries the fitted nonlinear friction values (`friction_fit`: how; None for a
    linear model); residual: the fitted residual learner (None: no fusion)."""

    robot: RobotModel
    builder: RegressorBuilder
    base: BaseParameters
    estimator: Estimator
    theta: np.ndarray
    residual: ResidualLearner | None = None
    friction_fit: FrictionFit | None = None


@dataclass
class IdentificationData:
    """The preprocessed identification (`train`) and validation data, and the (last)
    excitation trajectory the identification data followed (None: a recording was read)."""

    train: Dataset
    validation: Dataset
    excitation: Trajectory | None = None

    def splits(self) -> dict[str, Dataset]:
        return {"train": self.train, "validation": self.validation}


@dataclass
class Diagnostics:
    """cond: of the identification data's base regressor; truth_theta: a simulated robot's
    true standard parameters (else None); physical_violations: the conditions the identified
    links break; timing: s per pipeline step."""

    cond: float
    truth_theta: np.ndarray | None = None
    physical_violations: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)


@dataclass
class TwinWriteBack:
    """The robot with the identified parameters written back (None when not physically
    valid), and why it was refused (each link and the condition it breaks)."""

    model: RobotModel | None = None
    refused: list[str] = field(default_factory=list)


@dataclass
class IdentificationResult:
    """One identification: config, identified model, data, predictions on both datasets
    ("train", "validation"), metrics (the content of metrics.json), diagnostics, twin."""

    config: RunConfig
    model: IdentifiedModel
    data: IdentificationData
    predictions: dict[str, TorquePredictions]
    metrics: dict[str, Any]
    diagnostics: Diagnostics
    twin: TwinWriteBack
