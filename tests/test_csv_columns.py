"""Column mapping of a CSV whose columns are not UR's names (`source.columns`,
`validation.columns`): a prefix or a list of names per quantity, the contract's names for the
rest, the fast reader still used, one-paragraph errors (exit 2) for a missing column, a wrong
count, an unknown key."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data import csv_log
from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.model.robot import load_robot
from ident_framework.sources.csv import CsvSource, CsvSourceParams
from ident_framework.testing.cli import error_message, run_cli
from ident_framework.testing.known_truth import multisine

JOINTS = ("j0", "j1", "j2")
N_ROWS = 50


def _values(n_rows: int = N_ROWS, n: int = 3) -> dict[str, np.ndarray]:
    """time (s) and distinct q (rad), dq (rad/s), tau (Nm), temperature (°C) per joint."""
    t = 0.001 * np.arange(n_rows)
    j = np.arange(n)
    return {
        "time": t,
        "q": 0.1 * np.sin(10 * t[:, None] + j),
        "dq": np.cos(10 * t[:, None] + j),
        "tau": 5.0 + j + np.sin(3 * t[:, None]),
        "temperature": 30.0 + j + 0.0 * t[:, None],
    }


def _write(path: Path, header: list[str], table: np.ndarray) -> Path:
    lines = [",".join(header)] + [",".join(repr(float(v)) for v in row) for row in table]
    path.write_text("\n".join(lines) + "\n")
    return path


def _panda_style(path: Path, values: dict[str, np.ndarray]) -> Path:
    """Columns time, q_j, dq_j, tau_j (the Panda log's names, not UR's)."""
    n = values["q"].shape[1]
    header = ["time"] + [f"{k}_{j}" for k in ("q", "dq", "tau") for j in range(n)]
    table = np.column_stack([values["time"], values["q"], values["dq"], values["tau"]])
    return _write(path, header, table)


def test_prefix_form_reads_the_columns_by_joint_index(tmp_path: Path):
    values = _values()
    path = _panda_style(tmp_path / "log.csv", values)
    ds = read_csv_log(path, JOINTS, columns={"time": "time", "q": "q_", "dq": "dq_", "tau": "tau_"})
    np.testing.assert_array_equal(ds.timestamp, values["time"])
    np.testing.assert_array_equal(ds.q, values["q"])
    np.testing.assert_array_equal(ds.dq, values["dq"])
    np.testing.assert_array_equal(ds.tau, values["tau"])
    assert ds.metadata["torque_columns"] == ["tau_0", "tau_1", "tau_2"]


def test_list_form_follows_the_listed_joint_order_and_unmapped_keys_keep_the_contract(
    tmp_path: Path,
):
    """Columns in another order than the joints', named one by one; dq, tau and the joint
    temperatures keep the contract's names; other columns are ignored."""
    values = _values()
    header = ["timestamp", "pos_c", "pos_a", "pos_b", "note"]
    header += [f"actual_qd_{j}" for j in range(3)] + [
        f"actual_current_as_torque_{j}" for j in range(3)
    ]
    header += [f"motor_temp_{j}" for j in range(3)]
    q = values["q"]
    table = np.column_stack([values["time"], q[:, 2], q[:, 0], q[:, 1], np.ones(N_ROWS),
                             values["dq"], values["tau"], values["temperature"]])  # fmt: skip
    path = _write(tmp_path / "log.csv", header, table)
    mapping = {"q": ["pos_a", "pos_b", "pos_c"], "temperature": "motor_temp_", "dq": None}
    ds = read_csv_log(path, JOINTS, columns=mapping)
    np.testing.assert_array_equal(ds.q, q)
    np.testing.assert_array_equal(ds.dq, values["dq"])
    np.testing.assert_array_equal(ds.tau, values["tau"])
    np.testing.assert_array_equal(ds.temperature, values["temperature"])
    assert "note" in ds.metadata["ignored_columns"]


def test_current_mapped_with_motor_constants(tmp_path: Path):
    values = _values()
    header = ["time"] + [f"p{j}" for j in range(3)] + [f"v{j}" for j in range(3)]
    header += [f"amp{j}" for j in range(3)]
    table = np.column_stack([values["time"], values["q"], values["dq"], values["tau"]])
    path = _write(tmp_path / "log.csv", header, table)
    gains = [2.0, 3.0, 4.0]
    ds = read_csv_log(path, JOINTS, current_to_torque=gains,
                      columns={"time": "time", "q": "p", "dq": "v", "current": "amp"})  # fmt: skip
    np.testing.assert_allclose(ds.tau, values["tau"] * gains)


def test_the_fast_path_reads_a_mapped_file(tmp_path: Path, monkeypatch):
    """A clean file with mapped columns is parsed by pyarrow, never by numpy's loadtxt."""
    path = _panda_style(tmp_path / "log.csv", _values(n_rows=2000))

    def refuse(*args, **kwargs):
        raise AssertionError("the reference parser ran on a clean mapped file")

    monkeypatch.setattr(csv_log.np, "loadtxt", refuse)
    ds = read_csv_log(path, JOINTS, columns={"time": "time", "q": "q_", "dq": "dq_", "tau": "tau_"})
    assert ds.n_samples == 2000


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({"time": "time", "q": "pos_", "dq": "dq_", "tau": "tau_"},
         r"has none of the columns pos_0\.\.pos_2 named by source\.columns\.q=pos_\. The header "
         r"\(line 1\) has: time, q_0\.\.2, dq_0\.\.2, tau_0\.\.2"),
        ({"time": "time", "q": ["q_0", "q_1", "q_9"], "dq": "dq_", "tau": "tau_"},
         r"no column 'q_9' named by source\.columns\.q .*The header has 'q_2' \(column 4\) "
         r"close to q_9"),
        ({"time": "time", "q": ["q_0", "q_1"], "dq": "dq_", "tau": "tau_"},
         r"source\.columns\.q lists 2 column name\(s\) \['q_0', 'q_1'\], but the 3-joint robot "
         r".* needs 3, one per joint in that order.*log\.csv' \(source\.path\)"),
        ({"time": "time", "q": "q_", "dq": "dq_", "tau": "tau_", "temperatures": "t_"},
         r"source\.columns has no key 'temperatures'\. Did you mean 'temperature'\? Its keys "
         r"are time, q, dq, tau, current, temperature"),
        ({"time": "stamp", "q": "q_", "dq": "dq_", "tau": "tau_"},
         r"no time column 'stamp' \(source\.columns\.time.* pass source\.columns\.time=time\."),
        ({"time": "time", "q": "q_", "dq": "q_", "tau": "tau_"},
         r"maps the column 'q_0' of .* to both q and dq"),
    ],
)  # fmt: skip
def test_mapping_errors_name_the_file_the_key_and_the_header(tmp_path: Path, mapping, expected):
    path = _panda_style(tmp_path / "log.csv", _values())
    with pytest.raises(UserError, match=expected):
        read_csv_log(path, JOINTS, columns=mapping)


def test_a_prefix_with_more_columns_than_joints_is_a_wrong_count(tmp_path: Path):
    path = _panda_style(tmp_path / "log.csv", _values(n=4))
    with pytest.raises(UserError, match=r"has 4 column\(s\) q_0\.\.q_3 for source\.columns\.q=q_"):
        read_csv_log(path, JOINTS, columns={"time": "time", "q": "q_", "dq": "dq_", "tau": "tau_"})


def test_source_params_check_the_keys_and_the_time_column():
    with pytest.raises(ValueError, match=r"columns has no key 'pos'"):
        CsvSourceParams(path="a.csv", columns={"pos": "q_"})
    with pytest.raises(ValueError, match="name two time columns"):
        CsvSourceParams(path="a.csv", time_column="t", columns={"time": "time"})
    params = CsvSourceParams(path="a.csv", columns={"time": "time", "q": None})
    assert params.time_name == "time"


def test_a_factor_job_reads_mapped_timestamps(tmp_path: Path):
    """mode=factor reads the time column alone, streamed: the mapped one."""
    values = _values()
    path = _panda_style(tmp_path / "log.csv", values)
    mapping = {"time": "time", "q": "q_", "dq": "dq_", "tau": "tau_"}
    source = CsvSource(CsvSourceParams(path=str(path), columns=mapping))
    robot = type("Robot", (), {"joint_names": JOINTS})()
    np.testing.assert_array_equal(source.timestamps(robot, str(path)), values["time"])
    part = source.acquire_rows(robot, str(path), (10, 20))
    np.testing.assert_array_equal(part.q, values["q"][10:20])


# --- the command line --------------------------------------------------------------------------
def _ur10e_log(path: Path, seed: int, duration_s: float) -> Path:
    """A UR10e multi-sine log at 500 Hz with the Panda log's column names."""
    robot = load_robot("ur10e")
    t = np.arange(0.0, duration_s, 0.002)
    q, dq, ddq = multisine(t, robot.n_joints, seed, amp_rad=(0.2, 0.5), freq_hz=(0.1, 0.5))
    tau = robot.inverse_dynamics(q, dq, ddq) + 3.0 * dq + 2.0 * np.tanh(dq / 0.01)
    tau += 0.05 * np.random.default_rng(seed).standard_normal(tau.shape)
    values = {"time": t, "q": q, "dq": dq, "tau": tau}
    return _panda_style(path, values)


@pytest.fixture(scope="module")
def renamed_logs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("renamed")
    return {
        "train": _ur10e_log(folder / "train.csv", 1, 12.0),
        "val": _ur10e_log(folder / "val.csv", 2, 6.0),
    }


COMMON = ("robot=ur10e", "source=csv", "validation=csv", "plots=false", "tuning=none")


@pytest.mark.slow
@pytest.mark.parametrize(
    "mapping",
    [
        ("source.columns={time: time, q: q_, dq: dq_, tau: tau_}",),
        ("source.columns.time=time", "source.columns.q=q_", "source.columns.dq=dq_",
         "source.columns.tau=[tau_0,tau_1,tau_2,tau_3,tau_4,tau_5]"),
    ],
    ids=["dict", "per-key"],
)  # fmt: skip
def test_the_command_line_reads_mapped_logs(renamed_logs, tmp_path: Path, mapping):
    """Both forms of the mapping on the command line; validation.columns follows
    source.columns."""
    run = tmp_path / "run"
    result = run_cli(*COMMON, f"source.path={renamed_logs['train']}",
                     f"validation.path={renamed_logs['val']}", *mapping,
                     f"hydra.run.dir={run}")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["validation"]["physical"]["r2"] > 0.99


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("source.columns={time: time, q: q_, dq: dq_, tau: tau_, pos: p_}",
         "Unknown config key 'source.columns.pos'"),
        ("source.columns.pos=p_", "Unknown config key 'source.columns.pos'"),
        ("source.columns={time: time, q: q_, dq: dq_, tau: [tau_0,tau_1]}",
         "source.columns.tau lists 2 column name(s)"),
        ("source.columns={time: time, q: x_, dq: dq_, tau: tau_}",
         "has none of the columns x_0..x_5 named by source.columns.q=x_"),
    ],
)  # fmt: skip
def test_the_command_line_refuses_a_bad_mapping_in_one_paragraph(
    renamed_logs, tmp_path: Path, override, expected
):
    result = run_cli(*COMMON, f"source.path={renamed_logs['train']}",
                     f"validation.path={renamed_logs['val']}", override,
                     f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert len(error_message(result.stderr).splitlines()) == 1
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_an_unmapped_log_is_told_about_the_mapping(tmp_path: Path):
    path = _panda_style(tmp_path / "log.csv", _values())
    with pytest.raises(UserError, match=r"map them, e\.g\. source\.columns=\{time: time, q: q_"):
        read_csv_log(path, JOINTS, time_column="time")


def test_null_entries_keep_the_contract_names(tmp_path: Path):
    """A file in the contract read with null entries: as without a mapping."""
    values = _values()
    ds = Dataset(values["time"], values["q"], values["dq"], values["tau"], JOINTS)
    csv_log.write_csv_log(ds, tmp_path / "log.csv")
    plain = read_csv_log(tmp_path / "log.csv", JOINTS)
    again = read_csv_log(tmp_path / "log.csv", JOINTS, columns={"q": None})
    np.testing.assert_array_equal(again.q, plain.q)
    np.testing.assert_allclose(again.q, ds.q, rtol=1e-9)
