"""Zero-phase filtering and differentiation of one contiguous piece of a recording, on its
recorded timestamps (`preprocessing.py` splits recordings into such pieces).

Steps (all joints at once, no per-sample loops):

1. Timestamps: when the steps jitter (max |dt - median dt| > 5 % of the median, `resample`
   "auto") every signal is interpolated (cubic spline through the recorded samples) onto a
   uniform grid at the median step. Filters assume uniform sampling; treating a 2-16 ms
   jittery log as uniform gives acceleration errors of the order of the signal itself.
2. q, tau (and the measured dq) pass a zero-phase Butterworth low-pass (forward-backward as
   scipy.signal.sosfiltfilt, `zero_phase_lowpass`), cut-off
   in Hz converted with the actual sample rate.
3. dq: the filtered measured velocity, or the Savitzky-Golay derivative of the filtered q.
   ddq: the Savitzky-Golay derivative of dq. The window is centred (odd length), so each
   derivative belongs to the sample at the window centre: no half-sample shift.
4. Back to the recorded rows: on a uniform log the grid is the recording; a resampled one's
   filtered signals are mapped back onto the recorded timestamps by cubic spline. The rows
   within `trim_s` of either end are dropped (the filters' edge transients); every other
   recorded row is kept, with its timestamp and torque as recorded (`Dataset.recorded`).
   Joint temperatures (°C), when recorded, are kept as recorded at those rows (unfiltered:
   they change over minutes).

Edge length (default `trim_s`): measured on multi-sines (0.1-1.3 Hz) at 100, 500 and 1000 Hz,
20 Hz order-4 cut-off, against the same filters run on a longer record of the same signal, the
largest edge error of ddq relative to max |ddq| after N time constants of the filter's slowest
pole (plus half the Savitzky-Golay window): with the measured velocity (ddq is one derivative
of the filtered dq) 1.8e-3 at 4, 4.4e-4 at 6, 3.4e-5 at 8; with dq from q (two derivatives of
the filtered q) 9e-2 at 4, 8e-3 at 6, 1.6e-3 at 8, 2.5e-5 at 12. The default keeps the edge
error below 1e-4 of max |ddq| (far below any torque sensor's noise): 8 time constants with the
measured velocity (0.181 s with the window, 20 Hz, 500 Hz), 12 from q (0.265 s).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.data.cubic_spline import cubic_spline
from ident_framework.data.dataset import AsRecorded, Dataset
from ident_framework.data.parallel_filter import FilterSegment, ParallelFilter
from ident_framework.data.savitzky_golay import savgol_derivative
from ident_framework.data.zero_phase_lowpass import (
    butterworth_lowpass,
    pad_length,
    zero_phase_filter_parts,
)
from ident_framework.errors import UserError

if TYPE_CHECKING:
    from ident_framework.data.preprocessing import PreprocessingParams

JITTER_TOLERANCE = 0.05  # max |dt - median dt| / median dt still treated as uniform sampling
EDGE_TIME_CONSTANTS = {True: 8.0, False: 12.0}  # by use_measured_velocity: see the module doc
TARGETS = ("q_target", "dq_target", "ddq_target")


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
    the report of what was done). `ds.recorded` (default: `ds` itself) gives the rows'
    recorded values; `where` names the piece in messages (e.g. " from 'a.csv'"); `step_of`:
    the sample step (s) from the piece's timestamps (default: their median step)."""
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
    recorded = (ds.recorded or AsRecorded.of(ds)).select(rows)
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
    """(sample step s, step jitter, filtered on a uniform grid, samples filtered: the grid's
    or the recording's) of a piece with timestamps `t` (s); SegmentTooShort for a piece of one
    sample (a gap right after a recording's first sample, or before its last), which has no
    step at all."""
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
    """(Butterworth second-order sections, Savitzky-Golay window in samples, trim in s and in
    samples at each end) for n samples `step` s apart; SegmentTooShort when the piece is too
    short (checked first: a short piece is dropped whatever its rate), UserError when the
    cut-off is not below Nyquist."""
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
    """Whether `filter_segment` can filter the piece with timestamps `t` (s) with `params`:
    True, False when it is too short (it would be dropped), None when the cut-off is not
    below its Nyquist frequency (an error). Nothing is filtered."""
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
    """(q, dq, ddq, tau, unfiltered dq): q and tau (and the measured dq) low-passed zero-phase,
    dq (unless measured) and ddq by Savitzky-Golay differentiation; the unfiltered dq as a
    call that computes it (the recorded dq, or the derivative of the recorded q), since only
    parallel filtering uses it."""
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
    """Edge length (s) after which the filters' edge error of ddq is below 1e-4 of max |ddq|
    (measured: see the module doc): EDGE_TIME_CONSTANTS time constants of the Butterworth's
    slowest pole, 1 / (2 pi f_c sin(pi / (2 order))) — 8 with the measured velocity (0.167 s
    for 20 Hz, order 4), 12 with dq from q (0.25 s); the Savitzky-Golay half window is added
    on top."""
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
