"""Preprocessing: each recording, and each piece of it between timestamp gaps, filtered and
differentiated on its own (`segment_filter.py`), then stacked.

A dataset may hold several recordings (`Dataset.recorded.recording`, e.g. several CSV files):
no filter or derivative runs across a file boundary or across a gap inside a file (a step
longer than MAX_GAP_STEPS median steps: lost packets, a paused recorder). Each piece keeps its
recorded rows except the few at its ends the filters cannot serve; a piece too short to
filter is dropped and counted (when it is all a recording holds, that is an error). The
report (`metadata["preprocessing"]`) gives per recording the samples in and out, the edge
samples dropped, the gaps and the dropped pieces.

A dataset that already carries exact accelerations (`ds.ddq` is not None, e.g. a simulation
that knows them) is returned as it is: exact data need no preprocessing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ident_framework.data.dataset import AsRecorded, Dataset, concatenate, recording_rows
from ident_framework.data.segment_filter import (
    SegmentTooShort,
    default_trim_s,
    filter_segment,
    resamples,
    segment_usable,
    step_jitter,
)
from ident_framework.errors import UserError

AS_RECORDED = ("timestamp", "tau", "recording")  # the fields of AsRecorded, in order
MAX_GAP_STEPS = 10.0  # a step longer than this many median steps is a gap in the recording
RESAMPLE_MODES = ("auto", "never", "always")
FRICTION_COLUMNS = ("auto", "parallel", "filtered_velocity")
__all__ = ["PreprocessingParams", "default_trim_s", "preprocess"]


@dataclass
class PreprocessingParams:
    """Parameters of `preprocess`.

    lowpass_hz: Butterworth cut-off in Hz (not normalised; checked against the data's Nyquist
    frequency at run time). filter_order: its order (the zero-phase pass doubles it).
    savgol_window_s: differentiation window in s, rounded to an odd number of samples
    >= savgol_polyorder + 2. trim_s: s dropped at each end of every recorded piece after
    filtering (None: from the filters, `segment_filter.default_trim_s` plus half the window:
    ≈ 0.18 s for the defaults, 0.265 s with use_measured_velocity=false).
    use_measured_velocity: filter the recorded dq instead of differentiating q. resample:
    "auto" (onto a uniform grid when the timestamps jitter), "never" or "always".
    friction_columns: how the regressor's friction columns meet the filtered torque:
    "parallel" (computed from the unfiltered velocity, then low-passed like the torque: see
    `parallel_filter.py`), "filtered_velocity" (computed from the filtered velocity), or
    "auto" (parallel for friction models with nonlinear parameters, else filtered_velocity).
    """

    lowpass_hz: float = 20.0
    filter_order: int = 4
    savgol_window_s: float = 0.03
    savgol_polyorder: int = 3
    trim_s: float | None = None
    use_measured_velocity: bool = True
    resample: str = "auto"
    friction_columns: str = "parallel"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lowpass_hz) and self.lowpass_hz > 0):
            raise ValueError(
                f"lowpass_hz must be > 0 Hz (a cut-off frequency), got {self.lowpass_hz:g}"
            )
        if int(self.filter_order) != self.filter_order or not 1 <= self.filter_order <= 10:
            raise ValueError(f"filter_order must be an integer in 1..10, got {self.filter_order}")
        self.filter_order = int(self.filter_order)
        if not (math.isfinite(self.savgol_window_s) and self.savgol_window_s > 0):
            raise ValueError(
                f"savgol_window_s must be a positive window length in s, got {self.savgol_window_s}"
            )
        if int(self.savgol_polyorder) != self.savgol_polyorder or self.savgol_polyorder < 1:
            raise ValueError(
                f"savgol_polyorder must be an integer >= 1, got {self.savgol_polyorder}"
            )
        self.savgol_polyorder = int(self.savgol_polyorder)
        if self.trim_s is not None and not (math.isfinite(self.trim_s) and self.trim_s >= 0):
            raise ValueError(f"trim_s must be >= 0 s or null, got {self.trim_s}")
        if self.resample not in RESAMPLE_MODES:
            raise ValueError(
                f"resample must be one of {list(RESAMPLE_MODES)}, got {self.resample!r}"
            )
        if self.friction_columns not in FRICTION_COLUMNS:
            raise ValueError(
                f"friction_columns must be one of {list(FRICTION_COLUMNS)}, "
                f"got {self.friction_columns!r}"
            )

    def parallel_friction(self, nonlinear_friction: bool) -> bool:
        """Whether friction columns are filtered in parallel (see `friction_columns`)."""
        if self.friction_columns == "auto":
            return nonlinear_friction
        return self.friction_columns == "parallel"


def preprocess(
    ds: Dataset,
    params: PreprocessingParams | None = None,
    *,
    min_samples: int = 10,
    step_of: Callable[[np.ndarray], float] | None = None,
) -> Dataset:
    """Filtered, differentiated copy of `ds` (which is left untouched) at its recorded rows.

    Returns a Dataset with q (rad), dq (rad/s), ddq (rad/s^2) and the low-passed tau (Nm) at
    the recorded timestamps (s) of every row the filters can serve, the rows as recorded in
    `recorded` (timestamp, torque, recording), and `metadata["preprocessing"]` describing what
    was done. Raises UserError when the sample rate cannot carry the cut-off, a recording is
    too short, or its timestamps do not increase.

    `step_of`: the sample step (s) the filters of a piece between gaps use, from the piece's
    timestamps (default: their median step). A window cut from a longer recording
    (`modes/distributed_parts.py`) passes the step of the whole recording's piece: the median
    step of a window differs from the whole's in the last digits (timestamps of 2000 s carry
    rounding of 2e-13 s), which moved the filtered accelerations by 1e-10 relative."""
    params = params or PreprocessingParams()
    recorded = ds.recorded or AsRecorded.of(ds)
    names = ds.recording_paths
    if ds.ddq is not None:
        note = {"applied": False, "reason": "exact accelerations given; data used as recorded"}
        return replace(ds, metadata={**ds.metadata, "preprocessing": note}, recorded=recorded)
    pieces, reports = [], []
    for index, rows in recording_rows(recorded.recording):
        part = ds.select(rows)
        part = replace(part, recorded=recorded.select(rows))
        where = _where(names, index, ds)
        kept, report = _preprocess_recording(part, params, min_samples, where, step_of)
        pieces += kept
        reports.append({"path": names[index] if index < len(names) else None, **report})
    out = concatenate(pieces) if len(pieces) > 1 else pieces[0]
    # the pieces' own rows as recorded, with the recording indices of `ds` (concatenate would
    # number unnamed pieces apart)
    kept = AsRecorded(
        *(np.concatenate([getattr(p.recorded, k) for p in pieces]) for k in AS_RECORDED)
    )
    metadata = {**ds.metadata, "preprocessing": _summary(params, reports)}
    if len(names) > 1 or "recordings" in ds.metadata:
        metadata["recordings"] = names
    else:
        metadata.pop("recordings", None)
    return replace(out, metadata=metadata, recorded=kept)


def _preprocess_recording(
    part: Dataset,
    params: PreprocessingParams,
    min_samples: int,
    where: str,
    step_of: Callable[[np.ndarray], float] | None = None,
) -> tuple[list[Dataset], dict[str, Any]]:
    """(the filtered pieces of one recording between its gaps, its report)."""
    t = np.asarray(part.timestamp, dtype=float)
    step = _checked_step(t, where)
    pieces, segment_reports, short, short_s = [], [], [], 0.0
    slices, gaps = gap_slices(t, step)
    refusal = None  # why the longest piece too short to filter is (for the error below)
    for rows in slices:
        piece_where = where if len(slices) == 1 else f"{where} (t = {t[rows.start]:.6g} s to "
        piece_where += "" if len(slices) == 1 else f"{t[rows.stop - 1]:.6g} s, between gaps)"
        try:
            filtered, report = filter_segment(
                part.select(rows), params, min_samples, piece_where, step_of
            )
        except SegmentTooShort as error:
            if len(slices) == 1:
                raise
            if not short or rows.stop - rows.start > max(short):
                refusal = error
            short.append(rows.stop - rows.start)
            short_s += float(t[rows.stop - 1] - t[rows.start]) + step  # each sample: one step
            continue
        pieces.append(filtered)
        segment_reports.append(report)
    if not pieces:
        starts = ", ".join(f"{g['t_start_s']:.6g} s" for g in gaps[:5])
        more = f" and {len(gaps) - 5} more" if len(gaps) > 5 else ""
        raise UserError(
            f"Nothing usable is left of the recording{where}: it has {len(gaps)} timestamp "
            f"gap(s) (steps over {MAX_GAP_STEPS:g} median steps of {step * 1e3:.4g} ms, at t = "
            f"{starts}{more}), and each of its {len(slices)} pieces between them is too short to "
            f"filter (at most {max(short)} samples). The longest: {refusal} Or record without "
            "interruption."
        )
    first = segment_reports[0]
    report = {
        "n_samples_in": int(len(t)),
        "n_samples_out": sum(r["n_samples_out"] for r in segment_reports),
        "edge_samples_dropped": sum(r["edge_samples_dropped"] for r in segment_reports),
        "segments": len(slices),
        "gaps": gaps,
        "short_segments_dropped": len(short),
        "short_segment_samples_dropped": int(sum(short)),
        "short_segment_s_dropped": short_s,
        **{key: first[key] for key in ("median_step_s", "sample_rate_hz", "trim_s")},
        "max_step_jitter": max(r["max_step_jitter"] for r in segment_reports),
        "resampled": any(r["resampled"] for r in segment_reports),
        "savgol_window_samples": first["savgol_window_samples"],
        "savgol_window_s": first["savgol_window_s"],
        "trim_samples": first["trim_samples"],
    }
    return pieces, report


def preprocessable(ds: Dataset, params: PreprocessingParams, min_samples: int = 10) -> bool:
    """Whether `preprocess(ds, params, min_samples=...)` succeeds: every recording of `ds`
    keeps a piece long enough to filter, and the cut-off is below the Nyquist frequency of
    every piece it keeps (e.g. a tuning candidate whose longer filter edges leave nothing of a
    short recording). Nothing is filtered."""
    if ds.ddq is not None:
        return True
    recorded = ds.recorded or AsRecorded.of(ds)
    for _, rows in recording_rows(recorded.recording):
        t = np.asarray(ds.timestamp[rows], dtype=float)
        if len(t) < 3 or not np.all(np.diff(t) > 0):
            return False
        slices, _ = gap_slices(t, float(np.median(np.diff(t))))
        usable = [segment_usable(t[piece], params, min_samples) for piece in slices]
        if None in usable or not any(usable):
            return False
    return True


def resamples_any(ds: Dataset, params: PreprocessingParams) -> bool:
    """Whether `preprocess(ds, params)` filters any piece of `ds` on a uniform grid (a jittery
    log), i.e. needs the cubic spline; exact data need none."""
    if ds.ddq is not None:
        return False
    recorded = ds.recorded or AsRecorded.of(ds)
    for _, rows in recording_rows(recorded.recording):
        t = np.asarray(ds.timestamp[rows], dtype=float)
        if len(t) < 3:
            continue
        slices, _ = gap_slices(t, float(np.median(np.diff(t))))
        for piece in slices:
            steps = np.diff(t[piece])
            if len(steps) >= 2 and resamples(params, step_jitter(steps, float(np.median(steps)))):
                return True
    return False


def gap_slices(t: np.ndarray, step: float) -> tuple[list[slice], list[dict[str, Any]]]:
    """(the row slices between gaps, each gap: its times in s, length in s, rows): a gap is
    a step over MAX_GAP_STEPS times the median step `step` (s)."""
    steps = np.diff(t)
    at = np.flatnonzero(steps > MAX_GAP_STEPS * step)
    bounds = [0, *(at + 1).tolist(), len(t)]
    gaps = [
        {
            "t_start_s": float(t[k]),
            "t_end_s": float(t[k + 1]),
            "length_s": float(steps[k]),
            "after_sample_index": int(k),
        }
        for k in at
    ]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:], strict=False)], gaps


def recording_steps(t: np.ndarray) -> Callable[[np.ndarray], float]:
    """The sample step (s) preprocessing gives each piece (between gaps) of the recording with
    timestamps `t`, as a function of a window's timestamps (the piece it starts in)."""
    whole = float(np.median(np.diff(t)))
    slices, _ = gap_slices(t, whole)
    starts = np.array([t[piece.start] for piece in slices])
    # a piece of one sample has no step (preprocessing drops it): the recording's
    steps = [float(np.median(np.diff(t[p]))) if p.stop - p.start > 1 else whole for p in slices]

    def step_of(window: np.ndarray) -> float:
        return steps[max(int(np.searchsorted(starts, window[0], side="right")) - 1, 0)]

    return step_of


def _checked_step(t: np.ndarray, where: str) -> float:
    """Median sample step (s); UserError for fewer than 3 samples or timestamps that do not
    increase."""
    if len(t) < 3:
        raise UserError(
            f"Preprocessing needs at least 3 samples to filter and differentiate; the data"
            f"{where} have {len(t)}."
        )
    steps = np.diff(t)
    if not np.all(steps > 0):
        row = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise UserError(
            f"The timestamps{where} do not increase strictly at sample index {row} "
            f"({float(t[row - 1]):.9g} s then {float(t[row]):.9g} s); repair the recording "
            "before preprocessing."
        )
    return float(np.median(steps))


SUMMED = ("n_samples_in", "n_samples_out", "edge_samples_dropped", "short_segments_dropped",
          "short_segment_samples_dropped")  # fmt: skip
SUMMED_S = ("short_segment_s_dropped",)


def _summary(params: PreprocessingParams, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """metadata["preprocessing"]: the settings, totals over the recordings, each recording's
    report; the sample-rate figures of the first recording."""
    first = reports[0]
    return {
        "applied": True,
        **{key: int(sum(r[key] for r in reports)) for key in SUMMED},
        **{key: float(sum(r[key] for r in reports)) for key in SUMMED_S},
        "gaps": int(sum(len(r["gaps"]) for r in reports)),
        "median_step_s": first["median_step_s"],
        "sample_rate_hz": first["sample_rate_hz"],
        "max_step_jitter": max(r["max_step_jitter"] for r in reports),
        "resampled": any(r["resampled"] for r in reports),
        "resample_mode": params.resample,
        "interpolation": "cubic spline (filtered on a uniform grid, mapped back to the recorded "
        "timestamps)"
        if any(r["resampled"] for r in reports)
        else None,
        "lowpass_hz": params.lowpass_hz,
        "filter": f"Butterworth order {params.filter_order}, zero-phase (forward-backward)",
        "velocity": "measured dq, filtered"
        if params.use_measured_velocity
        else "Savitzky-Golay derivative of filtered q",
        "savgol_window_samples": first["savgol_window_samples"],
        "savgol_window_s": first["savgol_window_s"],
        "savgol_polyorder": params.savgol_polyorder,
        "trim_s": first["trim_s"],
        "trim_samples": first["trim_samples"],
        "recordings": reports,
    }


def _where(names: list[str], index: int, ds: Dataset) -> str:
    """' from FILE' when the data say where they came from, for messages."""
    if index < len(names) and names[index] != "recording":
        return f" from '{names[index]}'"
    path = ds.metadata.get("path")
    return f" from '{path}'" if path else ""
