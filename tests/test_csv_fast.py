"""The CSV reader's fast path (`csv_fast`, pyarrow) reads exactly what the reference path
(numpy's loadtxt) reads, and steps aside (None) wherever the reference path owns the message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ident_framework.data import csv_fast, csv_log
from ident_framework.data.csv_columns import read_header
from ident_framework.data.csv_fast import read_column_groups, read_used_columns

JOINTS = ("j0", "j1", "j2")
GROUPS = ("actual_q", "actual_qd", "actual_current_as_torque", "target_q")


def _table(n_rows: int = 50, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    names = ["timestamp", "robot_mode"] + [f"{g}_{j}" for g in GROUPS for j in range(3)]
    values = rng.normal(size=(n_rows, len(names)))
    values[:, 0] = 0.002 * np.arange(n_rows) + 1e-7 * rng.random(n_rows)
    return names, values


def _write(path: Path, names, values, sep=",", edge="", newline="\n", lead="") -> Path:
    rows = [edge + sep.join(repr(float(v)) for v in row) + edge for row in values]
    lines = [sep.join(names), *rows]
    path.write_bytes((lead + newline.join(lines) + newline).encode())
    return path


def _reference(path: Path, monkeypatch) -> object:
    with monkeypatch.context() as patch:
        patch.setattr(csv_log, "read_used_columns", lambda *args: None)
        patch.setattr(csv_log, "read_column_groups", lambda *args: None)
        return csv_log.read_csv_log(path, JOINTS)


@pytest.mark.parametrize(
    "style",
    [
        {"sep": ","},
        {"sep": ", "},
        {"sep": " "},
        {"sep": "\t"},
        {"sep": "   ", "edge": "  "},  # aligned columns, blanks at both ends of each row
        {"sep": ",", "newline": "\r\n", "lead": "\r\n"},  # CRLF, a blank line before the header
        {"sep": " ", "newline": "\r\n", "edge": " "},
        {"sep": ",", "lead": "\ufeff"},  # byte-order mark
    ],
)
def test_fast_path_reads_the_same_doubles_as_the_reference(tmp_path, monkeypatch, style):
    names, values = _table()
    path = _write(tmp_path / "log.csv", names, values, **style)
    layout = read_header(str(path), "source.")
    usecols = [0, 2, 5, 8]
    fast = read_used_columns(layout, usecols)
    assert fast is not None, "a clean file must take the fast path"
    np.testing.assert_array_equal(fast, values[:, usecols])

    read = csv_log.read_csv_log(path, JOINTS)
    reference = _reference(path, monkeypatch)
    for name in ("timestamp", "q", "dq", "tau", "q_target"):
        np.testing.assert_array_equal(getattr(read, name), getattr(reference, name))


def _edit(path: Path, row: int, column: int, cell: str) -> None:
    lines = path.read_text().splitlines()
    cells = lines[row].split(",")
    cells[column] = cell
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    "defect",
    ["abc", "", '"1.0"', "0x10", "1_0", "# note"],
    ids=["word", "empty", "quoted", "hex", "underscore", "comment"],
)
def test_fast_path_steps_aside_for_any_cell_the_reference_parser_judges(tmp_path, defect):
    names, values = _table()
    path = _write(tmp_path / "log.csv", names, values)
    _edit(path, 7, 3, defect)
    assert read_used_columns(read_header(str(path), "source."), [0, 3, 4]) is None


def test_fast_path_steps_aside_for_ragged_rows_and_non_utf8_bytes(tmp_path):
    names, values = _table()
    path = _write(tmp_path / "log.csv", names, values)
    lines = path.read_text().splitlines()
    lines[4] = ",".join(lines[4].split(",")[:5])
    path.write_text("\n".join(lines) + "\n")
    assert read_used_columns(read_header(str(path), "source."), [0, 1]) is None

    names, values = _table(n_rows=2000)
    path = _write(tmp_path / "latin.csv", names, values)
    raw = path.read_bytes()
    path.write_bytes(raw[:-2] + b"\xe9\n")  # in the last row, far beyond the header
    assert read_used_columns(read_header(str(path), "source."), [0, 1]) is None


def test_nan_and_inf_cells_reach_the_finite_check(tmp_path):
    names, values = _table()
    path = _write(tmp_path / "log.csv", names, values)
    _edit(path, 5, names.index("actual_q_1"), "nan")
    layout = read_header(str(path), "source.")
    data = read_used_columns(layout, [names.index("actual_q_1")])
    assert data is not None and np.isnan(data[4, 0]) and np.isfinite(np.delete(data, 4)).all()
    with pytest.raises(csv_log.UserError, match="data row 5.*'actual_q_1'"):
        csv_log.read_csv_log(path, JOINTS)


def test_a_clean_recording_never_reaches_the_reference_parser(tmp_path, monkeypatch):
    """The speed of the reader rests on the fast path: a clean log in the RTDE recorder's
    layout (timestamps to the microsecond) must not fall back to loadtxt."""
    from ident_framework.data.csv_log import CsvLogWriter

    groups = [("timestamp", 1), ("actual_q", 3), ("actual_qd", 3),
              ("actual_current_as_torque", 3), ("target_moment", 3), ("target_qdd", 3)]  # fmt: skip
    writer = CsvLogWriter(tmp_path / "rtde.csv", groups)
    rng = np.random.default_rng(5)
    for k in range(300):
        writer.write([0.002 * k, *rng.normal(size=15)])
    writer.close()

    def refuse(*args, **kwargs):
        raise AssertionError("the reference parser ran on a clean file")

    monkeypatch.setattr(csv_log.np, "loadtxt", refuse)
    data = csv_log.read_csv_log(tmp_path / "rtde.csv", JOINTS)
    assert data.n_samples == 300 and data.ddq_target is not None


@pytest.mark.parametrize(
    "style",
    [{"sep": ","}, {"sep": ",", "newline": "\r\n", "lead": "\r\n"}, {"sep": ",", "lead": "\ufeff"}],
)
def test_streamed_groups_read_the_same_doubles_as_the_reference(tmp_path, monkeypatch, style):
    """A large file's groups are parsed batch by batch straight into their arrays (here every
    file, in batches of a few rows): the same doubles, C-ordered, as the reference parser."""
    monkeypatch.setattr(csv_fast, "STREAM_FROM_BYTES", 0)
    monkeypatch.setattr(csv_fast, "STREAM_BLOCK_BYTES", 4096)
    names, values = _table(n_rows=700)
    path = _write(tmp_path / "log.csv", names, values, **style)
    groups = [[0], [2, 3, 4], [8, 5]]
    streamed = read_column_groups(read_header(str(path), "source."), groups)
    if style.get("lead") == "\ufeff":
        assert streamed is None  # not ASCII: the other paths read it
    else:
        assert streamed is not None
        for array, group in zip(streamed, groups, strict=True):
            assert array.flags.c_contiguous
            np.testing.assert_array_equal(array, values[:, group])
    read = csv_log.read_csv_log(path, JOINTS)
    reference = _reference(path, monkeypatch)
    for name in ("timestamp", "q", "dq", "tau", "q_target"):
        np.testing.assert_array_equal(getattr(read, name), getattr(reference, name))


def test_streamed_groups_leave_non_finite_cells_to_the_finite_check(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_fast, "STREAM_FROM_BYTES", 0)
    names, values = _table()
    path = _write(tmp_path / "log.csv", names, values)
    _edit(path, 5, names.index("actual_q_1"), "inf")
    with pytest.raises(csv_log.UserError, match="data row 5.*'actual_q_1'"):
        csv_log.read_csv_log(path, JOINTS)
