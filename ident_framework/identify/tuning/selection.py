"""The selection step of the pipeline (`select_options`): choose options by cross-validation
on the identification recordings (never the validation data), and return the config (and
regressor) with the chosen values, config keys saved to parameters.yaml for `mode=predict`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig, SelectedPlugin
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import preprocessable
from ident_framework.identify.tuning.column_spaces import ColumnSpaces, load_columns
from ident_framework.identify.tuning.cross_validation import HeldOut
from ident_framework.identify.tuning.folds import plan_folds
from ident_framework.identify.tuning.rules import decide, stability_summary
from ident_framework.identify.tuning.search import (
    Candidate,
    SearchLog,
    candidate_figures,
    choose_prior_weight,
    score_candidate,
    search_columns,
    unless_zero,
)
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import RobotModel
from ident_framework.triangular import one_blas_thread

COULOMB = "coulomb_viscous"  # the friction plugin whose shapes are candidates
REGULARISED = "ls"  # the estimator whose ridge / truncation are candidates
GEOMETRIC = "geometric"  # the estimator whose prior weight is a candidate
NYQUIST_SHARE = 0.9  # cut-off candidates must lie below this share of the Nyquist frequency


@dataclass
class Selection:
    """What the selection chose and measured. chosen: config key -> value; cv_rmse (Nm) of
    the chosen candidate and of the options as configured; least_squares_cv_rmse: the chosen
    columns by least squares when a prior weight was chosen after them (else None); folds: how
    the folds were formed; table: every candidate tried (`SearchLog.rows`)."""

    chosen: dict[str, Any]
    cv_rmse: float
    cv_rmse_per_joint: list[float]
    configured_cv_rmse: float
    least_squares_cv_rmse: float | None
    folds: str
    samples_used: int
    table: list[dict[str, Any]]
    seconds: float
    rule: str = "min"
    cv_se: float = 0.0  # Nm, the chosen candidate's standard error
    fold_names: list[str] = field(default_factory=list)
    fold_rmse: list[float] = field(default_factory=list)  # Nm, the chosen candidate's per fold
    stability: list[dict[str, Any]] = field(default_factory=list)  # `stability_summary`
    # `tuning.friction_models`: per model its CV figures and whether it was chosen
    friction_models: list[dict[str, Any]] = field(default_factory=list)
    windows: int = 0  # windows the rows were read from (`excerpts.py`; 0: recordings whole)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chosen": self.chosen,
            "cv_rmse": self.cv_rmse,
            "cv_rmse_per_joint": self.cv_rmse_per_joint,
            "configured_cv_rmse": self.configured_cv_rmse,
            "least_squares_cv_rmse": self.least_squares_cv_rmse,
            "folds": self.folds,
            "samples_used": self.samples_used,
            "windows": self.windows,
            "candidates": len(self.table),
            "seconds": self.seconds,
            "rule": self.rule,
            "cv_se": self.cv_se,
            # None: a fold with no rows (e.g. no joint ever at rest); JSON has no NaN
            "fold_rmse": {
                name: (value if np.isfinite(value) else None)
                for name, value in zip(self.fold_names, self.fold_rmse, strict=True)
            },
            "stability": self.stability,
            **({"friction_models": self.friction_models} if self.friction_models else {}),
        }


def select_options(
    config: RunConfig,
    robot: RobotModel,
    builder: RegressorBuilder,
    recordings: list[Dataset],
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None = None,
) -> tuple[RunConfig, RegressorBuilder]:
    """(config with the chosen options and `selection` set, its regressor); unchanged when
    tuning is off or the data source is not one of `tuning.sources`. `recordings`:
    the identification recordings as recorded (see `folds.plan_folds`); `checked`: their
    data checks (`data.checks.check_recordings`), when they were run already. BLAS runs
    on one thread throughout (its matrices are small; an idle second thread's wake-up can
    stall a call by ~0.1 s on a busy machine)."""
    if not tuning_applies(config):
        return config, builder
    with one_blas_thread():
        return _select_options(config, robot, builder, recordings, checked)


def _select_options(
    config: RunConfig,
    robot: RobotModel,
    builder: RegressorBuilder,
    recordings: list[Dataset],
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None,
) -> tuple[RunConfig, RegressorBuilder]:
    """`select_options` when the tuning applies."""
    settings = config.tuning
    exact = any(r.ddq is not None for r in recordings)
    started = time.perf_counter()
    plan = plan_folds(
        recordings,
        settings.folds,
        settings.guard_s,
        tuple(dict.fromkeys([*settings.partitions, *settings.shape_partitions])),
        tuple(settings.speed_bands),
        settings.turn_s,
    )
    coulomb = config.plugins["friction"].info.name == COULOMB
    thermal, toggle = _temperature_columns(config, recordings) if coulomb else (False, False)
    regularise = config.plugins["estimator"].info.name == REGULARISED
    start = _configured(config, robot.n_joints)
    friction = (coulomb, thermal, toggle)
    spaces = ColumnSpaces(config, robot, builder, recordings, plan, friction, start, checked)
    log = SearchLog()
    tolerance = config.base_parameters.tolerance
    candidates = _preprocessing_candidates(config, recordings, exact)
    with spaces.parallel(candidates[0]):  # one set of forked workers for the whole search
        best, best_held, best_preprocessing = _search(
            spaces, candidates, start, settings, tolerance, regularise, log
        )
    best_space = spaces.get(best_preprocessing, best.acceleration_lead)
    geometric = config.plugins["estimator"].info.name == GEOMETRIC
    least_squares_rmse = float(best_held.rmse) if geometric else None
    if geometric:  # its weight last, on the columns and preprocessing least squares chose
        weights = sorted(
            {float(config.plugins["estimator"].params.weight), *settings.prior_weights}
        )
        best, best_held = choose_prior_weight(
            best_space, best, weights, tolerance, log, settings.rule, candidates[0]
        )
        per_joint = best_held.rmse_per_joint
    else:
        per_joint = candidate_figures(best_space, best, tolerance, True).rmse_per_joint
    best_rmse = best_held.rmse
    _mark_chosen(log, best, best_rmse)
    chosen_keys = _chosen_keys(best, coulomb, regularise, exact)
    if geometric:
        chosen_keys["estimator.weight"] = float(best.weight)
    if toggle:
        chosen_keys["friction.temperature"] = "on" if best.temperature else "off"
    if coulomb and load_columns(config)[1]:
        chosen_keys["friction.load_dependent"] = "on" if best.load else "off"
    selection = Selection(
        chosen_keys,
        float(best_rmse),
        [float(v) for v in per_joint],
        float(log.rows[0]["cv_rmse"]),  # the first candidate: the options as configured
        least_squares_rmse,
        plan.describe(),
        best_space.factors.samples,
        log.rows,
        time.perf_counter() - started,
        settings.rule,
        float(best_held.se),
        list(plan.layout(tuple(settings.partitions)).names),
        [float(v) for v in best_held.fold_rmse],
        stability_summary(log),
        windows=len(spaces.excerpts or ()),
    )
    tuned = replace(apply_chosen(config, chosen_keys), selection=selection)
    return tuned, regressor_builder(tuned, robot)


def _search(
    spaces: ColumnSpaces,
    candidates: list[tuple[float, bool]],
    start: Candidate,
    settings: Any,
    tolerance: float,
    regularise: bool,
    log: SearchLog,
) -> tuple[Candidate, HeldOut, tuple[float, bool]]:
    """(best candidate, its CV figures, its preprocessing) of the least-squares stages over the
    preprocessing `candidates` (the configured first)."""
    # 1. column options on the configured preprocessing (while the workers build the other
    # spaces); 2. every preprocessing with them; 3. the acceleration lead; 4. the column
    # options again if another preprocessing or lead won.
    configured = candidates[0]
    if spaces.costly_columns:
        first = spaces.get(configured, start.acceleration_lead)
        scores = spaces.scores(configured, start.acceleration_lead, tolerance)
        best, best_held = search_columns(
            first, start, settings, tolerance, regularise, log, scores=scores
        )
        arriving = spaces.build(candidates[1:], [start.acceleration_lead], only=best)
    else:
        arriving = spaces.build(candidates, [start.acceleration_lead])
        first = next(arriving)
        best, best_held = search_columns(first, start, settings, tolerance, regularise, log)
    options, figures = [best], [best_held]
    for preprocessing, space in zip(candidates[1:], arriving, strict=True):
        option = replace(best, lowpass_hz=preprocessing[0], measured_velocity=preprocessing[1])
        options.append(option)
        figures.append(score_candidate(space, option, tolerance, "preprocessing", log))
    i = decide(log, "preprocessing", options, figures, settings.rule, configured)
    best, best_held = options[i], figures[i]
    best_preprocessing = candidates[i]
    leads = _lead_candidates(spaces, best, settings)
    if leads:  # judged by the folds of the shape stages
        stage = "acceleration lead"
        own = spaces.get(best_preprocessing, best.acceleration_lead).judged_by(True)
        options, figures = [best], [score_candidate(own, best, tolerance, stage, log)]
        for lead, space in zip(leads, spaces.build([best_preprocessing], leads), strict=True):
            options.append(replace(best, acceleration_lead=lead))
            figures.append(
                score_candidate(space.judged_by(True), options[-1], tolerance, stage, log)
            )
        i = decide(log, stage, options, figures, settings.rule, configured)
        best = options[i]
        best_held = score_candidate(
            spaces.get(best_preprocessing, best.acceleration_lead), best, tolerance, "start", log
        )
    if best_preprocessing != configured or best.acceleration_lead != start.acceleration_lead:
        best, best_held = search_columns(
            spaces.get(best_preprocessing, best.acceleration_lead),
            best,
            settings,
            tolerance,
            regularise,
            log,
            configured,
            spaces.scores(best_preprocessing, best.acceleration_lead, tolerance),
        )
    return best, best_held, best_preprocessing


def _lead_candidates(
    spaces: ColumnSpaces, start: Candidate, settings: Any
) -> list[tuple[float, ...]]:
    """The acceleration leads tried (s, one value for every joint; () none) other than the
    configured one: `tuning.acceleration_leads` when the friction is coulomb_viscous."""
    if not spaces.coulomb:
        return []
    n = len(start.tanh_width)
    leads = ((float(v),) * n if v > 0 else () for v in settings.acceleration_leads)
    return [lead for lead in dict.fromkeys(leads) if lead != start.acceleration_lead]


def tuning_applies(config: RunConfig) -> bool:
    """Whether `select_options` tunes this run (tuning=cv and a tuned data source)."""
    settings = config.tuning
    return settings.active and config.plugins["source"].info.name in settings.sources


def _temperature_columns(config: RunConfig, recordings: list[Dataset]) -> tuple[bool, bool]:
    """(the fold factors hold the temperature columns, the term is a candidate): columns when
    friction.temperature is on, or auto (left to the tuning by `identify/temperature.py`: then
    a candidate), and every recording has joint temperatures."""
    mode = getattr(config.plugins["friction"].params, "temperature", None)
    recorded = all(r.temperature is not None for r in recordings)
    return recorded and mode in ("auto", "on"), recorded and mode == "auto"


def _mark_chosen(log: SearchLog, best: Candidate, best_rmse: float) -> None:
    """Flag the (first) row of the chosen candidate in the table."""
    found, options = False, best.row()
    for row in log.rows:
        same = all(row[key] == value for key, value in options.items())
        row["chosen"] = not found and row["cv_rmse"] == best_rmse and same
        found = found or row["chosen"]


def apply_chosen(config: RunConfig, chosen: dict[str, Any]) -> RunConfig:
    """`config` with the chosen values (config key -> value) set."""
    preprocessing, regressor, plugins = config.preprocessing, config.regressor, dict(config.plugins)
    for key, value in chosen.items():
        section, name = key.split(".", 1)
        if section == "preprocessing":
            preprocessing = replace(preprocessing, **{name: value})
        elif section == "regressor":
            regressor = replace(regressor, **{name: value})
        else:
            selected = plugins[section]
            plugins[section] = SelectedPlugin(
                selected.info, replace(selected.params, **{name: value})
            )
    return replace(config, preprocessing=preprocessing, regressor=regressor, plugins=plugins)


def _configured(config: RunConfig, n: int) -> Candidate:
    """The options as the config gives them."""
    friction = config.plugins["friction"].params

    def per_joint(key: str) -> tuple[float, ...]:  # null or absent: 0 on every joint
        value = getattr(friction, key, None)
        values = np.broadcast_to(np.asarray(0.0 if value is None else value, dtype=float), (n,))
        return tuple(float(v) for v in values)

    estimator = config.plugins["estimator"].params
    return Candidate(
        config.preprocessing.lowpass_hz,
        config.preprocessing.use_measured_velocity,
        config.regressor.armature,
        config.regressor.torque_offset,
        float(getattr(friction, "dead_band", 0.0)),
        per_joint("tanh_width"),
        float(getattr(estimator, "ridge", 0.0)),
        float(getattr(estimator, "truncate", 0.0)),
        getattr(friction, "temperature", "off") == "on",
        getattr(friction, "load_dependent", "off") == "on",
        saturation_width=unless_zero(per_joint("saturation_width")),
        acceleration_lead=unless_zero(per_joint("acceleration_lead")),
        stribeck_velocity=unless_zero(per_joint("stribeck_velocity")),
    )


def _preprocessing_candidates(
    config: RunConfig, recordings: list[Dataset], exact: bool
) -> list[tuple[float, bool]]:
    """(cut-off Hz, measured velocity) pairs: the grid below Nyquist, the configured first."""
    configured = (config.preprocessing.lowpass_hz, config.preprocessing.use_measured_velocity)
    if exact:
        return [configured]
    rate = min(1.0 / float(np.median(np.diff(r.timestamp))) for r in recordings)
    cutoffs = sorted({*config.tuning.cutoffs_hz, configured[0]})
    cutoffs = [c for c in cutoffs if c < NYQUIST_SHARE * rate / 2] or [configured[0]]
    velocities = {v == "measured" for v in config.tuning.velocity_sources} | {configured[1]}
    pairs = [(c, v) for c in cutoffs for v in sorted(velocities, reverse=True)]
    # a candidate whose filter edges leave nothing of a recording (a short one, or one cut
    # into short pieces by gaps) is no candidate; the configured one stays (and, if it is
    # not preprocessable, fails with the message naming the recording)
    return [
        configured,
        *(p for p in pairs if p != configured and _preprocessable(config, p, recordings)),
    ]


def _preprocessable(
    config: RunConfig, preprocessing: tuple[float, bool], recordings: list[Dataset]
) -> bool:
    params = replace(
        config.preprocessing, lowpass_hz=preprocessing[0], use_measured_velocity=preprocessing[1]
    )
    return all(preprocessable(r, params) for r in recordings)


def _chosen_keys(best: Candidate, coulomb: bool, regularise: bool, exact: bool) -> dict[str, Any]:
    """The chosen candidate as config keys and values (no preprocessing keys for exact data)."""
    chosen: dict[str, Any] = {}
    if not exact:
        chosen["preprocessing.lowpass_hz"] = float(best.lowpass_hz)
        chosen["preprocessing.use_measured_velocity"] = bool(best.measured_velocity)
    chosen["regressor.armature"] = bool(best.armature)
    chosen["regressor.torque_offset"] = bool(best.torque_offset)
    if coulomb:
        chosen["friction.dead_band"] = float(best.dead_band)
        for key in ("tanh_width", "saturation_width", "acceleration_lead", "stribeck_velocity"):
            values = [float(w) for w in getattr(best, key)]  # none set: null
            chosen[f"friction.{key}"] = values if any(w > 0 for w in values) else None
    if regularise:
        chosen["estimator.ridge"] = float(best.ridge)
        chosen["estimator.truncate"] = float(best.truncate)
    return chosen
