"""Input features of the `bpnn` residual learner's per-joint networks, chosen by name
(`residual.features`, `FEATURES`) from `hookspecs.ResidualInputs`: the joint state (rad, rad/s,
rad/s²), sin q and cos q of a revolute joint, the physical model's torque and its parts (Nm).
With `inputs: joint` network j sees joint j's features only; with `inputs: full` every network
sees every joint's (joint 0's features, then joint 1's, ...). `features: auto`: see
`per_candidate`, `choose_features`.

Rationale: docs/design.md#residual-learner-bpnn
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import ResidualInputs
from ident_framework.residuals.bpnn.acceptance import Fold

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
        if (value := getattr(data, field)) is None:
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


def candidate_masks(learner: Any) -> np.ndarray:
    """(C, f) bool: which of `feature_names_` (in the network's input layout) each
    candidate set uses."""
    sets = learner.params.feature_candidates
    masks = np.array([[name in c for name in learner.feature_names_] for c in sets])
    return masks if learner.params.inputs == "joint" else np.tile(masks, (1, learner.n_joints_))


def per_candidate(
    learner: Any, features: np.ndarray, target: np.ndarray, folds: list[Fold]
) -> tuple[np.ndarray, np.ndarray, list[Fold]]:
    """Each joint's data once per candidate feature set (the others' features 0): n·C
    "joints", candidate c of joint j at j·C + c, with joint j's target and folds."""
    masks = candidate_masks(learner)  # (C, f)
    n, n_samples, f = features.shape
    c = len(masks)
    expanded = (features[:, None] * masks[None, :, None, :]).reshape(n * c, n_samples, f)
    folds = [
        Fold(np.repeat(fold.fit, c, axis=0), np.repeat(fold.held_out, c, axis=0), fold.kind)
        for fold in folds
    ]
    learner.n_joints_ = n * c
    return expanded, np.repeat(target, c, axis=0), folds


def choose_features(learner: Any, n_candidates: int) -> None:
    """Keep, per joint, the candidate set whose worst fold lowered the held-out RMSE most
    (ties: the earlier candidate); drop the other candidates' networks and figures."""
    c, report = n_candidates, learner.report_
    n = learner.n_joints_ // c
    worst = np.array(
        [-np.inf if w is None else w for w in report["worst_fold_reduction_percent"]]
    ).reshape(n, c)
    choice = np.argmax(worst, axis=1)
    rows = np.arange(n) * c + choice  # the kept "joints"
    for name in ("x_mean_", "x_std_", "y_mean_", "y_std_", "fold_min_", "fold_max_",
                 "x_min_", "x_max_", "support_"):  # fmt: skip
        setattr(learner, name, getattr(learner, name)[rows])
    per_network = learner.n_folds_ * learner.n_members_
    kept = (rows[:, None] * per_network + np.arange(per_network)).ravel()
    learner._state = {name: t[kept].contiguous() for name, t in learner._state.items()}
    learner.best_epoch_ = [learner.best_epoch_[k] for k in kept]
    for name in ("train_loss_per_joint", "val_loss_per_joint"):
        learner.history_[name] = [
            None if v is None else [v[r] for r in rows] for v in learner.history_[name]
        ]
    for name, value in report.items():
        if name == "held_out_reduction_percent_per_fold":
            continue
        if isinstance(value, list) and len(value) == n * c:
            report[name] = [value[r] for r in rows]
    report["held_out_reduction_percent_per_fold"] = [
        [fold[r] for r in rows] for fold in report["held_out_reduction_percent_per_fold"]
    ]
    sets = learner.params.feature_candidates
    report["feature_candidates"] = [list(s) for s in sets]
    report["candidate_worst_fold_reduction_percent"] = [
        [None if not np.isfinite(v) else float(v) for v in row] for row in worst
    ]
    report["features_per_joint"] = [list(sets[k]) for k in choice]
    learner.feature_mask_ = candidate_masks(learner)[choice]
    learner.n_joints_ = n
