"""Identified parameters written back into the digital twin: the text of `twin.xml` (MJCF) and
`twin.urdf` (`reports/run_report.write_twin` writes the files): the robot's own model with each
moving link's mass (kg), centre of mass (m) and full inertia (kg·m²), and each joint's viscous
damping (Nm·s/rad), Coulomb friction loss (Nm) and rotor inertia (armature, kg·m²; not in
URDF) replaced by the identified values, when they are physically valid (`twin_problems`).

Rationale: docs/design.md#twin-write-back
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np
import pinocchio as pin

from ident_framework.model.coupling import Coupling
from ident_framework.model.physical_consistency import check_link
from ident_framework.model.robot import N_INERTIAL, RobotModel


@dataclass(frozen=True)
class TwinDynamics:
    """Per-joint dynamics to write: inertial (10 n,) Pinocchio dynamic parameters about each
    joint frame (kg, kg·m, kg·m²); armature kg·m²; damping Nm·s/rad; frictionloss Nm."""

    inertial: np.ndarray
    armature: np.ndarray
    damping: np.ndarray
    frictionloss: np.ndarray


def identified_dynamics(
    robot: RobotModel,
    parameter_names: list[str],
    theta: np.ndarray,
    couplings: tuple[Coupling, ...] = (),
) -> TwinDynamics:
    """The twin's dynamics from standard parameters `theta` (regressor column order). Joint
    terms the model did not identify keep the robot's own values (rotor inertia without an
    armature column) or are zero (no fv/fc: friction=none, or a friction model that MJCF
    cannot express). Coupled motors: their diagonal part is lumped in (module doc)."""
    n = robot.n_joints
    index = {name: i for i, name in enumerate(parameter_names)}

    def per_joint(key: str, default: np.ndarray) -> np.ndarray:
        if all(f"{key}_{j + 1}" in index for j in range(n)):
            return np.array([theta[index[f"{key}_{j + 1}"]] for j in range(n)], dtype=float)
        return np.asarray(default, dtype=float)

    zero = np.zeros(n)
    armature, damping = per_joint("Ia", robot.armature()), per_joint("fv", zero)
    for coupling in couplings:
        diagonal = coupling.weights(n) ** 2  # 1 on joint b, r² on joint a
        for key, values in (("Ia", armature), ("fv", damping)):
            name = f"{key}_m{coupling.driven + 1}"
            if name in index:
                values += diagonal * theta[index[name]]
    return TwinDynamics(
        inertial=np.asarray(theta[: N_INERTIAL * n], dtype=float).copy(),
        armature=armature,
        damping=damping,
        frictionloss=per_joint("fc", zero),
    )


def coupling_note(robot: RobotModel, couplings: tuple[Coupling, ...]) -> str | None:
    """What the twin leaves out of the coupled motors (None: no coupling)."""
    if not couplings:
        return None
    pairs = ", ".join(
        f"{robot.joint_names[c.other]}/{robot.joint_names[c.driven]}" for c in couplings
    )
    return (
        f"MuJoCo and URDF cannot represent the coupled transmission of {pairs}: the twin has "
        "each coupled motor's rotor inertia and viscous friction lumped on the diagonal "
        "(joint b x 1, joint a x ratio²); the cross terms and the motor's Coulomb friction "
        "are left out, so the twin's torques differ from the identified model's there"
    )


def twin_problems(
    robot: RobotModel, dynamics: TwinDynamics, mass_share: np.ndarray | None = None
) -> list[str]:
    """Why these parameters cannot be written (empty: they can): each link that breaks a
    physical condition (`physical_consistency.check_link`; `mass_share` (n,) per link, the
    identifiable share of its mass, None: all identified), and negative joint terms."""
    problems = []
    for j, joint in enumerate(robot.joint_names):
        link = dynamics.inertial[N_INERTIAL * j : N_INERTIAL * (j + 1)]
        share = 1.0 if mass_share is None else float(mass_share[j])
        problems += [f"link of {joint}: {problem}" for problem in check_link(link, 1e-12, share)]
    for label, values, unit in (
        ("rotor inertia", dynamics.armature, "kg·m²"),
        ("viscous friction", dynamics.damping, "Nm·s/rad"),
        ("Coulomb friction", dynamics.frictionloss, "Nm"),
    ):
        for joint, value in zip(robot.joint_names, values, strict=True):
            if not value >= 0:
                problems.append(f"{joint}: {label} {value:.4g} {unit} is not >= 0")
    return problems


def twin_model(robot: RobotModel, dynamics: TwinDynamics, name: str | None = None) -> RobotModel:
    """The twin as a RobotModel: `robot` with `dynamics`, written at full precision by
    `RobotModel.with_dynamics` and checked to compile to the same model as an MjSpec edit."""
    edited = _mjspec_edit(robot, dynamics)
    twin = robot.with_dynamics(**vars(dynamics), name=name or f"{robot.name}_twin")
    written = twin.mujoco_model()
    for field in ("body_mass", "body_ipos", "body_inertia", "dof_armature", "dof_damping"):
        if not np.allclose(getattr(written, field), getattr(edited, field), rtol=1e-9, atol=1e-12):
            raise RuntimeError(f"twin.xml differs from the MjSpec-edited model in {field}")
    return twin


def _mjspec_edit(robot: RobotModel, dynamics: TwinDynamics) -> mujoco.MjModel:
    """`robot`'s model with `dynamics` set through MjSpec, compiled by MuJoCo."""
    model = robot.mujoco_model()
    spec = robot.mujoco_spec()
    for j, joint_name in enumerate(robot.joint_names):
        link = pin.Inertia.FromDynamicParameters(
            dynamics.inertial[N_INERTIAL * j : N_INERTIAL * (j + 1)]
        )
        inertia = np.asarray(link.inertia)
        body = spec.body(model.body(model.joint(joint_name).bodyid[0]).name)
        body.mass = float(link.mass)
        body.ipos = np.asarray(link.lever, dtype=float)
        body.fullinertia = inertia[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]]  # xx yy zz xy xz yz
        body.inertia = np.zeros(3)  # the principal form must be unset beside fullinertia
        body.iquat = np.array([1.0, 0.0, 0.0, 0.0])
        body.explicitinertial = True
        joint = spec.joint(joint_name)
        joint.armature = float(dynamics.armature[j])
        joint.damping = [float(dynamics.damping[j])] * len(joint.damping)
        joint.frictionloss = float(dynamics.frictionloss[j])
    return spec.compile()  # MuJoCo checks the edited model (masses, inertias) here


def twin_urdf_text(twin: RobotModel) -> str:
    """URDF of the compiled twin (rigid bodies, joints, limits, damping and friction)."""
    model = twin.mujoco_model()
    robot = ET.Element("robot", name=twin.name)
    robot.append(
        ET.Comment(
            " Written by ident_framework from twin.xml. Rotor inertia (armature) has no URDF "
            "field: it is in twin.xml and parameters.yaml. "
        )
    )
    offset = np.zeros((model.nbody, 3))  # body origin -> joint anchor, in the body frame
    for b in range(1, model.nbody):
        joints = [i for i in range(model.njnt) if model.jnt_bodyid[i] == b]
        if joints:
            offset[b] = model.jnt_pos[joints[0]]
        link = ET.SubElement(robot, "link", name=_body_name(model, b))
        if model.body_mass[b] > 0:
            inertial = ET.SubElement(link, "inertial")
            _origin(inertial, model.body_ipos[b] - offset[b], _rotation(model.body_iquat[b]))
            ET.SubElement(inertial, "mass", value=_numbers(model.body_mass[b]))
            ixx, iyy, izz = (_numbers(v) for v in model.body_inertia[b])
            ET.SubElement(inertial, "inertia", ixx=ixx, ixy="0", ixz="0", iyy=iyy, iyz="0", izz=izz)
        parent = int(model.body_parentid[b])
        if parent == 0:
            continue  # the root link
        rotation = _rotation(model.body_quat[b])
        origin = model.body_pos[b] - offset[parent] + rotation @ offset[b]
        if joints:
            i = joints[0]
            name = model.joint(i).name
            joint = ET.SubElement(robot, "joint", name=name, type="revolute")
            j, dof = twin.joint_names.index(name), model.jnt_dofadr[i]
            lower, upper = twin.limits.position[j]
            effort, velocity = twin.limits.effort[j], twin.limits.velocity[j]
            bounds = {"lower": lower, "upper": upper, "effort": effort, "velocity": velocity}
            ET.SubElement(joint, "limit", {k: _numbers(v) for k, v in bounds.items()})
            friction = {"damping": model.dof_damping[dof], "friction": model.dof_frictionloss[dof]}
            ET.SubElement(joint, "dynamics", {k: _numbers(v) for k, v in friction.items()})
            ET.SubElement(joint, "axis", xyz=_numbers(model.jnt_axis[i]))
        else:
            joint = ET.SubElement(
                robot, "joint", name=f"{_body_name(model, b)}_fixed", type="fixed"
            )
        ET.SubElement(joint, "parent", link=_body_name(model, parent))
        ET.SubElement(joint, "child", link=_body_name(model, b))
        _origin(joint, origin, rotation)
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _origin(parent: ET.Element, xyz: np.ndarray, rotation: np.ndarray) -> None:
    ET.SubElement(parent, "origin", xyz=_numbers(xyz), rpy=_numbers(pin.rpy.matrixToRpy(rotation)))


def _body_name(model: mujoco.MjModel, body: int) -> str:
    return model.body(body).name or f"body_{body}"


def _rotation(quat: np.ndarray) -> np.ndarray:
    matrix = np.zeros(9)
    mujoco.mju_quat2Mat(matrix, np.asarray(quat, dtype=float))
    return matrix.reshape(3, 3)


def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in np.asarray(values, dtype=float).ravel())
