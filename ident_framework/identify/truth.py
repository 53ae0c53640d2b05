"""Truth comparison: the true parameters of a simulated robot, arranged in a regressor's column
order, what they predict, and the identified friction beside the true one."""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import predict_torque
from ident_framework.identify.metrics import slow_motion_metrics, torque_metrics
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
    physical = true_friction_physical(truth)
    thermal = truth.get("temperature")
    if thermal and friction_terms.uses_temperature(builder.friction):
        physical = at_reference_temperature(physical, thermal, builder.friction)
    return friction_terms.from_physical(builder.friction, physical, builder.robot.n_joints)


def at_reference_temperature(
    physical: dict[str, Any], thermal: dict[str, Any], model: Any
) -> dict[str, Any]:
    """The true fv, fc at the model's T_ref of a simulated robot whose friction scales by
    (1 - k (T - T0)), and fv_T, fc_T = -k fv, -k fc (at T0) per kelvin."""
    k, t0 = float(thermal["coefficient_per_k"]), float(thermal["reference_c"])
    n = len(np.atleast_1d(physical.get("fc", physical.get("fv", [0.0]))))
    reference = np.broadcast_to(np.asarray(model.reference_temperature, dtype=float), (n,))
    out = dict(physical)
    for name in ("fv", "fc"):
        if name in physical:
            at_t0 = np.asarray(physical[name], dtype=float)
            out[name] = at_t0 * (1.0 - k * (reference - t0))
            out[f"{name}_T"] = -k * at_t0
    return out


def true_standard_parameters(
    builder: RegressorBuilder, truth: dict[str, Any] | None
) -> np.ndarray | None:
    """Standard parameter vector of the simulated robot for this regressor (None without a
    truth); friction parameters the simulator does not have are zero."""
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


def truth_metrics(
    builder: RegressorBuilder,
    truth: dict[str, Any] | None,
    validation: Dataset,
    identified_rmse: float,
    chunk_size: int,
    slow_per_joint: bool = False,
) -> tuple[np.ndarray | None, dict[str, Any] | None]:
    """(true standard parameters, metrics.json `truth`) of a simulated robot, (None, None)
    for a real one: the validation RMSE (Nm) and R² of the true parameters, the ratio of
    `identified_rmse` to it, and (`slow_per_joint`) their slow-motion RMSE per joint."""
    truth_theta = true_standard_parameters(builder, truth)
    if truth_theta is None:
        return None, None
    true_prediction = predict_torque(
        true_builder(builder, truth), validation, truth_theta, chunk_size
    )
    true_rmse = torque_metrics(validation.measured_torque, true_prediction)
    metrics: dict[str, Any] = {
        "validation_rmse_true_parameters": true_rmse["rmse"],
        "validation_r2_true_parameters": true_rmse["r2"],
        "validation_rmse_per_joint_true_parameters": true_rmse["rmse_per_joint"],
        "rmse_ratio_identified_to_true": identified_rmse / true_rmse["rmse"],
    }
    if slow_per_joint:
        metrics["validation_slow_rmse_per_joint_true_parameters"] = slow_motion_metrics(
            validation.measured_torque,
            true_prediction,
            validation.dq,
            builder.robot.limits.velocity,
        )["rmse_per_joint"]
    return truth_theta, metrics


def friction_values(builder: RegressorBuilder, theta: np.ndarray) -> np.ndarray:
    """(n, k) the friction model's linear parameters per joint in standard vector theta."""
    n, k = builder.robot.n_joints, len(builder.friction.parameter_names)
    return theta[builder.n_inertial : builder.n_inertial + n * k].reshape(n, k)


def friction_comparison(
    builder: RegressorBuilder, theta: np.ndarray, truth: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Identified friction per joint by physical name (fc Nm, v_s rad/s, ...) and, for a
    simulated robot, the true values and the relative error in % (null where the truth is 0)."""
    identified = friction_terms.physical_parameters(
        builder.friction, friction_values(builder, theta), builder.nonlinear
    )
    out: dict[str, Any] = {"identified": {k: v.tolist() for k, v in identified.items()}}
    if truth:
        physical = true_friction_physical(truth)
        true = {k: np.asarray(physical[k], dtype=float) for k in identified if k in physical}
        out["true"] = {k: v.tolist() for k, v in true.items()}
        out["error_percent"] = {
            k: [
                100.0 * (i - t) / t if t != 0 else None
                for i, t in zip(identified[k], np.broadcast_to(v, identified[k].shape), strict=True)
            ]
            for k, v in true.items()
        }
    return out
