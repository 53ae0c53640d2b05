"""Read a joint-data recording in the CSV contract (what `ur_rtde`'s recorder and UR's RTDE
client write) into a `Dataset`.

Contract: a header row; comma OR whitespace separated; one row per sample. Columns
`timestamp` (s), `actual_q_0..n-1` (rad), `actual_qd_0..n-1` (rad/s), and torque from
`actual_current_as_torque_0..n-1` (Nm), or `actual_current_0..n-1` (A) times
`current_to_torque` (Nm/A). `target_moment_*` (the controller's model output, not a
measurement) is used only when asked for by name. Optional `target_q_*`, `target_qd_*`,
`target_qdd_*`. Other columns are ignored. The file is only read, never modified.

Rows in messages are "data rows" counted from 1 at the first row after the header, with the
line of the file beside it (the header being line 1 unless blank lines precede it).
"""

from __future__ import annotations

import csv
import math
import os
import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .dataset import UNITS, Dataset
from .errors import UserError
from .suggestions import closest

TORQUE_COLUMNS = ("actual_current_as_torque", "actual_current", "target_moment")
TARGET_GROUPS = {"target_q": "q_target", "target_qd": "dq_target", "target_qdd": "ddq_target"}
_GROUPS = ("actual_q", "actual_qd", *TORQUE_COLUMNS, *TARGET_GROUPS)
_GROUP_RE = re.compile(r"^(" + "|".join(sorted(_GROUPS, key=len, reverse=True)) + r")_(\d+)$")
_INDEXED_RE = re.compile(r"^(.*_)(\d+)$")


@dataclass(frozen=True)
class _Layout:
    """Where things are in one file: header line, delimiter, column names."""

    path: str
    header_line: int  # 1-based line number of the header
    delimiter: str | None  # "," or None (any whitespace)
    names: list[str]

    @property
    def delimiter_name(self) -> str:
        return "comma" if self.delimiter == "," else "whitespace"

    def where(self, data_row: int, line: int | None = None) -> str:
        """Human position of 0-based data row `data_row` (at file line `line` if known)."""
        if line is None:
            line = _line_of_data_row(self, data_row)
        return (
            f"data row {data_row + 1} (line {line} of the file; the header is line "
            f"{self.header_line})"
        )


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
) -> Dataset:
    """Read a CSV recording for a robot with the given joints (column index j = joint j).

    Args:
        path: the CSV file (read only).
        joint_names: names of the n joints, in column order.
        current_to_torque: n motor constants k_j (Nm/A), used when torque comes from
            `actual_current_*` (tau_j = k_j * i_j).
        torque_column: "actual_current_as_torque" (Nm; falls back to `actual_current_*` x
            current_to_torque when absent), "actual_current" (A, needs current_to_torque), or
            "target_moment" (the controller's model torque, only when asked for explicitly).
        time_column: name of the time column (s).
        max_abs_q: |q| (rad) above which angles are taken to be in degrees and refused.
        max_abs_qd: |dq| (rad/s) above which velocities are taken to be in deg/s and refused.
        min_samples: fewest data rows accepted (the pipeline passes the number of base
            parameters).
        config_prefix: config key prefix used in hints ("source." or "validation.").

    Raises:
        UserError: one paragraph naming the file, the column and/or row and what to do.
    """
    path = os.fspath(path)
    joint_names = tuple(joint_names)
    n = len(joint_names)
    where_path = f"The CSV file '{path}' ({config_prefix}path)"
    if torque_column not in TORQUE_COLUMNS:
        raise UserError(
            f"{config_prefix}torque_column={torque_column!r} is not a torque column of the CSV "
            f"contract; use one of {list(TORQUE_COLUMNS)}."
        )
    gains = _check_gains(current_to_torque, n, config_prefix)
    layout = _read_header(path, config_prefix)
    groups, duplicates = _group_columns(layout.names)
    if duplicates:
        raise UserError(
            f"{where_path} has duplicated column names {duplicates} in its header (line "
            f"{layout.header_line}); keep one column of each name."
        )

    # -- which columns: timestamp, q, dq, torque (+ optional targets) -----------------------
    found = _summarise_columns(layout.names)
    contract = (
        f"The contract needs {time_column} (s), actual_q_0..{n - 1} (rad), "
        f"actual_qd_0..{n - 1} (rad/s) and actual_current_as_torque_0..{n - 1} (Nm) or "
        f"actual_current_0..{n - 1} (A) with {config_prefix}current_to_torque=[k_0,...] (Nm/A)."
    )
    torque_group, hint = _choose_torque(groups, torque_column, gains, n, config_prefix, where_path)
    if time_column not in layout.names:
        raise UserError(_missing_time_message(layout, time_column, where_path, config_prefix))
    missing = [
        f"{group}_0..{group}_{n - 1}"
        for group in ("actual_q", "actual_qd", torque_group)
        if group is not None and group not in groups
    ]
    if torque_group is None:
        missing.append(f"actual_current_as_torque_0..actual_current_as_torque_{n - 1}")
    if missing:
        wanted = [
            f"{g}_0" for g in ("actual_q", "actual_qd", torque_group) if g and g not in groups
        ]
        lookalikes = _lookalikes(layout, wanted, time_column)
        raise UserError(
            f"{where_path} lacks the column(s) {', '.join(missing)} needed for the {n}-joint "
            f"robot {list(joint_names)}.{lookalikes} Columns found: {found}. "
            f"{hint}{contract}".rstrip()
        )
    assert torque_group is not None
    used_groups = ["actual_q", "actual_qd", torque_group]
    used_groups += [g for g in TARGET_GROUPS if g in groups]
    same = len({tuple(sorted(groups[g])) for g in used_groups[:3]}) == 1
    for group in used_groups:
        indices = sorted(groups[group])
        if indices != list(range(n)):
            raise UserError(
                _joint_columns_message(
                    layout, indices, group, joint_names, time_column, where_path, same
                )
            )

    # -- parse the needed columns only (numpy C parser: ~0.4 s for 1e5 rows x 31 columns) -----
    columns = {time_column: [layout.names.index(time_column)]}
    for group in used_groups:
        columns[group] = [groups[group][j] for j in range(n)]
    usecols = sorted({c for cols in columns.values() for c in cols})
    position = {c: i for i, c in enumerate(usecols)}
    data = _load(layout, usecols, config_prefix)
    n_rows = data.shape[0]
    if n_rows == 0:
        raise UserError(
            f"{where_path} has a header but no data rows; at least {min_samples} samples are "
            "needed. Record a longer motion or point to another file."
        )

    def block(group: str) -> np.ndarray:
        return data[:, [position[c] for c in columns[group]]]

    _check_finite(data, usecols, layout, where_path)
    timestamp = data[:, position[columns[time_column][0]]].copy()
    _check_time(timestamp, time_column, layout, where_path)
    arrays = {group: block(group) for group in used_groups}
    _check_units(arrays, max_abs_q, max_abs_qd, layout, where_path)
    if n_rows < min_samples:
        raise UserError(
            f"{where_path} has only {n_rows} data rows, but at least {min_samples} samples "
            "are needed to identify the parameters. Record a longer or faster-sampled motion."
        )

    tau = arrays[torque_group]
    metadata: dict = {
        "source": "csv",
        "path": os.path.abspath(path),
        "torque_source": torque_group,
        "torque_columns": [f"{torque_group}_{j}" for j in range(n)],
        "delimiter": layout.delimiter_name,
        "n_rows": n_rows,
        "units": dict(UNITS),
        "ignored_columns": [name for i, name in enumerate(layout.names) if i not in position],
    }
    if torque_group == "actual_current":
        assert gains is not None
        tau = tau * gains
        metadata["current_to_torque"] = gains.tolist()
        metadata["units"]["actual_current"] = "A"
        metadata["units"]["current_to_torque"] = "Nm/A"
    elif gains is not None:
        metadata["current_to_torque_ignored"] = f"torque taken from {torque_group}_* columns"
    return Dataset(
        timestamp=timestamp,
        q=np.ascontiguousarray(arrays["actual_q"]),
        dq=np.ascontiguousarray(arrays["actual_qd"]),
        tau=np.ascontiguousarray(tau),
        joint_names=joint_names,
        **{
            field: np.ascontiguousarray(arrays[group])
            for group, field in TARGET_GROUPS.items()
            if group in arrays
        },
        metadata=metadata,
    )


# ---------------------------------------------------------------------------------------------
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
    if len(values) != n:
        raise UserError(
            f"{prefix}current_to_torque has {len(values)} value(s) but the robot has {n} "
            f"joints; give exactly {n} motor constants in Nm/A, one per joint in order."
        )
    if not np.all(np.isfinite(values) & (values > 0)):
        raise UserError(
            f"{prefix}current_to_torque={values.tolist()} must hold finite positive motor "
            "constants in Nm/A."
        )
    return values


def _read_header(path: str, prefix: str) -> _Layout:
    where = f"The CSV file '{path}' ({prefix}path)"
    if not os.path.exists(path):
        raise UserError(
            f"{where} does not exist. Give an existing file with {prefix}path=FILE (a relative "
            f"path is taken from the directory you launched from, here {os.getcwd()})."
        )
    if os.path.isdir(path):
        raise UserError(f"{where} is a directory; give a CSV file with {prefix}path=FILE.")
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            line_no = 0
            for line in handle:
                line_no += 1
                if line.strip():
                    break
            else:
                raise UserError(
                    f"{where} is empty: it has no header and no data. Point {prefix}path to "
                    "a recording with a header row and one row per sample."
                )
    except UnicodeDecodeError:
        raise UserError(
            f"{where} is not a UTF-8 text file; export the log as CSV text (header row, one "
            "row per sample)."
        ) from None
    except OSError as error:
        raise UserError(
            f"{where} cannot be read ({error.strerror or error}). Check its permissions or "
            f"give another file with {prefix}path=FILE."
        ) from None
    text = line.strip()
    if "," in text:
        delimiter: str | None = ","
        names = next(csv.reader([text]))
    else:
        delimiter = None
        names = text.split()
    names = [name.strip().strip('"').strip("'").strip() for name in names]
    if delimiter is None and len(names) == 1 and (";" in text or "|" in text):
        raise UserError(
            f"{where} seems to use ';' or '|' as separator (header line {line_no}: "
            f"{text[:80]!r}); the CSV contract allows comma or whitespace. Convert the file."
        )
    return _Layout(path, line_no, delimiter, names)


def _group_columns(names: list[str]) -> tuple[dict[str, dict[int, int]], list[str]]:
    """group prefix -> {joint index -> column index}, and duplicated recognised names."""
    groups: dict[str, dict[int, int]] = {}
    seen: set[str] = set()
    duplicates: list[str] = []
    for column, name in enumerate(names):
        if name in seen and (_GROUP_RE.match(name) or name == "timestamp"):
            duplicates.append(name)
        seen.add(name)
        match = _GROUP_RE.match(name)
        if match:
            groups.setdefault(match.group(1), {})[int(match.group(2))] = column
    return groups, duplicates


def _unrecognised(layout: _Layout, time_column: str) -> list[str]:
    """Header names that are neither the time column nor a column of the contract."""
    return [n for n in layout.names if n != time_column and not _GROUP_RE.match(n)]


def _column_number(layout: _Layout, name: str) -> int:
    return layout.names.index(name) + 1


def _lookalikes(layout: _Layout, wanted: list[str], time_column: str) -> str:
    """ " The header has 'actual_qdot_0' (column 8) close to actual_qd_0: ..." for the wanted
    columns with a close unrecognised header name ('' when none)."""
    pool = _unrecognised(layout, time_column)
    found = []
    for name in wanted:
        match = closest(name, pool)
        if match:
            found.append(f"'{match}' (column {_column_number(layout, match)}) close to {name}")
    if not found:
        return ""
    return f" The header has {'; '.join(found)}: a misspelt column name?"


def _missing_time_message(layout: _Layout, time_column: str, where: str, prefix: str) -> str:
    """No time column: the closest header name and the key that names the time column."""
    pool = _unrecognised(layout, time_column)
    timelike = [name for name in pool if "time" in name.lower() or name.lower() in ("t", "ts")]
    match = closest(time_column, pool) or (timelike[0] if timelike else None)
    if match:
        advice = (
            f"The closest header name is '{match}' (column {_column_number(layout, match)}): if "
            f"it holds the time in s, pass {prefix}time_column={match}, or rename it to "
            f"'{time_column}'."
        )
    else:
        advice = (
            f"If the time (s) is in a column of another name, pass {prefix}time_column=NAME; "
            f"the header (line {layout.header_line}) is: {_summarise_columns(layout.names)}."
        )
    return (
        f"{where} has no time column '{time_column}' ({prefix}time_column; the CSV contract "
        f"names it 'timestamp', in s). {advice}"
    )


def _joint_columns_message(
    layout: _Layout,
    indices: list[int],
    group: str,
    joint_names: Sequence[str],
    time_column: str,
    where: str,
    same_in_every_group: bool,
) -> str:
    """A group whose joint indices are not 0..n-1: the missing columns (and the closest
    present header names) or the extra ones, and, when no misspelling explains it and every
    group has the same columns, that the log looks like another robot's."""
    n = len(joint_names)
    absent = [f"{group}_{j}" for j in range(n) if j not in indices]
    extra = [f"{group}_{j}" for j in indices if j >= n]
    robot = f"the {n}-joint robot {list(joint_names)}"
    text = (
        f"{where} has {len(indices)} '{group}_*' column(s) ({_ranges(group, indices)}) but "
        f"{robot} needs {group}_0..{group}_{n - 1}"
    )
    pool = _unrecognised(layout, time_column)
    lookalikes = [(name, closest(name, pool)) for name in absent]
    shown = [(name, match) for name, match in lookalikes if match]
    if absent:
        text += f": {', '.join(absent)} {'is' if len(absent) == 1 else 'are'} missing"
    if len(shown) == 1:
        ((name, match),) = shown
        text += (
            f". The header has '{match}' (column {_column_number(layout, match)}) where {name} "
            f"is expected: a misspelt name? Rename that column to {name}"
        )
    elif shown:
        listed = "; ".join(f"'{m}' (column {_column_number(layout, m)}) for {n}" for n, m in shown)
        text += f". The header has {listed}: misspelt names? Rename those columns"
    if extra:
        verb = "belongs" if len(extra) == 1 else "belong"
        text += f"{'; and ' if absent else ': '}{', '.join(extra)} {verb} to no joint"
    if indices == list(range(len(indices))) and not shown and same_in_every_group:
        text += (
            f". The log looks like a {len(indices)}-joint robot's: record it from the robot you "
            "identify, or pick the matching robot= option"
        )
    return text + "."


def _choose_torque(
    groups: dict[str, dict[int, int]],
    torque_column: str,
    gains: np.ndarray | None,
    n: int,
    prefix: str,
    where: str,
) -> tuple[str | None, str]:
    """The torque column group to use (None: none available) and a hint for messages."""
    need_gains = (
        f"Pass {prefix}current_to_torque=[k_0,...,k_{n - 1}] (Nm/A, one motor constant per "
        "joint) to convert the currents to torques."
    )
    if torque_column == "actual_current":
        if gains is None:
            raise UserError(
                f"{prefix}torque_column=actual_current reads motor currents (A) from {where}, "
                f"but no motor constants were given. {need_gains}"
            )
        return "actual_current", ""
    if torque_column == "target_moment":
        return "target_moment", ""
    if "actual_current_as_torque" in groups:
        return "actual_current_as_torque", ""
    if "actual_current" in groups:
        if gains is None:
            raise UserError(
                f"{where} has no actual_current_as_torque_* (Nm) columns, only "
                f"actual_current_* (A), and no motor constants were given. {need_gains}"
            )
        return "actual_current", ""
    if "target_moment" in groups:
        return None, (
            "The target_moment_* columns are the controller's model output, not a "
            "measurement; they are used only when asked for by name with "
            f"{prefix}torque_column=target_moment. "
        )
    return None, ""


def _load(layout: _Layout, usecols: list[int], prefix: str) -> np.ndarray:
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
            f"{where}: {problem or error}. Every used column must hold plain numbers (s, rad, "
            "rad/s, Nm or A)."
            if problem is None
            else f"{where}: {problem}."
        ) from None


def _data_lines(layout: _Layout):
    """Yield (0-based data row, file line number, raw line) like np.loadtxt counts rows."""
    with open(layout.path, encoding="utf-8-sig", newline="") as handle:
        row = 0
        for line_no, line in enumerate(handle, start=1):
            if line_no <= layout.header_line:
                continue
            content = line.rstrip("\r\n")
            if not content or (layout.delimiter is None and not content.strip()):
                continue
            yield row, line_no, content
            row += 1


def _line_of_data_row(layout: _Layout, data_row: int) -> int:
    for row, line_no, _ in _data_lines(layout):
        if row == data_row:
            return line_no
    return -1


def _find_bad_cell(layout: _Layout, usecols: list[int]) -> str | None:
    """Slow scan, only after the fast parser failed: describe the first bad row or cell."""
    width = max(usecols) + 1
    for row, line_no, content in _data_lines(layout):
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


def _check_finite(data: np.ndarray, usecols: list[int], layout: _Layout, where: str) -> None:
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


def _check_time(t: np.ndarray, name: str, layout: _Layout, where: str) -> None:
    steps = np.diff(t)
    bad = np.flatnonzero(steps <= 0)
    if bad.size == 0:
        return
    row = int(bad[0]) + 1
    kind = "repeats" if steps[bad[0]] == 0 else "goes backwards from"
    raise UserError(
        f"{where}: column '{name}' {kind} the previous value at {layout.where(row)} "
        f"({float(t[row - 1]):.9g} s then {float(t[row]):.9g} s); timestamps must increase "
        "strictly. "
        f"{bad.size} such row(s) in total: remove duplicated rows or concatenate logs with "
        "increasing times."
    )


def _check_units(
    arrays: dict[str, np.ndarray],
    max_abs_q: float,
    max_abs_qd: float,
    layout: _Layout,
    where: str,
) -> None:
    checks = (
        ("actual_q", max_abs_q, "rad", "degrees", "pi/180 = 0.0174533"),
        ("target_q", max_abs_q, "rad", "degrees", "pi/180 = 0.0174533"),
        ("actual_qd", max_abs_qd, "rad/s", "deg/s", "pi/180 = 0.0174533"),
        ("target_qd", max_abs_qd, "rad/s", "deg/s", "pi/180 = 0.0174533"),
    )
    for group, limit, unit, wrong_unit, factor in checks:
        if group not in arrays:
            continue
        values = np.abs(arrays[group])
        peak = values.max(axis=0)
        if not np.any(peak > limit):
            continue
        joint = int(np.argmax(peak))
        row = int(np.argmax(values[:, joint]))
        value = arrays[group][row, joint]
        raise UserError(
            f"{where}: column '{group}_{joint}' reaches {value:.6g} at {layout.where(row)}, "
            f"beyond the plausible {limit:.4g} {unit}; the values look like {wrong_unit}, but "
            f"the CSV contract requires {unit}. Convert the {group}_* columns to {unit} "
            f"(multiply by {factor}) and run again."
        )


def _ranges(prefix: str, indices: list[int]) -> str:
    """'actual_q_0..actual_q_6' or a list when not contiguous."""
    if not indices:
        return "none"
    if indices == list(range(indices[0], indices[-1] + 1)) and len(indices) > 1:
        return f"{prefix}_{indices[0]}..{prefix}_{indices[-1]}"
    return ", ".join(f"{prefix}_{i}" for i in indices)


def _summarise_columns(names: list[str], limit: int = 40) -> str:
    """Header names with indexed runs compressed: 'timestamp, actual_q_0..5, foo'."""
    parts: list[str] = []
    run_prefix: str | None = None
    run: list[int] = []

    def flush() -> None:
        if run_prefix is None:
            return
        if len(run) > 1:
            parts.append(f"{run_prefix}{run[0]}..{run[-1]}")
        else:
            parts.append(f"{run_prefix}{run[0]}")

    for name in names:
        match = _INDEXED_RE.match(name)
        if match and match.group(1) == run_prefix and int(match.group(2)) == run[-1] + 1:
            run.append(int(match.group(2)))
            continue
        flush()
        run_prefix, run = None, []
        if match:
            run_prefix, run = match.group(1), [int(match.group(2))]
        else:
            parts.append(name)
    flush()
    if len(parts) > limit:
        return ", ".join(parts[:limit]) + f", ... ({len(parts) - limit} more)"
    return ", ".join(parts) if parts else "none"


def column_names(groups: Sequence[tuple[str, int]]) -> list[str]:
    """Header of the CSV contract for (group, width) blocks: `timestamp` stays one column,
    every other group becomes `<group>_0..<group>_{width-1}`."""
    names: list[str] = []
    for name, width in groups:
        if name == "timestamp" and width == 1:
            names.append(name)
        else:
            names.extend(f"{name}_{j}" for j in range(width))
    return names


def write_csv_log(
    ds: Dataset, path: str | os.PathLike[str], torque_column: str = TORQUE_COLUMNS[0]
) -> None:
    """Write a dataset in the CSV contract (comma separated, one header row): timestamp,
    actual_q_j, actual_qd_j, `<torque_column>_j` and the targets that exist. The file is
    written to a temporary name and renamed, so a reader never sees half a file."""
    n = ds.n_joints
    blocks = [("timestamp", ds.timestamp[:, None], 1)]
    blocks += [("actual_q", ds.q, n), ("actual_qd", ds.dq, n), (torque_column, ds.tau, n)]
    for group, attribute in TARGET_GROUPS.items():
        value = getattr(ds, attribute)
        if value is not None:
            blocks.append((group, value, n))
    header = ",".join(column_names([(name, width) for name, _, width in blocks]))
    table = np.column_stack([values for _, values, _ in blocks])
    target = os.fspath(path)
    partial = f"{target}.partial"
    np.savetxt(partial, table, delimiter=",", header=header, comments="", fmt="%.10g")
    os.replace(partial, target)


class CsvLogWriter:
    """Appends samples to a CSV in the contract as they arrive (a live recording).

    The header is written at once; `write(row)` appends one sample (timestamp in s first,
    then the groups' values in header order); the file is flushed to the operating system at
    least every `flush_interval_s` s, so a crash of this process loses at most that much.
    Timestamps are written with 6 decimals (µs), other values with 10 significant digits."""

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
