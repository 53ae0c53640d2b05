"""Built-in data source `csv`: recordings in the CSV contract (see `csv_log.read_csv_log`).

Serves `source=csv` (`source.path=FILE`) and `validation=csv`. The path may also be a glob
(`'logs/*.csv'`, sorted by name) or a list of files and globs: each file is read and checked
on its own and the recordings are stacked in order (`dataset.concatenate`). `sample:NAME`
names a recording that ships with the package. Relative paths are taken from the launch
directory.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ident_framework.data.csv_columns import (
    COLUMN_KEYS,
    TORQUE_COLUMNS,
    checked_mapping,
    read_header,
)
from ident_framework.data.csv_fast import read_column_streamed
from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.samples import resolve_sample
from ident_framework.errors import UserError, motor_constants
from ident_framework.hookspecs import hookimpl
from ident_framework.launch_path import resolve_launch_path
from ident_framework.params import Params, param

GLOB_CHARACTERS = "*?["

CONFIG_PREFIX = {"identification": "source.", "validation": "validation."}


def _paths(path: Any) -> str | list[str]:
    """One path as a string, a list of them as a list of strings (none empty)."""
    if not isinstance(path, list | tuple):
        return str(path)
    paths = [str(p) for p in path]
    if not all(paths):
        raise ValueError(f"path holds an empty file name: {paths}")
    return paths


def _one_time_column(params: CsvSourceParams) -> None:
    if not isinstance(params.time_column, str) or not params.time_column:
        raise ValueError(f"time_column must be a column name, got {params.time_column!r}")
    time = checked_mapping(params.columns).get("time")
    if time is not None and params.time_column not in ("timestamp", time):
        raise ValueError(
            f"columns.time={time} and time_column={params.time_column} name two time "
            "columns; give one of them"
        )


@dataclass
class CsvSourceParams(Params):
    """path: CSV file, a glob, or a list of files and globs; current_to_torque: motor constants
    k_j (Nm/A) applied to `actual_current_*` (A) when no `actual_current_as_torque_*` (Nm)
    columns exist; torque_column: which torque columns; time_column: time column name (s);
    columns: the file's own names where they are not the contract's (`csv_columns.COLUMN_KEYS`
    -> a prefix or the n names in joint order; time: one name; null: the contract's)."""

    path: str | list[str] | None = param(
        None, required=True, convert=_paths, note="the CSV file to read, or a list of files"
    )
    current_to_torque: list[float] | None = param(None, convert=motor_constants)
    torque_column: str = param("actual_current_as_torque", choices=TORQUE_COLUMNS)
    time_column: str = "timestamp"
    columns: dict[str, Any] | None = field(default_factory=lambda: dict.fromkeys(COLUMN_KEYS))
    rules = (_one_time_column,)

    @property
    def time_name(self) -> str:
        """The time column's name: columns.time, else time_column."""
        return str(checked_mapping(self.columns).get("time", self.time_column))


class CsvSource:
    """Reads a recording; never moves a robot, so the engine designs no trajectory for it."""

    moves_robot = False

    def __init__(self, params: CsvSourceParams):
        self.params = params

    def acquire(
        self,
        robot: Any,
        trajectory: Any = None,
        role: str = "identification",
        *,
        min_samples: int = 2,
    ) -> Dataset:
        """Read the file(s) of `params.path` for `robot.joint_names`, stacked in order; `role`
        ("identification" or "validation") picks the config key named in messages."""
        del trajectory
        prefix = CONFIG_PREFIX.get(role, "source.")
        joints = tuple(robot.joint_names)
        recordings = [
            self._read(path, joints, min_samples=min_samples, config_prefix=prefix)
            for path in recording_paths(self.params.path, f"{prefix}path")
        ]
        return concatenate(recordings) if len(recordings) > 1 else recordings[0]

    # What a factor job (mode=factor, modes/distributed.py) uses to read its part only.
    def recording_files(self) -> list[str]:
        """The files of `params.path`, in order (each a recording of its own)."""
        return recording_paths(self.params.path, "source.path")

    def timestamps(self, robot: Any, path: str) -> np.ndarray:
        """(N,) the time column (s) of every data row of `path`, streamed (only that column
        is kept in memory); read and checked like `acquire` when the file is not clean."""
        layout = read_header(path, "source.")
        if self.params.time_name in layout.names:
            times = read_column_streamed(layout, layout.names.index(self.params.time_name))
            if times is not None:
                return times
        return self._read(path, tuple(robot.joint_names)).timestamp

    def acquire_rows(self, robot: Any, path: str, rows: tuple[int, int] | None = None) -> Dataset:
        """Data rows first..last-1 (0-based; None: all) of `path` for `robot.joint_names`,
        checked like `acquire` checks the whole file."""
        return self._read(path, tuple(robot.joint_names), rows)

    def _read(self, path: str, joint_names: tuple[str, ...], rows=None, **options) -> Dataset:
        params = self.params
        return read_csv_log(
            path, joint_names, current_to_torque=params.current_to_torque,
            torque_column=params.torque_column, time_column=params.time_column, rows=rows,
            columns=params.columns, **options,
        )  # fmt: skip


def recording_paths(path: str | list[str] | None, key: str) -> list[str]:
    """The files a `path` config value names, in order: each entry resolved from the launch
    directory, globs expanded (sorted); UserError for a glob that matches no file or a file
    named twice."""
    entries = path if isinstance(path, list) else [path or ""]
    files: list[str] = []
    for entry in entries:
        sample = resolve_sample(entry, "csv", key)  # sample:NAME, a recording that ships
        if sample is not None:
            files.append(sample)
            continue
        resolved = resolve_launch_path(entry)
        if not any(c in entry for c in GLOB_CHARACTERS):
            files.append(resolved)
            continue
        matches = sorted(m for m in glob.glob(resolved) if os.path.isfile(m))
        if not matches:
            raise UserError(
                f"{key}: the pattern '{entry}' (looked up as '{resolved}') matches no file. "
                f"Check the folder and the pattern, e.g. {key}='logs/*.csv' (quote it so the "
                "shell does not expand it), or list the files: "
                f"{key}=[logs/a.csv,logs/b.csv]."
            )
        files += matches
    repeated = sorted({f for f in files if files.count(f) > 1})
    if repeated:
        raise UserError(
            f"{key} names the recording '{repeated[0]}' more than once (from {path!r}); each "
            "recording may be used once: its samples would otherwise count twice."
        )
    return files


@hookimpl
def register_data_sources(register) -> None:
    register("csv", CsvSource, CsvSourceParams)
