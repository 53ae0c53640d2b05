"""Known truth for tests of the identification: a UR12e regressor with made-up parameters
(inertial parameters within ±20 % of UR's, which need not be physical) and data made with
them at exact accelerations, so the identification must return them."""

from __future__ import annotations

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.testing.multisine import multisine

TRUE_VISCOUS = np.array([4.1, 3.7, 2.4, 1.1, 0.9, 0.8])  # Nm·s/rad
TRUE_COULOMB = np.array([7.0, 6.5, 4.2, 1.6, 1.4, 1.1])  # Nm
TRUE_ARMATURE = np.array([0.41, 0.39, 0.16, 0.045, 0.041, 0.038])  # kg·m²


def sines(duration: float, rate: float, seed: int, n: int = 6):
    """Smooth multi-sine joint motion with exact derivatives: (t, q, dq, ddq)."""
    t = np.arange(0.0, duration, 1.0 / rate)
    return (t, *multisine(t, n, seed))


def known_truth_setup() -> tuple[RegressorBuilder, np.ndarray]:
    """(Coulomb-viscous regressor with rotor inertia of the nominal UR12e, true standard
    parameters in its column order)."""
    nominal = load_robot("ur12e")
    rng = np.random.default_rng(3)
    inertial = nominal.inertial_parameters() * rng.uniform(0.8, 1.2, 60)  # need not be physical
    builder = RegressorBuilder(
        nominal, CoulombViscousFriction(CoulombViscousParams()), armature=True
    )
    theta = builder.standard_parameters(
        inertial, np.column_stack([TRUE_VISCOUS, TRUE_COULOMB]), TRUE_ARMATURE
    )
    return builder, theta


def exact_dataset(builder: RegressorBuilder, theta: np.ndarray, seed: int, duration=20.0):
    """200 Hz multi-sine motion with exact accelerations and torque = regressor @ theta."""
    t, q, dq, ddq = sines(duration, 200.0, seed)
    tau = builder.compute(q, dq, ddq) @ theta
    return Dataset(t, q, dq, tau, builder.robot.joint_names, ddq=ddq)


def with_noise(data: Dataset, std: float, seed: int) -> Dataset:
    """`data` with Gaussian torque noise of `std` Nm added (seeded)."""
    tau = data.tau + np.random.default_rng(seed).normal(0.0, std, data.tau.shape)
    return Dataset(data.timestamp, data.q, data.dq, tau, data.joint_names, ddq=data.ddq)


def perturbed_ur12e_truth(builder: RegressorBuilder) -> np.ndarray:
    """Standard parameters (`builder`'s order) of a perturbed UR12e with a payload (seed 1):
    physically valid, unlike the nominal model's in several identifiable directions."""
    from ident_framework.identify.truth import true_standard_parameters
    from ident_framework.simulation.perturbed_robot import PerturbationParams, perturb_robot

    _, truth = perturb_robot(builder.robot, PerturbationParams(), seed=1)
    return true_standard_parameters(builder, truth.to_dict())
