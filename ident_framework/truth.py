"""True parameters of a simulated robot, arranged in a regressor's column order."""

from __future__ import annotations

from typing import Any

import numpy as np

from .regressor import RegressorBuilder

# friction parameter name of a friction model -> key of the simulated truth
FRICTION_TRUTH_KEYS = {"fv": "viscous", "fc": "coulomb"}


def true_standard_parameters(
    builder: RegressorBuilder, truth: dict[str, Any] | None
) -> np.ndarray | None:
    """Standard parameter vector of the simulated robot for this regressor, or None without a
    truth. Friction parameters the simulator does not have are zero (so the reference is the
    truth seen through the same friction model)."""
    if not truth:
        return None
    n = builder.robot.n_joints
    names = builder.friction.parameter_names
    friction = np.zeros((n, len(names)))
    for k, name in enumerate(names):
        key = FRICTION_TRUTH_KEYS.get(name)
        if key and key in truth:
            friction[:, k] = truth[key]
    return builder.standard_parameters(
        truth["inertial"], friction, armature=truth.get("armature"), offset=None
    )
