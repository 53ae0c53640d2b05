"""The rehearsal robot: the robot model with known, planted parameter changes.

Each change (a payload on the last link, scaled links, viscous and Coulomb friction and rotor
inertia added per joint) is kept separately as the true parameters of the model with only that
change applied, so a check can ask how much of each the identification recovered. The changes
add up: the planted robot's standard parameters are the model's plus the sum of the changes.
Inertial parameters are Pinocchio's 10 per link about the joint frame (kg, kg·m, kg·m²).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from ident_framework.config.run_config import RehearsalSettings
from ident_framework.errors import UserError, per_joint_values
from ident_framework.model.robot import N_INERTIAL, RobotModel
from ident_framework.simulation.perturbed_robot import (
    PerturbationParams,
    SimulatedTruth,
    default_joint_dynamics,
    payload_inertia,
    truth_from_robot,
)

JOINT_CHANGES = (  # (name, settings key, truth field, unit)
    ("viscous", "viscous_added", "viscous", "Nm·s/rad"),
    ("coulomb", "coulomb_added", "coulomb", "Nm"),
    ("armature", "armature_added", "armature", "kg·m²"),
)


@dataclass(frozen=True)
class PlantedChange:
    """One planted change. Its size runs from `model_value` (the unplanted model) to
    `planted_value` in `unit`; `truth` holds the model's parameters with only this change."""

    name: str
    description: str
    unit: str
    model_value: float
    planted_value: float
    truth: SimulatedTruth


@dataclass(frozen=True)
class RehearsalRobot:
    """The unplanted model's and the planted robot's true parameters, the planted robot
    (MJCF written at full precision) and the changes that lead from one to the other."""

    model_truth: SimulatedTruth
    robot: RobotModel
    truth: SimulatedTruth
    changes: list[PlantedChange]


def scaled_link_numbers(settings: RehearsalSettings, n_links: int) -> list[int]:
    """1-based numbers of the links `link_scale` applies to (default: the middle link)."""
    links = settings.scaled_links if settings.scaled_links is not None else [(n_links + 1) // 2]
    bad = [k for k in links if not 1 <= k <= n_links]
    if bad:
        raise UserError(
            f"rehearsal.scaled_links names link(s) {bad}, but the robot has links 1..{n_links} "
            "(link k is moved by joint k). Give link numbers in that range."
        )
    return sorted(set(links))


def joint_additions(robot: RobotModel, settings: RehearsalSettings) -> dict[str, np.ndarray]:
    """Viscous (Nm·s/rad), Coulomb (Nm) and rotor inertia (kg·m²) added per joint."""
    defaults = default_joint_dynamics(robot)
    added = {}
    for name, key, _, _ in JOINT_CHANGES:
        given = getattr(settings, key)
        if given is None:
            added[name] = settings.joint_dynamics_added * np.asarray(defaults[name], dtype=float)
            continue
        added[name] = per_joint_values(
            given,
            robot.n_joints,
            f"rehearsal.{key}",
            robot_name=robot.name,
            joint_names=robot.joint_names,
            fix="give one value per joint, or null for rehearsal.joint_dynamics_added x the "
            "default",
        )
    return added


def plant_changes(robot: RobotModel, settings: RehearsalSettings) -> RehearsalRobot:
    """The robot model with the configured changes planted (limits unchanged)."""
    n = robot.n_joints
    model = truth_from_robot(robot, origin=f"robot model {robot.name}")
    inertial = np.array(model.inertial, dtype=float)
    changes: list[PlantedChange] = []

    if settings.link_scale != 1.0:
        links = scaled_link_numbers(settings, n)
        scaled = inertial.copy()
        for k in links:
            scaled[N_INERTIAL * (k - 1) : N_INERTIAL * k] *= settings.link_scale
        changes.append(
            PlantedChange(
                "link_scale",
                f"mass and inertia factor of link(s) {links}",
                "factor",
                1.0,
                float(settings.link_scale),
                replace(model, inertial=scaled),
            )
        )
    payload = None
    if settings.payload_mass_kg > 0.0:
        shape = PerturbationParams(
            payload_mass_kg=settings.payload_mass_kg,
            payload_position_m=list(settings.payload_position_m),
            payload_radius_m=settings.payload_radius_m,
        )
        last = pin.Inertia.FromDynamicParameters(inertial[-N_INERTIAL:])
        with_payload = inertial.copy()
        with_payload[-N_INERTIAL:] = (last + payload_inertia(shape)).toDynamicParameters()
        payload = {
            "link": n,
            "mass_kg": float(settings.payload_mass_kg),
            "position_m": [float(v) for v in settings.payload_position_m],
            "radius_m": float(settings.payload_radius_m),
        }
        changes.append(
            PlantedChange(
                "payload",
                f"payload mass on link {n} at {payload['position_m']} m",
                "kg",
                0.0,
                float(settings.payload_mass_kg),
                replace(model, inertial=with_payload, payload=payload),
            )
        )
    added = joint_additions(robot, settings)
    for name, _, field, unit in JOINT_CHANGES:
        values = added[name]
        if np.any(values > 0.0):
            changed = np.asarray(getattr(model, field), dtype=float) + values
            changes.append(
                PlantedChange(
                    name,
                    f"{name} added per joint {np.round(values, 6).tolist()} {unit}",
                    "x planted",
                    0.0,
                    1.0,
                    replace(model, **{field: changed}),
                )
            )

    planted = model_plus(model, changes)
    planted_robot = robot.with_dynamics(
        inertial=planted.inertial,
        armature=planted.armature,
        damping=planted.viscous,
        frictionloss=planted.coulomb,
        name=f"{robot.name}_rehearsal",
    )
    truth = replace(
        truth_from_robot(planted_robot),
        payload=payload,
        origin=f"rehearsal of {robot.name}: " + "; ".join(c.description for c in changes),
    )
    return RehearsalRobot(model, planted_robot, truth, changes)


def model_plus(model: SimulatedTruth, changes: list[PlantedChange]) -> SimulatedTruth:
    """The model's parameters with every change added."""
    fields = ("inertial", "viscous", "coulomb", "armature")
    total = {f: np.array(getattr(model, f), dtype=float) for f in fields}
    for change in changes:
        for f in fields:
            total[f] += np.asarray(getattr(change.truth, f)) - np.asarray(getattr(model, f))
    return replace(model, **total)
