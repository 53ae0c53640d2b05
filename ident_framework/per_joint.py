"""The check every per-joint list of a config or file needs: one value (or one row) per joint
of the robot, with one message saying which key, how many values, how many joints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ident_framework.errors import UserError


def per_joint_values(
    value: Any,
    n_joints: int,
    key: str,
    *,
    robot_name: str | None = None,
    joint_names: Sequence[str] | None = None,
    fix: str = "give one value per joint",
    row_shape: tuple[int, ...] = (),
    one_for_all: bool = False,
) -> np.ndarray:
    """`value` as a float array (n_joints, *row_shape) (a copy); a scalar is repeated for every
    joint when `one_for_all`. UserError otherwise: "<key> has k values, but the robot <name>
    has n joints [<names>]: <fix>." (`row_shape` non-empty: counted in rows)."""
    array = np.asarray(value, dtype=float)
    if one_for_all and array.ndim == 0:
        return np.full((n_joints, *row_shape), float(array))
    if array.shape != (n_joints, *row_shape):
        count = (array.size if not row_shape else len(array)) if array.ndim else 1
        noun = ("row" if row_shape else "value") + ("" if count == 1 else "s")
        robot = f"the robot {robot_name}" if robot_name else "the robot"
        names = f" {list(joint_names)}" if joint_names is not None else ""
        raise UserError(
            f"{key} has {count} {noun}, but {robot} has {n_joints} joints{names}: {fix}."
        )
    return np.array(array, dtype=float)


def motor_constants(value: Any) -> list[float]:
    """`current_to_torque` of a data source as floats (Nm/A); ValueError (turned into the
    config key's message by the plugin config) when it is not a list of finite positives."""
    try:
        gains = [float(k) for k in value]
    except (TypeError, ValueError):
        raise ValueError(
            f"current_to_torque must be a list of motor constants in Nm/A, got {value!r}"
        ) from None
    if not all(math.isfinite(k) and k > 0 for k in gains):
        raise ValueError(f"current_to_torque must hold finite positive values (Nm/A), got {gains}")
    return gains
