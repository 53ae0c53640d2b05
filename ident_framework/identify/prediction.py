"""Prediction and residual fusion steps: the physical model's torque on each dataset, and the
residual learner trained on the identification residual and added to it (fusion)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset, recording_rows
from ident_framework.hookspecs import ResidualInputs, ResidualLearner
from ident_framework.identify.linear_problem import KeptFriction, KeptRows, predict_torque
from ident_framework.identify.result import IdentificationData, TorquePredictions
from ident_framework.model.regressor import RegressorBuilder


def predict_physical(
    builder: RegressorBuilder,
    splits: dict[str, Dataset],
    theta: np.ndarray,
    chunk_size: int,
    kept: KeptRows | KeptFriction | None = None,
) -> dict[str, TorquePredictions]:
    """The physical model's torque (Nm) on each dataset of `splits`; `kept`: what the problem
    kept (`LinearProblem.kept_rows`), used for the dataset it is of."""
    return {
        name: TorquePredictions(predict_torque(builder, data, theta, chunk_size, kept))
        for name, data in splits.items()
    }


def residual_inputs(
    builder: RegressorBuilder,
    data: Dataset,
    theta: np.ndarray,
    physical: np.ndarray,
    chunk_size: int,
) -> ResidualInputs:
    """The residual learner's inputs on `data`: its joint state and the physical torque
    `physical` (Nm) split into gravity Y(q, 0, 0) θ (with any offset), friction and the rest
    (inertial)."""
    zeros = np.zeros_like(data.dq)
    at_rest = dataclasses.replace(data, dq=zeros, ddq=zeros, parallel_filter=None)
    gravity = predict_torque(builder, at_rest, theta, chunk_size)
    k = len(builder.friction.parameter_names)
    frictionless = np.array(theta, dtype=float, copy=True)
    for j in range(builder.robot.n_joints):
        frictionless[builder.own_columns(j)[:k]] = 0.0
    frictionless[builder.coupled_friction_columns()] = 0.0
    friction = physical - predict_torque(builder, data, frictionless, chunk_size)
    return ResidualInputs(
        q=data.q, dq=data.dq, ddq=data.ddq, tau_physical=physical, tau_gravity=gravity,
        tau_inertial=physical - gravity - friction, tau_friction=friction,
    )  # fmt: skip


def recordings(inputs: ResidualInputs, residual: np.ndarray, data: Dataset):
    """Lists of inputs and residuals, one per recording stacked in `data`
    (`Dataset.recording_index`)."""
    parts = [rows for _, rows in recording_rows(data.recording_index)] or [slice(None)]
    return [inputs.select(rows) for rows in parts], [residual[rows] for rows in parts]


def learner_figures(learner: ResidualLearner) -> dict[str, Any] | None:
    """The learner's figures after its last `predict` (range guard and its own report);
    None when it reports none."""
    figures: dict[str, Any] = {}
    fraction = learner.out_of_range_fraction_
    if fraction is not None:
        per_joint = learner.out_of_range_per_joint_
        figures["out_of_range_fraction"] = float(fraction)
        figures["out_of_range_per_joint"] = None if per_joint is None else list(per_joint)
    figures.update(learner.prediction_report_ or {})
    return figures or None


def fuse_residual(
    learner: ResidualLearner,
    builder: RegressorBuilder,
    theta: np.ndarray,
    data: IdentificationData,
    predictions: dict[str, TorquePredictions],
    chunk_size: int,
) -> dict[str, dict[str, Any]]:
    """Train `learner` on the "train" residual (measured − physical, Nm, per recording), set
    each prediction's fusion; the learner's figures per dataset (where it reports some)."""
    splits = data.splits()
    inputs = {
        name: residual_inputs(builder, data, theta, predictions[name].physical, chunk_size)
        for name, data in splits.items()
    }
    train = splits["train"]
    learner.fit(*recordings(inputs["train"], train.tau - predictions["train"].physical, train))
    figures: dict[str, dict[str, Any]] = {}
    for name in splits:
        prediction = predictions[name]
        prediction.fusion = prediction.physical + learner.predict(inputs[name])
        reported = learner_figures(learner)
        if reported is not None:
            figures[name] = reported
    return figures


def residual_metrics(learner: ResidualLearner) -> dict[str, Any]:
    """metrics.json `residual`: the active learner's own report, when it gives one."""
    report = learner.report_ if learner.active else None
    return {} if report is None else {"residual": report}
