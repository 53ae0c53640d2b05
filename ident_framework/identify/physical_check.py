"""Physical check step: which physical conditions the identified standard parameters break."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.hookspecs import StandardModel
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.model.physical_consistency import check_parameters, violations
from ident_framework.model.robot import RobotModel


@dataclass
class PhysicalCheck:
    """violations: "<link or part>: <condition>" for each broken condition (empty: valid);
    mass_share (n,): how much of each link mass the data determine (None: all of it)."""

    violations: list[str]
    mass_share: np.ndarray | None

    @property
    def valid(self) -> bool:
        return not self.violations


def physical_check(
    theta: np.ndarray,
    standard: StandardModel,
    robot: RobotModel,
    base: BaseParameters,
    from_base_parameters: bool,
) -> PhysicalCheck:
    """Check `theta` (standard parameters). Parameters mapped from base parameters
    (`from_base_parameters`) leave what no torque depends on at zero: a link mass of that kind
    is reported as not identifiable, not as a negative mass."""
    share = base.identifiable_share() if from_base_parameters else None
    report = check_parameters(theta, standard, list(robot.joint_names), 1e-12, share)
    mass_share = None if share is None else share[: 10 * robot.n_joints : 10]
    return PhysicalCheck(violations(report), mass_share)
