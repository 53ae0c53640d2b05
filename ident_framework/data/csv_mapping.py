"""Column mapping of a CSV log whose columns are not the contract's names (`source.columns`,
`validation.columns`): per quantity a prefix (columns PREFIX0..PREFIX<n-1>) or the n names in
joint order, checked against the file's header."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ident_framework.data.csv_columns import (
    TARGET_GROUPS,
    TEMPERATURE_GROUP,
    CsvLayout,
    index_ranges,
    summarise_columns,
)
from ident_framework.errors import UserError, closest

# keys of `source.columns` / `validation.columns` (a log whose columns are not the contract's
# names) -> the contract's column group they stand for ("time": the time column itself)
COLUMN_KEYS = {
    "time": "timestamp", "q": "actual_q", "dq": "actual_qd", "tau": "actual_current_as_torque",
    "current": "actual_current", "temperature": TEMPERATURE_GROUP,
    **{field: group for group, field in TARGET_GROUPS.items()},
}  # fmt: skip

ColumnMapping = dict[str, str | list[str]]


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
