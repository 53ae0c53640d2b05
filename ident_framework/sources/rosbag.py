"""Built-in data source `rosbag`: joint states in a ROS 2 bag (rosbag2 folder, `.mcap`, `.db3`)
or a ROS 1 `.bag` (`data/rosbag_log.read_rosbag_log`); `source=rosbag`, `validation=rosbag`.

`effort=torque` (default) takes JointState.effort as joint torque (Nm; UR's ROS 2 driver with
`use_currents_as_efforts:=false`), `effort=current` as motor current (A) times
`current_to_torque` (Nm/A). Torques far below the model's gravity torque get a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.data.rosbag_log import EFFORTS, STAMPS, read_rosbag_log
from ident_framework.data.samples import resolve_sample
from ident_framework.errors import motor_constants
from ident_framework.hookspecs import hookimpl
from ident_framework.launch_path import resolve_launch_path
from ident_framework.params import Params, param

log = logging.getLogger(__name__)
CONFIG_PREFIX = {"identification": "source.", "validation": "validation."}
# effort / gravity torque below this (least-squares scale over the joints gravity loads) under
# effort=torque: the efforts look like motor currents (UR motor constants are 4-14 Nm/A)
CURRENT_LIKE_SCALE = 0.4
_GRAVITY_SAMPLES = 200  # poses at which the gravity torque is compared


def _topic_name(params: RosbagSourceParams) -> None:
    if not isinstance(params.topic, str) or not params.topic.startswith("/"):
        raise ValueError(
            f"topic must be a ROS topic name such as /joint_states, got {params.topic!r}"
        )


def _current_needs_constants(params: RosbagSourceParams) -> None:
    if params.effort == "current" and params.current_to_torque is None:
        raise ValueError("effort=current needs current_to_torque=[k_0,...] (motor constants, Nm/A)")


@dataclass
class RosbagSourceParams(Params):
    """path: the bag (rosbag2 folder, .mcap, .db3, or ROS 1 .bag); topic: its
    sensor_msgs/msg/JointState topic; effort: torque (Nm) | current (A, times
    current_to_torque in Nm/A per joint, robot joint order); joint_prefix: prefix of the bag's
    joint names (null: exact names, or the one common prefix found, e.g. a tf_prefix `ur_`);
    stamp: header (header.stamp) | receive (the bag's receive time)."""

    path: str | None = param(None, required=True, convert=str, note="the bag to read")
    topic: str = "/joint_states"
    effort: str = param("torque", choices=EFFORTS)
    current_to_torque: list[float] | None = param(None, convert=motor_constants)
    joint_prefix: str | None = None
    stamp: str = param("header", choices=STAMPS)
    rules = (_topic_name, _current_needs_constants)


class RosbagSource:
    """Reads a bag; never moves a robot, so the engine designs no trajectory for it."""

    moves_robot = False

    def __init__(self, params: RosbagSourceParams):
        self.params = params

    def acquire(
        self,
        robot: Any,
        trajectory: Any = None,
        role: str = "identification",
        *,
        min_samples: int = 2,
    ) -> Dataset:
        """Read `params.path` for `robot.joint_names`; `role` ("identification" or
        "validation") picks the config key named in messages."""
        del trajectory
        prefix = CONFIG_PREFIX.get(role, "source.")
        params = self.params
        path = resolve_sample(params.path, "rosbag", f"{prefix}path")  # sample:NAME ships
        data = read_rosbag_log(
            path or resolve_launch_path(params.path or ""),
            tuple(robot.joint_names),
            topic=params.topic,
            effort=params.effort,
            current_to_torque=params.current_to_torque,
            joint_prefix=params.joint_prefix,
            stamp=params.stamp,
            min_samples=min_samples,
            config_prefix=prefix,
        )
        if params.effort == "torque":
            scale = effort_to_gravity_scale(robot, data)
            data.metadata["effort_to_gravity_scale"] = scale
            if scale is not None and scale < CURRENT_LIKE_SCALE:
                log.warning(
                    "%s: the efforts on %s are %.3g x the gravity torque the robot model "
                    "predicts at the recorded poses: they look like motor currents (A), not "
                    "torques (Nm). If so, run with %seffort=current "
                    "%scurrent_to_torque=[k_0,...] (Nm/A), or record with the UR driver's "
                    "use_currents_as_efforts:=false (PolyScope >= 5.23).",
                    params.path, params.topic, scale, prefix, prefix,
                )  # fmt: skip
        return data


def effort_to_gravity_scale(robot: Any, data: Dataset) -> float | None:
    """Least-squares scale s minimising |tau - s g(q)| over the joints that gravity loads
    (g: the robot model's gravity torque, Nm, at up to 200 recorded poses); ~1 for torques,
    ~1/k (k: motor constant, Nm/A) for currents. None when gravity loads no joint (a
    horizontal arm)."""
    rows = np.linspace(0, data.n_samples - 1, min(_GRAVITY_SAMPLES, data.n_samples)).astype(int)
    q = data.q[rows]
    zero = np.zeros_like(q)
    gravity = robot.inverse_dynamics(q, zero, zero)
    loaded = np.sqrt(np.mean(gravity**2, axis=0))
    joints = loaded > 0.1 * loaded.max() if loaded.max() > 1e-6 else np.zeros_like(loaded, bool)
    if not joints.any():
        return None
    g, tau = gravity[:, joints].ravel(), data.tau[rows][:, joints].ravel()
    return float(np.dot(g, tau) / np.dot(g, g))


@hookimpl
def register_data_sources(register) -> None:
    register("rosbag", RosbagSource, RosbagSourceParams)
