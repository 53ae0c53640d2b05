"""The "real" robot of a simulated run: the nominal model with perturbed true parameters.

`perturb_robot` draws, from one seed, a physically valid variant of every link, adds a payload
the nominal model does not know about to the last link, and gives every joint viscous friction
(MuJoCo `damping`), Coulomb friction (`frictionloss`) and rotor inertia (`armature`): UR-like
magnitudes for UR arms (not measured values), scaled by the effort limits for other arms.
`SimulatedTruth` holds the true parameters in the regressor's conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from ident_framework.errors import per_joint_values
from ident_framework.model.robot import N_INERTIAL, RobotModel
from ident_framework.model.ur_description import UR_JOINTS
from ident_framework.params import Params, param

UR_VISCOUS = (4.0, 4.0, 2.5, 1.0, 1.0, 1.0)  # Nm·s/rad
UR_COULOMB = (7.0, 7.0, 4.0, 1.5, 1.5, 1.2)  # Nm
UR_ARMATURE = (0.4, 0.4, 0.15, 0.04, 0.04, 0.04)  # kg·m²

# Per Nm of effort limit, for arms without a table (about the UR12e's ratios).
_PER_EFFORT = {"viscous": 0.015, "coulomb": 0.025, "armature": 0.001}
_EFFORT_IF_UNLIMITED = 50.0  # Nm, stands in for an infinite effort limit in the scaling


@dataclass
class PerturbationParams(Params):
    """How the true robot differs from the nominal one (conf/source/mujoco.yaml): log-normal
    factors on each link's mass and principal second moments (relative stds), a normal offset of
    its centre of mass (m, link frame) and rotation of its principal axes (deg); a payload, a
    solid sphere on the last link (kg, m in its frame, m); per joint viscous (Nm·s/rad), Coulomb
    (Nm) and rotor inertia (kg·m²), None: `default_joint_dynamics`.
    """

    mass_std: float = param(0.10, ge=0)
    com_std_m: float = param(0.01, ge=0, unit="m")
    inertia_std: float = param(0.20, ge=0)
    inertia_rotation_std_deg: float = param(5.0, ge=0, unit="deg")
    payload_mass_kg: float = param(1.5, ge=0, unit="kg")
    payload_position_m: list[float] = param(
        factory=lambda: [0.0, 0.0, 0.05], each=True, length=3, finite=True, unit="m"
    )
    payload_radius_m: float = param(0.03, ge=0, unit="m")
    viscous: list[float] | None = param(None, each=True, ge=0, unit="Nm·s/rad")
    coulomb: list[float] | None = param(None, each=True, ge=0, unit="Nm")
    armature: list[float] | None = param(None, each=True, ge=0, unit="kg·m²")


_ARRAYS = ("inertial", "viscous", "coulomb", "armature")  # SimulatedTruth's per-joint arrays


@dataclass(frozen=True)
class SimulatedTruth:
    """True parameters of a simulated robot. inertial: (10 n,) Pinocchio parameters per link
    about its joint frame, payload included; viscous (Nm·s/rad), coulomb (Nm), armature (kg·m²)
    per joint; payload: {"link", "mass_kg", "position_m", "inertia_kgm2"} or None; origin: how
    the robot was made; friction: a friction plugin's true joint friction (`true_friction.py`),
    or None: viscous and coulomb are the joint friction.
    """

    joint_names: tuple[str, ...]
    inertial: np.ndarray
    viscous: np.ndarray
    coulomb: np.ndarray
    armature: np.ndarray
    payload: dict[str, Any] | None = None
    origin: str = ""
    friction: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and floats (YAML- and JSON-safe); keys as `truth.py` reads them."""
        return {
            "joint_names": list(self.joint_names),
            **{name: [float(v) for v in getattr(self, name)] for name in _ARRAYS},
            "payload": None if self.payload is None else dict(self.payload),
            "origin": self.origin,
            "friction": None if self.friction is None else dict(self.friction),
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SimulatedTruth:
        return cls(
            joint_names=tuple(values["joint_names"]),
            **{name: np.asarray(values[name], dtype=float) for name in _ARRAYS},
            payload=values.get("payload"),
            origin=values.get("origin", ""),
            friction=values.get("friction"),
        )


def truth_from_robot(robot: RobotModel, origin: str = "") -> SimulatedTruth:
    """The true parameters written in any robot's MJCF (payload, if any, is part of a link)."""
    viscous, coulomb = robot.joint_friction()
    return SimulatedTruth(
        joint_names=tuple(robot.joint_names),
        inertial=robot.inertial_parameters(),
        viscous=np.asarray(viscous, dtype=float),
        coulomb=np.asarray(coulomb, dtype=float),
        armature=robot.armature(),
        payload=None,
        origin=origin or robot.name,
    )


def default_joint_dynamics(robot: RobotModel) -> dict[str, np.ndarray]:
    """Default viscous (Nm·s/rad), Coulomb (Nm) and rotor inertia (kg·m²) per joint: the UR
    table for arms with UR's joint names, else proportional to each joint's effort limit."""
    if tuple(robot.joint_names) == UR_JOINTS:
        return {
            "viscous": np.array(UR_VISCOUS),
            "coulomb": np.array(UR_COULOMB),
            "armature": np.array(UR_ARMATURE),
        }
    effort = np.asarray(robot.limits.effort, dtype=float)
    effort = np.where(np.isfinite(effort) & (effort > 0), effort, _EFFORT_IF_UNLIMITED)
    return {name: ratio * effort for name, ratio in _PER_EFFORT.items()}


def perturb_link(
    link: pin.Inertia, params: PerturbationParams, rng: np.random.Generator
) -> pin.Inertia:
    """One physically valid random variant of a link inertia (frame: the link's joint frame).

    The inertia about the COM is written I = R diag(s2+s3, s1+s3, s1+s2) Rᵀ with s_i >= 0 the
    principal second moments of the mass distribution; scaling the s_i by positive factors and
    rotating R keeps I positive (semi)definite and its principal moments a triangle."""
    mass = link.mass * float(np.exp(rng.normal(0.0, params.mass_std)))
    com = np.asarray(link.lever, dtype=float) + rng.normal(0.0, params.com_std_m, 3)
    moments, axes = np.linalg.eigh(np.asarray(link.inertia, dtype=float))
    second = np.maximum(0.5 * moments.sum() - moments, 0.0)  # s_i = tr/2 - lambda_i
    second *= np.exp(rng.normal(0.0, params.inertia_std, 3)) * (mass / link.mass)
    new_moments = second.sum() - second  # lambda_i = s_j + s_k
    std_rad = np.radians(params.inertia_rotation_std_deg)  # rotation exp(w^), w ~ N(0, std² I)
    axes = (pin.exp3(rng.normal(0.0, std_rad, 3)) if std_rad > 0 else np.eye(3)) @ axes
    inertia = axes @ np.diag(new_moments) @ axes.T
    return pin.Inertia(mass, com, 0.5 * (inertia + inertia.T))


def payload_inertia(params: PerturbationParams) -> pin.Inertia:
    """The payload as a solid sphere, expressed in the last link's frame."""
    mass = params.payload_mass_kg
    moment = 0.4 * mass * params.payload_radius_m**2
    return pin.Inertia(mass, np.asarray(params.payload_position_m), moment * np.eye(3))


def perturb_robot(
    nominal: RobotModel, params: PerturbationParams, seed: int
) -> tuple[RobotModel, SimulatedTruth]:
    """The true robot: every link perturbed (same seed, same robot), the payload added to the
    last link, joint friction and rotor inertia set; limits are the nominal ones."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EED]))
    links = [
        perturb_link(nominal.pin_model.inertias[j], params, rng)
        for j in range(1, nominal.n_joints + 1)
    ]
    payload = None
    if params.payload_mass_kg > 0.0:
        links[-1] = links[-1] + payload_inertia(params)
        model = nominal.mujoco_model()
        payload = {
            "link": model.body(model.joint(nominal.joint_names[-1]).bodyid[0]).name,
            "mass_kg": float(params.payload_mass_kg),
            "position_m": list(params.payload_position_m),
            "inertia_kgm2": float(0.4 * params.payload_mass_kg * params.payload_radius_m**2),
        }
    inertial = np.concatenate([link.toDynamicParameters() for link in links])
    defaults, names = default_joint_dynamics(nominal), nominal.joint_names
    viscous, coulomb, armature = (
        defaults[key]
        if (value := getattr(params, key)) is None
        else per_joint_values(value, len(names), key, robot_name=nominal.name, joint_names=names)
        for key in ("viscous", "coulomb", "armature")
    )
    robot = nominal.with_dynamics(
        inertial=inertial,
        armature=armature,
        damping=viscous,
        frictionloss=coulomb,
        name=f"{nominal.name}_true_seed{seed}",
    )
    return robot, SimulatedTruth(
        joint_names=tuple(nominal.joint_names),
        inertial=robot.inertial_parameters(),
        viscous=viscous,
        coulomb=coulomb,
        armature=robot.armature(),
        payload=payload,
        origin=f"perturbed {nominal.name}, seed {seed}",
    )


def link_is_valid(parameters: np.ndarray, tolerance: float = 1e-12) -> bool:
    """Physical validity of one link's 10 parameters: positive mass, positive definite inertia
    about the COM whose principal moments satisfy the triangle inequality."""
    if parameters.shape != (N_INERTIAL,) or not parameters[0] > 0.0:
        return False
    inertia = pin.Inertia.FromDynamicParameters(np.asarray(parameters, dtype=float)).inertia
    moments = np.linalg.eigvalsh(inertia)
    if moments[0] <= 0.0:
        return False
    return bool(moments[2] <= moments[0] + moments[1] + tolerance * moments.sum())
