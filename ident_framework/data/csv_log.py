"""Read and write joint-data recordings in the CSV contract (what `ur_rtde`'s recorder and
UR's RTDE client write): a header row; comma or whitespace separated; one row per sample.
Columns `timestamp` (s), `actual_q_0..n-1` (rad), `actual_qd_0..n-1` (rad/s), and torque from
`actual_current_as_torque_0..n-1` (Nm), or `actual_current_0..n-1` (A) times
`current_to_torque` (Nm/A); `target_moment_*` only when asked for by name. Optional
`target_q_*`, `target_qd_*`, `target_qdd_*`, `joint_temperatures_*` (°C). Other columns are
ignored. Messages count "data rows" from 1 after the header, with the file's line beside it.
"""

from __future__ import annotations

import csv
import math
import os
import time
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

from ident_framework.data.csv_columns import (
    OPTIONAL_GROUPS,
    TEMPERATURE_GROUP,
    TORQUE_COLUMNS,
    CsvLayout,
    checked_mapping,
    column_names,
    data_lines,
    mapped_groups,
    read_header,
    select_columns,
)
from ident_framework.data.csv_fast import read_column_groups, read_used_columns
from ident_framework.data.dataset import UNITS, Dataset
from ident_framework.errors import UserError, per_joint_values


def read_csv_log(
    path: str | os.PathLike[str],
    joint_names: Sequence[str],
    current_to_torque: Sequence[float] | None = None,
    torque_column: str = "actual_current_as_torque",
    *,
    time_column: str = "timestamp",
    max_abs_q: float = 2 * math.pi * 1.05,
    max_abs_qd: float = 4 * math.pi,
    min_samples: int = 2,
    config_prefix: str = "source.",
    rows: tuple[int, int] | None = None,
    columns: dict[str, str | list[str] | None] | None = None,
) -> Dataset:
    """Read a CSV recording for a robot with the given joints (column index j = joint j).

    Args:
        current_to_torque: n motor constants k_j (Nm/A) for torque from `actual_current_*`.
        torque_column: "actual_current_as_torque" (Nm; falls back to `actual_current_*` x
            current_to_torque when absent), "actual_current" (A) or "target_moment".
        max_abs_q, max_abs_qd: |q| (rad), |dq| (rad/s) above which values are taken to be
            degrees and refused. min_samples: fewest data rows accepted.
        config_prefix: config key prefix used in hints ("source." or "validation.").
        rows: only data rows first..last-1 (0-based); a problem in them is reported as
            reading the whole file reports it.
        columns: the file's own column names (`csv_columns.COLUMN_KEYS` -> a prefix or the
            n names in joint order; time: its one name, instead of `time_column`).

    Raises:
        UserError: one paragraph naming the file, the column and/or row and what to do.
    """
    path = os.fspath(path)
    joint_names = tuple(joint_names)
    n = len(joint_names)
    if torque_column not in TORQUE_COLUMNS:
        raise UserError(
            f"{config_prefix}torque_column={torque_column!r} is not a torque column of the CSV "
            f"contract; use one of {list(TORQUE_COLUMNS)}."
        )
    gains = _check_gains(current_to_torque, n, config_prefix)
    try:
        mapping = checked_mapping(columns)
    except ValueError as error:
        raise UserError(f"{config_prefix}{error}.") from None
    time_column = str(mapping.get("time", time_column))
    layout = read_header(path, config_prefix)
    mapped = mapped_groups(layout, mapping, n, joint_names, config_prefix)
    groups, torque_group, used_groups = select_columns(
        layout, joint_names, torque_column, gains, time_column, config_prefix, mapped,
        "columns.time" if "time" in mapping else "time_column",
    )  # fmt: skip
    indices = {time_column: [layout.names.index(time_column)]}
    for group in used_groups:
        indices[group] = [groups[group][j] for j in range(n)]
    limits = (max_abs_q, max_abs_qd)
    read = partial(_read_columns, layout, indices, time_column, min_samples, limits, config_prefix)
    try:
        timestamp, arrays, used = read(rows)
    except UserError:  # named as in the whole file: its row and line
        if rows is None:
            raise
        timestamp, arrays, used = read()
        timestamp, arrays = timestamp[slice(*rows)], {k: v[slice(*rows)] for k, v in arrays.items()}
    ds = _dataset(layout, joint_names, torque_group, gains, timestamp, arrays, used, indices)
    if rows is not None:
        ds.metadata["rows"] = list(rows)
    return ds


def _dataset(
    layout: CsvLayout,
    joint_names: tuple[str, ...],
    torque_group: str,
    gains: np.ndarray | None,
    timestamp: np.ndarray,
    arrays: dict[str, np.ndarray],
    used: dict[int, int],
    columns: dict[str, list[int]],
) -> Dataset:
    """The Dataset of the columns read (`columns`: group -> the file's column indices), torque
    in Nm (currents times `gains` for actual_current)."""
    metadata: dict = {
        "source": "csv",
        "path": os.path.abspath(layout.path),
        "torque_source": torque_group,
        "torque_columns": [layout.names[c] for c in columns[torque_group]],
        "delimiter": layout.delimiter_name,
        "n_rows": len(timestamp),
        "units": dict(UNITS),
        "ignored_columns": [name for i, name in enumerate(layout.names) if i not in used],
    }
    tau = arrays[torque_group]
    if torque_group == "actual_current":
        assert gains is not None
        tau = tau * gains
        metadata["current_to_torque"] = gains.tolist()
        metadata["units"]["actual_current"] = "A"
        metadata["units"]["current_to_torque"] = "Nm/A"
    elif gains is not None:
        metadata["current_to_torque_ignored"] = f"torque taken from {torque_group}_* columns"
    optional = {field: arrays[group] for group, field in OPTIONAL_GROUPS.items() if group in arrays}
    q, dq = arrays["actual_q"], arrays["actual_qd"]  # C-ordered (`_gathered`)
    return Dataset(timestamp, q, dq, tau, joint_names, metadata=metadata, **optional)


def _read_columns(
    layout: CsvLayout,
    columns: dict[str, list[int]],
    time_column: str,
    min_samples: int,
    max_abs: tuple[float, float],
    prefix: str,
    rows: tuple[int, int] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[int, int]]:
    """(timestamp (N,), group -> (N, n) array, used column -> position) of the needed columns,
    checked: finite, time increasing, |q| <= max_abs[0] rad, |dq| <= max_abs[1] rad/s."""
    where_path = f"The CSV file '{layout.path}' ({prefix}path)"
    usecols = sorted({c for cols in columns.values() for c in cols})
    position = {c: i for i, c in enumerate(usecols)}
    streamed = None if rows is not None else read_column_groups(layout, list(columns.values()))
    if streamed is not None:  # each group's array parsed in place (docs/design.md, memory)
        groups = dict(zip(columns, streamed, strict=True))
        n_rows = len(groups[time_column])
    else:
        data = _load(layout, usecols, prefix, rows)
        n_rows = data.shape[0]
    if n_rows == 0:
        raise UserError(
            f"{where_path} has a header but no data rows; at least {min_samples} samples are "
            "needed. Record a longer motion or point to another file."
        )
    if streamed is not None:
        if not all(np.isfinite(values).all() for values in streamed):  # the message's matrix
            data = np.empty((n_rows, len(usecols)))
            for group, cols in columns.items():
                data[:, [position[c] for c in cols]] = groups[group]
            _check_finite(data, usecols, layout, where_path)
        timestamp = groups[time_column][:, 0].copy()
        arrays = {group: values for group, values in groups.items() if group != time_column}
        del streamed, groups
    else:
        _check_finite(data, usecols, layout, where_path)
        timestamp = data[:, position[columns[time_column][0]]].copy()
        arrays = {
            group: _gathered(data, [position[c] for c in cols])
            for group, cols in columns.items()
            if group != time_column
        }
        del data
    _check_time(timestamp, time_column, layout, where_path)
    names = {group: [layout.names[c] for c in cols] for group, cols in columns.items()}
    _check_units(arrays, names, max_abs[0], max_abs[1], layout, where_path)
    _check_temperatures(arrays, names, layout, where_path)
    if n_rows < min_samples:
        raise UserError(
            f"{where_path} has only {n_rows} data rows, but at least {min_samples} samples "
            "are needed to identify the parameters. Record a longer or faster-sampled motion."
        )
    return timestamp, arrays, position


def _gathered(data: np.ndarray, columns: list[int]) -> np.ndarray:
    """(rows, len(columns)) C-ordered copy of the column-major `data`'s `columns` (one copy)."""
    out = np.empty((data.shape[0], len(columns)))
    for i, column in enumerate(columns):
        out[:, i] = data[:, column]
    return out


def _check_gains(gains: Sequence[float] | None, n: int, prefix: str) -> np.ndarray | None:
    if gains is None:
        return None
    try:
        values = np.asarray([float(k) for k in gains], dtype=float)
    except (TypeError, ValueError):
        raise UserError(
            f"{prefix}current_to_torque={gains!r} is not a list of numbers; give one motor "
            f"constant per joint in Nm/A, e.g. {prefix}current_to_torque=[k_0,...,k_{n - 1}]."
        ) from None
    fix = f"give exactly {n} motor constants in Nm/A, one per joint in order"
    values = per_joint_values(values, n, f"{prefix}current_to_torque", fix=fix)
    if not np.all(np.isfinite(values) & (values > 0)):
        raise UserError(
            f"{prefix}current_to_torque={values.tolist()} must hold finite positive motor "
            "constants in Nm/A."
        )
    return values


def _load(
    layout: CsvLayout, usecols: list[int], prefix: str, rows: tuple[int, int] | None = None
) -> np.ndarray:
    """The used columns of the data rows (`rows`: only first..last-1): pyarrow's parser for a
    clean file (`csv_fast`), else numpy's, whose failures name the row, line and column."""
    fast = read_used_columns(layout, usecols, rows)
    if fast is not None:
        return fast
    if rows is not None:
        return _load(layout, usecols, prefix)[slice(*rows)]
    where = f"The CSV file '{layout.path}' ({prefix}path)"
    try:
        with open(layout.path, encoding="utf-8-sig", newline="") as handle:
            for _ in range(layout.header_line):
                handle.readline()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
                return np.loadtxt(
                    handle,
                    dtype=float,
                    delimiter=layout.delimiter,
                    usecols=usecols,
                    ndmin=2,
                    comments=None,
                )
    except UnicodeDecodeError:
        raise UserError(
            f"{where} contains bytes that are not UTF-8 text; export the log as CSV text."
        ) from None
    except ValueError as error:
        problem = _find_bad_cell(layout, usecols)
        raise UserError(
            f"{where}: {error}. Every used column must hold plain numbers (s, rad, rad/s, Nm or A)."
            if problem is None
            else f"{where}: {problem}."
        ) from None


def _find_bad_cell(layout: CsvLayout, usecols: list[int]) -> str | None:
    """Slow scan, only after the fast parser failed: describe the first bad row or cell."""
    width = max(usecols) + 1
    for row, line_no, content in data_lines(layout):
        if layout.delimiter == ",":
            fields = next(csv.reader([content]))
        else:
            fields = content.split()
        where = layout.where(row, line_no)
        if len(fields) < width:
            return (
                f"{where} has {len(fields)} field(s) but the header names {len(layout.names)} "
                "columns (a truncated or ragged row). Repair or remove that row"
            )
        for column in usecols:
            cell = fields[column].strip()
            try:
                float(cell)
            except ValueError:
                return (
                    f"{where}, column '{layout.names[column]}' holds {cell!r}, which is not a "
                    "number. Every used column must hold plain numbers (s, rad, rad/s, Nm or A): "
                    "repair or remove that row"
                )
    return None


def _check_finite(data: np.ndarray, usecols: list[int], layout: CsvLayout, where: str) -> None:
    bad = ~np.isfinite(data)
    if not bad.any():
        return
    row = int(np.argmax(bad.any(axis=1)))
    column = int(np.argmax(bad[row]))
    raise UserError(
        f"{where} has a non-finite value ({float(data[row, column])}) at {layout.where(row)}, "
        f"column '{layout.names[usecols[column]]}'. Remove or repair the rows with NaN/inf (e.g. "
        "dropped packets) before identification."
    )


def _check_time(t: np.ndarray, name: str, layout: CsvLayout, where: str) -> None:
    steps = np.diff(t)
    bad = np.flatnonzero(steps <= 0)
    if bad.size == 0:
        return
    row = int(bad[0]) + 1
    kind = "repeats" if steps[bad[0]] == 0 else "goes backwards from"
    raise UserError(
        f"{where}: column '{name}' {kind} the previous value at {layout.where(row)} "
        f"({float(t[row - 1]):.9g} s then {float(t[row]):.9g} s); timestamps must increase "
        f"strictly. {bad.size} such row(s) in total: remove duplicated rows or concatenate logs "
        "with increasing times."
    )


def _check_units(
    arrays: dict[str, np.ndarray],
    names: dict[str, list[str]],
    max_abs_q: float,
    max_abs_qd: float,
    layout: CsvLayout,
    where: str,
) -> None:
    for group, limit, unit, wrong_unit in (
        ("actual_q", max_abs_q, "rad", "degrees"),
        ("target_q", max_abs_q, "rad", "degrees"),
        ("actual_qd", max_abs_qd, "rad/s", "deg/s"),
        ("target_qd", max_abs_qd, "rad/s", "deg/s"),
    ):
        if group not in arrays:
            continue
        values = arrays[group]
        peak = np.maximum(values.max(axis=0), -values.min(axis=0))  # max |value|, no copy
        if not np.any(peak > limit):
            continue
        joint = int(np.argmax(peak))
        row = int(np.argmax(np.abs(values[:, joint])))
        value = arrays[group][row, joint]
        raise UserError(
            f"{where}: column '{names[group][joint]}' reaches {value:.6g} at "
            f"{layout.where(row)}, beyond the plausible {limit:.4g} {unit}; the values look "
            f"like {wrong_unit}, but the CSV contract requires {unit}. Convert the "
            f"{_group_label(names[group], group)} columns to {unit} (multiply by pi/180 = "
            "0.0174533) and run again."
        )


TEMPERATURE_RANGE_C = (-30.0, 130.0)  # °C: what a robot joint's sensor plausibly reads


def _group_label(names: list[str], group: str) -> str:
    """'actual_q_*' for the contract's names of a group, else the file's names listed."""
    if names == [f"{group}_{j}" for j in range(len(names))]:
        return f"{group}_*"
    return ", ".join(names)


def _check_temperatures(
    arrays: dict[str, np.ndarray], names: dict[str, list[str]], layout: CsvLayout, where: str
) -> None:
    """Joint temperatures must be plausible °C (not kelvin or °F)."""
    values = arrays.get(TEMPERATURE_GROUP)
    if values is None:
        return
    low, high = TEMPERATURE_RANGE_C
    outside = (values < low) | (values > high)
    if not outside.any():
        return
    row, joint = (int(i) for i in np.argwhere(outside)[0])
    value = float(values[row, joint])
    label = _group_label(names[TEMPERATURE_GROUP], TEMPERATURE_GROUP)
    guess = ""
    if 240.0 <= value <= 410.0:
        guess = " The values look like kelvin: subtract 273.15."
    elif value > high:
        guess = " The values look like °F: convert with (F - 32) / 1.8."
    raise UserError(
        f"{where}: column '{names[TEMPERATURE_GROUP][joint]}' holds {value:.6g} at "
        f"{layout.where(row)}, outside the plausible {low:g}..{high:g} °C of a joint temperature "
        f"({int(outside.sum())} such value(s) in the {label} columns); the CSV contract gives "
        f"joint temperatures in °C.{guess} Repair or convert those columns, or remove them "
        "(they are optional)."
    )


def write_csv_log(
    ds: Dataset, path: str | os.PathLike[str], torque_column: str = TORQUE_COLUMNS[0]
) -> None:
    """Write a dataset in the CSV contract (comma separated, one header row): timestamp,
    actual_q_j, actual_qd_j, `<torque_column>_j`, the targets and joint temperatures that
    exist; written to a temporary name and renamed (no reader sees half a file)."""
    n = ds.n_joints
    blocks = [("timestamp", ds.timestamp[:, None], 1)]
    blocks += [("actual_q", ds.q, n), ("actual_qd", ds.dq, n), (torque_column, ds.tau, n)]
    for group, attribute in OPTIONAL_GROUPS.items():
        value = getattr(ds, attribute)
        if value is not None:
            blocks.append((group, value, n))
    header = ",".join(column_names([(name, width) for name, _, width in blocks]))
    table = np.column_stack([values for _, values, _ in blocks])
    target = os.fspath(path)
    temporary = f"{target}.partial"
    np.savetxt(temporary, table, delimiter=",", header=header, comments="", fmt="%.10g")
    os.replace(temporary, target)


class CsvLogWriter:
    """Appends samples to a CSV in the contract as they arrive (a live recording): `write(row)`
    appends one sample (timestamp in s, then the groups' values in header order), flushed at
    least every `flush_interval_s` s; timestamps with 6 decimals, values 10 digits."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        groups: Sequence[tuple[str, int]],
        flush_interval_s: float = 0.1,
    ):
        self._clock = time.monotonic
        self.path = os.fspath(path)
        self.names = column_names(groups)
        self.width = len(self.names)
        self._format = ",".join(["%.6f"] + ["%.10g"] * (self.width - 1)) + "\n"
        self._file = open(self.path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._file.write(",".join(self.names) + "\n")
        self._file.flush()
        self.flush_interval_s = flush_interval_s
        self._flushed_at = self._clock()
        self.rows = 0

    def write(self, row: Sequence[float]) -> None:
        self._file.write(self._format % tuple(row))
        self.rows += 1
        if self._clock() - self._flushed_at >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()
            self._flushed_at = self._clock()

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
