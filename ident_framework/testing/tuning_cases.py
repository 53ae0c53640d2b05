"""Inputs of the model-selection tests (`identify/tuning/`): a composed run config and a
recording whose Coulomb friction has a planted shape per joint."""

from __future__ import annotations

import numpy as np
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import RunConfig, validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.dataset import Dataset
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.testing.known_truth import sines


def tuning_config(
    *overrides: str, source: tuple[str, ...] = ("source=csv", "source.path=x.csv")
) -> RunConfig:
    """The validated config of a UR10e run from a (not read) CSV with `overrides`."""
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=["robot=ur10e", *source, "validation=split", *overrides])
    return validate_config(cfg, get_registry())


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
    from ident_framework.friction.coulomb_viscous import (
        CoulombViscousFriction,
        CoulombViscousParams,
    )
    from ident_framework.model.robot import load_robot

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
