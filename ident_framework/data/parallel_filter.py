"""Parallel filtering of friction columns: computed from the unfiltered velocity and
low-passed like the torque (rationale: docs/design.md#data-parallel-filtering). Preprocessing
keeps per recording the unfiltered velocity on its uniform time grid, the filter, and the
samples the dataset kept (grid rows, or recorded times between grid points, by cubic spline).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np

from ident_framework.data.filters import (
    cubic_spline,
    zero_phase_filter_channels,
    zero_phase_filter_in_place,
)

# (t (M,) s, dq (M, n) rad/s) -> (M, c, k) friction columns
CHANNELS_AT_ONCE = 48  # columns filtered together at most (buffers ~3 x M x 48 doubles)
SAMPLES_AT_ONCE = 4_800_000  # grid samples x columns filtered together at most (38 MB)
ColumnFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class FilterSegment:
    """One preprocessed recording: timestamp (M,) s of its filter grid, `velocity()` the
    unfiltered velocity (M, n) rad/s on it (computed when first asked for, as `dq`), the
    low-pass `sos` of its torque, and `rows` (int) of the samples the dataset kept: grid rows,
    or rows of `at` (recorded times, s, off the grid: by cubic spline) when given."""

    timestamp: np.ndarray
    velocity: Callable[[], np.ndarray]
    sos: np.ndarray
    rows: np.ndarray
    at: np.ndarray | None = None

    @cached_property
    def dq(self) -> np.ndarray:
        """The unfiltered velocity (M, n) rad/s on the grid (C-ordered). `velocity` then gives
        it too (what it computed it from, e.g. the recorded positions, is let go)."""
        dq = np.ascontiguousarray(self.velocity(), dtype=float)
        object.__setattr__(self, "velocity", partial(np.asarray, dq))  # frozen: the same value
        return dq

    def kept(self, on_grid: np.ndarray) -> np.ndarray:
        """The kept samples of `on_grid` (M, ...), values on the grid."""
        if self.at is None:
            return on_grid[self.rows]
        return cubic_spline(self.timestamp, on_grid, self.at[self.rows])


@dataclass(frozen=True)
class ParallelFilter:
    """The dataset's rows as segments of preprocessed recordings, in order."""

    segments: tuple[FilterSegment, ...]

    @property
    def n_samples(self) -> int:
        return sum(len(segment.rows) for segment in self.segments)

    def apply(
        self,
        columns: ColumnFunction | Sequence[ColumnFunction],
        rows: np.ndarray | None = None,
        keep: Sequence[np.ndarray | None] | None = None,
        into: tuple[np.ndarray, Sequence[int]] | None = None,
    ) -> np.ndarray:
        """(N, c, k): `columns` evaluated on each segment's unfiltered velocity (the whole
        grid), low-passed like the torque, at the dataset's rows (or at `rows` of them,
        increasing). Several functions give their columns concatenated (last axis). `keep`:
        per function, a mask (c,) of the rows of its (c, k) columns wanted (the others stay
        zero, unfiltered). `into`: (an (N, c, K) array, per function the index of its one
        column there): the columns are written there and it is returned. Columns are
        filtered in place in the array `columns` return on a segment's grid (a fresh one: a
        copy when it shares its memory; the result of one grid segment, one function, all
        rows and no `keep` or `into` is a view of it), else (off the grid) in batches of at
        most `CHANNELS_AT_ONCE` and `SAMPLES_AT_ONCE` values."""
        parts = [columns] if callable(columns) else list(columns)
        keeps = [None] * len(parts) if keep is None else list(keep)
        source = self if rows is None else self.select(rows)
        if not source.segments:  # no row asked for: the shape of the columns, no samples
            return self.apply(parts)[:0] if into is None else into[0]
        out: list[np.ndarray | None] = [None] * len(parts)
        if into is not None:  # each function's (N, c, 1) column, a view of the given array
            out = [into[0][:, :, k : k + 1] for k in into[1]]
        at = 0
        alone = len(source.segments) == 1 and into is None
        for segment in source.segments:
            count = len(segment.rows)
            size = max(1, min(CHANNELS_AT_ONCE, SAMPLES_AT_ONCE // len(segment.timestamp)))
            batch = _Batch(segment, size)
            for i, part in enumerate(parts):
                raw = np.asarray(part(segment.timestamp, segment.dq), dtype=float)
                mask = keeps[i]
                flat = raw.reshape(len(raw), -1)
                wanted = (
                    np.arange(flat.shape[1])
                    if mask is None
                    else np.flatnonzero(np.repeat(np.asarray(mask, dtype=bool), raw[0, 0].size))
                )
                if segment.at is None:  # grid rows: filtered in place, no other buffer
                    flat = _filtered_in_place(segment.sos, raw, wanted)
                    rows = _as_slice(segment.rows)
                    if alone and mask is None and isinstance(rows, slice):  # a view
                        out[i] = flat[rows].reshape(count, *raw.shape[1:])
                        continue
                if out[i] is None:
                    out[i] = np.zeros((source.n_samples, *raw.shape[1:]))
                target = out[i][at : at + count]
                target = target.reshape(count, -1) if into is None else target[:, :, 0]
                if segment.at is None:
                    _gather_rows(flat, segment.rows, wanted, target)
                else:
                    batch.add(flat, wanted, target)
            batch.flush()
            at += count
        if into is not None:
            return into[0]
        return out[0] if len(out) == 1 else np.concatenate(out, axis=-1)

    def prepare(self) -> None:
        """Compute every segment's unfiltered velocity now (e.g. before forking workers)."""
        for segment in self.segments:
            _ = segment.dq

    def select(self, rows: slice | np.ndarray) -> ParallelFilter:
        """The filter of a dataset's `rows` (a slice, or an index / boolean array in
        increasing order)."""
        index = np.arange(self.n_samples)[rows]
        starts = np.cumsum([0] + [len(s.rows) for s in self.segments])
        kept = []
        for s, segment in enumerate(self.segments):
            local = index[(index >= starts[s]) & (index < starts[s + 1])] - starts[s]
            if local.size:
                kept.append(replace(segment, rows=segment.rows[local]))
        return ParallelFilter(tuple(kept))

    @staticmethod
    def concatenate(filters: Sequence[ParallelFilter | None]) -> ParallelFilter | None:
        """The filter of stacked datasets, or None unless every one has one."""
        if not filters or any(f is None for f in filters):
            return None
        return ParallelFilter(tuple(s for f in filters for s in f.segments))


class _Batch:
    """Columns of one segment waiting to be filtered together, each batch with the (count, c)
    target it fills at the segment's kept rows."""

    def __init__(self, segment: FilterSegment, size: int) -> None:
        self.segment, self.size = segment, size
        # (flat columns, the queued ones: a slice when contiguous, how many, their target)
        self.waiting: list[tuple[np.ndarray, slice | np.ndarray, int, np.ndarray]] = []
        self.width = 0

    def add(self, flat: np.ndarray, wanted: np.ndarray, target: np.ndarray) -> None:
        """Queue columns `wanted` of `flat` (M, c) for `target` (count, c), filtering whenever
        a batch is full."""
        done = 0
        while done < len(wanted):
            chunk = wanted[done : done + self.size - self.width]
            count = len(chunk)
            if chunk[-1] - chunk[0] == count - 1:  # contiguous: basic indexing, views
                chunk = slice(int(chunk[0]), int(chunk[0]) + count)
            self.waiting.append((flat, chunk, count, target))
            self.width += count
            done += count
            if self.width >= self.size:
                self.flush()

    def flush(self) -> None:
        """Filter the queued columns (one pass) and write them to their targets."""
        if not self.waiting:
            return
        segment = self.segment
        gathered = np.empty((self.width, len(segment.timestamp)))  # a channel per row
        column = 0
        for flat, chunk, count, _ in self.waiting:
            _transpose_into(flat, chunk, gathered[column : column + count])
            column += count
        filtered = zero_phase_filter_channels(segment.sos, gathered)  # (width, M)
        if segment.at is None:  # grid rows: gathered a block of rows at a time (cache-sized)
            rows = segment.rows
            for start in range(0, len(rows), TRANSPOSE_ROWS):
                block = filtered[:, rows[start : start + TRANSPOSE_ROWS]]
                self._scatter(block, slice(start, start + block.shape[1]))
        else:
            self._scatter(segment.kept(filtered.T).T, slice(None))
        self.waiting, self.width = [], 0

    def _scatter(self, values: np.ndarray, rows: slice) -> None:
        """Write `values` (width, m), the queued columns in order, to their targets' `rows`."""
        column = 0
        for _, chunk, count, target in self.waiting:
            target[rows, chunk] = values[column : column + count].T
            column += count


TRANSPOSE_ROWS = 4096  # rows of (M, c) columns transposed at a time (a block stays in cache)
GATHER_ROWS = 65536  # rows copied at a time from filtered columns to their target


def _filtered_in_place(sos: np.ndarray, raw: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """(M, c) the columns of `raw` (M, ...) with columns `wanted` zero-phase filtered in
    place (a copy first when `raw` does not own its memory: it may be someone's data)."""
    if raw.base is not None or not raw.flags.writeable or not raw.flags.c_contiguous:
        raw = np.array(raw, dtype=float, order="C")
    flat = raw.reshape(len(raw), -1)
    starts = np.flatnonzero(np.diff(wanted, prepend=-2) != 1)  # runs of adjacent columns
    for start, stop in zip(starts, [*starts[1:], len(wanted)][: len(starts)], strict=True):
        columns = flat[:, int(wanted[start]) : int(wanted[stop - 1]) + 1]
        zero_phase_filter_in_place(sos, columns)
    return flat


def _as_slice(rows: np.ndarray) -> slice | np.ndarray:
    """`rows` (increasing int) as a slice when they are consecutive."""
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1:
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _gather_rows(flat: np.ndarray, rows: np.ndarray, wanted: np.ndarray, target: np.ndarray):
    """target (count, c)[:, wanted] = flat[rows][:, wanted], a block of rows at a time."""
    contiguous = wanted.size and wanted[-1] - wanted[0] == len(wanted) - 1
    columns = slice(int(wanted[0]), int(wanted[-1]) + 1) if contiguous else wanted
    for start in range(0, len(rows), GATHER_ROWS):
        block = flat[rows[start : start + GATHER_ROWS]]
        target[start : start + len(block), columns] = block[:, columns]


def _transpose_into(flat: np.ndarray, chunk: slice | np.ndarray, out: np.ndarray) -> None:
    """out (len(chunk), M) = flat[:, chunk].T, a block of rows at a time (cache-friendly)."""
    for start in range(0, len(flat), TRANSPOSE_ROWS):
        block = flat[start : start + TRANSPOSE_ROWS]
        out[:, start : start + len(block)] = block[:, chunk].T
