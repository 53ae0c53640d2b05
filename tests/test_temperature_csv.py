"""Joint temperatures (`joint_temperatures_*`, °C) in the CSV contract and the Dataset: read by
both parsers, written back, carried through preprocessing and stacking, checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ident_framework.data import csv_log
from ident_framework.data.csv_log import read_csv_log, write_csv_log
from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.preprocessing import PreprocessingParams, preprocess
from ident_framework.errors import UserError
from ident_framework.testing.cli import error_message, run_cli

JOINTS = ("j0", "j1", "j2")


def recording(n: int = 400, temperature: bool = True, start: float = 0.0) -> Dataset:
    t = start + 0.002 * np.arange(n)
    q = 0.3 * np.sin(t[:, None] * 3 + np.arange(3))
    dq = 0.9 * np.cos(t[:, None] * 3 + np.arange(3))
    tau = 2.0 * q + 0.5 * dq
    temps = (
        25.0 + 20.0 * (t[:, None] - t[0]) / (t[-1] - t[0]) + np.arange(3) if temperature else None
    )
    return Dataset(t, q, dq, tau, JOINTS, temperature=temps)


@pytest.mark.parametrize("with_temperature", [True, False])
def test_csv_round_trip_with_and_without_temperature_columns(tmp_path: Path, with_temperature):
    ds = recording(temperature=with_temperature)
    path = tmp_path / "log.csv"
    write_csv_log(ds, path)
    header = path.read_text().splitlines()[0].split(",")
    assert ("joint_temperatures_0" in header) == with_temperature
    back = read_csv_log(path, JOINTS)
    if with_temperature:
        np.testing.assert_allclose(back.temperature, ds.temperature, rtol=1e-9)
        assert not any(
            name.startswith("joint_temperatures") for name in back.metadata["ignored_columns"]
        )
    else:
        assert back.temperature is None
    np.testing.assert_allclose(back.q, ds.q, rtol=1e-9)


def test_loadtxt_path_reads_temperatures_like_the_fast_path(tmp_path: Path, monkeypatch):
    ds = recording()
    path = tmp_path / "log.csv"
    write_csv_log(ds, path)
    fast = read_csv_log(path, JOINTS)
    monkeypatch.setattr(csv_log, "read_used_columns", lambda layout, usecols, rows=None: None)
    slow = read_csv_log(path, JOINTS)
    np.testing.assert_array_equal(fast.temperature, slow.temperature)


def test_temperatures_survive_preprocessing_trimming_and_stacking():
    first, second = recording(), recording(start=10.0)
    stacked = concatenate([first, second])
    assert stacked.temperature.shape == (800, 3)
    out = preprocess(stacked, PreprocessingParams())
    assert out.temperature.shape == out.q.shape
    # kept rows carry the temperature recorded at their own timestamps (not filtered)
    expected = np.vstack([first.temperature, second.temperature])
    times = np.concatenate([first.timestamp, second.timestamp])
    rows = np.searchsorted(times, out.recorded_timestamp)
    np.testing.assert_array_equal(out.temperature, expected[rows])
    # a part without temperatures: the stack has none (optional columns need every part)
    assert concatenate([first, recording(temperature=False, start=10.0)]).temperature is None
    assert out.select(slice(5, 50)).temperature.shape == (45, 3)


@pytest.mark.parametrize(
    ("value", "hint"), [(318.15, "kelvin"), (200.0, "°F"), (-80.0, "-30..130 °C")]
)
def test_implausible_temperatures_are_refused(tmp_path: Path, value, hint):
    ds = recording()
    path = tmp_path / "log.csv"
    write_csv_log(ds, path)
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    column = header.index("joint_temperatures_1")
    cells = lines[5].split(",")
    cells[column] = repr(value)
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError) as error:
        read_csv_log(path, JOINTS)
    message = str(error.value)
    assert "joint_temperatures_1" in message and "data row 5" in message and hint in message


def test_bad_temperature_column_at_the_command_line_exits_2(tmp_path: Path):
    """A UR12e log whose temperatures are in kelvin: one paragraph, exit 2, nothing written."""
    n = 600
    t = 0.002 * np.arange(n)
    names = ["timestamp"]
    columns = [t]
    for group, scale in (("actual_q", 0.3), ("actual_qd", 0.9), ("actual_current_as_torque", 5.0)):
        for j in range(6):
            names.append(f"{group}_{j}")
            columns.append(scale * np.sin(3 * t + j))
    for j in range(6):
        names.append(f"joint_temperatures_{j}")
        columns.append(np.full(n, 300.0 + j))  # kelvin
    path = tmp_path / "ur.csv"
    np.savetxt(path, np.column_stack(columns), delimiter=",", header=",".join(names), comments="")
    before = path.read_bytes()
    out = tmp_path / "run"
    result = run_cli(
        "source=csv", f"source.path={path}", "validation=split", "tuning=none",
        f"hydra.run.dir={out}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr + result.stdout
    message = error_message(result.stderr)
    assert "Traceback" not in result.stderr and "\n" not in message, message
    assert "joint_temperatures_0" in message and "kelvin" in message
    assert path.read_bytes() == before
    assert not (out / "parameters.yaml").exists()
