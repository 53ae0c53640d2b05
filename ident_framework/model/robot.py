"""The robot: one MJCF description that feeds both Pinocchio and MuJoCo, for a built-in UR arm
(`ur_description.py`), a URDF (converted by MuJoCo's importer) or an MJCF file. Joints are the
model's 1-DoF joints in model order; inertial parameters per link, about the joint frame origin:
[m, m*cx, m*cy, m*cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (kg, kg·m, kg·m²).
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin

from ident_framework.errors import UserError
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model.ur_description import UR_JOINTS, UR_MODELS, ur_joint_limits, ur_mjcf

N_INERTIAL = 10  # dynamic parameters per link


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits: position (n, 2) rad, velocity rad/s, acceleration rad/s², effort Nm."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class RobotModel:
    """A serial arm described by MJCF text (`mjcf`), with Pinocchio's model of the same text."""

    name: str
    mjcf: str
    joint_names: tuple[str, ...]
    limits: JointLimits
    pin_model: pin.Model = field(repr=False, compare=False)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def mujoco_model(self) -> mujoco.MjModel:
        return mujoco.MjModel.from_xml_string(self.mjcf)

    def mujoco_spec(self) -> mujoco.MjSpec:
        return mujoco.MjSpec.from_string(self.mjcf)

    def inertial_parameters(self) -> np.ndarray:
        """(10 n,) Pinocchio dynamic parameters of the moving links, in joint order."""
        return np.concatenate(
            [self.pin_model.inertias[j].toDynamicParameters() for j in range(1, self.n_joints + 1)]
        )

    def armature(self) -> np.ndarray:
        """(n,) rotor inertia reflected to each joint, kg·m²."""
        return np.array(self.pin_model.armature, dtype=float).copy()

    def joint_friction(self) -> tuple[np.ndarray, np.ndarray]:
        """(viscous damping Nm·s/rad, Coulomb friction loss Nm) per joint, from the MJCF."""
        model = self.mujoco_model()
        dof = [model.joint(name).dofadr[0] for name in self.joint_names]
        return model.dof_damping[dof].copy(), model.dof_frictionloss[dof].copy()

    def with_dynamics(
        self,
        inertial: np.ndarray | None = None,
        armature: np.ndarray | None = None,
        damping: np.ndarray | None = None,
        frictionloss: np.ndarray | None = None,
        name: str | None = None,
    ) -> RobotModel:
        """A copy with new link inertial parameters (must be physically valid), rotor inertia
        (kg·m²), viscous damping (Nm·s/rad) and Coulomb friction (Nm) written into the MJCF
        with full float precision (MuJoCo's XML writer rounds to 6 digits)."""
        root = ET.fromstring(self.mjcf)
        joints = {element.get("name"): element for element in root.iter("joint")}
        parents = {child: parent for parent in root.iter() for child in parent}
        for index, joint_name in enumerate(self.joint_names):
            joint = joints[joint_name]
            if inertial is not None:
                params = inertial[N_INERTIAL * index : N_INERTIAL * (index + 1)]
                _set_inertial(parents[joint], np.asarray(params, dtype=float))
            for attribute, values in (
                ("armature", armature),
                ("damping", damping),
                ("frictionloss", frictionloss),
            ):
                if values is not None:
                    joint.set(attribute, repr(float(values[index])))
        text = ET.tostring(root, encoding="unicode")
        return RobotModel.from_mjcf_text(
            name or self.name, text, self.limits, expected_joints=self.joint_names
        )

    def inverse_dynamics(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n) joint torques in Nm (rigid body + rotor inertia, no friction)."""
        data = self.pin_model.createData()
        out = np.empty_like(q, dtype=float)
        for k in range(len(q)):
            out[k] = pin.rnea(self.pin_model, data, q[k], dq[k], ddq[k])
        return out

    @classmethod
    def from_mjcf_text(
        cls,
        name: str,
        text: str,
        limits: JointLimits | None = None,
        expected_joints: tuple[str, ...] | None = None,
        source: str = "MJCF",
    ) -> RobotModel:
        """Build from MJCF text: MuJoCo compiles it, Pinocchio parses the same text."""
        try:
            mj_model = mujoco.MjModel.from_xml_string(text)
        except ValueError as error:
            raise UserError(f"MuJoCo cannot load the robot model {source}: {error}") from None
        joint_names = _hinge_joints(mj_model, source)
        if expected_joints is not None and tuple(expected_joints) != joint_names:
            raise UserError(
                f"The robot model {source} has joints {list(joint_names)}, expected "
                f"{list(expected_joints)}. Use a model of the same arm with the same joint names."
            )
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as handle:
            handle.write(text)
        try:
            pin_model = pin.buildModelFromMJCF(handle.name)
        except Exception as error:  # Pinocchio raises plain RuntimeError/ValueError
            raise UserError(f"Pinocchio cannot load the robot model {source}: {error}") from None
        finally:
            os.unlink(handle.name)
        pin_joints = tuple(pin_model.names[1:])
        if pin_joints != joint_names or pin_model.nq != len(joint_names):
            raise UserError(
                f"Pinocchio and MuJoCo read different joints from {source} "
                f"({list(pin_joints)} vs {list(joint_names)}): only serial arms of 1-DoF "
                "revolute or prismatic joints are supported."
            )
        if limits is None:
            limits = _limits_from_mujoco(mj_model, joint_names)
        return cls(name, text, joint_names, limits, pin_model)


def _set_inertial(body: ET.Element, params: np.ndarray) -> None:
    """Write Pinocchio dynamic parameters (about the body frame origin) as the body's
    <inertial>: mass, centre of mass and the full inertia tensor about it (body frame)."""
    link = pin.Inertia.FromDynamicParameters(params)
    rot = np.asarray(link.inertia)
    element = body.find("inertial")
    if element is None:
        element = ET.Element("inertial")
        body.insert(0, element)
    element.attrib.clear()
    element.set("pos", " ".join(repr(float(v)) for v in np.asarray(link.lever)))
    element.set("mass", repr(float(link.mass)))
    full = (rot[0, 0], rot[1, 1], rot[2, 2], rot[0, 1], rot[0, 2], rot[1, 2])
    element.set("fullinertia", " ".join(repr(float(v)) for v in full))


def _hinge_joints(model: mujoco.MjModel, source: str) -> tuple[str, ...]:
    allowed = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    names = []
    for index in range(model.njnt):
        if int(model.jnt_type[index]) not in allowed:
            raise UserError(
                f"The robot model {source} has a free or ball joint "
                f"'{model.joint(index).name}': only fixed-base serial arms are supported."
            )
        name = model.joint(index).name
        if not name:
            raise UserError(f"Joint {index} of the robot model {source} has no name; name it.")
        names.append(name)
    return tuple(names)


def default_acceleration_limits(velocity: np.ndarray) -> np.ndarray:
    """When a model publishes none: 4 × the velocity limit per second (rad/s²)."""
    return 4.0 * np.asarray(velocity, dtype=float)


def _limits_from_mujoco(model: mujoco.MjModel, joint_names: tuple[str, ...]) -> JointLimits:
    position, effort = [], []
    for name in joint_names:
        joint = model.joint(name)
        limited = bool(model.jnt_limited[joint.id])
        position.append(joint.range if limited else [-2 * np.pi, 2 * np.pi])
        frc = model.jnt_actfrcrange[joint.id]
        effort.append(frc[1] if model.jnt_actfrclimited[joint.id] else np.inf)
    velocity = np.full(len(joint_names), np.pi)  # MJCF has no velocity limits
    return JointLimits(
        np.array(position, dtype=float),
        velocity,
        default_acceleration_limits(velocity),
        np.array(effort, dtype=float),
    )


def universal_robot(model: str, acceleration_limits: list[float] | None = None) -> RobotModel:
    """Built-in UR e-Series arm (ur12e, ur10e, ur5e) from UR's published data."""
    if model not in UR_MODELS:
        raise UserError(f"unknown UR robot '{model}'; built-in: {list(UR_MODELS)}.")
    published = ur_joint_limits(model)
    acceleration = (
        np.asarray(acceleration_limits, dtype=float)
        if acceleration_limits is not None
        else default_acceleration_limits(published["velocity"])
    )
    limits = JointLimits(
        published["position"], published["velocity"], acceleration, published["effort"]
    )
    return RobotModel.from_mjcf_text(model, ur_mjcf(model), limits, expected_joints=UR_JOINTS)


def urdf_to_mjcf(path: Path) -> str:
    """MJCF text of a URDF arm via MuJoCo's importer (visual and collision geometry dropped:
    identification needs none and meshes are often absent)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as error:
        raise UserError(
            f"Cannot read the URDF file {path}: {error}. Give robot.path=FILE."
        ) from None
    for link in root.iter("link"):
        for child in list(link):
            if child.tag in ("visual", "collision"):
                link.remove(child)
    for element in [*root.iter("link"), *root.iter("joint")]:
        seen = set()
        for child in list(element):  # urdfdom reads the first of repeated tags; so do we
            if child.tag in seen:
                element.remove(child)
            seen.add(child.tag)
    for dynamics in root.iter("dynamics"):
        # Friction and damping of a URDF are not part of the rigid-body description.
        dynamics.attrib.pop("friction", None)
        dynamics.attrib.pop("damping", None)
    extension = ET.SubElement(root, "mujoco")
    ET.SubElement(
        extension,
        "compiler",
        discardvisual="true",
        fusestatic="false",
        balanceinertia="false",
        boundmass="1e-9",  # massless links (e.g. MDH frame links) must not be exactly zero
        boundinertia="1e-12",
    )
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
        spec.compile()
    except ValueError as error:
        raise UserError(f"MuJoCo cannot import the URDF {path}: {error}") from None
    return spec.to_xml()


def load_robot(
    model: str, path: str | None = None, acceleration_limits: list[float] | None = None
) -> RobotModel:
    """Robot from config: a built-in UR name, or `urdf` / `mjcf` with a file path."""
    if model in UR_MODELS:
        return universal_robot(model, acceleration_limits)
    if model not in ("urdf", "mjcf"):
        raise UserError(
            f"unknown robot '{model}'; options: {[*UR_MODELS, 'urdf', 'mjcf']} "
            "(robot=urdf or robot=mjcf with robot.path=FILE)."
        )
    if not path:
        raise UserError(f"robot={model} needs a model file: give robot.path=FILE.")
    file = Path(resolve_launch_path(path))
    if not file.is_file():
        raise UserError(f"The robot model file {file} (robot.path) does not exist.")
    text = urdf_to_mjcf(file) if model == "urdf" else file.read_text()
    robot = RobotModel.from_mjcf_text(file.stem, text, source=str(file))
    limits = _urdf_limits(robot, file) if model == "urdf" else robot.limits
    if acceleration_limits is not None:
        limits = replace(limits, acceleration=np.asarray(acceleration_limits, dtype=float))
    return replace(robot, limits=limits)


def _urdf_limits(robot: RobotModel, file: Path) -> JointLimits:
    """`robot.limits` with the velocity and effort of the URDF's <limit> tags (MJCF cannot
    carry velocity)."""
    joints = {j.get("name"): j for j in ET.parse(file).getroot().iter("joint")}
    velocity, effort = robot.limits.velocity.copy(), robot.limits.effort.copy()
    for index, name in enumerate(robot.joint_names):
        limit = joints[name].find("limit") if name in joints else None
        if limit is not None:
            velocity[index] = float(limit.get("velocity", velocity[index]))
            effort[index] = float(limit.get("effort", effort[index]))
    return JointLimits(
        robot.limits.position, velocity, default_acceleration_limits(velocity), effort
    )
