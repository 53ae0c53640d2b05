"""Preprocessing: filter and differentiate a dataset's joint signals (q rad, dq rad/s, tau Nm)
recording by recording and piece by piece between timestamp gaps (> MAX_GAP_STEPS median
steps), keeping the recorded rows minus `trim_s` at each piece's ends. Per piece: jittery
timestamps are interpolated onto a uniform grid; q, tau and the measured dq pass a zero-phase
Butterworth low-pass; dq (unless measured) and ddq (rad/s²) are Savitzky-Golay derivatives; a
resampled piece is mapped back onto its recorded timestamps. Temperatures stay unfiltered; a
piece too short to filter is dropped and counted; a dataset with exact `ddq` is returned as it
is. Report: `metadata["preprocessing"]`. Rationale: docs/design.md#preprocessing
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from ident_framework.data.dataset import AsRecorded, Dataset, concatenate, recording_rows
from ident_framework.data.filters import (
    butterworth_lowpass,
    cubic_spline,
    pad_length,
    savgol_derivative,
    zero_phase_filter_parts,
)
from ident_framework.data.parallel_filter import FilterSegment, ParallelFilter
from ident_framework.errors import UserError
from ident_framework.params import Params, param

AS_RECORDED = ("timestamp", "tau", "recording")  # the fields of AsRecorded, in order
MAX_GAP_STEPS = 10.0  # a step longer than this many median steps is a gap in the recording
RESAMPLE_MODES = ("auto", "never", "always")
FRICTION_COLUMNS = ("auto", "parallel", "filtered_velocity")
__all__ = ["PreprocessingParams", "default_trim_s", "preprocess"]
JITTER_TOLERANCE = 0.05  # max |dt - median dt| / median dt still treated as uniform sampling
EDGE_TIME_CONSTANTS = {True: 8.0, False: 12.0}  # by use_measured_velocity
TARGETS = ("q_target", "dq_target", "ddq_target")


@dataclass
class PreprocessingParams(Params):
    """Parameters of `preprocess`.

    lowpass_hz: Butterworth cut-off in Hz (not normalised). savgol_window_s: differentiation
    window in s, rounded to an odd number of samples >= savgol_polyorder + 2. trim_s: s dropped
    at each end of every piece (None: `default_trim_s` plus half the window). resample: "auto"
    (onto a uniform grid when the timestamps jitter), "never" or "always". friction_columns:
    "parallel" (from the unfiltered velocity, low-passed like the torque: `parallel_filter.py`),
    "filtered_velocity", or "auto" (parallel for friction models with nonlinear parameters).
    """

    lowpass_hz: float = param(20.0, gt=0, unit="Hz", note="a cut-off frequency")
    filter_order: int = param(4, ge=1, le=10)
    savgol_window_s: float = param(0.03, gt=0, unit="s")
    savgol_polyorder: int = param(3, ge=1)
    trim_s: float | None = param(None, ge=0, unit="s")
    use_measured_velocity: bool = True
    resample: str = param("auto", choices=RESAMPLE_MODES)
    friction_columns: str = param("parallel", choices=FRICTION_COLUMNS)

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
    """Filtered, differentiated copy of `ds` at its recorded rows: q (rad), dq (rad/s), ddq
    (rad/s²), low-passed tau (Nm), the rows as recorded in `recorded`, the report in
    `metadata["preprocessing"]`. UserError when the sample rate cannot carry the cut-off, a
    recording is too short, or its timestamps do not increase. `step_of`: the sample step (s)
    of a piece from its timestamps (default: their median step; `modes/distributed.py` passes
    the whole recording's, `recording_steps`)."""
    params = params or PreprocessingParams()
    recorded = ds.recorded or AsRecorded.of(ds)
    names = ds.recording_paths
    if ds.ddq is not None:
        note = {"applied": False, "reason": "exact accelerations given; data used as recorded"}
        return replace(ds, metadata={**ds.metadata, "preprocessing": note}, recorded=recorded)
    pieces, reports = [], []
    for index, rows in recording_rows(recorded.recording):
        part = replace(ds.select(rows), recorded=recorded.select(rows))
        where = _where(names, index, ds)
        kept, report = _preprocess_recording(part, params, min_samples, where, step_of)
        pieces += kept
        reports.append({"path": names[index] if index < len(names) else None, **report})
    out = concatenate(pieces) if len(pieces) > 1 else pieces[0]
    # the pieces' own rows as recorded, with the recording indices of `ds` (concatenate would
    # number unnamed pieces apart)
    kept = (
        pieces[0].recorded  # one piece: its rows of `recorded` (views when they are a slice)
        if len(pieces) == 1
        else AsRecorded(
            *(np.concatenate([getattr(p.recorded, k) for p in pieces]) for k in AS_RECORDED)
        )
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
    """Whether `preprocess(ds, params, min_samples=...)` succeeds: every recording keeps a
    piece long enough to filter, with the cut-off below its Nyquist frequency."""
    if ds.ddq is not None:
        return True
    for _, rows in recording_rows(ds.recording_index):
        t = np.asarray(ds.timestamp[rows], dtype=float)
        if len(t) < 3 or not np.all(np.diff(t) > 0):
            return False
        slices, _ = gap_slices(t, float(np.median(np.diff(t))))
        usable = [segment_usable(t[piece], params, min_samples) for piece in slices]
        if None in usable or not any(usable):
            return False
    return True


def resamples_any(ds: Dataset, params: PreprocessingParams) -> bool:
    """Whether `preprocess(ds, params)` filters any piece of `ds` on a uniform grid."""
    if ds.ddq is not None:
        return False
    for _, rows in recording_rows(ds.recording_index):
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
    """(the row slices between gaps, each gap's report): a gap is a step over MAX_GAP_STEPS
    times the median step `step` (s)."""
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
    """The sample step (s) preprocessing gives each piece of the recording with timestamps `t`,
    as a function of a window's timestamps (the piece it starts in)."""
    whole = float(np.median(np.diff(t)))
    slices, _ = gap_slices(t, whole)
    starts = np.array([t[piece.start] for piece in slices])
    # a piece of one sample has no step (preprocessing drops it): the recording's
    steps = [float(np.median(np.diff(t[p]))) if p.stop - p.start > 1 else whole for p in slices]

    def step_of(window: np.ndarray) -> float:
        return steps[max(int(np.searchsorted(starts, window[0], side="right")) - 1, 0)]

    return step_of


def _checked_step(t: np.ndarray, where: str) -> float:
    """Median sample step (s); UserError for fewer than 3 samples or non-increasing times."""
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
    """metadata["preprocessing"]: settings, totals and each recording's report."""
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


class SegmentTooShort(UserError):
    """A piece of a recording too short to filter (the caller may drop it and count it)."""


def filter_segment(
    ds: Dataset,
    params: PreprocessingParams,
    min_samples: int,
    where: str,
    step_of: Callable[[np.ndarray], float] | None = None,
) -> tuple[Dataset, dict[str, Any]]:
    """(filtered, differentiated copy of the contiguous piece `ds` at its kept recorded rows,
    the report). `where` names the piece in messages (e.g. " from 'a.csv'"); `step_of`: as
    for `preprocess`."""
    t = np.asarray(ds.timestamp, dtype=float)
    signals = finite_signals(ds, where)
    step, jitter, resampled, n = segment_timing(t, params, where, step_of)
    sos, window, trim_s, n_trim = filter_design(params, step, n, min_samples, where)
    grid, on_grid = on_uniform_grid(t, step, signals) if resampled else (t, signals)
    assert len(grid) == n
    q, dq, ddq, tau, dq_unfiltered = filter_and_differentiate(params, sos, window, step, on_grid)
    if resampled:
        first, last = grid[n_trim], grid[n - 1 - n_trim]
        rows = np.flatnonzero((t >= first - 1e-9 * step) & (t <= last + 1e-9 * step))
        back = cubic_spline(grid, np.hstack([q, dq, ddq, tau]), t[rows])
        q, dq, ddq, tau = np.split(back, 4, axis=1)
        # computed now: a later call would keep the whole resampled signal block alive
        velocity = partial(np.asarray, np.ascontiguousarray(dq_unfiltered()))
        segment = FilterSegment(grid, velocity, sos, rows, at=t)
    else:
        rows = np.arange(n_trim, n - n_trim)
        kept = slice(n_trim, n - n_trim)  # the same rows: views, copied once below
        q, dq, ddq, tau = (a[kept] for a in (q, dq, ddq, tau))
        segment = FilterSegment(grid, dq_unfiltered, sos, rows)
    # the recorded rows: views of the recording's arrays when they are a block of rows
    recorded = (ds.recorded or AsRecorded.of(ds)).select(rows if resampled else kept)
    report = {
        "n_samples_in": int(len(t)),
        "n_samples_out": int(len(rows)),
        "edge_samples_dropped": int(len(t) - len(rows)),
        "median_step_s": step,
        "sample_rate_hz": 1.0 / step,
        "max_step_jitter": jitter,
        "resampled": resampled,
        "savgol_window_samples": window,
        "savgol_window_s": window * step,
        "trim_s": trim_s,
        "trim_samples": n_trim,
    }
    out = replace(
        ds,
        timestamp=np.ascontiguousarray(t[rows]),
        q=np.ascontiguousarray(q),
        dq=np.ascontiguousarray(dq),
        ddq=np.ascontiguousarray(ddq),
        tau=np.ascontiguousarray(tau),
        **{name: signals[name][rows].copy() for name in TARGETS if name in signals},
        temperature=None if ds.temperature is None else np.asarray(ds.temperature)[rows].copy(),
        parallel_filter=ParallelFilter((segment,)),
        recorded=recorded,
    )
    return out, report


def segment_timing(
    t: np.ndarray,
    params: PreprocessingParams,
    where: str,
    step_of: Callable[[np.ndarray], float] | None = None,
) -> tuple[float, float, bool, int]:
    """(sample step s, step jitter, resampled, samples filtered) of a piece with timestamps `t`
    (s); SegmentTooShort for a piece of one sample."""
    if len(t) < 2:
        raise SegmentTooShort(
            f"The recording{where} is too short to preprocess: {len(t)} sample (no sample "
            "step to filter with). Record a longer motion."
        )
    steps = np.diff(t)
    step = float(np.median(steps)) if step_of is None else float(step_of(t))
    jitter = step_jitter(steps, step)
    resampled = resamples(params, jitter)
    return step, jitter, resampled, grid_length(t, step) if resampled else len(t)


def step_jitter(steps: np.ndarray, step: float) -> float:
    """max |dt - step| / step over the sample steps `steps` (s); 0 without steps."""
    return float(np.max(np.abs(steps - step), initial=0.0) / step)


def grid_length(t: np.ndarray, step: float) -> int:
    """Samples of the uniform grid of `step` s from t[0] to t[-1] (`on_uniform_grid`)."""
    return int(np.floor((t[-1] - t[0]) / step + 1e-9)) + 1


def resamples(params: PreprocessingParams, jitter: float) -> bool:
    """Whether a piece of that step jitter is filtered on a uniform grid (`resample`)."""
    return params.resample == "always" or (params.resample == "auto" and jitter > JITTER_TOLERANCE)


def finite_signals(ds: Dataset, where: str) -> dict[str, np.ndarray]:
    """q, dq, tau and the targets present, as float arrays; UserError at a non-finite value."""
    names = ["q", "dq", "tau", *(name for name in TARGETS if getattr(ds, name) is not None)]
    signals = {name: np.asarray(getattr(ds, name), dtype=float) for name in names}
    for name, values in signals.items():
        if not np.all(np.isfinite(values)):
            row, joint = np.argwhere(~np.isfinite(values))[0]
            raise UserError(
                f"The data{where} hold a non-finite {name} at sample index {row}, joint "
                f"{ds.joint_names[joint]!r}; remove or repair those samples before preprocessing."
            )
    return signals


def on_uniform_grid(
    t: np.ndarray, step: float, signals: dict[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(timestamps of a uniform grid of `step` s from t[0], the signals on it by cubic
    spline)."""
    names = list(signals)
    grid = step * np.arange(grid_length(t, step))
    stacked = np.hstack([signals[name] for name in names])
    spline = cubic_spline(t - t[0], stacked, grid)
    parts = np.split(spline, len(names), axis=1)
    return t[0] + grid, dict(zip(names, parts, strict=True))


def filter_design(
    params: PreprocessingParams, step: float, n: int, min_samples: int, where: str
) -> tuple[np.ndarray, int, float, int]:
    """(Butterworth sections, Savitzky-Golay window in samples, trim in s and in samples at each
    end) for n samples `step` s apart; SegmentTooShort (checked first) for a piece too short,
    UserError when the cut-off is not below Nyquist."""
    rate = 1.0 / step
    window = _odd_window(params.savgol_window_s * rate, params.savgol_polyorder)
    trim_s = params.trim_s
    if trim_s is None:
        trim_s = (
            default_trim_s(params.lowpass_hz, params.filter_order, params.use_measured_velocity)
            + 0.5 * window * step
        )
    n_trim = math.ceil(trim_s * rate - 1e-9)
    padlen = 3 * (params.filter_order + 1)  # pad_length of the design below
    needed = max(padlen + 1, window, 2 * n_trim + min_samples)
    if n < needed:
        raise SegmentTooShort(
            f"The recording{where} is too short to preprocess: {n} samples "
            f"({n * step:.3g} s at {rate:.4g} Hz), but {needed} are needed ({2 * n_trim} "
            f"trimmed by preprocessing.trim_s={trim_s:.3g} s at both ends, at least "
            f"{min_samples} kept, filter padding {padlen}, window {window}). Record a longer "
            "motion or reduce preprocessing.trim_s / preprocessing.savgol_window_s."
        )
    nyquist = rate / 2
    if params.lowpass_hz >= nyquist:
        raise UserError(
            f"preprocessing.lowpass_hz={params.lowpass_hz} Hz is not below the Nyquist frequency "
            f"{nyquist:.4g} Hz of this data{where} (median sample step {step * 1e3:.4g} ms, "
            f"{rate:.4g} Hz). Give the cut-off in Hz (not normalised) below {nyquist:.4g}, e.g. "
            f"preprocessing.lowpass_hz={_round_down(0.4 * rate)}."
        )
    sos = butterworth_lowpass(params.filter_order, params.lowpass_hz, rate)
    assert pad_length(sos) == padlen
    return sos, window, trim_s, n_trim


def segment_usable(
    t: np.ndarray,
    params: PreprocessingParams,
    min_samples: int,
    step_of: Callable[[np.ndarray], float] | None = None,
) -> bool | None:
    """Whether `filter_segment` can filter the piece with timestamps `t` (s): True, False when
    it is too short, None when the cut-off is not below its Nyquist frequency."""
    try:
        step, _, _, n = segment_timing(t, params, "", step_of)
        filter_design(params, step, n, min_samples, "")
    except SegmentTooShort:
        return False
    except UserError:
        return None
    return True


def filter_and_differentiate(
    params: PreprocessingParams,
    sos: np.ndarray,
    window: int,
    step: float,
    signals: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Callable[[], np.ndarray]]:
    """(q, dq, ddq, tau, a call giving the unfiltered dq): q, tau (and the measured dq)
    low-passed, dq (unless measured) and ddq by Savitzky-Golay differentiation."""
    filtered_names = ["q", "tau"] + (["dq"] if params.use_measured_velocity else [])
    filtered = zero_phase_filter_parts(sos, [signals[k] for k in filtered_names])
    parts = dict(zip(filtered_names, filtered, strict=True))
    q, tau = parts["q"], parts["tau"]
    derivative = partial(
        savgol_derivative, window=window, polyorder=params.savgol_polyorder, deriv=1,
        delta=step,
    )  # fmt: skip
    if params.use_measured_velocity:
        dq = parts["dq"]
        dq_unfiltered = partial(np.asarray, signals["dq"])
    else:
        dq = derivative(q)
        dq_unfiltered = partial(derivative, signals["q"])
    ddq = derivative(dq)
    return q, dq, ddq, tau, dq_unfiltered


def default_trim_s(
    lowpass_hz: float, filter_order: int, use_measured_velocity: bool = False
) -> float:
    """Edge length (s) after which the filters' edge error of ddq is below 1e-4 of max |ddq|:
    EDGE_TIME_CONSTANTS time constants 1 / (2 pi f_c sin(pi / (2 order))) of the Butterworth's
    slowest pole (docs/design.md#preprocessing)."""
    time_constant = 1.0 / (2 * math.pi * lowpass_hz * math.sin(math.pi / (2 * filter_order)))
    return EDGE_TIME_CONSTANTS[bool(use_measured_velocity)] * time_constant


def _odd_window(samples: float, polyorder: int) -> int:
    """Odd window length in samples, nearest to `samples`, at least polyorder + 2."""
    window = max(int(round(samples)), polyorder + 2)
    return window if window % 2 else window + 1


def _round_down(value: float) -> float:
    """A round number not above value (for suggestions in messages)."""
    magnitude = 10 ** math.floor(math.log10(value))
    return math.floor(value / magnitude) * magnitude
