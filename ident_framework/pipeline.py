"""The identification pipeline, top to bottom.

robot model -> excitation trajectory -> data (identification + validation) -> preprocessing
-> regressor and base parameters -> estimation -> residual learner -> predictions and metrics.
Each step is one call into the module (or plugin) that does it; `job.py` writes the results.
`run_pipeline` is the whole flow; `closed_loop.py` repeats its steps (`design_excitation`,
`acquire_validation`, `identify`) with new excitations until the validation fit is good enough.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import friction_terms
from .base_parameters import BaseParameters
from .dataset import Dataset
from .errors import UserError
from .excitation import make_condition_objective
from .friction_fit import FrictionFit, fit_nonlinear_friction
from .identification import build_problem, predict_torque
from .interfaces import ConditionObjective, Trajectory
from .metrics import fusion_gain, slow_motion_metrics, torque_metrics
from .physical_consistency import check_parameters
from .physical_consistency import violations as physical_violations
from .preprocessing import preprocess
from .regressor import RegressorBuilder
from .robot_model import RobotModel, load_robot
from .run_config import RunConfig
from .truth import true_builder, true_friction_physical, true_standard_parameters
from .twin_check import twin_metrics
from .twin_export import identified_dynamics, twin_model, twin_problems


class StepTimer:
    """Wall time per pipeline step, in s."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - start


@dataclass
class Stage:
    """Torque predictions (N, n) in Nm of one model on one dataset."""

    physical: np.ndarray
    fusion: np.ndarray | None = None

    @property
    def final(self) -> np.ndarray:
        return self.physical if self.fusion is None else self.fusion


@dataclass
class PipelineResult:
    config: RunConfig
    robot: RobotModel
    builder: RegressorBuilder
    base: BaseParameters
    estimator: Any
    theta: np.ndarray  # standard parameters (minimum-norm), regressor column order
    cond: float
    excitation: Trajectory | None
    train: Dataset
    validation: Dataset
    predictions: dict[str, Stage]  # "train", "validation"
    metrics: dict[str, Any]
    residual: Any = None  # the fitted residual learner (None: no fusion stage)
    truth_theta: np.ndarray | None = None
    physical_violations: list[str] = field(default_factory=list)  # empty: physically valid
    twin: RobotModel | None = None  # the robot with the identified parameters written back
    twin_refused: list[str] = field(default_factory=list)  # why no twin was written
    twin_prefix: str = ""  # prefix of the twin's file names (a rehearsal's is not the robot's)
    timing: dict[str, float] = field(default_factory=dict)
    friction_fit: FrictionFit | None = None  # nonlinear friction parameters (builder.nonlinear)


def _split_tail(data: Dataset, fraction: float) -> tuple[Dataset, Dataset]:
    cut = int(round(data.n_samples * (1.0 - fraction)))
    return data.select(slice(0, cut)), data.select(slice(cut, None))


def _require_samples(data: Dataset, n_parameters: int, role: str) -> None:
    if data.n_samples < n_parameters:
        where = data.metadata.get("path", data.metadata.get("source", "the recording"))
        raise UserError(
            f"The {role} data ({where}) has {data.n_samples} samples after preprocessing, fewer "
            f"than the {n_parameters} parameters of the model: the identification would be "
            "underdetermined. Record a longer motion (tens of seconds) or use fewer regressor "
            "columns (friction=none, regressor.armature=false)."
        )


def uncertainty_summary(
    names: list[str], values: np.ndarray, std: np.ndarray | None, bound_percent: float
) -> dict[str, Any]:
    """Relative standard deviations (%) and the base parameters above `bound_percent` (the
    summary warns about those; nothing is logged here, so the warning appears once)."""
    if std is None:
        return {"relative_std_percent": None, "poorly_identified": None}
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(values != 0, 100.0 * np.asarray(std) / np.abs(values), np.inf)
    poor = [name for name, r in zip(names, relative, strict=True) if r > bound_percent]
    return {
        "relative_std_percent": relative.tolist(),
        "poorly_identified": poor,
        "relative_std_bound_percent": bound_percent,
    }


def robot_and_regressor(config: RunConfig) -> tuple[RobotModel, RegressorBuilder]:
    """The robot model and its regressor (friction plugin, rotor inertia, offsets) of a run."""
    robot = load_robot(config.robot.model, config.robot.path, config.robot.acceleration_limits)
    friction = config.plugins["friction"]
    model = friction.create()
    friction_terms.check_friction_model(model, friction.info.name, friction.info.distribution)
    builder = RegressorBuilder(
        robot,
        model,
        armature=config.regressor.armature,
        torque_offset=config.regressor.torque_offset,
        parallel_friction=config.preprocessing.parallel_friction(
            friction_terms.is_nonlinear(model)
        ),
    )
    return robot, builder


def design_excitation(
    config: RunConfig,
    robot: RobotModel,
    builder: RegressorBuilder,
    seed: int,
    objective: ConditionObjective | None = None,
) -> Trajectory:
    """The excitation trajectory of the configured generator, searched with `seed` for a low
    `objective` (default: cond of its own base regressor)."""
    if objective is None:
        objective = make_condition_objective(builder, seed=config.seed)
    return config.plugins["trajectory"].create().generate(robot, objective, seed)


def acquire_validation(
    config: RunConfig, robot: RobotModel, recorded: Dataset
) -> tuple[Dataset, Dataset]:
    """(identification data, validation data): the held-out tail of `recorded` with
    validation=split, else `recorded` unchanged and a recording of the validation source
    (moving the robot along its own motion, seeded `config.seed + 1`, when it moves one)."""
    if config.validation.split is not None:
        return _split_tail(recorded, config.validation.split.fraction)
    validation_source = config.validation.source.create()
    motion = None
    if validation_source.moves_robot and config.validation.trajectory is not None:
        motion = config.validation.trajectory.create().generate(robot, None, config.seed + 1)
    return recorded, validation_source.acquire(robot, motion, "validation")


def run_pipeline(config: RunConfig, progress: bool = True) -> PipelineResult:
    timer = StepTimer()
    with timer("robot"):
        robot, builder = robot_and_regressor(config)

    # Excitation: only when the data source moves a robot.
    source = config.plugins["source"].create()
    excitation = None
    if source.moves_robot:
        with timer("excitation"):
            excitation = design_excitation(config, robot, builder, config.seed)

    # Data: identification recording, and a validation recording (or its held-out tail).
    with timer("data"):
        recorded = source.acquire(robot, excitation, "identification")
        recorded, validation_recorded = acquire_validation(config, robot, recorded)

    with timer("preprocessing"):
        train = preprocess(recorded, config.preprocessing)
        validation = preprocess(validation_recorded, config.preprocessing)
    truth = recorded.metadata.get("truth")
    return identify(config, robot, builder, train, validation, excitation, truth, timer, progress)


def identify(
    config: RunConfig,
    robot: RobotModel,
    builder: RegressorBuilder,
    train: Dataset,
    validation: Dataset,
    excitation: Trajectory | None,
    truth: Any,
    timer: StepTimer,
    progress: bool = True,
) -> PipelineResult:
    """From preprocessed identification and validation data to the identified parameters,
    their predictions and metrics. `truth`: the simulated robot's true parameters (None for a
    real robot); `excitation`: the (last) trajectory the identification data followed."""
    plugins = config.plugins
    _require_samples(train, builder.n_parameters, "identification")

    # Nonlinear friction parameters first (variable projection); then the usual linear
    # identification, prediction and validation with the friction at the fitted values.
    friction_fit = None
    if friction_terms.is_nonlinear(builder.friction):
        with timer("friction_fit"):
            friction_fit = fit_nonlinear_friction(
                builder, train, config.chunk_size, config.base_parameters.tolerance, progress
            )
        builder = builder.with_nonlinear(friction_fit.values)

    with timer("regressor"):
        problem, base, cond = build_problem(
            builder,
            train,
            config.chunk_size,
            config.base_parameters.tolerance,
            progress,
            config.base_parameters.method,
        )
    with timer("estimation"):
        estimator = plugins["estimator"].create().fit(problem)
        # Estimators of physical parameters give all of them; others give base parameters.
        standard = getattr(estimator, "standard_coef_", None)
        theta = (
            np.asarray(standard)
            if standard is not None
            else base.to_standard(np.asarray(estimator.coef_))
        )

    with timer("prediction"):
        predictions = {
            "train": Stage(predict_torque(builder, train, theta, config.chunk_size)),
            "validation": Stage(predict_torque(builder, validation, theta, config.chunk_size)),
        }

    residual = plugins["residual"].create()
    out_of_range: dict[str, dict[str, Any]] = {}
    if residual.active:
        with timer("residual"):
            residual.fit(train.q, train.dq, train.ddq, train.tau - predictions["train"].physical)
            for name, data in (("train", train), ("validation", validation)):
                stage = predictions[name]
                stage.fusion = stage.physical + residual.predict(data.q, data.dq, data.ddq)
                fraction = getattr(residual, "out_of_range_fraction_", None)
                if fraction is not None:
                    per_joint = getattr(residual, "out_of_range_per_joint_", None)
                    out_of_range[name] = {
                        "out_of_range_fraction": float(fraction),
                        "out_of_range_per_joint": None if per_joint is None else list(per_joint),
                    }

    metrics: dict[str, Any] = {
        "identifiability": {
            "n_standard": base.n_standard,
            "n_base": base.rank,
            "cond": cond,
            "base_method": base.method,
            **uncertainty_summary(
                base.names,
                np.asarray(estimator.coef_),
                getattr(estimator, "coef_std_", None),
                config.base_parameters.warn_relative_std_percent,
            ),
        }
    }
    speed_limits = robot.limits.velocity
    for name, data in (("train", train), ("validation", validation)):
        stage = predictions[name]
        metrics[name] = {"physical": torque_metrics(data.tau, stage.physical)}
        metrics[name]["physical"]["slow"] = slow_motion_metrics(
            data.tau, stage.physical, data.dq, speed_limits
        )
        if stage.fusion is not None:
            metrics[name]["fusion"] = torque_metrics(data.tau, stage.fusion)
            metrics[name]["fusion"]["slow"] = slow_motion_metrics(
                data.tau, stage.fusion, data.dq, speed_limits
            )
            metrics[name]["fusion_gain"] = fusion_gain(
                metrics[name]["physical"], metrics[name]["fusion"]
            )
            metrics[name]["fusion"].update(out_of_range.get(name, {}))

    # Simulated robots know their true parameters: how far is the fit from the truth?
    truth_theta = true_standard_parameters(builder, truth)
    if truth_theta is not None:
        true_prediction = predict_torque(
            true_builder(builder, truth), validation, truth_theta, config.chunk_size
        )
        true_rmse = torque_metrics(validation.tau, true_prediction)
        identified = metrics["validation"]["physical"]["rmse"]
        metrics["truth"] = {
            "validation_rmse_true_parameters": true_rmse["rmse"],
            "validation_r2_true_parameters": true_rmse["r2"],
            "validation_rmse_per_joint_true_parameters": true_rmse["rmse_per_joint"],
            "rmse_ratio_identified_to_true": identified / true_rmse["rmse"],
        }
        if friction_fit is not None:
            metrics["truth"]["validation_slow_rmse_per_joint_true_parameters"] = (
                slow_motion_metrics(validation.tau, true_prediction, validation.dq, speed_limits)[
                    "rmse_per_joint"
                ]
            )
    if friction_fit is not None:
        metrics["friction_fit"] = friction_fit.to_dict(list(robot.joint_names))
        metrics["friction"] = friction_comparison(builder, theta, truth)
    # Which physical conditions the identified standard parameters break (none: valid links).
    # Parameters from base parameters leave what no torque depends on at zero: a link mass of
    # that kind is reported as not identifiable, not as a negative mass.
    share = base.identifiable_share() if standard is None else None
    violations = physical_violations(
        check_parameters(theta, problem.standard, list(robot.joint_names), 1e-12, share)
    )
    metrics["identifiability"]["physically_consistent"] = not violations

    # Write-back: the twin carries the identified parameters when they are physically valid.
    dynamics = identified_dynamics(robot, builder.parameter_names, theta)
    mass_share = None if share is None else share[: 10 * robot.n_joints : 10]
    twin_refused = twin_problems(robot, dynamics, mass_share)
    twin = None
    if not twin_refused:
        with timer("twin"):
            twin = twin_model(robot, dynamics)
            metrics["twin"] = twin_metrics(
                twin, robot, validation, predictions["validation"].physical
            )
    else:
        metrics["twin_not_written"] = twin_refused  # each link and the condition it breaks
    metrics["data"] = {
        "train_samples": train.n_samples,
        "validation_samples": validation.n_samples,
        "train_duration_s": train.duration,
        "validation_duration_s": validation.duration,
    }
    # Sources that record live (e.g. rtde) report their achieved rate and dropped samples.
    acquisition = train.metadata.get("acquisition")
    if acquisition is not None:
        metrics["data"]["train_acquisition"] = acquisition
    held_out = validation.metadata.get("acquisition")
    if held_out is not None and held_out is not acquisition:  # not the tail of the same one
        metrics["data"]["validation_acquisition"] = held_out
    metrics["timing_s"] = timer.seconds
    return PipelineResult(
        config=config,
        robot=robot,
        builder=builder,
        base=base,
        estimator=estimator,
        theta=theta,
        cond=cond,
        excitation=excitation,
        train=train,
        validation=validation,
        predictions=predictions,
        metrics=metrics,
        truth_theta=truth_theta,
        residual=residual if residual.active else None,
        physical_violations=violations,
        twin=twin,
        twin_refused=twin_refused,
        timing=timer.seconds,
        friction_fit=friction_fit,
    )


def friction_values(builder: RegressorBuilder, theta: np.ndarray) -> np.ndarray:
    """(n, k) the friction model's linear parameters per joint in standard vector theta."""
    n, k = builder.robot.n_joints, len(builder.friction.parameter_names)
    return theta[builder.n_inertial : builder.n_inertial + n * k].reshape(n, k)


def friction_comparison(
    builder: RegressorBuilder, theta: np.ndarray, truth: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Identified friction per joint by physical name (fc Nm, v_s rad/s, ...) and, for a
    simulated robot, the true values of the names its true friction has, with the relative
    error in % (null where the true value is 0)."""
    identified = friction_terms.physical_parameters(
        builder.friction, friction_values(builder, theta), builder.nonlinear
    )
    out: dict[str, Any] = {"identified": {k: v.tolist() for k, v in identified.items()}}
    if truth:
        physical = true_friction_physical(truth)
        true = {k: np.asarray(physical[k], dtype=float) for k in identified if k in physical}
        out["true"] = {k: v.tolist() for k, v in true.items()}
        out["error_percent"] = {
            k: [
                100.0 * (i - t) / t if t != 0 else None
                for i, t in zip(identified[k], np.broadcast_to(v, identified[k].shape), strict=True)
            ]
            for k, v in true.items()
        }
    return out
