"""The one dataset type that every data source produces and the pipeline consumes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ident_framework.data.parallel_filter import ParallelFilter

UNITS = {
    "timestamp": "s",
    "q": "rad",
    "dq": "rad/s",
    "ddq": "rad/s^2",
    "tau": "Nm",
    "q_target": "rad",
    "dq_target": "rad/s",
    "ddq_target": "rad/s^2",
    "temperature": "degC",
}
# the optional per-joint columns (N, n) a dataset may carry, beside q, dq, tau
OPTIONAL_COLUMNS = ("ddq", "q_target", "dq_target", "ddq_target", "temperature")
ROW_COLUMNS = ("timestamp", "q", "dq", "tau", *OPTIONAL_COLUMNS)
UNNAMED = "recording"  # the name of a recording that has no file path


@dataclass(frozen=True)
class AsRecorded:
    """What the recording holds at a dataset's rows, untouched by preprocessing: timestamp
    (N,) s and torque tau (N, n) Nm exactly as in the file (or as the simulation recorded
    them), and `recording` (N,) the index of the recording each row comes from (into the
    dataset's `metadata["recordings"]`: one entry per file, in order)."""

    timestamp: np.ndarray
    tau: np.ndarray
    recording: np.ndarray

    def select(self, rows: slice | np.ndarray) -> AsRecorded:
        return AsRecorded(self.timestamp[rows], self.tau[rows], self.recording[rows])

    @staticmethod
    def of(ds: Dataset, index: int = 0) -> AsRecorded:
        """The rows of `ds` as recorded: its own timestamp and torque, all of recording
        `index`."""
        return AsRecorded(
            np.asarray(ds.timestamp, dtype=float),
            np.asarray(ds.tau, dtype=float),
            np.full(ds.n_samples, index, dtype=np.int64),
        )


@dataclass(frozen=True)
class Dataset:
    """Joint-space recording of one robot motion, one row per sample.

    Attributes:
        timestamp: (N,) sample times in s, strictly increasing (may be jittery).
        q: (N, n) measured joint positions in rad.
        dq: (N, n) measured joint velocities in rad/s.
        tau: (N, n) measured joint torques in Nm (what the motors applied).
        ddq: (N, n) joint accelerations in rad/s^2 when measured or exactly known, else None.
        q_target, dq_target, ddq_target: (N, n) controller targets when recorded, else None.
        temperature: (N, n) joint temperatures in °C when recorded, else None (never
            filtered).
        joint_names: names of the n joints, in column order.
        metadata: free-form provenance (source, file, units, simulated truth, ...).
        parallel_filter: set by preprocessing, to filter friction columns like the torque.
        recorded: set by preprocessing (and by sources stacking files): each row's timestamp
            and torque as recorded, and its recording; metrics score against `recorded.tau`.
    """

    timestamp: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    joint_names: tuple[str, ...]
    ddq: np.ndarray | None = None
    q_target: np.ndarray | None = None
    dq_target: np.ndarray | None = None
    ddq_target: np.ndarray | None = None
    temperature: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parallel_filter: ParallelFilter | None = None
    recorded: AsRecorded | None = None

    def __post_init__(self) -> None:
        n_samples = len(self.timestamp)
        n_joints = len(self.joint_names)
        if np.ndim(self.timestamp) != 1:
            raise ValueError("timestamp must be one-dimensional")
        for name in ("q", "dq", "tau", *OPTIONAL_COLUMNS):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (n_samples, n_joints):
                raise ValueError(
                    f"{name} has shape {np.shape(value)}, expected ({n_samples}, {n_joints})"
                )
        if self.recorded is not None and len(self.recorded.timestamp) != n_samples:
            raise ValueError(
                f"recorded has {len(self.recorded.timestamp)} rows, expected {n_samples}"
            )

    @property
    def n_samples(self) -> int:
        return len(self.timestamp)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def measured_torque(self) -> np.ndarray:
        """(N, n) Nm: the torque as recorded at these rows (what metrics score against)."""
        return self.tau if self.recorded is None else self.recorded.tau

    @property
    def recorded_timestamp(self) -> np.ndarray:
        """(N,) s: the rows' timestamps as recorded (`timestamp` shifts stacked recordings)."""
        return self.timestamp if self.recorded is None else self.recorded.timestamp

    @property
    def recording_index(self) -> np.ndarray:
        """(N,) int: the recording each row comes from (all 0 for a single recording)."""
        if self.recorded is None:
            return np.zeros(self.n_samples, dtype=np.int64)
        return self.recorded.recording

    @property
    def recording_paths(self) -> list[str]:
        """One name per recording (its file path, or UNNAMED when it has none)."""
        names = self.metadata.get("recordings")
        if isinstance(names, list) and names:
            return [str(name) for name in names]
        return [str(self.metadata.get("path", UNNAMED))]

    @property
    def duration(self) -> float:
        """Recording length in s."""
        return float(self.timestamp[-1] - self.timestamp[0]) if self.n_samples else 0.0

    def select(self, rows: slice | np.ndarray) -> Dataset:
        """A new dataset with only the given rows (a slice or an index/boolean array)."""
        changes: dict[str, Any] = {
            name: value[rows] for name in ROW_COLUMNS if (value := getattr(self, name)) is not None
        }
        if self.parallel_filter is not None:
            changes["parallel_filter"] = self.parallel_filter.select(rows)
        if self.recorded is not None:
            changes["recorded"] = self.recorded.select(rows)
        return replace(self, **changes)


def concatenate(datasets: list[Dataset]) -> Dataset:
    """One dataset holding the rows of several recordings (or segments of one) of the same
    robot, in order; preprocess each on its own first (no filter across the seam).

    A part that does not start after the previous one ends is shifted to start one sample step
    (its median step, s) after that end; `recorded` keeps the times as recorded. Optional
    columns are kept only when every part has them. Metadata are the first part's, plus
    `recordings`: the distinct recordings' names, indexed by `recorded.recording` (segments of
    one file share an index)."""
    if not datasets:
        raise ValueError("no datasets to concatenate")
    first = datasets[0]
    for data in datasets[1:]:
        if data.joint_names != first.joint_names:
            raise ValueError(
                f"cannot stack recordings of different joints: {list(first.joint_names)} "
                f"and {list(data.joint_names)}"
            )
    if len(datasets) == 1:
        return first
    columns: dict[str, Any] = {"timestamp": _stacked_times(datasets)}
    for name in ("q", "dq", "tau", *OPTIONAL_COLUMNS):
        values = [getattr(data, name) for data in datasets]
        columns[name] = None if any(v is None for v in values) else np.concatenate(values)
    names, parts = _stacked_recordings(datasets)
    return Dataset(
        joint_names=first.joint_names,
        metadata={**first.metadata, "recordings": names},
        parallel_filter=ParallelFilter.concatenate([data.parallel_filter for data in datasets]),
        recorded=parts,
        **columns,
    )


def _stacked_times(datasets: list[Dataset]) -> np.ndarray:
    times, end = [], None
    for data in datasets:
        t = np.asarray(data.timestamp, dtype=float)
        if end is not None and t.size and t[0] <= end:
            step = float(np.median(np.diff(t))) if t.size > 1 else 1.0
            t = t - t[0] + end + step
        times.append(t)
        end = t[-1] if t.size else end
    return np.concatenate(times)


def _stacked_recordings(datasets: list[Dataset]) -> tuple[list[str], AsRecorded]:
    """(names of the distinct recordings, the stacked rows as recorded): parts naming the
    same recording (segments of one file) keep one index; unnamed parts count as distinct."""
    names: list[str] = []
    index_of: dict[str, int] = {}
    timestamps, torques, indices = [], [], []
    for number, data in enumerate(datasets):
        own = data.recorded or AsRecorded.of(data)
        mapping = []
        for k, name in enumerate(data.recording_paths):
            key = name if name != UNNAMED else f"\0{number}:{k}"
            if key not in index_of:
                index_of[key] = len(names)
                names.append(name)
            mapping.append(index_of[key])
        timestamps.append(own.timestamp)
        torques.append(own.tau)
        indices.append(np.asarray(mapping, dtype=np.int64)[own.recording])
    parts = AsRecorded(np.concatenate(timestamps), np.concatenate(torques), np.concatenate(indices))
    return names, parts


def recording_rows(recording: np.ndarray) -> list[tuple[int, slice]]:
    """(recording index, its rows) for each run of equal indices, in order (slices: selecting
    them gives views, not copies)."""
    starts = np.flatnonzero(np.diff(recording)) + 1
    bounds = [0, *starts.tolist(), len(recording)]
    return [(int(recording[a]), slice(a, b)) for a, b in zip(bounds, bounds[1:], strict=False)]


def recordings_of(ds: Dataset) -> list[Dataset]:
    """The recordings stacked in `ds` (one dataset each, its `metadata["path"]` its own file),
    or [ds] when it holds one."""
    if ds.recorded is None or len(ds.recording_paths) == 1:
        return [ds]
    names, parts = ds.recording_paths, []
    metadata = {k: v for k, v in ds.metadata.items() if k != "recordings"}
    for index, rows in recording_rows(ds.recorded.recording):
        part = ds.select(rows)
        own = replace(part.recorded, recording=np.zeros(part.n_samples, dtype=np.int64))
        parts.append(replace(part, recorded=own, metadata={**metadata, "path": names[index]}))
    return parts
