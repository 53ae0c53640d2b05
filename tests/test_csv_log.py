"""CSV contract reader (`csv_log.read_csv_log`) and the `csv` data source plugin."""

from __future__ import annotations

import math
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.dataset import UNITS
from ident_framework.errors import UserError
from ident_framework.sources import csv as source_csv
from ident_framework.sources.csv import CsvSource, CsvSourceParams

JOINTS = ("j0", "j1", "j2")
N_ROWS = 8


def make_columns(
    n_joints: int = 3, groups=("actual_q", "actual_qd", "actual_current_as_torque")
) -> dict[str, np.ndarray]:
    """Column name -> values, with distinct, plausible values per column."""
    t = 0.002 * np.arange(N_ROWS)
    columns = {"timestamp": t}
    for g, group in enumerate(groups):
        for j in range(n_joints):
            columns[f"{group}_{j}"] = 0.1 * (g + 1) * np.sin(t * 10 + j) + 0.01 * j
    return columns


def write_csv(path: Path, columns: dict[str, np.ndarray], sep: str = ",") -> Path:
    names = list(columns)
    rows = np.column_stack([columns[name] for name in names])
    lines = [sep.join(names)] + [sep.join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def stack(columns: dict[str, np.ndarray], group: str, n: int = 3) -> np.ndarray:
    return np.column_stack([columns[f"{group}_{j}"] for j in range(n)])


# --- reading ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sep", [",", " ", "\t", ", "])
def test_reads_comma_and_whitespace_files_with_extra_and_target_columns(tmp_path, sep):
    columns = make_columns(groups=("target_q", "actual_q", "actual_qd", "actual_current_as_torque"))
    columns["robot_mode"] = np.full(N_ROWS, 7.0)
    columns["actual_TCP_pose_0"] = np.ones(N_ROWS)
    path = write_csv(tmp_path / "log.csv", columns, sep)

    ds = read_csv_log(path, JOINTS)

    np.testing.assert_array_equal(ds.timestamp, columns["timestamp"])
    np.testing.assert_array_equal(ds.q, stack(columns, "actual_q"))
    np.testing.assert_array_equal(ds.dq, stack(columns, "actual_qd"))
    np.testing.assert_array_equal(ds.tau, stack(columns, "actual_current_as_torque"))
    np.testing.assert_array_equal(ds.q_target, stack(columns, "target_q"))
    assert ds.dq_target is None and ds.ddq_target is None and ds.ddq is None
    assert ds.joint_names == JOINTS
    assert ds.metadata["torque_source"] == "actual_current_as_torque"
    assert ds.metadata["path"] == os.path.abspath(path)
    assert ds.metadata["units"]["q"] == UNITS["q"] == "rad"
    assert set(ds.metadata["ignored_columns"]) == {"robot_mode", "actual_TCP_pose_0"}


def test_current_times_motor_constants(tmp_path):
    columns = make_columns(groups=("actual_q", "actual_qd", "actual_current"))
    path = write_csv(tmp_path / "log.csv", columns)
    k = [2.0, 3.0, 0.5]
    ds = read_csv_log(path, JOINTS, current_to_torque=k)
    np.testing.assert_allclose(ds.tau, stack(columns, "actual_current") * np.array(k))
    assert ds.metadata["torque_source"] == "actual_current"
    assert ds.metadata["current_to_torque"] == k


def test_torque_columns_win_over_currents(tmp_path):
    groups = ("actual_q", "actual_qd", "actual_current", "actual_current_as_torque")
    columns = make_columns(groups=groups)
    path = write_csv(tmp_path / "log.csv", columns)
    ds = read_csv_log(path, JOINTS, current_to_torque=[2.0, 2.0, 2.0])
    np.testing.assert_array_equal(ds.tau, stack(columns, "actual_current_as_torque"))
    assert ds.metadata["torque_source"] == "actual_current_as_torque"
    # ... unless currents are asked for by name
    ds = read_csv_log(path, JOINTS, [2.0, 2.0, 2.0], torque_column="actual_current")
    np.testing.assert_allclose(ds.tau, 2.0 * stack(columns, "actual_current"))


def test_target_moment_only_when_asked_for_by_name(tmp_path):
    columns = make_columns(groups=("actual_q", "actual_qd", "target_moment"))
    path = write_csv(tmp_path / "log.csv", columns)
    with pytest.raises(UserError) as error:
        read_csv_log(path, JOINTS)
    message = str(error.value)
    assert (
        "actual_current_as_torque_0" in message and "source.torque_column=target_moment" in message
    )
    ds = read_csv_log(path, JOINTS, torque_column="target_moment")
    np.testing.assert_array_equal(ds.tau, stack(columns, "target_moment"))
    assert ds.metadata["torque_source"] == "target_moment"


def test_blank_lines_and_crlf_are_tolerated(tmp_path):
    columns = make_columns()
    path = write_csv(tmp_path / "log.csv", columns)
    text = path.read_text().replace("\n", "\r\n")
    path.write_bytes(("\r\n" + text + "\r\n").encode())
    ds = read_csv_log(path, JOINTS)
    np.testing.assert_array_equal(ds.q, stack(columns, "actual_q"))


# --- errors ----------------------------------------------------------------------------------
def _good(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "log.csv", make_columns())


def _edit_cell(path: Path, data_row: int, column: str, value: str) -> None:
    lines = path.read_text().splitlines()
    names = lines[0].split(",")
    cells = lines[data_row].split(",")
    cells[names.index(column)] = value
    lines[data_row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def _drop_columns(path: Path, prefix: str) -> None:
    lines = [line.split(",") for line in path.read_text().splitlines()]
    keep = [i for i, name in enumerate(lines[0]) if not name.startswith(prefix)]
    path.write_text("\n".join(",".join(row[i] for i in keep) for row in lines) + "\n")


def _case_missing_file(tmp_path):
    return tmp_path / "nope.csv", {}, ["nope.csv", "does not exist", "source.path"]


def _case_empty(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("")
    return path, {}, ["empty"]


def _case_header_only(tmp_path):
    path = _good(tmp_path)
    path.write_text(path.read_text().splitlines()[0] + "\n")
    return path, {}, ["no data rows"]


def _case_missing_velocity(tmp_path):
    path = _good(tmp_path)
    _drop_columns(path, "actual_qd_")
    return path, {}, ["actual_qd_0..actual_qd_2", "actual_q_0..2", "Columns found"]


def _case_currents_without_constants(tmp_path):
    path = write_csv(
        tmp_path / "log.csv", make_columns(groups=("actual_q", "actual_qd", "actual_current"))
    )
    return path, {}, ["actual_current_*", "source.current_to_torque=[k_0,...,k_2]"]


def _case_too_many_joints(tmp_path):
    path = write_csv(tmp_path / "log.csv", make_columns(n_joints=4))
    return path, {}, ["actual_q_0..actual_q_3", "3-joint robot", "actual_q_0..actual_q_2",
                      "actual_q_3 belongs to no joint", "looks like a 4-joint robot's"]  # fmt: skip


def _case_too_few_joints(tmp_path):
    path = write_csv(tmp_path / "log.csv", make_columns(n_joints=2))
    return path, {}, ["actual_q_0..actual_q_1", "3-joint robot", "actual_q_2 is missing",
                      "looks like a 2-joint robot's"]  # fmt: skip


def _rename_column(path: Path, old: str, new: str) -> Path:
    lines = path.read_text().splitlines()
    names = lines[0].split(",")
    assert old in names
    lines[0] = ",".join(new if name == old else name for name in names)
    path.write_text("\n".join(lines) + "\n")
    return path


def _case_misspelt_velocity_column(tmp_path):
    # before: "has 2 'actual_qd_*' column(s) ... but the robot has 3 joints ... Record the log
    # from the robot you identify, or pick the matching robot= option."
    path = _rename_column(_good(tmp_path), "actual_qd_1", "actual_qdd_1")
    return path, {}, ["actual_qd_1 is missing", "'actual_qdd_1' (column 6)",
                      "Rename that column to actual_qd_1"]  # fmt: skip


def _case_misspelt_velocity_group(tmp_path):
    path = _good(tmp_path)
    for j in range(3):
        _rename_column(path, f"actual_qd_{j}", f"actual_qdot_{j}")
    return path, {}, ["actual_qd_0..actual_qd_2", "'actual_qdot_0' (column 5) close to actual_qd_0"]


def _case_renamed_time_column(tmp_path):
    # before: "lacks the column(s) timestamp needed for the 3-joint robot ..."
    path = _rename_column(_good(tmp_path), "timestamp", "time_s")
    return path, {}, ["no time column 'timestamp'", "'time_s' (column 1)",
                      "source.time_column=time_s"]  # fmt: skip


def _case_unnamed_time_column(tmp_path):
    path = _rename_column(_good(tmp_path), "timestamp", "abc")
    return path, {}, ["no time column 'timestamp'", "source.time_column=NAME", "abc, actual_q_0"]


def _case_validation_time_column(tmp_path):
    path = _rename_column(_good(tmp_path), "timestamp", "Timestamps")
    return path, {"config_prefix": "validation."}, ["validation.time_column=Timestamps"]


def _case_wrong_constant_count(tmp_path):
    return (
        _good(tmp_path),
        {"current_to_torque": [1.0, 2.0]},
        ["source.current_to_torque", "2 value"],
    )


def _case_non_numeric(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 2, "actual_qd_1", "abc")
    return path, {}, ["data row 2", "line 3", "'actual_qd_1'", "'abc'"]


def _case_ragged_row(tmp_path):
    path = _good(tmp_path)
    lines = path.read_text().splitlines()
    lines[4] = ",".join(lines[4].split(",")[:5])
    path.write_text("\n".join(lines) + "\n")
    return path, {}, ["data row 4", "line 5", "5 field"]


def _case_nan(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 5, "actual_current_as_torque_2", "nan")
    return path, {}, ["data row 5", "line 6", "'actual_current_as_torque_2'", "nan"]


def _case_inf(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 3, "actual_q_0", "-inf")
    return path, {}, ["data row 3", "line 4", "'actual_q_0'"]


def _case_duplicate_time(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 6, "timestamp", repr(0.002 * 4))
    return path, {}, ["'timestamp'", "data row 6", "line 7", "repeats"]


def _case_backwards_time(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 6, "timestamp", "0.001")
    return path, {}, ["'timestamp'", "data row 6", "line 7", "backwards"]


def _case_degrees(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 7, "actual_q_1", "95.5")
    return path, {}, ["'actual_q_1'", "95.5", "data row 7", "line 8", "degrees", "rad"]


def _case_degrees_per_second(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 1, "actual_qd_2", "-180")
    return path, {}, ["'actual_qd_2'", "-180", "data row 1", "line 2", "deg/s"]


def _case_too_few_samples(tmp_path):
    return _good(tmp_path), {"min_samples": 50}, ["8 data rows", "50"]


def _case_validation_prefix(tmp_path):
    return tmp_path / "val.csv", {"config_prefix": "validation."}, ["validation.path"]


ERROR_CASES = [
    _case_missing_file,
    _case_empty,
    _case_header_only,
    _case_missing_velocity,
    _case_currents_without_constants,
    _case_too_many_joints,
    _case_too_few_joints,
    _case_misspelt_velocity_column,
    _case_misspelt_velocity_group,
    _case_renamed_time_column,
    _case_unnamed_time_column,
    _case_validation_time_column,
    _case_wrong_constant_count,
    _case_non_numeric,
    _case_ragged_row,
    _case_nan,
    _case_inf,
    _case_duplicate_time,
    _case_backwards_time,
    _case_degrees,
    _case_degrees_per_second,
    _case_too_few_samples,
    _case_validation_prefix,
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda case: case.__name__[6:])
def test_bad_files_give_one_paragraph_naming_file_and_place(tmp_path, case):
    path, kwargs, expected = case(tmp_path)
    before = path.read_bytes() if path.exists() else None

    with pytest.raises(UserError) as error:
        read_csv_log(path, JOINTS, **kwargs)

    message = str(error.value)
    if "current_to_torque" not in kwargs:  # config errors name the key, not necessarily a file
        assert str(path) in message
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"
    assert "\n" not in message
    if before is not None:
        assert path.read_bytes() == before  # input never modified


def test_wrong_constant_count_is_refused_even_when_torque_columns_exist(tmp_path):
    with pytest.raises(UserError, match="current_to_torque"):
        read_csv_log(_good(tmp_path), JOINTS, current_to_torque=[1.0] * 4)


def test_plausible_radians_are_accepted_up_to_the_limits(tmp_path):
    path = _good(tmp_path)
    _edit_cell(path, 1, "actual_q_0", repr(2 * math.pi))
    _edit_cell(path, 2, "actual_qd_0", repr(3.2 * math.pi))
    ds = read_csv_log(path, JOINTS)
    assert ds.q[0, 0] == pytest.approx(2 * math.pi)


# --- the `csv` data source plugin ------------------------------------------------------------
def test_params_validation():
    with pytest.raises(ValueError, match="path is required"):
        CsvSourceParams()
    with pytest.raises(ValueError, match="torque_column"):
        CsvSourceParams(path="x.csv", torque_column="actual_torque")
    with pytest.raises(ValueError, match="positive"):
        CsvSourceParams(path="x.csv", current_to_torque=[1.0, -2.0])
    with pytest.raises(ValueError, match="current_to_torque"):
        CsvSourceParams(path="x.csv", current_to_torque=["a"])
    params = CsvSourceParams(path="x.csv", current_to_torque=[1, 2])
    assert params.current_to_torque == [1.0, 2.0]


def test_plugin_registers_csv():
    registered = {}
    source_csv.register_data_sources(
        register=lambda name, factory, schema: registered.update({name: (factory, schema)})
    )
    assert registered == {"csv": (CsvSource, CsvSourceParams)}
    assert CsvSource.moves_robot is False


def test_acquire_resolves_relative_path_from_launch_directory(tmp_path, monkeypatch):
    write_csv(
        tmp_path / "log.csv", make_columns(groups=("actual_q", "actual_qd", "actual_current"))
    )
    monkeypatch.chdir(tmp_path)
    source = CsvSource(CsvSourceParams(path="log.csv", current_to_torque=[1.0, 1.0, 2.0]))
    ds = source.acquire(SimpleNamespace(joint_names=JOINTS), None, "identification")
    assert ds.metadata["path"] == str(tmp_path / "log.csv")
    assert ds.metadata["torque_source"] == "actual_current"


def test_acquire_uses_hydra_launch_directory_when_hydra_runs(tmp_path, monkeypatch):
    import hydra.utils
    from hydra.core.hydra_config import HydraConfig

    write_csv(tmp_path / "log.csv", make_columns())
    monkeypatch.setattr(HydraConfig, "initialized", staticmethod(lambda: True))
    monkeypatch.setattr(hydra.utils, "to_absolute_path", lambda p: str(tmp_path / p))
    ds = CsvSource(CsvSourceParams(path="log.csv")).acquire(
        SimpleNamespace(joint_names=JOINTS), None, "validation"
    )
    assert ds.metadata["path"] == str(tmp_path / "log.csv")


def test_acquire_names_the_validation_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = CsvSource(CsvSourceParams(path="missing.csv"))
    with pytest.raises(UserError, match=r"validation\.path"):
        source.acquire(SimpleNamespace(joint_names=JOINTS), None, "validation")
