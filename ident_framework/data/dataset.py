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
}


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
        joint_names: names of the n joints, in column order.
        metadata: free-form provenance (source, file, units, simulated truth, ...).
        parallel_filter: set by preprocessing: the unfiltered velocity and the low-pass of
            the torque, to filter friction columns the same way (`parallel_filter.py`).
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
    metadata: dict[str, Any] = field(default_factory=dict)
    parallel_filter: ParallelFilter | None = None

    def __post_init__(self) -> None:
        n_samples = len(self.timestamp)
        n_joints = len(self.joint_names)
        if np.ndim(self.timestamp) != 1:
            raise ValueError("timestamp must be one-dimensional")
        for name in ("q", "dq", "tau", "ddq", "q_target", "dq_target", "ddq_target"):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (n_samples, n_joints):
                raise ValueError(
                    f"{name} has shape {np.shape(value)}, expected ({n_samples}, {n_joints})"
                )

    @property
    def n_samples(self) -> int:
        return len(self.timestamp)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def duration(self) -> float:
        """Recording length in s."""
        return float(self.timestamp[-1] - self.timestamp[0]) if self.n_samples else 0.0

    def select(self, rows: slice | np.ndarray) -> Dataset:
        """A new dataset with only the given rows (a slice or an index/boolean array)."""
        changes = {}
        for name in ("timestamp", "q", "dq", "tau", "ddq", "q_target", "dq_target", "ddq_target"):
            value = getattr(self, name)
            if value is not None:
                changes[name] = value[rows]
        if self.parallel_filter is not None:
            changes["parallel_filter"] = self.parallel_filter.select(rows)
        return replace(self, **changes)


def concatenate(datasets: list[Dataset]) -> Dataset:
    """One dataset holding the rows of several recordings of the same robot, in order.

    Each recording should be preprocessed on its own first (filters and derivatives must not
    run across the seam); the regressor is per sample, so identifying on the stacked rows is
    the same as identifying on the union of the recordings. Timestamps are shifted so that
    each recording starts one sample step (its own median step, s) after the previous one
    ends: they stay strictly increasing. Optional columns are kept only when every recording
    has them. Metadata are the first recording's, plus `recordings` (how many are stacked)."""
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
    times, end = [], None
    for data in datasets:
        t = np.asarray(data.timestamp, dtype=float)
        if end is not None and t.size:
            step = float(np.median(np.diff(t))) if t.size > 1 else 1.0
            t = t - t[0] + end + step
        times.append(t)
        end = t[-1] if t.size else end
    columns: dict[str, Any] = {"timestamp": np.concatenate(times)}
    for name in ("q", "dq", "tau", "ddq", "q_target", "dq_target", "ddq_target"):
        values = [getattr(data, name) for data in datasets]
        columns[name] = None if any(v is None for v in values) else np.concatenate(values)
    recordings = sum(data.metadata.get("recordings", 1) for data in datasets)
    return Dataset(
        joint_names=first.joint_names,
        metadata={**first.metadata, "recordings": recordings},
        parallel_filter=ParallelFilter.concatenate([data.parallel_filter for data in datasets]),
        **columns,
    )
