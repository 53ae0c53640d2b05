"""Input features of the `bpnn` residual learner's per-joint networks, chosen by name
(`residual.features`), from `hookspecs.ResidualInputs`.

position (rad), velocity (rad/s), acceleration (rad/s²): the joint state; sin_position,
cos_position: sin q and cos q of a revolute joint (an encoding that is the same at q and
q + 2π, so a correction learnt at one turn of the joint applies at the next; meaningless for
a prismatic joint); load (Nm): the physical model's whole torque; gravity, inertial, friction
(Nm): its parts. With `inputs:
joint` network j sees joint j's features only (friction-like residuals are functions of a
joint's own motion and load); with `inputs: full` every network sees every joint's features
(feature-major per joint: joint 0's features, then joint 1's, ...).
"""

from __future__ import annotations

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import ResidualInputs

FEATURES = {  # name -> (ResidualInputs field, unit)
    "position": ("q", "rad"),
    "sin_position": ("q", "1"),
    "cos_position": ("q", "1"),
    "velocity": ("dq", "rad/s"),
    "acceleration": ("ddq", "rad/s^2"),
    "load": ("tau_physical", "Nm"),
    "gravity": ("tau_gravity", "Nm"),
    "inertial": ("tau_inertial", "Nm"),
    "friction": ("tau_friction", "Nm"),
}
TRANSFORMS = {"sin_position": np.sin, "cos_position": np.cos}  # of the field's values


def check_features(features: list[str]) -> list[str]:
    """The feature names as a list; ValueError for an unknown, repeated or empty list."""
    if isinstance(features, str) or not isinstance(features, list | tuple) or not features:
        raise ValueError(f"features must be a non-empty list of {list(FEATURES)}, got {features!r}")
    unknown = [name for name in features if name not in FEATURES]
    if unknown:
        raise ValueError(f"features {unknown} are unknown; choose from {list(FEATURES)}")
    if len(set(features)) != len(features):
        raise ValueError(f"features lists a name twice: {list(features)}")
    return [str(name) for name in features]


def describe_order(features: list[str], inputs: str) -> str:
    """The order of a network's inputs, in words (for bpnn_model.json)."""
    names = ", ".join(f"{name}_j ({FEATURES[name][1]})" for name in features)
    scope = "joint j's own" if inputs == "joint" else "every joint j = 0..n-1 in turn:"
    return f"{scope} {names}"


def raw_features(data: ResidualInputs, features: list[str], inputs: str) -> np.ndarray:
    """(n, N, f) raw input features of each joint's network, f = len(features) ("joint") or
    n·len(features) ("full")."""
    columns = []
    for name in features:
        field = FEATURES[name][0]
        value = getattr(data, field)
        if value is None:
            raise UserError(
                f"The bpnn residual learner's feature {name!r} (residual.features) needs the "
                f"physical model's {field}, which the engine did not provide; drop it from "
                "residual.features or run it through the identification pipeline."
            )
        value = np.asarray(value, dtype=np.float64)
        columns.append(TRANSFORMS[name](value) if name in TRANSFORMS else value)
    state = np.stack(columns, axis=-1)  # (N, n, k)
    if inputs == "joint":
        return np.ascontiguousarray(state.transpose(1, 0, 2))
    full = state.reshape(state.shape[0], -1)  # (N, n k): joint 0's features, joint 1's, ...
    return np.ascontiguousarray(np.broadcast_to(full, (state.shape[1], *full.shape)))
