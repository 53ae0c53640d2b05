"""The identification pipeline, top to bottom.

robot model -> excitation trajectory -> data (identification + validation) -> preprocessing
-> [nonlinear friction fit] -> regressor and base parameters -> estimation -> prediction ->
residual fusion -> metrics -> truth comparison -> physical check -> twin write-back.
Each step is one call into the module (or plugin) that does it, in `identify/` (and `twin/`);
`job.py` writes the result into the run directory. `closed_loop.py` repeats the steps
(`design_excitation`, `acquire_validation`, `identify`) with new excitations.
"""

from __future__ import annotations

from typing import Any

from ident_framework.config.run_config import RunConfig
from ident_framework.data.checks import check_recordings, drop_untrusted
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import preprocess
from ident_framework.hookspecs import ConditionObjective, Trajectory
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.identify.friction_fit import fit_nonlinear_friction, shape_for_tuning
from ident_framework.identify.linear_problem import build_problem, estimate, require_samples
from ident_framework.identify.load_friction import (
    fit_with_load,
    load_friction_metrics,
    resolve_load,
)
from ident_framework.identify.metrics import (
    data_metrics,
    estimator_metrics,
    fit_metrics,
    identifiability_metrics,
)
from ident_framework.identify.prediction import fuse_residual, predict_physical, residual_metrics
from ident_framework.identify.result import (
    Diagnostics,
    IdentificationData,
    IdentificationResult,
    IdentifiedModel,
    StepTimer,
)
from ident_framework.identify.temperature import resolve_temperature
from ident_framework.identify.truth import friction_comparison, truth_metrics
from ident_framework.identify.tuning.friction_variants import select_friction
from ident_framework.identify.tuning.selection import tuning_applies
from ident_framework.model import friction_terms
from ident_framework.model.physical_consistency import physical_check
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import RobotModel
from ident_framework.modes.robot_setup import robot_and_regressor
from ident_framework.twin.write_back import write_back


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
    if config.validation.split is not None:  # its tail
        cut = int(round(recorded.n_samples * (1.0 - config.validation.split.fraction)))
        return recorded.select(slice(0, cut)), recorded.select(slice(cut, None))
    validation_source = config.validation.source.create()
    motion = None
    if validation_source.moves_robot and config.validation.trajectory is not None:
        motion = config.validation.trajectory.create().generate(robot, None, config.seed + 1)
    return recorded, validation_source.acquire(robot, motion, "validation")


def run_pipeline(config: RunConfig, progress: bool = True) -> IdentificationResult:
    timer = StepTimer()
    prepared = prepared_data(config, timer)
    if isinstance(prepared, IdentificationResult):  # a long recording (modes/windowed.py)
        return prepared
    config, robot, builder, train, validation, excitation, truth = prepared
    return identify(config, robot, builder, train, validation, excitation, truth, timer, progress)


Prepared = tuple[RunConfig, RobotModel, RegressorBuilder, Dataset, Dataset, Trajectory | None, Any]


def prepared_data(config: RunConfig, timer: StepTimer) -> Prepared | IdentificationResult:
    """(config with the tuned options, robot, regressor builder, preprocessed identification
    and validation data, excitation or None, the simulation's truth or None). The raw
    recordings stay here: their q, dq (and torque, unless the data's `recorded` are views of
    it) are freed before the regressor (docs/design.md, "Speed: memory"). A long recording is
    identified here in windows (`windowed.runs_windowed`): its result instead."""
    with timer("robot"):
        robot, builder = robot_and_regressor(config)

    source = config.plugins["source"].create()
    excitation = None
    if source.moves_robot:
        with timer("excitation"):
            excitation = design_excitation(config, robot, builder, config.seed)

    # Data: identification recording, and a validation recording (or its held-out tail).
    with timer("data"):
        recorded = source.acquire(robot, excitation, "identification")
        recorded, validation_recorded = acquire_validation(config, robot, recorded)

    # Options chosen on the identification data alone (docs/design.md).
    with timer("checks"):  # of the raw recording, once: for the tuning's folds and below
        checked = check_recordings(recorded, robot.limits, config.checks)
    with timer("tuning"):

        def prepare(config: RunConfig) -> tuple[RunConfig, RegressorBuilder]:
            tuned = tuning_applies(config)
            config = resolve_load(
                resolve_temperature(config, recorded, validation_recorded, tuned), tuned
            )
            builder = regressor_builder(config, robot)
            if tuned and friction_terms.is_nonlinear(builder.friction):
                builder = shape_for_tuning(config, builder, recorded)  # at the data's shape
            return config, builder

        if tuning_applies(config):
            config, builder = select_friction(config, robot, recorded, checked, prepare)
        else:
            config, builder = prepare(config)
    from ident_framework.modes.windowed import identify_windowed, runs_windowed

    in_windows = runs_windowed(config, builder, recorded, excitation)
    with timer("preprocessing"):  # a windowed recording: window by window, later
        train = None if in_windows else preprocess(recorded, config.preprocessing)
        validation = preprocess(validation_recorded, config.preprocessing)
    with timer("checks"):  # untrusted samples leave estimation and scoring, after filtering
        if train is not None:
            train = drop_untrusted(recorded, train, robot.limits, config.checks, checked)
        validation = drop_untrusted(validation_recorded, validation, robot.limits, config.checks)
    if train is None:
        return identify_windowed(config, robot, builder, recorded, validation, checked, timer)
    truth = recorded.metadata.get("truth")
    return config, robot, builder, train, validation, excitation, truth


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
) -> IdentificationResult:
    """From preprocessed identification and validation data to the identified parameters,
    their predictions and metrics. `truth`: the simulated robot's true parameters (None for a
    real robot); `excitation`: the (last) trajectory the identification data followed."""
    plugins, chunk_size, settings = config.plugins, config.chunk_size, config.base_parameters
    data = IdentificationData(train, validation, excitation)
    require_samples(train, builder.n_parameters, "identification")
    # Nonlinear friction parameters first (variable projection); then the linear
    # identification with the friction at the fitted values.
    friction_fit = None
    if friction_terms.is_nonlinear(builder.friction):
        with timer("friction_fit"):
            friction_fit = fit_nonlinear_friction(
                builder, train, chunk_size, settings.tolerance, progress
            )
        builder = builder.with_nonlinear(friction_fit.values)

    def fit(builder: RegressorBuilder) -> tuple:
        with timer("regressor"):
            problem, base, cond = build_problem(
                builder, train, chunk_size, settings.tolerance, progress, settings.method
            )
        with timer("estimation"):
            estimator, theta = estimate(plugins["estimator"], problem, base)
        return problem, base, cond, estimator, theta

    # A load-dependent friction term: refit with tau_load from the fit until it settles (the
    # kept rows are then the last fit's).
    load_fit = None
    if builder.load_dependent:
        builder, fitted, load_fit = fit_with_load(builder, fit)
    else:
        fitted = fit(builder)
    problem, base, cond, estimator, theta = fitted
    kept = None if load_fit is not None else problem.kept_rows
    with timer("prediction"):
        predictions = predict_physical(builder, data.splits(), theta, chunk_size, kept)
    if problem.kept_rows is not None:  # predicted: what it kept is freed before the metrics
        problem.kept_rows.release()
    residual = plugins["residual"].create()
    out_of_range: dict[str, dict[str, Any]] = {}
    if residual.active:
        with timer("residual"):
            out_of_range = fuse_residual(residual, builder, theta, data, predictions, chunk_size)

    metrics: dict[str, Any] = {
        "identifiability": identifiability_metrics(
            base, cond, estimator, settings.warn_relative_std_percent
        ),
        **{
            name: fit_metrics(
                split, predictions[name], robot.limits.velocity, out_of_range.get(name)
            )
            for name, split in data.splits().items()
        },
        **residual_metrics(residual),
        **estimator_metrics(estimator),
    }
    # Simulated robots know their true parameters: how far is the fit from the truth?
    truth_theta, truth_section = truth_metrics(
        builder, truth, validation, metrics["validation"]["physical"]["rmse"], chunk_size,
        slow_per_joint=friction_fit is not None,
    )  # fmt: skip
    if truth_section is not None:
        metrics["truth"] = truth_section
    if friction_fit is not None:
        metrics["friction_fit"] = friction_fit.to_dict(list(robot.joint_names))
        metrics["friction"] = friction_comparison(builder, theta, truth)
    physical = physical_check(
        theta, problem.standard, robot, base, from_base_parameters=estimator.standard_coef_ is None
    )
    metrics["identifiability"]["physically_consistent"] = physical.valid
    # Write-back: the twin carries the identified parameters when they are physically valid.
    twin, twin_section = write_back(
        robot, builder, theta, physical.mass_share, validation,
        predictions["validation"].physical, timer,
    )  # fmt: skip
    metrics.update(twin_section)
    if load_fit is not None:
        metrics["load_friction"] = load_friction_metrics(
            builder, theta, load_fit, validation, predictions["validation"].physical, chunk_size
        )
        if "twin" in metrics:
            metrics["twin"]["load_dependent_friction"] = metrics["load_friction"]["twin"]
    metrics["data"] = data_metrics(train, validation)
    metrics["timing_s"] = timer.seconds
    model = IdentifiedModel(
        robot, builder, base, estimator, theta, residual if residual.active else None, friction_fit
    )
    diagnostics = Diagnostics(cond, truth_theta, physical.violations, timer.seconds)
    return IdentificationResult(config, model, data, predictions, metrics, diagnostics, twin)
