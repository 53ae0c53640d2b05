"""The columns of a CSV log: the header, which columns hold which joint quantity (groups
`actual_q_<j>`, ..., or the file's own names mapped by `source.columns`: a prefix or the n
names per quantity), which torque column to use, where a data row is in the file, and the
messages naming a missing or misspelt column."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ident_framework.errors import UserError, closest

TORQUE_COLUMNS = ("actual_current_as_torque", "actual_current", "target_moment")
TARGET_GROUPS = {"target_q": "q_target", "target_qd": "dq_target", "target_qdd": "ddq_target"}
TEMPERATURE_GROUP = "joint_temperatures"  # °C, as RTDE's output `joint_temperatures`
# the optional column groups read when present: CSV group -> Dataset field
OPTIONAL_GROUPS = {**TARGET_GROUPS, TEMPERATURE_GROUP: "temperature"}
_GROUPS = ("actual_q", "actual_qd", *TORQUE_COLUMNS, *OPTIONAL_GROUPS)
_GROUP_RE = re.compile(r"^(" + "|".join(sorted(_GROUPS, key=len, reverse=True)) + r")_(\d+)$")
_INDEXED_RE = re.compile(r"^(.*_)(\d+)$")
# keys of `source.columns` / `validation.columns` (a log whose columns are not the contract's
# names) -> the contract's column group they stand for ("time": the time column itself)
COLUMN_KEYS = {
    "time": "timestamp", "q": "actual_q", "dq": "actual_qd", "tau": "actual_current_as_torque",
    "current": "actual_current", "temperature": TEMPERATURE_GROUP,
    **{field: group for group, field in TARGET_GROUPS.items()},
}  # fmt: skip

ColumnMapping = dict[str, str | list[str]]


@dataclass(frozen=True)
class CsvLayout:
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
            line = next((no for row, no, _ in data_lines(self) if row == data_row), -1)
        return (
            f"data row {data_row + 1} (line {line} of the file; the header is line "
            f"{self.header_line})"
        )


def read_header(path: str, prefix: str) -> CsvLayout:
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
    return CsvLayout(path, line_no, delimiter, names)


def group_columns(names: list[str]) -> tuple[dict[str, dict[int, int]], list[str]]:
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


def _group_of(name: str) -> str:
    """The contract's group of a column name (`actual_q_3` -> `actual_q`), else the name."""
    match = _GROUP_RE.match(name)
    return match.group(1) if match else name


def _unrecognised(layout: CsvLayout, time_column: str) -> list[str]:
    """Header names that are neither the time column nor a column of the contract."""
    return [n for n in layout.names if n != time_column and not _GROUP_RE.match(n)]


def _column_number(layout: CsvLayout, name: str) -> int:
    return layout.names.index(name) + 1


def lookalikes(layout: CsvLayout, wanted: list[str], time_column: str) -> str:
    """ " The header has 'actual_qdot_0' (column 8) close to actual_qd_0: ..." for the wanted
    columns with a close unrecognised header name ('' when none)."""
    pool = _unrecognised(layout, time_column)
    found = [
        f"'{match}' (column {_column_number(layout, match)}) close to {name}"
        for name in wanted
        if (match := closest(name, pool))
    ]
    return f" The header has {'; '.join(found)}: a misspelt column name?" if found else ""


def missing_time_message(
    layout: CsvLayout, time_column: str, where: str, prefix: str, key: str = "time_column"
) -> str:
    """No time column: the closest header name and the key that names the time column
    (`key`: time_column or columns.time, after `prefix`)."""
    pool = _unrecognised(layout, time_column)
    timelike = [name for name in pool if "time" in name.lower() or name.lower() in ("t", "ts")]
    match = closest(time_column, pool) or (timelike[0] if timelike else None)
    if match:
        rename = f", or rename it to '{time_column}'" if key == "time_column" else ""
        advice = (
            f"The closest header name is '{match}' (column {_column_number(layout, match)}): if "
            f"it holds the time in s, pass {prefix}{key}={match}{rename}."
        )
    else:
        advice = (
            f"If the time (s) is in a column of another name, pass {prefix}{key}=NAME; "
            f"the header (line {layout.header_line}) is: {summarise_columns(layout.names)}."
        )
    return (
        f"{where} has no time column '{time_column}' ({prefix}{key}; the CSV contract "
        f"names it 'timestamp', in s). {advice}"
    )


def joint_columns_message(
    layout: CsvLayout,
    indices: list[int],
    group: str,
    joint_names: Sequence[str],
    time_column: str,
    where: str,
    same_in_every_group: bool,
) -> str:
    """A group whose joint indices are not 0..n-1: the missing columns (and the closest header
    names) or the extra ones, or that the log looks like another robot's."""
    n = len(joint_names)
    absent = [f"{group}_{j}" for j in range(n) if j not in indices]
    extra = [f"{group}_{j}" for j in indices if j >= n]
    robot = f"the {n}-joint robot {list(joint_names)}"
    text = (
        f"{where} has {len(indices)} '{group}_*' column(s) ({index_ranges(group, indices)}) but "
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


def choose_torque(
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


def data_lines(layout: CsvLayout):
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


def index_ranges(prefix: str, indices: list[int]) -> str:
    """'actual_q_0..actual_q_6' or a list when not contiguous."""
    if not indices:
        return "none"
    if indices == list(range(indices[0], indices[-1] + 1)) and len(indices) > 1:
        return f"{prefix}_{indices[0]}..{prefix}_{indices[-1]}"
    return ", ".join(f"{prefix}_{i}" for i in indices)


def summarise_columns(names: list[str], limit: int = 40) -> str:
    """Header names with indexed runs compressed: 'timestamp, actual_q_0..5, foo'."""
    parts: list[str] = []
    run_prefix: str | None = None
    run: list[int] = []

    def flush() -> None:
        if run_prefix is not None:
            parts.append(f"{run_prefix}{run[0]}" + (f"..{run[-1]}" if len(run) > 1 else ""))

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


def select_columns(
    layout: CsvLayout,
    joint_names: Sequence[str],
    torque_column: str,
    gains: np.ndarray | None,
    time_column: str,
    prefix: str,
    mapped: dict[str, dict[int, int]] | None = None,
    time_key: str = "time_column",
) -> tuple[dict[str, dict[int, int]], str, list[str]]:
    """(group -> {joint -> column}, the torque group, the groups to read) of a CSV for the robot
    with `joint_names`; UserError naming what is missing or which joint columns do not match
    the robot. `mapped`: the groups the file names otherwise (`mapped_groups`);
    `time_key`: the key naming the time column, for messages."""
    n = len(joint_names)
    where_path = f"The CSV file '{layout.path}' ({prefix}path)"
    groups, duplicates = group_columns(layout.names)
    if mapped:
        groups.update(mapped)
        duplicates = [d for d in duplicates if _group_of(d) not in mapped]
    if duplicates:
        raise UserError(
            f"{where_path} has duplicated column names {duplicates} in its header (line "
            f"{layout.header_line}); keep one column of each name."
        )
    found = summarise_columns(layout.names)
    contract = (
        f"The contract needs {time_column} (s), actual_q_0..{n - 1} (rad), "
        f"actual_qd_0..{n - 1} (rad/s) and actual_current_as_torque_0..{n - 1} (Nm) or "
        f"actual_current_0..{n - 1} (A) with {prefix}current_to_torque=[k_0,...] (Nm/A)."
    )
    torque_group, hint = choose_torque(groups, torque_column, gains, n, prefix, where_path)
    if time_column not in layout.names:
        raise UserError(missing_time_message(layout, time_column, where_path, prefix, time_key))
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
        raise UserError(
            f"{where_path} lacks the column(s) {', '.join(missing)} needed for the {n}-joint "
            f"robot {list(joint_names)}.{lookalikes(layout, wanted, time_column)} Columns "
            f"found: {found}. {hint}{contract} A log with other column names needs no "
            f"rewriting: map them, e.g. {prefix}columns={{time: time, q: q_, dq: dq_, tau: "
            f"tau_}} (a prefix of PREFIX0..PREFIX{n - 1}, or a list of the {n} names in joint "
            "order)."
        )
    assert torque_group is not None
    used_groups = ["actual_q", "actual_qd", torque_group]
    used_groups += [g for g in OPTIONAL_GROUPS if g in groups]
    same = len({tuple(sorted(groups[g])) for g in used_groups[:3]}) == 1
    for group in used_groups:
        if group in (mapped or {}):  # its count was checked by mapped_groups
            continue
        indices = sorted(groups[group])
        if indices != list(range(n)):
            raise UserError(
                joint_columns_message(
                    layout, indices, group, joint_names, time_column, where_path, same
                )
            )
    return groups, torque_group, used_groups


def checked_mapping(columns: dict | None) -> ColumnMapping:
    """The set entries of a `columns` config value (key -> prefix or list of column names);
    ValueError naming the key for an unknown key or a value that is neither."""
    if columns is None:
        return {}
    if not isinstance(columns, dict):
        raise ValueError(f"columns must be a mapping such as {{q: q_, dq: dq_}}, got {columns!r}")
    unknown = sorted(str(k) for k in columns if k not in COLUMN_KEYS)
    if unknown:
        match = closest(unknown[0], COLUMN_KEYS)
        hint = f" Did you mean '{match}'?" if match else ""
        raise ValueError(
            f"columns has no key {', '.join(repr(k) for k in unknown)}.{hint} Its keys are "
            f"{', '.join(COLUMN_KEYS)} (each a column-name prefix, the columns being PREFIX0.."
            "PREFIX<n-1>, or a list of the n column names in joint order; time: one name)"
        )
    out: ColumnMapping = {}
    for key, value in columns.items():
        if value is None:
            continue
        if key == "time" and not (isinstance(value, str) and value.strip()):
            raise ValueError(f"columns.time must be the name of the time column, got {value!r}")
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
        elif (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(v, str) and v.strip() for v in value)
        ):
            out[key] = [v.strip() for v in value]
        else:
            raise ValueError(
                f"columns.{key} must be a column-name prefix (e.g. q_ for q_0..q_<n-1>) or a "
                f"list of column names in joint order, got {value!r}"
            )
    return out


def mapped_groups(
    layout: CsvLayout, columns: ColumnMapping, n: int, joint_names: Sequence[str], prefix: str
) -> dict[str, dict[int, int]]:
    """contract group -> {joint -> column index} of the mapped keys of `columns` (not time);
    UserError naming the file, the key and the header's columns for a mapped column it lacks,
    a wrong count, a column named twice in the header or mapped twice."""
    where = f"The CSV file '{layout.path}' ({prefix}path)"
    header = f"the header (line {layout.header_line}) has: {summarise_columns(layout.names)}"
    robot = f"the {n}-joint robot {list(joint_names)}"
    position = {name: i for i, name in enumerate(layout.names)}
    groups: dict[str, dict[int, int]] = {}
    used: dict[int, str] = {}
    for key, value in columns.items():
        if key == "time":
            if isinstance(value, str) and layout.names.count(value) > 1:
                raise UserError(
                    f"{where} names its time column '{value}' ({prefix}columns.time) more "
                    f"than once in its header (line {layout.header_line}); keep one."
                )
            continue
        setting = f"{prefix}columns.{key}"
        if isinstance(value, str):
            names = [f"{value}{j}" for j in range(n)]
            indexed = re.compile(re.escape(value) + r"(\d+)$")
            found = sorted(int(m.group(1)) for m in map(indexed.match, layout.names) if m)
            extra = [j for j in found if j >= n]
            if extra:
                raise UserError(
                    f"{where} has {len(found)} column(s) {index_ranges(value.rstrip('_'), found)} "
                    f"for {setting}={value}, but {robot} needs {n}: {value}0..{value}{n - 1}, "
                    f"one per joint ({', '.join(f'{value}{j}' for j in extra)} belong to no "
                    f"joint). Map the joints' columns as a list in joint order, "
                    f"{setting}=[name_0,...,name_{n - 1}], or pick the matching robot= option."
                )
            form = f"{setting}={value} (the columns {value}0..{value}{n - 1})"
        else:
            names = list(value)
            if len(names) != n:
                raise UserError(
                    f"{setting} lists {len(names)} column name(s) {names}, but {robot} needs "
                    f"{n}, one per joint in that order. Give {n} names, or a prefix "
                    f"({setting}=PREFIX for PREFIX0..PREFIX{n - 1}); {header} in "
                    f"'{layout.path}' ({prefix}path)."
                )
            form = f"{setting} (the list {names})"
        absent = [name for name in names if name not in position]
        if absent:
            pool = [name for name in layout.names if name not in names]
            near = [(name, match) for name in absent if (match := closest(name, pool))]
            shown = "; ".join(f"'{m}' (column {position[m] + 1}) close to {a}" for a, m in near)
            hint = f" The header has {shown}: a misspelt name?" if len(near) == 1 else ""
            if isinstance(value, str) and len(absent) == n:
                what = f"none of the columns {value}0..{value}{n - 1} named by {setting}={value}"
            else:
                what = f"no column {', '.join(repr(a) for a in absent)} named by {form}"
            raise UserError(
                f"{where} has {what}.{hint} The header (line {layout.header_line}) has: "
                f"{summarise_columns(layout.names)}. Map the file's own column names to {key}: "
                f"a prefix ({setting}=PREFIX for PREFIX0..PREFIX{n - 1}) or a list of {n} names "
                "in joint order."
            )
        twice = [name for name in names if layout.names.count(name) > 1]
        if twice:
            raise UserError(
                f"{where} names the column '{twice[0]}' ({setting}) more than once in its "
                f"header (line {layout.header_line}); keep one column of each name."
            )
        for name in names:
            other = used.get(position[name])
            if other is not None:
                raise UserError(
                    f"{prefix}columns maps the column '{name}' of '{layout.path}' to both "
                    f"{other} and {key}; each column holds one quantity: map {key} to its own "
                    "columns."
                )
            used[position[name]] = key
        groups[COLUMN_KEYS[key]] = {j: position[name] for j, name in enumerate(names)}
    return groups
