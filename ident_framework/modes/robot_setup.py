"""The robot model and regressor of a run (shared by the pipeline and the distributed modes)."""

from __future__ import annotations

from ident_framework.config.run_config import RunConfig
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import RobotModel, load_robot


def robot_and_regressor(config: RunConfig) -> tuple[RobotModel, RegressorBuilder]:
    """The robot model and its regressor (friction plugin, rotor inertia, offsets) of a run."""
    robot = load_robot(config.robot.model, config.robot.path, config.robot.acceleration_limits)
    return robot, regressor_builder(config, robot)
