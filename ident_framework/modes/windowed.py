"""A long recording identified in windows: the single run's memory bounded by the raw recording.

Above WINDOWED_FROM_BYTES of preprocessed identification data, the recording (read whole, its
data checks and the tuning run on it as usual) is preprocessed in WINDOW_SAMPLES windows with
the halo of `mode=factor` (`distributed.preprocessed_part`), each reduced to its sufficient
statistics on forked workers; merged, they give the base parameters, the estimate and the
training fit as `mode=combine` does (`distributed.solve_statistics`). The windowed zero-phase
filter and the merged factors differ from the whole path's in the last digits: least squares
results agree to ~1e-10; the geometric estimator amplifies round-off (its stds to ~3e-4
relative, as the whole path does when only its chunk size changes). Smaller recordings keep
the whole path, bit for bit.

Rationale: docs/design.md, "Speed: memory, the windowed single run"
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import gap_slices, recording_steps, resamples_any
from ident_framework.identify.result import IdentificationData, IdentificationResult, StepTimer
from ident_framework.identify.sufficient_statistics import merge, statistics_of
from ident_framework.model import friction_terms
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.parallel_work import forked_map

WINDOWED_FROM_BYTES = 256 * 2**20  # preprocessed identification data from which to window
WINDOW_SAMPLES = 100_000  # samples of recording per window (plus its halo on either side)
STATISTICS_ESTIMATORS = ("ls", "wls", "consistent", "geometric")  # solved from the factors


def preprocessed_bytes(builder: RegressorBuilder, n_samples: int) -> int:
    """Bytes the whole path holds of a recording of `n_samples` once preprocessed: q, dq, ddq,
    tau, the torque as recorded, the unfiltered velocity and the friction columns (float64)."""
    columns = 6 + len(builder.friction.parameter_names)
    return 8 * n_samples * builder.robot.n_joints * columns


def runs_windowed(
    config: RunConfig, builder: RegressorBuilder, recorded: Dataset, excitation: Any
) -> bool:
    """Whether the identification runs windowed: a long single recording read from a file (no
    excitation, no truth), without gaps or resampling, data checks on, linear friction, an
    estimator solved from the factors, no residual learner, no MCAP (they need the training
    rows; the plots need only the validation rows and the metrics)."""
    if preprocessed_bytes(builder, recorded.n_samples) <= WINDOWED_FROM_BYTES:
        return False
    plugins = config.plugins
    if (
        excitation is not None
        or config.mcap
        or config.validation.split is not None
        or not config.checks.enabled
        or len(recorded.recording_paths) > 1
        or "truth" in recorded.metadata
        or plugins["estimator"].info.name not in STATISTICS_ESTIMATORS
        or plugins["residual"].create().active
        or builder.load_dependent
        or friction_terms.uses_temperature(builder.friction)
        or friction_terms.is_nonlinear(builder.friction)
    ):
        return False
    t = np.asarray(recorded.timestamp, dtype=float)
    slices, _ = gap_slices(t, float(np.median(np.diff(t))))
    return len(slices) == 1 and not resamples_any(recorded, config.preprocessing)


def identify_windowed(
    config: RunConfig,
    robot: RobotModel,
    builder: RegressorBuilder,
    recorded: Dataset,
    validation: Dataset,
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None,
    timer: StepTimer,
) -> IdentificationResult:
    """The single run's result from the raw identification recording `recorded` in windows
    (`checked`: its `check_recordings`, reused) and the preprocessed, checked `validation`."""
    # mode=combine's steps: imported here, as a run of a shorter log never needs them
    from ident_framework.modes.distributed import (
        estimate_statistics,
        part_compatibility,
        parts_data_metrics,
        preprocessed_part,
        solve_statistics,
    )

    times = np.asarray(recorded.timestamp)
    count = math.ceil(recorded.n_samples / WINDOW_SAMPLES)
    steps = recording_steps(times)
    info = part_compatibility(config, robot, builder)
    trusted = checked[0] if checked and config.checks.enabled else None
    print(
        f"regressor: windowed ({recorded.n_samples} samples in {count} windows of "
        f"{WINDOW_SAMPLES}: over {WINDOWED_FROM_BYTES >> 20} MB preprocessed)",
        flush=True,
    )

    def statistics(index: int):
        data, where = preprocessed_part(
            config, robot, recorded, 0, times, steps, (index, count), trusted
        )
        return statistics_of(
            builder, data, config.chunk_size, {**info, "part": where}, robot.limits.velocity
        )

    with timer("regressor"):  # preprocessing, checks and the factor pass of each window
        parts = forked_map(statistics, list(range(count)))
        total = merge(parts, [f"window {k}" for k in range(count)])
    solved = estimate_statistics(config, builder, total, timer)
    model, predicted, metrics, diagnostics, twin = solve_statistics(
        config, robot, builder, total, parts, validation, timer, solved
    )
    metrics["data"] = parts_data_metrics(total, parts, validation)
    train_checks = metrics["data"]["checks"]["train"]
    if trusted is not None:  # the whole recording's report, as the single run gives it
        kept, excluded = train_checks["rows_in"], train_checks["excluded_rows"]
        metrics["data"]["checks"]["train"] = {
            **trusted[1], "rows_in": kept, "excluded_rows": excluded
        }  # fmt: skip
    metrics["timing_s"] = timer.seconds
    data = IdentificationData(None, validation)
    return IdentificationResult(
        config, model, data, {"validation": predicted}, metrics, diagnostics, twin
    )
