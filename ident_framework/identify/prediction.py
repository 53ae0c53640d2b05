"""Prediction and residual fusion steps: the identified physical model's torque on each
dataset, and the residual learner trained on the identification data's residual and added to
the physical prediction (fusion)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import predict_torque
from ident_framework.identify.result import TorquePredictions
from ident_framework.interfaces import ResidualLearner
from ident_framework.model.regressor import RegressorBuilder


def predict_physical(
    builder: RegressorBuilder, splits: dict[str, Dataset], theta: np.ndarray, chunk_size: int
) -> dict[str, TorquePredictions]:
    """The physical model's torque (Nm) on each dataset of `splits`."""
    return {
        name: TorquePredictions(predict_torque(builder, data, theta, chunk_size))
        for name, data in splits.items()
    }


def out_of_range(learner: ResidualLearner) -> dict[str, Any] | None:
    """The learner's range guard after its last `predict` (None: it has none)."""
    fraction = learner.out_of_range_fraction_
    if fraction is None:
        return None
    per_joint = learner.out_of_range_per_joint_
    return {
        "out_of_range_fraction": float(fraction),
        "out_of_range_per_joint": None if per_joint is None else list(per_joint),
    }


def fuse_residual(
    learner: ResidualLearner,
    splits: dict[str, Dataset],
    predictions: dict[str, TorquePredictions],
) -> dict[str, dict[str, Any]]:
    """Train `learner` on the "train" residual (measured − physical, Nm), set each
    prediction's fusion; returns the range guard's figures per dataset (those it reports)."""
    train = splits["train"]
    learner.fit(train.q, train.dq, train.ddq, train.tau - predictions["train"].physical)
    guard: dict[str, dict[str, Any]] = {}
    for name, data in splits.items():
        prediction = predictions[name]
        prediction.fusion = prediction.physical + learner.predict(data.q, data.dq, data.ddq)
        figures = out_of_range(learner)
        if figures is not None:
            guard[name] = figures
    return guard
