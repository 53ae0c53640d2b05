"""True parameters of a simulated robot, arranged in a regressor's column order."""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.model import friction_terms
from ident_framework.model.regressor import RegressorBuilder

# friction parameter name -> key of a simulated truth whose friction is the MJCF's own
FRICTION_TRUTH_KEYS = {"fv": "viscous", "fc": "coulomb"}


def true_friction_physical(truth: dict[str, Any]) -> dict[str, Any]:
    """The true joint friction by physical name: a friction plugin's parameters when the
    simulation applied one, else the MJCF's viscous (fv) and Coulomb (fc) friction."""
    friction = truth.get("friction")
    if friction:
        return dict(friction["parameters"])
    return {key: truth[source] for key, source in FRICTION_TRUTH_KEYS.items() if source in truth}


def true_friction(
    builder: RegressorBuilder, truth: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray | None]:
    """(linear (n, k), nonlinear (n, m) or None) of the builder's friction model that stand for
    the true friction (names the truth lacks: the model's defaults, e.g. 0 for a linear one)."""
    return friction_terms.from_physical(
        builder.friction, true_friction_physical(truth), builder.robot.n_joints
    )


def true_standard_parameters(
    builder: RegressorBuilder, truth: dict[str, Any] | None
) -> np.ndarray | None:
    """Standard parameter vector of the simulated robot for this regressor, or None without a
    truth. Friction parameters the simulator does not have are zero (so the reference is the
    truth seen through the same friction model); see `true_builder` for nonlinear ones."""
    if not truth:
        return None
    linear, _ = true_friction(builder, truth)
    return builder.standard_parameters(
        truth["inertial"], linear, armature=truth.get("armature"), offset=None
    )


def true_builder(builder: RegressorBuilder, truth: dict[str, Any]) -> RegressorBuilder:
    """The regressor with the friction's nonlinear parameters at their true values (the builder
    itself for a linear friction model)."""
    _, nonlinear = true_friction(builder, truth)
    return builder if nonlinear is None else builder.with_nonlinear(nonlinear)
