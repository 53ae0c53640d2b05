"""Exact distributed identification: `mode=factor` (map) and `mode=combine` (reduce).

A factor job reduces part `distributed.part` of `distributed.parts` of the recording,
preprocessed as the whole recording would be, to sufficient statistics (`statistics.npz`);
combine merges all parts and solves as the single run does. Quadratic estimators only (ls,
wls, consistent). Parts (`read_part`): of one CSV file, equal sample counts read with
`distributed.halo_s` s on either side; of several files, file k; of any other source, the
recording read whole, then cut.

Rationale: docs/design.md#distributed-identification
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from ident_framework.config.run_config import RunConfig
from ident_framework.data.checks import drop_untrusted
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import default_trim_s, preprocess, recording_steps
from ident_framework.errors import UserError
from ident_framework.hookspecs import LinearProblem
from ident_framework.identify.linear_problem import (
    estimate,
    predict_torque,
    project_to_base,
    standard_model,
)
from ident_framework.identify.load_friction import resolve_load
from ident_framework.identify.metrics import (
    data_metrics,
    estimator_metrics,
    fit_metrics,
    identifiability_metrics,
    preprocessing_counts,
)
from ident_framework.identify.result import (
    Diagnostics,
    IdentificationData,
    IdentificationResult,
    IdentifiedModel,
    StepTimer,
    TorquePredictions,
)
from ident_framework.identify.sufficient_statistics import (
    SufficientStatistics,
    merge,
    statistics_of,
)
from ident_framework.identify.temperature import with_temperature
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model import friction_terms
from ident_framework.model.physical_consistency import physical_check
from ident_framework.modes.robot_setup import robot_and_regressor
from ident_framework.plain_data import config_yaml_text, to_plain
from ident_framework.reports import run_files
from ident_framework.reports.run_report import write_run_directory
from ident_framework.twin.write_back import write_back

STATISTICS, FACTOR_SUMMARY = run_files.STATISTICS, run_files.FACTOR_SUMMARY


def _peak_memory_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def _cpu_time_s() -> float:
    """User + system CPU time of this process so far (s)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def part_compatibility(config: RunConfig, robot, builder) -> dict[str, Any]:
    """What a part's statistics record of the run (robot, joints, regressor columns, friction,
    preprocessing): parts merge only when theirs are equal (`run_combine`)."""
    friction = config.plugins["friction"]
    return to_plain(
        {
            "robot": {
                "name": robot.name,
                "model": config.robot.model,
                # coupled motors (their ratios) only when given: older statistics still combine
                **(
                    {"coupled_joints": [dataclasses.asdict(c) for c in config.robot.coupled_joints]}
                    if config.robot.coupled_joints
                    else {}
                ),
            },
            "joint_names": list(robot.joint_names),
            "parameter_names": list(builder.parameter_names),
            "friction": {"plugin": friction.info.name, **dataclasses.asdict(friction.params)},
            "regressor": dataclasses.asdict(config.regressor),
            "preprocessing": dataclasses.asdict(config.preprocessing),
        }
    )


def run_factor(config: RunConfig, cfg: DictConfig, staging: Path) -> dict[str, Any]:
    """mode=factor: statistics.npz, statistics.json and config.yaml of this job's part in
    `staging`; returns the summary."""
    started = time.perf_counter()
    robot, builder = robot_and_regressor(config)
    _require_linear(builder, "mode=factor")
    source = config.plugins["source"].create()
    if source.moves_robot:
        raise UserError(
            "mode=factor reduces a recording: use a source that reads one (source=csv "
            "source.path=FILE or source=rosbag). Record the motion first."
        )
    data, where = read_part(config, robot, source)
    info = {**part_compatibility(config, robot, builder), "part": where}
    statistics = statistics_of(builder, data, config.chunk_size, info, robot.limits.velocity)
    path = statistics.save(staging / STATISTICS)
    summary = {
        **where,
        "tuning": _tuning_note(config),
        "statistics_file_bytes": path.stat().st_size,
        "wall_time_s": time.perf_counter() - started,
        "cpu_time_s": _cpu_time_s(),
        "peak_memory_mb": _peak_memory_mb(),
    }
    (staging / FACTOR_SUMMARY).write_text(json.dumps(to_plain(summary), indent=2))
    (staging / run_files.CONFIG).write_text(config_yaml_text(cfg))
    return summary


def _require_linear(builder, mode: str) -> None:
    if friction_terms.uses_temperature(builder.friction):
        raise UserError(
            f"{mode} does not support the friction's temperature term (friction.temperature=on): "
            "its reference temperature is fixed from the whole identification data, which no "
            "factor job sees. Set friction.temperature=off (with auto the term is off in "
            "distributed identification: joint temperatures are ignored)."
        )
    if builder.load_dependent:
        raise UserError(
            f"{mode} does not support the friction's load-dependent term "
            "(friction.load_dependent=on): its column comes from the model's own rigid-body "
            "torque, refitted over the whole identification data, which no factor job sees. "
            "Set friction.load_dependent=off (or auto: off in distributed identification)."
        )
    if friction_terms.is_nonlinear(builder.friction):
        raise UserError(
            f"{mode} needs a friction model linear in its parameters (coulomb_viscous, none): "
            "nonlinear friction parameters are fitted on the samples themselves, which the "
            "statistics do not keep."
        )


def statistics_files(inputs: list[str] | None) -> list[Path]:
    """The statistics files of `distributed.inputs` (files, job or sweep folders, globs)."""
    if not inputs:
        raise UserError(
            "mode=combine needs distributed.inputs: the factor jobs' folders, e.g. "
            "distributed.inputs=[multirun/2026-12-01/12-00-00] (a sweep folder: all its jobs)."
        )
    found: list[Path] = []
    for entry in inputs:
        matches = sorted(glob.glob(resolve_launch_path(entry))) or [resolve_launch_path(entry)]
        for match in map(Path, matches):
            if match.is_file():
                found.append(match)
            elif (match / STATISTICS).is_file():
                found.append(match / STATISTICS)
            elif match.is_dir() and list(match.glob(f"*/{STATISTICS}")):
                found += sorted(match.glob(f"*/{STATISTICS}"))
            else:
                raise UserError(
                    f"distributed.inputs: {entry} ({match}) holds no {STATISTICS}: give the "
                    "folders (or files) that mode=factor wrote."
                )
    return sorted(dict.fromkeys(found))


def _no_samples():
    raise UserError(
        "This estimator re-streams the samples (estimator=rls), which mode=combine does not "
        "have: use estimator=ls, wls or consistent, or identify in one process."
    )


def run_combine(config: RunConfig, cfg: DictConfig, staging: Path) -> dict[str, Any]:
    """mode=combine: merge the statistics, solve, validate and write a single run's run
    directory; returns the metrics."""
    timer = StepTimer()
    with timer("data"):
        files = statistics_files(config.distributed.inputs)
        parts = [SufficientStatistics.load(path) for path in files]
        total = merge(parts, [str(path) for path in files])
    with timer("robot"):
        robot, builder = robot_and_regressor(config)
    _require_linear(builder, "mode=combine")
    expected = part_compatibility(config, robot, builder)
    for key in ("robot", "joint_names", "parameter_names", "friction", "regressor"):
        if total.info.get(key) != expected[key]:
            raise UserError(
                f"The statistics were factored with {key} {total.info.get(key)!r}, this run "
                f"is configured with {expected[key]!r}: give mode=combine the robot, friction "
                "and regressor settings of the factor jobs."
            )
    solved = estimate_statistics(config, builder, total, timer)
    validation = combine_validation(config, robot, timer)
    model, predicted, metrics, diagnostics, twin = solve_statistics(
        config, robot, builder, total, parts, validation, timer, solved
    )
    metrics["data"] = parts_data_metrics(total, parts, validation)
    metrics["timing_s"] = timer.seconds
    metrics["combine"] = {
        "parts": len(parts),
        "inputs": [str(f) for f in files],
        "peak_memory_mb": _peak_memory_mb(),
        "cpu_time_s": _cpu_time_s(),
    }
    friction_params = config.plugins["friction"].params
    if getattr(friction_params, "temperature", None) == "auto":  # off in distributed runs
        config = with_temperature(config, "off", None)
    result = IdentificationResult(
        resolve_load(config, tuned=False),
        model,
        IdentificationData(None, validation),
        {"validation": predicted},
        metrics,
        diagnostics,
        twin,
    )
    write_run_directory(staging, result, cfg)
    return metrics


def combine_validation(config: RunConfig, robot: Any, timer: StepTimer) -> Dataset:
    """The validation recording of mode=combine, preprocessed and checked."""
    if config.validation.source is None:
        raise UserError(
            "mode=combine needs a validation recording (validation=csv validation.path=FILE, "
            "validation=rosbag or validation=mujoco): the statistics keep no samples, so there "
            "is no held-out tail for validation=split."
        )
    with timer("data"):
        source = config.validation.source.create()
        motion = None
        if source.moves_robot and config.validation.trajectory is not None:
            motion = config.validation.trajectory.create().generate(robot, None, config.seed + 1)
        recorded = source.acquire(robot, motion, "validation")
    with timer("preprocessing"):
        validation = preprocess(recorded, config.preprocessing)
    with timer("checks"):
        return drop_untrusted(recorded, validation, robot.limits, config.checks)


def estimate_statistics(
    config: RunConfig, builder: Any, total: SufficientStatistics, timer: StepTimer
) -> tuple:
    """(base parameters, cond, problem, fitted estimator, standard parameters theta) of merged
    statistics `total`; UserError for an estimator that needs the samples."""
    settings = config.base_parameters
    with timer("regressor"):
        base, base_factors, cond = project_to_base(
            total.joint_factors, builder.parameter_names, settings.tolerance, settings.method
        )
        problem = LinearProblem(
            base_factors, total.n_samples, base.names, _no_samples,
            standard_model(builder, total.joint_factors, base),
        )  # fmt: skip
    with timer("estimation"):
        estimator, theta = estimate(config.plugins["estimator"], problem, base)
    return base, cond, problem, estimator, theta


def solve_statistics(
    config: RunConfig,
    robot: Any,
    builder: Any,
    total: SufficientStatistics,
    parts: list[SufficientStatistics],
    validation: Dataset,
    timer: StepTimer,
    solved: tuple,
) -> tuple[IdentifiedModel, TorquePredictions, dict[str, Any], Diagnostics, Any]:
    """(model, validation predictions, metrics but `data` and `timing_s`, diagnostics, twin)
    from merged statistics `total` of `parts` and their base parameters and estimate
    (`solved`: `estimate_statistics`): the train fit from the statistics, validation,
    physical check and twin, as one run on the samples gives."""
    settings = config.base_parameters
    base, cond, problem, estimator, theta = solved
    with timer("prediction"):
        predicted = TorquePredictions(predict_torque(builder, validation, theta, config.chunk_size))
    metrics: dict[str, Any] = {
        "identifiability": identifiability_metrics(
            base, cond, estimator, settings.warn_relative_std_percent
        ),
        "train": _train_metrics(total, parts, theta, robot.limits.velocity),
        "validation": fit_metrics(validation, predicted, robot.limits.velocity),
        **estimator_metrics(estimator),
    }
    physical = physical_check(
        theta, problem.standard, robot, base, from_base_parameters=estimator.standard_coef_ is None
    )
    metrics["identifiability"]["physically_consistent"] = physical.valid
    twin, twin_section = write_back(
        robot, builder, theta, physical.mass_share, validation, predicted.physical, timer
    )
    metrics.update(twin_section)
    model = IdentifiedModel(robot, builder, base, estimator, theta)
    diagnostics = Diagnostics(cond, None, physical.violations, timer.seconds)
    return model, predicted, metrics, diagnostics, twin


def _train_metrics(
    total: SufficientStatistics, parts: list, theta: np.ndarray, velocity_limits: np.ndarray
) -> dict:
    """metrics.json `train` from the statistics: the fit against the torque as recorded (also
    where joints move slowly), per recording (a file given as several files: one part each)
    and against the low-passed torque."""
    physical = total.fit(theta)
    slow = total.slow_fit(theta, velocity_limits)
    if slow is not None:  # statistics of an older factor job have none
        physical["slow"] = slow
    sources = {p.info["part"].get("file", p.info["part"]["source"]) for p in parts}
    pieces = [(next(iter(sources)), total)] if len(sources) == 1 else [
        (p.info["part"]["file"], p) for p in parts
    ]  # fmt: skip
    return {
        "physical": physical,
        "samples": total.n_samples,
        "recordings": [
            {"path": path, "samples": stats.n_samples, "physical": stats.fit(theta)}
            for path, stats in pieces
        ],
        "against_filtered_torque": {
            "note": "against the low-passed torque estimation fitted, not the torque as recorded",
            "physical": {k: v for k, v in total.fit(theta, filtered=True).items() if "_" not in k},
        },
    }


def _summed(values: list) -> Any:
    """The parts' reports as one: ints summed, floats the largest, lists joined, dicts key by
    key, anything else the first part's."""
    first = values[0]
    if isinstance(first, bool) or first is None or isinstance(first, str):
        return first
    if isinstance(first, int):
        return sum(values)
    if isinstance(first, float):
        return max(values)
    if isinstance(first, list):
        return [item for value in values for item in value]
    return {key: _summed([v[key] for v in values if key in v]) for key in first}


def parts_data_metrics(total: SufficientStatistics, parts: list, validation: Dataset) -> dict:
    """metrics.json `data`: training from the parts' own rows (their windows' counts and
    checks summed), validation as a single run gives it."""
    infos = [p.info["part"] for p in parts]
    recorded = sum(i["rows"][1] - i["rows"][0] for i in infos)
    kept = sum(i["kept_rows"] for i in infos)
    counts = _summed([i["preprocessing"] for i in infos])
    counts.update(recorded_samples=recorded, edge_samples_dropped=recorded - kept)
    per_file: dict[str, list] = {}
    for entry in counts.get("recordings", []):  # a file's windows: one recording
        per_file.setdefault(entry["path"], []).append(entry)
    counts["recordings"] = [_summed(entries) for entries in per_file.values()]
    if len(per_file) == 1:
        own = {"n_samples_in": recorded, "n_samples_out": kept}
        counts["recordings"][0].update(own, edge_samples_dropped=recorded - kept)
    checks = _summed([i["checks"] for i in infos])
    checks.update(n_samples=recorded, rows_in=kept, excluded_rows=kept - total.n_samples)
    held_out = data_metrics(validation, validation)
    times = [t for i in infos for t in i["kept_time_s"]]
    return {
        "train_samples": total.n_samples,
        "validation_samples": validation.n_samples,
        "train_duration_s": max(times) - min(times),
        "validation_duration_s": validation.duration,
        "train_preprocessing": counts,
        "validation_preprocessing": held_out["validation_preprocessing"],
        "checks": {"train": checks, "validation": held_out["checks"]["validation"]},
    }


def _tuning_note(config: RunConfig) -> str | None:
    """Why tuning=cv does not apply to a part, or None when it would not have applied."""
    tuning = config.tuning
    if not tuning.active or config.plugins["source"].info.name not in tuning.sources:
        return None
    return (
        "tuning=cv is not applied by mode=factor (every part must use the same options): the "
        "options as configured are used. To use tuned options, run one identification on a "
        "representative part first and pass the `chosen` values of its parameters.yaml."
    )


def summary_lines(mode: str, outcome: dict[str, Any]) -> list[str]:
    """What a factor or combine job prints."""
    if mode == "factor":
        return [
            f"part {outcome['index']} of {outcome['count']} ({outcome['source']}): "
            f"{outcome['samples']} samples, rows {outcome['rows'][0]}..{outcome['rows'][1]}, "
            f"statistics {outcome['statistics_file_bytes'] / 1024:.0f} kB, "
            f"{outcome['wall_time_s']:.2f} s, peak memory {outcome['peak_memory_mb']:.0f} MB",
            *([f"note: {outcome['tuning']}"] if outcome.get("tuning") else []),
        ]
    return [
        f"combined {outcome['combine']['parts']} parts, {outcome['data']['train_samples']} "
        "samples (mode=combine); the run's summary:"
    ]


ROW_READER = ("recording_files", "timestamps", "acquire_rows")  # what a source needs for it


def halo_samples(config: RunConfig, step: float) -> int:
    """Samples of recording on each side of a part that are preprocessed with it."""
    settings, pre = config.distributed, config.preprocessing
    halo_s = settings.halo_s
    if halo_s is None:
        halo_s = 4 * default_trim_s(pre.lowpass_hz, pre.filter_order) + 2 * pre.savgol_window_s
        halo_s = max(halo_s, 2 * (pre.trim_s or 0.0))
    return math.ceil(halo_s / step)


def read_part(config: RunConfig, robot: Any, source: Any) -> tuple[Dataset, dict[str, Any]]:
    """(the preprocessed, checked samples of this job's part, where they lie)."""
    if not all(hasattr(source, name) for name in ROW_READER):
        recorded = source.acquire(robot, None, "identification")
        single = len(recorded.recording_paths) <= 1
        steps = recording_steps(recorded.timestamp) if single else None
        return preprocessed_part(config, robot, recorded, 0, recorded.timestamp, steps)
    files = source.recording_files()
    if len(files) > 1:
        return _file(config, robot, source, files)
    times = source.timestamps(robot, files[0])
    halo, (first, last) = _bounds(config, times)
    rows = (max(0, first - halo), min(len(times), last + halo))
    window = source.acquire_rows(robot, files[0], rows)
    start = window.metadata.get("rows", [0])[0]
    if not np.array_equal(window.timestamp, times[start : start + window.n_samples]):
        raise UserError(
            f"{files[0]} changed while this factor job read it (its timestamps differ between "
            "two reads): factor a recording that is no longer being written."
        )
    return preprocessed_part(config, robot, window, start, times, recording_steps(times))


def _bounds(
    config: RunConfig, times: np.ndarray, split: tuple[int, int] | None = None
) -> tuple[int, tuple[int, int]]:
    """(halo samples, rows [first, last) of part `split` = (index, count); default: the job's
    `distributed.part` of `distributed.parts`)."""
    index, count = split or (config.distributed.part, config.distributed.parts)
    bounds = np.linspace(0, len(times), count + 1).round().astype(int)
    step = float(np.median(np.diff(times)))
    return halo_samples(config, step), (int(bounds[index]), int(bounds[index + 1]))


def preprocessed_part(
    config: RunConfig,
    robot: Any,
    recorded: Dataset,
    start: int,
    times: np.ndarray,
    step_of: Callable[[np.ndarray], float] | None,
    split: tuple[int, int] | None = None,
    trusted: tuple[np.ndarray, dict[str, Any]] | None = None,
) -> tuple[Dataset, dict[str, Any]]:
    """The part's samples of `recorded` (rows start.. of a recording with timestamps `times`),
    preprocessed and checked with the halo, then cut to the part. `split`: (index, count) of
    the part (default: the job's); `trusted`: the whole recording's `check_recordings` result
    (its trusted rows, its report) instead of checking the window on its own."""
    index, count = split or (config.distributed.part, config.distributed.parts)
    n = len(times)
    halo, (first, last) = _bounds(config, times, split)
    lo, hi = max(0, first - halo) - start, min(n, last + halo) - start
    window = recorded.select(slice(lo, hi)) if (lo, hi) != (0, recorded.n_samples) else recorded
    data = preprocess(window, config.preprocessing, step_of=step_of)
    report = data.metadata.get("preprocessing", {})
    if report.get("resampled"):
        raise UserError(
            "The recording's time steps jitter, so preprocessing resamples it onto a uniform "
            "grid that starts at each part's own first sample: the parts would not share the "
            "whole recording's grid and the combination would not be exact. Use "
            "preprocessing.resample=never (if the jitter is small), or split the recording into "
            "files and factor each as a recording of its own (source.path=[...], one part each)."
        )
    upper = times[last] if last < n else np.inf
    keep = (data.timestamp >= times[first]) & (data.timestamp < upper)
    trim = int(report.get("trim_samples", 0))
    expected = min(last, n - trim) - max(first, trim)
    if int(keep.sum()) != expected:
        raise UserError(
            f"distributed.halo_s={config.distributed.halo_s} is shorter than preprocessing "
            f"trims ({trim} samples): part {index} would lose samples. Leave halo_s null."
        )
    preprocessing = preprocessing_counts(data)
    own = None
    if trusted is not None:  # the whole recording's checks, at the window's rows
        own = [(trusted[0][lo + start : hi + start], trusted[1])]
    data = drop_untrusted(window, data, robot.limits, config.checks, own)
    keep = (data.timestamp >= times[first]) & (data.timestamp < upper)
    where = {
        "source": str(recorded.metadata.get("path", recorded.metadata.get("source", "?"))),
        "index": index,
        "count": count,
        "rows": [first, last],
        "rows_read": [start, start + recorded.n_samples],
        "halo_samples": halo,
        "samples": int(keep.sum()),
        "time_s": [float(times[first]), float(times[last - 1])],
        "kept_rows": expected,
        "kept_time_s": _span(data.timestamp[keep]),
        "preprocessing": preprocessing,
        "checks": data.metadata.get("checks"),
    }
    return data.select(keep), where


def _span(times: np.ndarray) -> list[float]:
    """[first, last] time (s) of the samples kept, [] when none."""
    return [float(times[0]), float(times[-1])] if len(times) else []


def _file(
    config: RunConfig, robot: Any, source: Any, files: list[str]
) -> tuple[Dataset, dict[str, Any]]:
    """Part k of a list of files: file k, preprocessed and checked as a recording of its own."""
    settings = config.distributed
    if settings.parts != len(files):
        raise UserError(
            f"source.path names {len(files)} files and distributed.parts={settings.parts}: with "
            "several files each part is one file (preprocessed as a recording of its own, as "
            f"the single run does). Use distributed.parts={len(files)} "
            f"'distributed.part=range({len(files)})', or one file with any number of parts."
        )
    recorded = source.acquire_rows(robot, files[settings.part])
    data = preprocess(recorded, config.preprocessing)
    preprocessing = preprocessing_counts(data)
    kept = data.n_samples
    data = drop_untrusted(recorded, data, robot.limits, config.checks)
    times = recorded.timestamp
    where = {
        "source": " + ".join(files),
        "index": settings.part,
        "count": settings.parts,
        "file": files[settings.part],
        "rows": [0, recorded.n_samples],
        "rows_read": [0, recorded.n_samples],
        "halo_samples": 0,
        "samples": data.n_samples,
        "time_s": [float(times[0]), float(times[-1])],
        "kept_rows": kept,
        "kept_time_s": _span(data.timestamp),
        "preprocessing": preprocessing,
        "checks": data.metadata.get("checks"),
    }
    return data, where
