"""`source=rosbag` / `validation=rosbag`: JointState messages of ROS 2 (.mcap, .db3) and ROS 1
(.bag) bags, joints matched by name, stamps from the header; the same identification as from
the CSV of the same recording."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.data.csv_log import read_csv_log, write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.data.rosbag_log import read_rosbag_log
from ident_framework.errors import UserError
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.sources.rosbag import RosbagSource, RosbagSourceParams
from ident_framework.testing.cli import run_cli
from ident_framework.testing.rosbag_writer import write_joint_state_bag
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams
from ident_framework.trajectories.point_to_point import PointToPointGenerator, PointToPointParams

UR_ORDER = (  # how UR's drivers publish /joint_states: alphabetically
    "elbow_joint", "shoulder_lift_joint", "shoulder_pan_joint",
    "wrist_1_joint", "wrist_2_joint", "wrist_3_joint",
)  # fmt: skip
MOTOR_CONSTANTS = [13.2, 13.2, 9.3, 4.6, 4.6, 4.6]  # Nm/A, robot joint order


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[str, Path]:
    """A simulated UR10e identification and validation recording, as CSV logs and as bags of
    the values read back from those CSVs (so both hold the same numbers)."""
    folder = tmp_path_factory.mktemp("bags")
    robot = load_robot("ur10e")
    source = MujocoSource(MujocoSourceParams(seed=3))
    fourier = FourierGenerator(FourierParams(n_candidates=20, n_refine=0, progress=False))
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    excitation = fourier.generate(robot, make_condition_objective(builder), seed=3)
    motion = PointToPointGenerator(PointToPointParams(duration_s=10.0, workspace=None)).generate(
        robot, None, 4
    )
    out: dict[str, Path] = {}
    for role, trajectory in (("ident", excitation), ("val", motion)):
        write_csv_log(source.acquire(robot, trajectory, role), folder / f"{role}.csv")
        out[f"{role}_csv"] = folder / f"{role}.csv"
        data = read_csv_log(folder / f"{role}.csv", robot.joint_names)
        out[f"{role}_mcap"] = write_joint_state_bag(data, folder / f"{role}_mcap", fmt="mcap")
        out[f"{role}_db3_ur"] = write_joint_state_bag(
            data, folder / f"{role}_db3_ur", fmt="db3", order=UR_ORDER, prefix="ur_"
        )
        out[f"{role}_ros1"] = write_joint_state_bag(
            data, folder / f"{role}.bag", fmt="bag", order=UR_ORDER[::-1]
        )
    return out


def _dataset(n: int = 400, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    names = tuple(UR_ORDER[i] for i in (2, 1, 0, 3, 4, 5))
    t = np.arange(n) * 0.002
    return Dataset(
        t, rng.uniform(-3, 3, (n, 6)), rng.normal(size=(n, 6)), rng.normal(size=(n, 6)), names
    )


@pytest.mark.parametrize(
    ("fmt", "order", "prefix", "filename"),
    [
        ("mcap", None, "", "chain_mcap"),
        ("db3", UR_ORDER, "ur_", "ur_db3"),
        ("bag", UR_ORDER[::-1], "", "reversed.bag"),
    ],
)
def test_bag_round_trip_matches_joints_by_name(tmp_path, fmt, order, prefix, filename):
    data = _dataset()
    bag = write_joint_state_bag(data, tmp_path / filename, fmt=fmt, order=order, prefix=prefix)
    read = read_rosbag_log(bag, data.joint_names)
    np.testing.assert_array_equal(read.q, data.q)
    np.testing.assert_array_equal(read.dq, data.dq)
    np.testing.assert_array_equal(read.tau, data.tau)
    np.testing.assert_allclose(read.timestamp, data.timestamp, rtol=0, atol=1e-12)
    assert read.metadata["joint_prefix"] == prefix
    assert read.metadata["bag_joint_order"] == [prefix + n for n in (order or data.joint_names)]
    if fmt != "bag":  # one file of the rosbag2 folder, handed on its own
        (single,) = bag.glob(f"*.{fmt}")
        np.testing.assert_array_equal(read_rosbag_log(single, data.joint_names).q, data.q)


def test_stamps_come_from_the_header_not_the_receive_time(tmp_path):
    """Messages arrive with network jitter; header.stamp holds when the joints were sampled."""
    data = _dataset()
    jitter = np.random.default_rng(1).integers(200_000, 1_900_000, data.n_samples)  # ns
    bag = write_joint_state_bag(data, tmp_path / "b", receive_delay_ns=jitter)
    header = read_rosbag_log(bag, data.joint_names)
    np.testing.assert_allclose(header.timestamp, data.timestamp, rtol=0, atol=1e-12)
    received = read_rosbag_log(bag, data.joint_names, stamp="receive")
    arrival = data.timestamp + (jitter - jitter[0]) * 1e-9
    np.testing.assert_allclose(received.timestamp, arrival, rtol=0, atol=1e-12)
    assert received.metadata["time_origin_ns"] - header.metadata["time_origin_ns"] == jitter[0]


def test_messages_of_other_publishers_are_skipped(tmp_path):
    """A gripper publishing its own JointState on /joint_states: its messages are skipped."""
    data = _dataset(200)
    gripper = Dataset(
        data.timestamp + 0.001, data.q[:, :1], data.dq[:, :1], data.tau[:, :1], ("finger_joint",)
    )
    arm = write_joint_state_bag(data, tmp_path / "arm.bag", fmt="bag")
    hand = write_joint_state_bag(gripper, tmp_path / "hand.bag", fmt="bag", extra_topics=())
    from rosbags.highlevel import AnyReader

    merged = tmp_path / "both.bag"
    _merge_ros1([arm, hand], merged)
    with AnyReader([merged]) as reader:
        assert reader.topics["/joint_states"].msgcount == 400
    read = read_rosbag_log(merged, data.joint_names)
    assert read.n_samples == 200 and read.metadata["skipped_messages"] == 200
    np.testing.assert_array_equal(read.q, data.q)


def _merge_ros1(bags: list[Path], target: Path) -> None:
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag1 import Writer

    with AnyReader(bags) as reader, Writer(target) as writer:
        out = {}
        for connection in reader.connections:
            key = (connection.topic, connection.msgtype)
            if key not in out:
                out[key] = writer.add_connection(*key, typestore=reader.typestore)
        for connection, at, raw in reader.messages():
            writer.write(out[(connection.topic, connection.msgtype)], at, raw)


def test_errors_name_the_topic_the_joints_and_the_message(tmp_path):
    data = _dataset()
    bag = write_joint_state_bag(data, tmp_path / "b", order=UR_ORDER)
    with pytest.raises(
        UserError,
        match=r"no topic /joint_state\..*'/joint_states'.*Its topics: "
        r"/joint_states \(sensor_msgs/msg/JointState\), /robot_description",
    ):
        read_rosbag_log(bag, data.joint_names, topic="/joint_state")
    with pytest.raises(UserError, match=r"/robot_description carries \['std_msgs/msg/String'\]"):
        read_rosbag_log(bag, data.joint_names, topic="/robot_description")
    with pytest.raises(UserError, match=r"missing \['wrist_4_joint'\].*validation.joint_prefix"):
        read_rosbag_log(bag, (*data.joint_names[:5], "wrist_4_joint"), config_prefix="validation.")
    with pytest.raises(UserError, match=r"effort=current needs the motor constants"):
        read_rosbag_log(bag, data.joint_names, effort="current")
    with pytest.raises(UserError, match="has 3 values, but"):
        read_rosbag_log(bag, data.joint_names, effort="current", current_to_torque=[1, 2, 3])
    with pytest.raises(UserError, match="does not exist"):
        read_rosbag_log(tmp_path / "none.mcap", data.joint_names)
    (tmp_path / "junk.mcap").write_text("not a bag")
    with pytest.raises(UserError, match="cannot be read as a rosbag2 folder"):
        read_rosbag_log(tmp_path / "junk.mcap", data.joint_names)


def test_bad_values_are_refused_with_the_message_index(tmp_path):
    data = _dataset()
    t = data.timestamp.copy()
    t[50] = t[49]
    repeated = write_joint_state_bag(Dataset(t, data.q, data.dq, data.tau, data.joint_names),
                                     tmp_path / "repeat")  # fmt: skip
    with pytest.raises(UserError, match=r"time stamp of message 50 .* repeats.*source.stamp="):
        read_rosbag_log(repeated, data.joint_names)
    degrees = write_joint_state_bag(
        Dataset(data.timestamp, np.degrees(data.q), data.dq, data.tau, data.joint_names),
        tmp_path / "deg",
    )
    with pytest.raises(UserError, match=r"position of .* look like degrees"):
        read_rosbag_log(degrees, data.joint_names)
    tau = data.tau.copy()
    tau[7, 2] = np.nan
    nan = write_joint_state_bag(Dataset(data.timestamp, data.q, data.dq, tau, data.joint_names),
                                tmp_path / "nan")  # fmt: skip
    with pytest.raises(UserError, match=f"effort of {data.joint_names[2]} is nan in message 7"):
        read_rosbag_log(nan, data.joint_names)
    with pytest.raises(UserError, match="only 400 usable messages"):
        read_rosbag_log(nan.parent / "deg", data.joint_names, max_abs_q=1e9, min_samples=500)


def test_currents_are_converted_and_flagged_under_torque(recordings, caplog):
    """effort=current: currents x motor constants give the torques back; the same currents
    read as torques are flagged as current-like (they are ~1/k of the gravity torque)."""
    robot = load_robot("ur10e")
    data = read_csv_log(recordings["val_csv"], robot.joint_names)
    gains = np.asarray(MOTOR_CONSTANTS)
    bag = write_joint_state_bag(
        data, recordings["val_csv"].parent / "currents", effort=data.tau / gains, order=UR_ORDER
    )
    as_current = RosbagSource(
        RosbagSourceParams(path=str(bag), effort="current", current_to_torque=MOTOR_CONSTANTS)
    ).acquire(robot)
    np.testing.assert_allclose(as_current.tau, data.tau, rtol=1e-12, atol=1e-12)
    with caplog.at_level(logging.WARNING):
        as_torque = RosbagSource(RosbagSourceParams(path=str(bag))).acquire(robot)
    assert as_torque.metadata["effort_to_gravity_scale"] < 0.2
    assert "look like motor currents" in caplog.text and "source.effort=current" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        torque = RosbagSource(RosbagSourceParams(path=str(recordings["val_mcap"]))).acquire(robot)
    assert 0.8 < torque.metadata["effort_to_gravity_scale"] < 1.2
    assert "look like motor currents" not in caplog.text


def _identify(tmp_path: Path, name: str, *args: str) -> tuple[dict, dict]:
    run = tmp_path / name
    result = run_cli("robot=ur10e", *args, f"hydra.run.dir={run}", "plots=false", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    return metrics, parameters


def _fit_figures(metrics: dict) -> np.ndarray:
    figures = [metrics["identifiability"]["cond"]]
    for split in ("train", "validation"):
        physical = metrics[split]["physical"]
        figures += [physical["rmse"], physical["r2"]]
        figures += physical["rmse_per_joint"] + physical["r2_per_joint"]
    return np.asarray(figures)


@pytest.mark.slow
def test_identification_from_bags_equals_identification_from_csv(recordings, tmp_path):
    """The same recording as CSV, as an .mcap bag in chain order and as a .db3 bag (joints
    alphabetical, tf_prefix ur_) with a ROS 1 .bag for validation: the same metrics (1e-9)
    and base parameters."""
    r = recordings
    csv_metrics, csv_parameters = _identify(
        tmp_path, "csv", "source=csv", f"source.path={r['ident_csv']}", "validation=csv",
        f"validation.path={r['val_csv']}",
    )  # fmt: skip
    runs = {
        "mcap": ("source=rosbag", f"source.path={r['ident_mcap']}", "validation=rosbag",
                 f"validation.path={r['val_mcap']}"),
        "shuffled": ("source=rosbag", f"source.path={r['ident_db3_ur']}", "validation=rosbag",
                     f"validation.path={r['val_ros1']}"),
    }  # fmt: skip
    reference = _fit_figures(csv_metrics)
    base = np.asarray([p["value"] for p in csv_parameters["base_parameters"]])
    for name, args in runs.items():
        metrics, parameters = _identify(tmp_path, name, *args)
        np.testing.assert_allclose(_fit_figures(metrics), reference, rtol=1e-9, atol=1e-12)
        values = np.asarray([p["value"] for p in parameters["base_parameters"]])
        np.testing.assert_allclose(values, base, rtol=1e-9, atol=1e-12 * np.abs(base).max())
        assert _without_paths(metrics["data"]) == _without_paths(csv_metrics["data"])
    assert csv_metrics["validation"]["physical"]["r2"] > 0.99


@pytest.mark.slow
def test_command_line_errors_exit_2_without_traceback(recordings, tmp_path):
    result = run_cli(
        "robot=ur10e", "source=rosbag", f"source.path={recordings['ident_mcap']}",
        "source.topic=/ur/joint_states", "validation=split", f"hydra.run.dir={tmp_path / 'r'}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "has no topic /ur/joint_states" in result.stderr and "/joint_states (sensor_msgs" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "r" / "metrics.json").exists()
    result = run_cli(
        "source=rosbag", "source.path=x.mcap", "source.effort=volts", f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 2 and "effort must be one of ['torque', 'current']" in (
        result.stderr
    )
    result = run_cli("source=rosbag", "validation=split", f"hydra.run.dir={tmp_path / 's'}")
    assert result.returncode == 2 and "source.path (the log to identify from)" in result.stderr
    assert "source=rosbag source.path=ident_bag" in result.stderr


def _without_paths(value):
    """`value` without its `path` entries (the bag and the CSV are different files)."""
    if isinstance(value, dict):
        return {k: _without_paths(v) for k, v in value.items() if k != "path"}
    if isinstance(value, list):
        return [_without_paths(v) for v in value]
    return value
