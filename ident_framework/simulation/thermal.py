"""A simulated robot whose joint friction depends on its joint temperatures.

The thermal model of `tracking.SimulationParams` (`temperature_c`,
`friction_temperature_coefficient`, `friction_reference_c`): every joint's temperature runs
linearly from T_start to T_end over the recording (°C, recorded as `Dataset.temperature`,
RTDE's `joint_temperatures`), and the MJCF's damping and frictionloss are scaled by
(1 - k (T - T0)) at every recorded sample, set in `model.dof_damping` / `dof_frictionloss`
between MuJoCo steps (a plugin's true friction is not scaled). The simulated truth then
carries `temperature` (k, T0, the profile).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.model.robot import RobotModel

if TYPE_CHECKING:
    from ident_framework.simulation.tracking import SimulationParams


def joint_temperatures(params: SimulationParams, t: np.ndarray, n: int) -> np.ndarray | None:
    """(len(t), n) °C of the thermal model at the recorded times t (s), or None without one:
    linear from T_start at the first to T_end at the last sample, the same on every joint."""
    if params.temperature_c is None:
        return None
    start, end = params.temperature_c
    share = (t - t[0]) / (t[-1] - t[0]) if len(t) > 1 else np.zeros(len(t))
    return np.repeat((start + (end - start) * share)[:, None], n, axis=1)


@dataclass(frozen=True)
class ThermalFriction:
    """The MJCF's damping (Nm·s/rad) and frictionloss (Nm) of each joint's dof at the
    reference temperature, the recorded temperatures (rows, n) °C and k (1/K)."""

    dofs: np.ndarray
    damping: np.ndarray
    frictionloss: np.ndarray
    temperature: np.ndarray
    coefficient: float
    reference_c: float

    @staticmethod
    def of(
        model: mujoco.MjModel, robot: RobotModel, params: SimulationParams, t: np.ndarray
    ) -> ThermalFriction | None:
        """The thermal friction of `params` at the recorded times t (s); None without a
        thermal model or with k = 0 (the friction stays as the MJCF gives it)."""
        temperature = joint_temperatures(params, t, robot.n_joints)
        if temperature is None or params.friction_temperature_coefficient == 0:
            return None
        dofs = np.array([model.jnt_dofadr[model.joint(name).id] for name in robot.joint_names])
        return ThermalFriction(
            dofs,
            model.dof_damping[dofs].copy(),
            model.dof_frictionloss[dofs].copy(),
            temperature,
            float(params.friction_temperature_coefficient),
            float(params.friction_reference_c),
        )

    def set_row(self, model: mujoco.MjModel, row: int) -> None:
        """The model's friction at the temperature of recorded row `row`."""
        scale = 1.0 - self.coefficient * (self.temperature[row] - self.reference_c)
        model.dof_damping[self.dofs] = self.damping * scale
        model.dof_frictionloss[self.dofs] = self.frictionloss * scale


def with_temperatures(dataset: Dataset, params: SimulationParams) -> Dataset:
    """The recording with its joint temperatures and the truth's thermal model (unchanged
    without one)."""
    temperature = joint_temperatures(params, dataset.timestamp, dataset.n_joints)
    if temperature is None:
        return dataset
    dataset.metadata["truth"]["temperature"] = {
        "coefficient_per_k": float(params.friction_temperature_coefficient),
        "reference_c": float(params.friction_reference_c),
        "temperature_c": list(params.temperature_c),
    }
    return replace(dataset, temperature=temperature)
