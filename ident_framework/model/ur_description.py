"""MJCF description of a Universal Robots e-Series arm from UR's published parameter files
(UR's ROS 2 description package, BSD-3, under `robot_data/universal_robots/`): joint origins,
link masses, centres of mass and inertia tensors, joint limits. The chain follows UR's URDF:
base_link -> base_link_inertia (pi about z) -> shoulder_link -> ... -> wrist_3_link.
"""

from __future__ import annotations

import math
from importlib.resources import files
from typing import Any

import numpy as np
import yaml

UR_MODELS = ("ur12e", "ur10e", "ur5e")
UR_JOINTS = (
    "shoulder_pan_joint",
    "shoulder_lift_joint",
    "elbow_joint",
    "wrist_1_joint",
    "wrist_2_joint",
    "wrist_3_joint",
)
UR_HOME = (0.0, -math.pi / 2, math.pi / 2, -math.pi / 2, -math.pi / 2, 0.0)  # rad, arm up


def home_pose(joint_names: list[str], position_limits: np.ndarray) -> np.ndarray:
    """A safe rest pose (rad): `UR_HOME` on a UR arm, else the middle of each joint's
    (n, 2) range."""
    if tuple(joint_names) == UR_JOINTS:
        return np.array(UR_HOME)
    return position_limits.mean(axis=1)


_LINKS = ("shoulder", "upper_arm", "forearm", "wrist_1", "wrist_2", "wrist_3")


class _DegreesLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """Reads UR's `!degrees` tags as radians (libyaml's parser when PyYAML has it)."""


_DegreesLoader.add_constructor(
    "!degrees", lambda loader, node: math.radians(float(loader.construct_scalar(node)))
)


def _read_yaml(model: str, name: str) -> dict[str, Any]:
    text = (
        files("ident_framework").joinpath("robot_data", "universal_robots", model, name).read_text()
    )
    return yaml.load(text, Loader=_DegreesLoader)


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF convention: R = Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll), math.sin(roll), math.cos(pitch),
        math.sin(pitch), math.cos(yaw), math.sin(yaw),
    )  # fmt: skip
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_quat(rotation: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method, the sign of
    scipy's Rotation.from_matrix)."""
    r = np.asarray(rotation, dtype=float)
    decision = np.array([r[0, 0], r[1, 1], r[2, 2], np.trace(r)])
    choice = int(np.argmax(decision))
    xyzw = np.empty(4)
    if choice == 3:
        xyzw[:] = [r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1], 1 + decision[3]]
    else:
        i, j, k = choice, (choice + 1) % 3, (choice + 2) % 3
        xyzw[i] = 1 - decision[3] + 2 * r[i, i]
        xyzw[j] = r[j, i] + r[i, j]
        xyzw[k] = r[k, i] + r[i, k]
        xyzw[3] = r[k, j] - r[j, k]
    xyzw /= np.linalg.norm(xyzw)
    return xyzw[[3, 0, 1, 2]]


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(values))


def ur_joint_limits(model: str) -> dict[str, np.ndarray]:
    """Position (rad, (6, 2)), velocity (rad/s) and effort (Nm) limits from UR's files."""
    limits = _read_yaml(model, "joint_limits.yaml")["joint_limits"]
    rows = [limits[joint] for joint in UR_JOINTS]
    return {
        "position": np.array([[row["min_position"], row["max_position"]] for row in rows]),
        "velocity": np.array([row["max_velocity"] for row in rows]),
        "effort": np.array([row["max_effort"] for row in rows]),
    }


def ur_mjcf(model: str) -> str:
    """MJCF text of the nominal arm: masses, centres of mass and full inertia tensors (in the
    link frames) from UR's data, no joint friction, damping or armature."""
    if model not in UR_MODELS:
        raise ValueError(f"unknown UR model {model!r}; known: {UR_MODELS}")
    kinematics = _read_yaml(model, "default_kinematics.yaml")["kinematics"]
    physical = _read_yaml(model, "physical_parameters.yaml")["inertia_parameters"]
    limits = ur_joint_limits(model)

    lines = [
        f'<mujoco model="{model}">',
        '  <compiler angle="radian" autolimits="true" balanceinertia="false"/>',
        '  <option timestep="0.001" integrator="implicitfast"/>',
        "  <worldbody>",
        '    <body name="base_link">',
        '      <body name="base_link_inertia" quat="0 0 0 1">',
    ]
    closers = ["      </body>", "    </body>"]
    indent = "        "
    for index, (link, joint) in enumerate(zip(_LINKS, UR_JOINTS, strict=True)):
        origin = kinematics[link]
        position = [origin["x"], origin["y"], origin["z"]]
        quat = matrix_to_quat(rpy_to_matrix(origin["roll"], origin["pitch"], origin["yaw"]))
        mass = physical[f"{link}_mass"]
        cog = physical["center_of_mass"][f"{link}_cog"]
        com = np.array([cog["x"], cog["y"], cog["z"]])
        rot = physical["rotation"][link]
        t = physical["tensor"][link]  # ixx, ixy, ...: the symmetric tensor's upper half
        tensor = np.array([[t["i" + min(a, b) + max(a, b)] for b in "xyz"] for a in "xyz"])
        frame = rpy_to_matrix(rot["roll"], rot["pitch"], rot["yaw"])
        inertia = frame @ tensor @ frame.T  # about the COM, in the link frame
        full = [inertia[i, j] for i, j in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))]
        low, high = limits["position"][index]
        lines += [
            f'{indent}<body name="{link}_link" pos="{_fmt(position)}" quat="{_fmt(quat)}">',
            f'{indent}  <joint name="{joint}" axis="0 0 1" range="{_fmt([low, high])}"'
            f' actuatorfrcrange="{_fmt([-limits["effort"][index], limits["effort"][index]])}"/>',
            f'{indent}  <inertial pos="{_fmt(com)}" mass="{mass!r}" fullinertia="{_fmt(full)}"/>',
        ]
        closers.insert(0, f"{indent}</body>")
        indent += "  "
    lines += closers
    lines += ["  </worldbody>", "  <actuator>"]
    lines += [f'    <motor name="{joint}_motor" joint="{joint}" gear="1"/>' for joint in UR_JOINTS]
    lines += ["  </actuator>", "</mujoco>", ""]
    return "\n".join(lines)
