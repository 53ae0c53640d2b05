"""Which samples a factor job (`mode=factor`) reduces, read from as little of the recording as
it can: its part, preprocessed as the whole recording's preprocessing would preprocess it.

- One CSV file, `distributed.part` of `distributed.parts`: the job streams the file's time
  column (the row count, the part's rows and the recording's sample step), parses only its
  part's rows plus `distributed.halo_s` on either side from their byte range, preprocesses
  that window with the sample step of the whole recording (its median step differs from a
  window's in the last digits) and keeps the part's own samples: the halo absorbs the
  filters' edge transients.
- Several CSV files (`source.path` a list or glob): part k is file k (`distributed.parts`
  must be the number of files), preprocessed whole, as the single run preprocesses each file
  of a list as a recording of its own.
- Any other source (e.g. rosbag): the whole recording is read, then cut as for one file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.data.checks import drop_untrusted
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import default_trim_s, preprocess, recording_steps
from ident_framework.errors import UserError

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
        return _window(config, robot, recorded, 0, recorded.timestamp, steps)
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
    return _window(config, robot, window, start, times, recording_steps(times))


def _bounds(config: RunConfig, times: np.ndarray) -> tuple[int, tuple[int, int]]:
    settings = config.distributed
    bounds = np.linspace(0, len(times), settings.parts + 1).round().astype(int)
    step = float(np.median(np.diff(times)))
    return halo_samples(config, step), (int(bounds[settings.part]), int(bounds[settings.part + 1]))


def _window(
    config: RunConfig,
    robot: Any,
    recorded: Dataset,
    start: int,
    times: np.ndarray,
    step_of: Callable[[np.ndarray], float] | None,
) -> tuple[Dataset, dict[str, Any]]:
    """The part's samples of `recorded` (rows start.. of a recording with timestamps `times`):
    the window around the part preprocessed, checked, cut to the part."""
    settings = config.distributed
    n = len(times)
    halo, (first, last) = _bounds(config, times)
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
            f"distributed.halo_s={settings.halo_s} is shorter than preprocessing trims "
            f"({trim} samples): part {settings.part} would lose samples. Leave halo_s null."
        )
    data = drop_untrusted(window, data, robot.limits, config.checks)
    keep = (data.timestamp >= times[first]) & (data.timestamp < upper)
    where = {
        "source": str(recorded.metadata.get("path", recorded.metadata.get("source", "?"))),
        "index": settings.part,
        "count": settings.parts,
        "rows": [first, last],
        "rows_read": [start, start + recorded.n_samples],
        "halo_samples": halo,
        "samples": int(keep.sum()),
        "time_s": [float(times[first]), float(times[last - 1])],
    }
    return data.select(keep), where


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
    data = drop_untrusted(recorded, preprocess(recorded, config.preprocessing), robot.limits,
                          config.checks)  # fmt: skip
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
    }
    return data, where
