"""What reaches the user as a message instead of a traceback: `UserError` (exit code 2),
`RehearsalFailed` (exit code 3), and the checks such messages share: the closest name to a
misspelt one (`did_you_mean`), one value or row per joint (`per_joint_values`), a data
source's motor constants (`motor_constants`)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

CUTOFF = 0.6  # difflib similarity below which a name is not offered as "did you mean"


class UserError(Exception):
    """A problem the user can fix (bad config value or data file, missing plugin): one paragraph
    saying what is wrong, where (file, column, row or config key) and what to do."""


class RehearsalFailed(Exception):
    """A rehearsal (`mode=rehearse`) ran to the end, but some planted change was not recovered
    within its tolerance (its outputs are kept)."""


def closest(name: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The candidate most similar to `name` (difflib ratio ≥ cutoff, case-insensitive), or
    None when none is close."""
    pool = {candidate.lower(): candidate for candidate in candidates}
    found = difflib.get_close_matches(name.lower(), list(pool), n=1, cutoff=cutoff)
    return pool[found[0]] if found else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """' Did you mean 'x'?' (with its leading space), or '' when nothing is close."""
    match = closest(name, candidates)
    return f" Did you mean '{match}'?" if match else ""


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
