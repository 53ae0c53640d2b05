"""Folds of time-blocked cross-validation: contiguous parts of the motion, never a shuffle.

With at least `n_folds` recordings, each is one fold; otherwise each is cut into `n_folds`
time blocks (of its period's phase when the motion repeats), fold k the k-th block of each,
with `guard_s` s at block boundaries in no fold. Folds by kind of motion (`kind` partition):
per joint, its rest, creep, slow or reversal rows, one kind per fold. Rows are grouped in cells
(time block x kind) whose factors both partitions merge.

Rationale: docs/design.md#tuning-by-cross-validation
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.data.dataset import Dataset

PERIOD_TOLERANCE = 0.02  # rms |q(t + T) - q(t)| / std(q) below which the motion repeats
PERIOD_POINTS = 2000  # q is decimated to about this many samples to search for a period


@dataclass(frozen=True)
class FoldPlan:
    """How the samples of the identification recordings fall into folds.

    kind: "recordings" (one fold per recording) | "periodic blocks" | "time blocks";
    starts (per recording, s), durations (per recording, s), periods (per recording, s;
    None: that recording's motion does not repeat)."""

    kind: str
    n_folds: int
    starts: tuple[float, ...]
    durations: tuple[float, ...]
    periods: tuple[float | None, ...]
    guard_s: float
    by_time: bool = True  # the time (or recording) partition is used
    # the kind partition (`motion_kinds`): per recording, the timestamps (s) and kinds (N, n)
    # of its raw samples; empty: not used
    kind_times: tuple[np.ndarray, ...] = ()
    kinds: tuple[np.ndarray, ...] = ()

    @property
    def by_kind(self) -> bool:
        return bool(self.kinds)

    @property
    def n_blocks(self) -> int:
        return self.n_folds if self.by_time else 1

    @property
    def n_cells(self) -> int:
        """Row groups of the fold factors: (time block or recording) x kind."""
        return self.n_blocks * (len(KIND_NAMES) if self.by_kind else 1)

    def cells(self, recording: int, timestamp: np.ndarray, n_joints: int) -> np.ndarray:
        """(N, n_joints) cell of each joint's row at each sample of recording `recording` at
        `timestamp` (s): block x kinds + kind (the kind of the raw sample nearest in time);
        -1 for a whole sample in a guard band."""
        t = np.asarray(timestamp, dtype=float)
        if self.by_time:
            blocks = self.labels(recording, t)
        else:
            blocks = np.zeros(t.shape, dtype=int)
        if not self.by_kind:
            return np.repeat(blocks[:, None], n_joints, axis=1)
        raw_t = self.kind_times[recording]
        after = np.clip(np.searchsorted(raw_t, t), 1, len(raw_t) - 1)
        nearest = np.where(t - raw_t[after - 1] <= raw_t[after] - t, after - 1, after)
        cells = blocks[:, None] * len(KIND_NAMES) + self.kinds[recording][nearest]
        cells[blocks < 0] = -1
        return cells

    def layout(self, partitions: tuple[str, ...] | None = None) -> FoldLayout:
        """The folds over the cells: one per time block (or recording) holding out all its
        cells, and one per kind but fast holding out that kind's cells of every block;
        `partitions`: only those of the plan's partitions (None: all)."""
        n_kinds = len(KIND_NAMES) if self.by_kind else 1
        by_time = self.by_time and (partitions is None or "time" in partitions)
        by_kind = self.by_kind and (partitions is None or "kind" in partitions)
        cells, partition, names = [], [], []
        if by_time:
            word = "recording" if self.kind == "recordings" else "block"
            for b in range(self.n_blocks):
                cells.append(tuple(range(b * n_kinds, (b + 1) * n_kinds)))
                partition.append(0)
                names.append(f"{word} {b + 1}")
        if by_kind:
            for k in range(1, n_kinds):
                cells.append(tuple(b * n_kinds + k for b in range(self.n_blocks)))
                partition.append(1 if by_time else 0)
                names.append(KIND_NAMES[k])
        return FoldLayout(tuple(cells), tuple(partition), tuple(names))

    def labels(self, recording: int, timestamp: np.ndarray) -> np.ndarray:
        """(N,) fold of each sample (0..n_folds-1) of recording `recording` at `timestamp`
        (s), -1 for samples in a guard band."""
        t = np.asarray(timestamp, dtype=float) - self.starts[recording]
        if self.kind == "recordings":
            return np.full(t.shape, recording, dtype=int)
        period = self.periods[recording]
        length = period if period is not None else self.durations[recording]
        position = np.clip((t % length if period else t) / length, 0.0, 1.0 - 1e-12)
        scaled = position * self.n_folds
        labels = np.floor(scaled).astype(int)
        block_s = length / self.n_folds
        edge = np.minimum(scaled - labels, labels + 1 - scaled) * block_s
        inner = (labels > 0) | (scaled - labels > 0.5)  # the recording's own ends need no guard
        inner &= (labels < self.n_folds - 1) | (scaled - labels < 0.5) | bool(period)
        labels[(edge < self.guard_s) & inner] = -1
        return labels

    def describe(self) -> str:
        kinds = (
            f"{len(KIND_NAMES) - 1} folds by kind of motion per joint (its rest, creep, slow, "
            "reversal rows held out in turn; trained on all other rows)"
        )
        if not self.by_time:
            return kinds
        return self._describe_time() + ("; and " + kinds if self.by_kind else "")

    def _describe_time(self) -> str:
        if self.kind == "recordings":
            return f"{self.n_folds} folds: one per recording"
        each = f" of each of {len(self.starts)} recordings" if len(self.starts) > 1 else ""
        periods = [f"{p:.4g} s" for p in self.periods if p is not None]
        if periods:
            return (
                f"{self.n_folds} folds: blocks{each} (of the phase of the motion's period "
                f"{', '.join(periods)} where it repeats; guard {self.guard_s:g} s)"
            )
        return f"{self.n_folds} folds: contiguous time blocks{each} (guard {self.guard_s:g} s)"


def motion_period(timestamp: np.ndarray, q: np.ndarray) -> float | None:
    """The shortest lag T (s) at which q(t + T) repeats q(t) (rms difference below
    PERIOD_TOLERANCE of q's spread) with at least two periods recorded, else None."""
    t = np.asarray(timestamp, dtype=float)
    duration = t[-1] - t[0]
    if len(t) < 20 or duration <= 0:
        return None
    grid = np.linspace(t[0], t[-1], min(PERIOD_POINTS, len(t)))
    signal = np.column_stack([np.interp(grid, t, column) for column in np.asarray(q).T])
    spread = np.sqrt(np.sum(np.var(signal, axis=0)))
    if spread <= 0:
        return None
    step = grid[1] - grid[0]
    lags = np.arange(max(2, int(0.05 * len(grid))), len(grid) // 2 + 1)
    errors = _lagged_rms_differences(signal - signal.mean(axis=0), lags)
    repeating = np.flatnonzero(errors / spread < PERIOD_TOLERANCE)
    if repeating.size == 0:
        return None
    first = repeating[0]  # the first run of repeating lags: its best lag is the period
    run_end = first
    while run_end + 1 < len(lags) and errors[run_end + 1] / spread < PERIOD_TOLERANCE:
        run_end += 1
    best = first + int(np.argmin(errors[first : run_end + 1]))
    return float(lags[best] * step)


def _lagged_rms_differences(signal: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """rms over t of |signal(t + lag) - signal(t)| for each lag (rows t, columns summed), for
    all lags at once: |a - b|² = |a|² + |b|² - 2 a·b, the squares by cumulative sums and the
    products a·b (the autocorrelation) by one FFT per column."""
    n = len(signal)
    squares = np.concatenate([[0.0], np.cumsum(np.sum(signal**2, axis=1))])
    spectrum = np.fft.rfft(signal, 2 * n, axis=0)
    products = np.sum(np.fft.irfft(np.abs(spectrum) ** 2, 2 * n, axis=0)[:n], axis=1)
    later = squares[n] - squares[lags]  # sum of |signal(t)|² over t >= lag
    earlier = squares[n - lags]  # over t < n - lag
    sums = np.maximum(later + earlier - 2 * products[lags], 0.0)
    return np.sqrt(sums / (n - lags))


def plan_folds(
    recordings: list[Dataset],
    n_folds: int,
    guard_s: float,
    partitions: tuple[str, ...] = ("time",),
    bands: tuple[float, float, float] = (0.01, 0.05, 0.2),
    turn_s: float = 0.5,
) -> FoldPlan:
    """The folds of `recordings` (raw, in time order) in `partitions` (module doc); kinds of
    motion by `motion_kinds` with `bands` rad/s and `turn_s` s."""
    starts = tuple(float(r.timestamp[0]) for r in recordings)
    durations = tuple(float(r.duration) for r in recordings)
    by_time = "time" in partitions
    kind_times: tuple[np.ndarray, ...] = ()
    kinds: tuple[np.ndarray, ...] = ()
    if "kind" in partitions:
        kind_times = tuple(np.asarray(r.timestamp, dtype=float) for r in recordings)
        kinds = tuple(
            motion_kinds(
                r.timestamp, joint_speed(r.timestamp, r.q, KIND_SMOOTHING_S), bands, turn_s
            )
            for r in recordings
        )
    extra = {"by_time": by_time, "kind_times": kind_times, "kinds": kinds}
    if len(recordings) >= max(n_folds, 2):
        periods = (None,) * len(recordings)
        return FoldPlan("recordings", len(recordings), starts, durations, periods, 0.0, **extra)
    periods = tuple(motion_period(r.timestamp, r.q) for r in recordings)
    kind = "periodic blocks" if any(p is not None for p in periods) else "time blocks"
    return FoldPlan(kind, n_folds, starts, durations, periods, guard_s, **extra)


# A row's kind is its joint's own motion at that sample; fast rows are never held out.
KIND_NAMES = ("fast", "rest", "creep", "slow", "reversal")  # kind ids 0..4; 0 is never held out
KIND_SMOOTHING_S = 0.02  # s: the kinds' velocity is (q(t + h) - q(t - h)) / 2h with this h


def joint_speed(timestamp: np.ndarray, q: np.ndarray, half_window_s: float) -> np.ndarray:
    """(N, n) rad/s: central difference of q over ±`half_window_s` at each sample (one-sided
    at the recording's ends), independent of the candidate filters."""
    t = np.asarray(timestamp, dtype=float)
    q = np.asarray(q, dtype=float)
    later = np.minimum(t + half_window_s, t[-1])
    earlier = np.maximum(t - half_window_s, t[0])
    span = np.maximum(later - earlier, 1e-12)
    ahead = np.column_stack([np.interp(later, t, column) for column in q.T])
    behind = np.column_stack([np.interp(earlier, t, column) for column in q.T])
    return (ahead - behind) / span[:, None]


def motion_kinds(
    timestamp: np.ndarray, velocity: np.ndarray, bands: tuple[float, float, float], turn_s: float
) -> np.ndarray:
    """(N, n) kind id (`KIND_NAMES`) of each joint at each sample from its velocity (rad/s):
    |v| < bands[0] rest, < bands[1] creep, < bands[2] slow, else fast; and reversal, which
    overrides the speed bands, for the samples of a turn-round: between an excursion beyond
    +bands[1] and one beyond -bands[1] (or the other way) that are at most `turn_s` s apart
    (a longer passage through low speed is a hold, left to the speed bands)."""
    v = np.asarray(velocity, dtype=float)
    t = np.asarray(timestamp, dtype=float)
    speed = np.abs(v)
    kinds = np.select([speed < bands[0], speed < bands[1], speed < bands[2]], [1, 2, 3], 0)
    for j in range(v.shape[1]):
        moving = np.flatnonzero(speed[:, j] >= bands[1])
        if len(moving) < 2:
            continue
        sign = np.sign(v[moving, j])
        turns = np.flatnonzero((sign[1:] != sign[:-1]) & (t[moving[1:]] - t[moving[:-1]] <= turn_s))
        # the samples strictly between the last one beyond the band on one side and the first
        # beyond it on the other (a +1 / -1 difference array, summed)
        marks = np.zeros(len(t) + 1, dtype=int)
        np.add.at(marks, moving[turns] + 1, 1)
        np.add.at(marks, moving[turns + 1], -1)
        kinds[np.cumsum(marks[:-1]) > 0, j] = 4
    return kinds


@dataclass(frozen=True)
class FoldLayout:
    """Which cells (the fold factors' row groups) each fold holds out, training on the others.
    cells: per fold, the cell indices; partition: per fold, 0 for the time or recording
    partition, 1 for the kind partition; names: per fold, e.g. "block 2", "rest"."""

    cells: tuple[tuple[int, ...], ...]
    partition: tuple[int, ...]
    names: tuple[str, ...]

    @classmethod
    def single(cls, n_cells: int) -> FoldLayout:
        """One partition whose folds are the cells themselves."""
        return cls(
            tuple((c,) for c in range(n_cells)), (0,) * n_cells, tuple(map(str, range(n_cells)))
        )

    @property
    def n_partitions(self) -> int:
        return max(self.partition) + 1
