"""The regressor a run's config asks for: friction plugin, rotor inertia, offsets, coupled
motors (`robot.coupled_joints`)."""

from __future__ import annotations

from typing import Any

from ident_framework.model import coupling, friction_terms
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel


def regressor_builder(config: Any, robot: RobotModel) -> RegressorBuilder:
    """The regressor of `robot` with the friction plugin and regressor columns of `config`
    (a `config.run_config.RunConfig`)."""
    model = config.plugins["friction"].create()
    return RegressorBuilder(
        robot,
        model,
        armature=config.regressor.armature,
        torque_offset=config.regressor.torque_offset,
        parallel_friction=config.preprocessing.parallel_friction(
            friction_terms.is_nonlinear(model)
        ),
        couplings=coupling.resolve(config.robot.coupled_joints, robot.n_joints),
    )
