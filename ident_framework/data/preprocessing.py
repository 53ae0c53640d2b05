"""Zero-phase filtering and differentiation of joint data, on the recorded timestamps.

Steps (all joints at once, no per-sample loops):

1. Timestamps: when the steps jitter (max |dt - median dt| > 5 % of the median, `resample`
   "auto") every signal is interpolated (cubic spline through the recorded samples) onto a
   uniform grid at the median step. Filters assume uniform sampling; treating a 2-16 ms
   jittery log as uniform gives acceleration errors of the order of the signal itself.
2. q, tau (and the measured dq) pass a zero-phase Butterworth low-pass (`sosfiltfilt`), cut-off
   in Hz converted with the actual sample rate.
3. dq: the filtered measured velocity, or the Savitzky-Golay derivative of the filtered q.
   ddq: the Savitzky-Golay derivative of dq. The window is centred (odd length), so each
   derivative belongs to the sample at the window centre: no half-sample shift.
4. `trim_s` seconds are removed at each end, so no filter edge transient remains.

A dataset that already carries exact accelerations (`ds.ddq` is not None, e.g. a simulation
that knows them) is returned as it is: exact data need no preprocessing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.signal import butter, savgol_filter, sosfiltfilt

from ident_framework.data.dataset import Dataset
from ident_framework.data.parallel_filter import FilterSegment, ParallelFilter
from ident_framework.errors import UserError

JITTER_TOLERANCE = 0.05  # max |dt - median dt| / median dt still treated as uniform sampling
MAX_GAP_STEPS = 10.0  # a step longer than this many median steps is a gap in the recording
RESAMPLE_MODES = ("auto", "never", "always")
FRICTION_COLUMNS = ("auto", "parallel", "filtered_velocity")
_TARGETS = ("q_target", "dq_target", "ddq_target")


@dataclass
class PreprocessingParams:
    """Parameters of `preprocess`.

    lowpass_hz: Butterworth cut-off in Hz (not normalised; checked against the data's Nyquist
    frequency at run time). filter_order: its order (the zero-phase pass doubles it).
    savgol_window_s: differentiation window in s, rounded to an odd number of samples
    >= savgol_polyorder + 2. trim_s: s removed at each end after filtering (None: twelve time
    constants of the filter's slowest pole plus half the window, 0.265 s for the defaults).
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
    friction_columns: str = "auto"

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
    ds: Dataset, params: PreprocessingParams | None = None, *, min_samples: int = 10
) -> Dataset:
    """Filtered, differentiated and trimmed copy of `ds` (which is left untouched).

    Returns a Dataset with q (rad), dq (rad/s), ddq (rad/s^2), tau (Nm) on a uniform time grid
    (s), targets interpolated onto the same rows, and `metadata["preprocessing"]` describing
    what was done. Raises UserError when the sample rate cannot carry the cut-off or fewer than
    `min_samples` samples would remain after trimming.
    """
    params = params or PreprocessingParams()
    if ds.ddq is not None:
        note = {"applied": False, "reason": "exact accelerations given; data used as recorded"}
        return replace(ds, metadata={**ds.metadata, "preprocessing": note})

    t = np.asarray(ds.timestamp, dtype=float)
    step, jitter = _sample_step(ds, t)
    signals = _finite_signals(ds)
    resampled = params.resample == "always" or (
        params.resample == "auto" and jitter > JITTER_TOLERANCE
    )
    timestamp, signals = _on_uniform_grid(t, step, signals) if resampled else (t, signals)
    n = len(timestamp)
    sos, window, trim_s, n_trim = _filter_design(ds, params, step, n, min_samples)
    q, dq, ddq, tau, dq_unfiltered = _filter_and_differentiate(params, sos, window, step, signals)

    rows = slice(n_trim, n - n_trim)
    segment = FilterSegment(timestamp, np.ascontiguousarray(dq_unfiltered), sos, np.arange(n)[rows])
    targets = {name: signals[name][rows].copy() for name in _TARGETS if name in signals}
    report: dict[str, Any] = {
        "applied": True,
        "n_samples_in": int(len(t)),
        "n_samples_out": int(n - 2 * n_trim),
        "median_step_s": step,
        "sample_rate_hz": 1.0 / step,
        "max_step_jitter": jitter,
        "resampled": resampled,
        "resample_mode": params.resample,
        "interpolation": "cubic spline" if resampled else None,
        "lowpass_hz": params.lowpass_hz,
        "filter": f"Butterworth order {params.filter_order}, zero-phase (sosfiltfilt)",
        "velocity": "measured dq, filtered"
        if params.use_measured_velocity
        else "Savitzky-Golay derivative of filtered q",
        "savgol_window_samples": window,
        "savgol_window_s": window * step,
        "savgol_polyorder": params.savgol_polyorder,
        "trim_s": trim_s,
        "trim_samples": n_trim,
    }
    return replace(
        ds,
        timestamp=np.ascontiguousarray(timestamp[rows]),
        q=np.ascontiguousarray(q[rows]),
        dq=np.ascontiguousarray(dq[rows]),
        ddq=np.ascontiguousarray(ddq[rows]),
        tau=np.ascontiguousarray(tau[rows]),
        **targets,
        metadata={**ds.metadata, "preprocessing": report},
        parallel_filter=ParallelFilter((segment,)),
    )


def _sample_step(ds: Dataset, t: np.ndarray) -> tuple[float, float]:
    """(median sample step in s, largest deviation from it as a share of it); UserError for
    fewer than 3 samples, timestamps that do not increase, or a gap in the recording."""
    if len(t) < 3:
        raise UserError(
            f"Preprocessing needs at least 3 samples to filter and differentiate; the data"
            f"{_origin(ds)} have {len(t)}."
        )
    steps = np.diff(t)
    if not np.all(steps > 0):
        row = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise UserError(
            f"The timestamps{_origin(ds)} do not increase strictly at sample index {row} "
            f"({float(t[row - 1]):.9g} s then {float(t[row]):.9g} s); repair the recording "
            "before preprocessing."
        )
    step = float(np.median(steps))
    jitter = float(np.max(np.abs(steps - step)) / step)
    if steps.max() > MAX_GAP_STEPS * step:
        row = int(np.argmax(steps))
        raise UserError(
            f"The recording{_origin(ds)} has a gap of {steps[row]:.4g} s between sample indices "
            f"{row} and {row + 1} "
            f"(t = {t[row]:.6g} s to {t[row + 1]:.6g} s), over {MAX_GAP_STEPS:g} times the "
            f"median step {step:.4g} s: the data were interrupted and cannot be filtered or "
            "differentiated across it. Split the log at the gap or record without interruption."
        )
    return step, jitter


def _finite_signals(ds: Dataset) -> dict[str, np.ndarray]:
    """q, dq, tau and the targets present, as float arrays; UserError at a non-finite value."""
    names = ["q", "dq", "tau", *(name for name in _TARGETS if getattr(ds, name) is not None)]
    signals = {name: np.asarray(getattr(ds, name), dtype=float) for name in names}
    for name, values in signals.items():
        if not np.all(np.isfinite(values)):
            row, joint = np.argwhere(~np.isfinite(values))[0]
            raise UserError(
                f"The data{_origin(ds)} hold a non-finite {name} at sample index {row}, joint "
                f"{ds.joint_names[joint]!r}; remove or repair those samples before preprocessing."
            )
    return signals


def _on_uniform_grid(
    t: np.ndarray, step: float, signals: dict[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(timestamps of a uniform grid of `step` s from t[0], the signals on it by cubic
    spline)."""
    names = list(signals)
    n_grid = int(np.floor((t[-1] - t[0]) / step + 1e-9)) + 1
    grid = step * np.arange(n_grid)
    stacked = np.hstack([signals[name] for name in names])
    spline = CubicSpline(t - t[0], stacked, axis=0)(grid)
    parts = np.split(spline, len(names), axis=1)
    return t[0] + grid, dict(zip(names, parts, strict=True))


def _filter_design(
    ds: Dataset, params: PreprocessingParams, step: float, n: int, min_samples: int
) -> tuple[np.ndarray, int, float, int]:
    """(Butterworth second-order sections, Savitzky-Golay window in samples, trim in s and in
    samples at each end) for n samples `step` s apart; UserError when the cut-off is not below
    Nyquist or the recording is too short."""
    rate = 1.0 / step
    nyquist = rate / 2
    if params.lowpass_hz >= nyquist:
        raise UserError(
            f"preprocessing.lowpass_hz={params.lowpass_hz} Hz is not below the Nyquist frequency "
            f"{nyquist:.4g} Hz of this data (median sample step {step * 1e3:.4g} ms, "
            f"{rate:.4g} Hz). Give the cut-off in Hz (not normalised) below {nyquist:.4g}, e.g. "
            f"preprocessing.lowpass_hz={_round_down(0.4 * rate)}."
        )
    sos = butter(params.filter_order, params.lowpass_hz, btype="low", fs=rate, output="sos")
    window = _odd_window(params.savgol_window_s * rate, params.savgol_polyorder)
    trim_s = params.trim_s
    if trim_s is None:
        trim_s = default_trim_s(params.lowpass_hz, params.filter_order) + 0.5 * window * step
    n_trim = math.ceil(trim_s * rate - 1e-9)
    padlen = 3 * (2 * len(sos) + 1 - min((sos[:, 2] == 0).sum(), (sos[:, 5] == 0).sum()))
    needed = max(padlen + 1, window, 2 * n_trim + min_samples)
    if n < needed:
        raise UserError(
            f"The recording{_origin(ds)} is too short to preprocess: {n} samples "
            f"({n * step:.3g} s at {rate:.4g} Hz), but {needed} are needed ({2 * n_trim} "
            f"trimmed by preprocessing.trim_s={trim_s:.3g} s at both ends, at least "
            f"{min_samples} kept, filter padding {padlen}, window {window}). Record a longer "
            "motion or reduce preprocessing.trim_s / preprocessing.savgol_window_s."
        )
    return sos, window, trim_s, n_trim


def _filter_and_differentiate(
    params: PreprocessingParams,
    sos: np.ndarray,
    window: int,
    step: float,
    signals: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(q, dq, ddq, tau, unfiltered dq): q and tau (and the measured dq) low-passed zero-phase,
    dq (unless measured) and ddq by Savitzky-Golay differentiation."""
    filtered_names = ["q", "tau"] + (["dq"] if params.use_measured_velocity else [])
    filtered = sosfiltfilt(sos, np.hstack([signals[k] for k in filtered_names]), axis=0)
    parts = dict(zip(filtered_names, np.split(filtered, len(filtered_names), axis=1), strict=True))
    q, tau = parts["q"], parts["tau"]
    deriv = {"window_length": window, "polyorder": params.savgol_polyorder, "deriv": 1}
    if params.use_measured_velocity:
        dq = parts["dq"]
        dq_unfiltered = signals["dq"]
    else:
        dq = savgol_filter(q, delta=step, axis=0, **deriv)
        dq_unfiltered = savgol_filter(signals["q"], delta=step, axis=0, **deriv)
    ddq = savgol_filter(dq, delta=step, axis=0, **deriv)
    return q, dq, ddq, tau, dq_unfiltered


def default_trim_s(lowpass_hz: float, filter_order: int) -> float:
    """Edge length (s) after which a Butterworth transient has decayed by e^-12 (~6e-6): twelve
    time constants of its slowest pole, 1 / (2 pi f_c sin(pi / (2 order))); 0.25 s for 20 Hz,
    order 4 (the Savitzky-Golay half window is added on top)."""
    return 12.0 / (2 * math.pi * lowpass_hz * math.sin(math.pi / (2 * filter_order)))


def _origin(ds: Dataset) -> str:
    """' from FILE' when the dataset says where it came from, for messages."""
    path = ds.metadata.get("path")
    return f" from '{path}'" if path else ""


def _odd_window(samples: float, polyorder: int) -> int:
    """Odd window length in samples, nearest to `samples`, at least polyorder + 2."""
    window = max(int(round(samples)), polyorder + 2)
    return window if window % 2 else window + 1


def _round_down(value: float) -> float:
    """A round number not above value (for suggestions in messages)."""
    magnitude = 10 ** math.floor(math.log10(value))
    return math.floor(value / magnitude) * magnitude
