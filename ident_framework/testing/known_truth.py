"""Known truth for tests of the identification: a UR12e regressor with made-up parameters
(inertial parameters within ±20 % of UR's) and data made with them at exact accelerations, so
the identification must return them; `multisine`: smooth joint motions with exact derivatives;
the model-selection tests' inputs (`tuning_config`, `planted_friction_recording`,
`exact_ur5e_recording`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import RobotModel, load_robot

if TYPE_CHECKING:
    from ident_framework.config.run_config import RunConfig

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


def multisine(
    t: np.ndarray,
    n_joints: int,
    seed: int,
    phase_seed: int | None = None,
    freq_hz: tuple[float, float] = (0.05, 0.4),
    amp_rad: tuple[float, float] = (0.2, 0.8),
    n_sines: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (rad), dq (rad/s), ddq (rad/s²), each (len(t), n_joints), at times t (s): per joint
    the sum of `n_sines` sines with frequencies and amplitudes drawn uniformly from `seed`
    (then the phases, unless `phase_seed` draws them separately: the same kind of motion
    over the same states, but a different path)."""
    rng = np.random.default_rng(seed)
    freq = rng.uniform(*freq_hz, (n_sines, n_joints))
    amp = rng.uniform(*amp_rad, (n_sines, n_joints))
    phase_rng = rng if phase_seed is None else np.random.default_rng(phase_seed)
    phase = phase_rng.uniform(0.0, 2.0 * np.pi, (n_sines, n_joints))
    w = 2.0 * np.pi * freq
    arg = w[None] * np.asarray(t, dtype=float)[:, None, None] + phase[None]
    q = np.sum(amp * np.sin(arg), axis=1)
    dq = np.sum(amp * w * np.cos(arg), axis=1)
    ddq = -np.sum(amp * w**2 * np.sin(arg), axis=1)
    return q, dq, ddq


def tuning_config(
    *overrides: str, source: tuple[str, ...] = ("source=csv", "source.path=x.csv")
) -> RunConfig:
    """The validated config of a UR10e run from a (not read) CSV with `overrides`."""
    from hydra import compose, initialize_config_module

    from ident_framework.config.registry import get_registry
    from ident_framework.config.run_config import validate_config
    from ident_framework.config.search_path import register_plugin_search_path

    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=["robot=ur10e", *source, "validation=split", *overrides])
    return validate_config(cfg, get_registry())


def planted_ur10e(
    config: RunConfig,
) -> tuple[RobotModel, RegressorBuilder, np.ndarray, np.ndarray]:
    """(the UR10e, `config`'s regressor for it, its nominal standard parameters, the Coulomb
    tanh widths (rad/s) to plant with `planted_friction_recording`: joints 2 and 5 smooth,
    the others sharp)."""
    robot = load_robot("ur10e")
    builder = regressor_builder(config, robot)
    theta = builder.standard_parameters(robot.inertial_parameters())
    return robot, builder, theta, np.array([0.0005, 0.03, 0.0005, 0.0005, 0.03, 0.0005])


def planted_friction_recording(
    builder: RegressorBuilder,
    theta: np.ndarray,
    widths: np.ndarray,
    seed: int,
    duration: float = 24.0,
) -> Dataset:
    """A 500 Hz recording of `duration` s (no accelerations: to be preprocessed) whose Coulomb
    friction is 4 Nm · tanh(dq / width) per joint (rad/s widths), viscous 1.5 Nm·s/rad, 0.05
    Nm torque noise; slow stretches where the shape matters. `theta`: its rigid-body
    parameters."""
    t, q, dq, ddq = sines(duration, 500.0, seed=seed)
    slow = 0.15 + 0.85 * np.abs(np.sin(2 * np.pi * t / 12.0))[:, None]  # creeping phases
    q, dq, ddq = q * slow, dq * slow, ddq * slow  # (the product rule is ignored: not needed)
    tau = builder.rigid_body(q, dq, ddq) @ theta[:60]
    tau += 1.5 * dq + 4.0 * np.tanh(dq / widths)
    rng = np.random.default_rng(seed)
    tau += 0.05 * rng.normal(size=tau.shape)
    return Dataset(t, q, dq, tau, builder.robot.joint_names)


def exact_ur5e_recording(
    seed_motion: int, seed_noise: int
) -> tuple[RegressorBuilder, Dataset, np.ndarray]:
    """(a UR5e regressor with dead-band-free Coulomb-viscous friction, a 12 s 100 Hz recording
    with exact accelerations whose torque carries 0.05 Nm noise, the same torque with 0.2 Nm
    noise (N, n) Nm, standing for "as recorded"): the folds' merges checked against refits."""
    robot = load_robot("ur5e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams(dead_band=0)))
    t, q, dq, ddq = sines(12.0, 100.0, seed=seed_motion)
    rng = np.random.default_rng(seed_noise)
    theta = builder.standard_parameters(
        robot.inertial_parameters(), rng.uniform(0.5, 2, (6, 2)), rng.uniform(0, 0.1, 6)
    )
    tau = builder.compute(q, dq, ddq) @ theta
    filtered = tau + 0.05 * rng.normal(size=tau.shape)
    recorded = tau + 0.2 * rng.normal(size=tau.shape)
    return builder, Dataset(t, q, dq, filtered, robot.joint_names, ddq=ddq), recorded
