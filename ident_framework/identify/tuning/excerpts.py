"""The rows the cross-validation reads from a long recording: short windows, not a stride.

A recording of up to a few times `tuning.max_samples` samples is preprocessed whole and every
k-th sample used; from a longer one the cross-validation reads about `max_samples` samples from
short windows, WINDOWS_PER_FOLD in each fold position, spread over the recording. Each window
is preprocessed with a halo on either side, within which the filters' edge transients decay,
so its filtered values equal the whole recording's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import PreprocessingParams, default_trim_s, recording_steps
from ident_framework.identify.tuning.folds import FoldPlan

HALO_EDGES = 2  # halo each side, in filter edges (12 time constants each: e^-24 left)
WINDOWS_PER_FOLD = 2  # windows in each fold position (time or phase block)
WINDOWED_SHARE = 0.7  # windows only when they (and halos) hold at most this share of samples


@dataclass(frozen=True)
class Excerpt:
    """A window of recording `recording`: its own rows `first` to `stop` (exclusive), at
    `start_s` to `end_s` (s); `step_of` the sample step (s) the filters of the whole recording
    use (`preprocessing.recording_steps`)."""

    recording: int
    first: int
    stop: int
    start_s: float
    end_s: float
    step_of: Callable[[np.ndarray], float]

    def data(self, recording: Dataset, halo: float) -> Dataset:
        """The window's raw samples with `halo` s of `recording` on either side."""
        extra = math.ceil(halo / self.step_of(recording.timestamp[self.first :]))
        return recording.select(
            slice(max(self.first - extra, 0), min(self.stop + extra, recording.n_samples))
        )

    def own(self, timestamp: np.ndarray) -> np.ndarray:
        """(M,) bool: the rows at `timestamp` (s) that are the window's own, not its halo."""
        return (timestamp >= self.start_s) & (timestamp <= self.end_s)


def halo_s(preprocessing: PreprocessingParams) -> float:
    """Halo (s) on each side of a window that `preprocessing` needs: HALO_EDGES filter edges
    at its cut-off and order, and the Savitzky-Golay window (at least twice a configured
    trim)."""
    edge = default_trim_s(preprocessing.lowpass_hz, preprocessing.filter_order)
    halo = HALO_EDGES * edge + preprocessing.savgol_window_s
    return max(halo, 2 * (preprocessing.trim_s or 0.0))


def plan_excerpts(
    recordings: list[Dataset], plan: FoldPlan, max_samples: int | None, halo: float
) -> list[Excerpt] | None:
    """The windows the cross-validation reads (about `max_samples` samples in all), or None
    when the recordings are read whole: no cap, or the windows with `halo` s (the slowest
    candidate's) on either side would hold more than WINDOWED_SHARE of the samples."""
    if not max_samples:
        return None
    total = sum(r.n_samples for r in recordings)
    windows: list[tuple[int, int, int]] = []  # recording, first row, stop row
    read = 0
    for index, recording in enumerate(recordings):
        t = np.asarray(recording.timestamp, dtype=float)
        if len(t) < 3:
            return None
        count = _window_count(plan, recording.n_samples, total)
        length = math.ceil(max_samples * recording.n_samples / total / count)
        step = float(np.median(np.diff(t)))
        extra = math.ceil(halo / step)
        for centre in _centres(plan, index, t, count, length * step / 2):
            first = int(np.clip(np.searchsorted(t, centre) - length // 2, 0, len(t) - length))
            windows.append((index, first, first + length))
            read += min(first + length + extra, len(t)) - max(first - extra, 0)
    if read > WINDOWED_SHARE * total or not _disjoint(windows):
        return None
    steps = [recording_steps(np.asarray(r.timestamp, dtype=float)) for r in recordings]
    return [
        Excerpt(
            index,
            first,
            stop,
            float(recordings[index].timestamp[first]),
            float(recordings[index].timestamp[stop - 1]),
            steps[index],
        )
        for index, first, stop in windows
    ]


def _window_count(plan: FoldPlan, samples: int, total: int) -> int:
    """Windows in one recording: WINDOWS_PER_FOLD per fold position (time or phase block)
    when the folds are blocks; with one fold per recording, as many for each fold's worth of
    its share of the samples (at least one)."""
    if plan.kind == "recordings":
        return max(1, round(WINDOWS_PER_FOLD * plan.n_folds * samples / total))
    return WINDOWS_PER_FOLD * plan.n_folds


def _centres(plan: FoldPlan, index: int, t: np.ndarray, count: int, half_s: float) -> list[float]:
    """The window centres (s) of recording `index`: window k at fold position (k + 1/2) /
    count of the recording's time, or of the period's phase when the motion repeats (then in
    turn through the periods that hold a whole window, `half_s` s either side)."""
    start, duration = float(t[0]), float(t[-1] - t[0])
    period = plan.periods[index] if plan.kind != "recordings" else None
    if not period:
        return [start + (k + 0.5) / count * duration for k in range(count)]
    first = math.ceil(half_s / period)  # period p holds [p T, (p + 1) T) + the halves
    slots = max(math.floor((duration - half_s) / period) - first, 1)
    # spread evenly over the periods (more windows than periods: through them in turn)
    taken = [k * slots // count if count <= slots else k % slots for k in range(count)]
    return [start + (first + p + (k + 0.5) / count) * period for k, p in enumerate(taken)]


def _disjoint(windows: list[tuple[int, int, int]]) -> bool:
    """Whether no two windows of a recording share a row."""
    ordered = sorted(windows)
    return all(a[0] != b[0] or a[2] <= b[1] for a, b in zip(ordered, ordered[1:], strict=False))
