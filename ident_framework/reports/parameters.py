"""parameters.yaml: base parameters (std, combinations), per-joint friction and rotor inertia,
per-link parameters when physically valid, robot and plugins; and per-joint parameter units."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ident_framework.hookspecs import FrictionModel
from ident_framework.identify.result import IdentificationResult
from ident_framework.model import friction_terms
from ident_framework.model.physical_consistency import com_inertia
from ident_framework.plain_data import to_plain

# Units of the per-joint parameters by their conventional names (a friction plugin may declare
# its own as `parameter_units`, a dict name -> unit); "" means dimensionless.
PARAMETER_UNITS = {
    "fv": "Nm·s/rad",
    "fc": "Nm",
    "fs": "Nm",
    "fc_pos": "Nm",
    "fc_neg": "Nm",
    "fs_pos": "Nm",
    "fs_neg": "Nm",
    "v_s": "rad/s",
    "sigma0": "Nm/rad",
    "sigma1": "Nm·s/rad",
    "z_ss": "rad",
    "fs_ratio": "",
    "delta": "",
    "Ia": "kg·m²",
    "offset": "Nm",
}


def parameter_unit(name: str, friction: FrictionModel | None = None) -> str | None:
    """The unit of a per-joint parameter (None: not known); `friction`'s own
    `parameter_units` first."""
    declared = (None if friction is None else friction.parameter_units) or {}
    return declared.get(name, PARAMETER_UNITS.get(name))


def parameter_std(estimator: Any, base: Any) -> np.ndarray | None:
    """(p,) std of each standard parameter identifiable on its own (NaN otherwise): from the
    estimator's `standard_cov_` when it has one, else from its base covariance `coef_cov_`
    (θ_i = B_i β: std² = B_i Cov(β) B_iᵀ); None when the estimator gives no covariance."""
    alone = base.identifiable_alone()
    standard_cov = getattr(estimator, "standard_cov_", None)
    if standard_cov is not None:
        std = np.sqrt(np.maximum(np.diag(np.asarray(standard_cov)), 0.0))
        return np.where(alone, std, np.nan)
    covariance = getattr(estimator, "coef_cov_", None)
    if covariance is None or getattr(estimator, "standard_coef_", None) is not None:
        return None
    basis = base.basis
    variance = np.einsum("ir,rs,is->i", basis, np.asarray(covariance), basis)
    std = np.sqrt(np.maximum(variance, 0.0))
    return np.where(alone, std, np.nan)


def standard_std_section(result: IdentificationResult) -> dict[str, Any]:
    """parameters.yaml `standard_parameter_std`: name -> std (null: identified only in
    combination), when the estimator gives a covariance."""
    std = parameter_std(result.model.estimator, result.model.base)
    if std is None:
        return {}
    names = result.model.builder.parameter_names
    return {
        "standard_parameter_std": {
            name: None if np.isnan(value) else float(value)
            for name, value in zip(names, std, strict=True)
        }
    }


def joint_parameters(result: IdentificationResult) -> list[dict[str, Any]]:
    """Friction, rotor inertia and offset per joint, identified (and true when simulated),
    with their std where the estimator gives it and the parameter is identifiable alone."""
    model, truth_theta = result.model, result.diagnostics.truth_theta
    names = model.builder.parameter_names
    index = {name: i for i, name in enumerate(names)}
    alone = model.base.identifiable_alone()
    std = parameter_std(model.estimator, model.base)
    rows = []
    for j, joint in enumerate(model.robot.joint_names):
        row: dict[str, Any] = {"joint": joint}
        keys = [*model.builder.friction.parameter_names]
        if model.builder.armature:
            keys.append("Ia")
        if model.builder.torque_offset:
            keys.append("offset")
        for key in keys:
            i = index[f"{key}_{j + 1}"]
            entry = {"value": float(model.theta[i]), "identifiable_alone": bool(alone[i])}
            if std is not None:
                entry["std"] = None if np.isnan(std[i]) else float(std[i])
            if truth_theta is not None:
                entry["true"] = float(truth_theta[i])
            row[key] = entry
        rows.append(row)
    return rows


def coupled_motor_parameters(result: IdentificationResult) -> list[dict[str, Any]]:
    """Per coupled motor (`robot.coupled_joints`, `model/coupling.py`): the joints it drives
    (names), its ratio and its identified friction and rotor inertia (as the joint rows)."""
    model, truth_theta = result.model, result.diagnostics.truth_theta
    index = {name: i for i, name in enumerate(model.builder.parameter_names)}
    alone = model.base.identifiable_alone()
    names = model.robot.joint_names
    motors = []
    for coupling in model.builder.couplings:
        motor: dict[str, Any] = {
            "joints": [names[coupling.other], names[coupling.driven]],
            "ratio": coupling.ratio,
        }
        for key in model.builder.motor_parameters:
            i = index[f"{key}_m{coupling.driven + 1}"]
            entry = {"value": float(model.theta[i]), "identifiable_alone": bool(alone[i])}
            if truth_theta is not None:
                entry["true"] = float(truth_theta[i])
            motor[key] = entry
        motors.append(motor)
    return motors


def link_parameters(result: IdentificationResult) -> list[dict[str, Any]] | None:
    """Full per-link parameters (mass kg, centre of mass m and inertia about it kg·m², in the
    link frame) when they are physically valid, else None."""
    if result.diagnostics.physical_violations:
        return None
    links = []
    for j, joint in enumerate(result.model.robot.joint_names):
        params = result.model.theta[10 * j : 10 * (j + 1)]
        mass = float(params[0])
        links.append(
            {
                "joint": joint,
                "mass": mass,
                "com": (params[1:4] / mass).tolist(),
                "inertia_about_com": com_inertia(params).tolist(),
                "dynamic_parameters": params.tolist(),
            }
        )
    return links


def plugins_used(result: IdentificationResult) -> dict[str, Any]:
    """Per config group: the plugin, its distribution and version, its parameters."""
    used = {}
    for group, selected in result.config.plugins.items():
        used[group] = {
            "plugin": selected.info.name,
            "distribution": selected.info.distribution,
            "version": selected.info.version,
            "params": dataclasses.asdict(selected.params),
        }
    validation = result.config.validation
    if validation.split is not None:
        used["validation"] = {"plugin": "split", **dataclasses.asdict(validation.split)}
    else:
        used["validation"] = {
            "plugin": validation.source.info.name,
            "distribution": validation.source.info.distribution,
            "version": validation.source.info.version,
        }
    return used


def parameters_document(result: IdentificationResult) -> dict[str, Any]:
    """The content of parameters.yaml."""
    model = result.model
    estimator = model.estimator
    std = estimator.coef_std_
    combos = model.base.combinations()
    base = []
    for i, name in enumerate(model.base.names):
        value = float(estimator.coef_[i])
        entry = {"name": name, "value": value, "combination": combos[i]}
        if std is not None:
            entry["std"] = float(std[i])
            entry["relative_std_percent"] = float(100 * std[i] / abs(value)) if value != 0 else None
        base.append(entry)
    return to_plain(
        {
            "robot": {
                "name": model.robot.name,
                "model": result.config.robot.model,
                "joint_names": list(model.robot.joint_names),
            },
            "plugins": plugins_used(result),
            "base_parameters": base,
            "joints": joint_parameters(result),
            **(
                {"coupled_motors": coupled_motor_parameters(result)}
                if model.builder.couplings
                else {}
            ),
            "links": link_parameters(result),
            "physical_violations": result.diagnostics.physical_violations,
            "standard_parameters": dict(
                zip(model.builder.parameter_names, model.theta.tolist(), strict=True)
            ),
            **standard_std_section(result),
            **({"friction": friction_document(result)} if model.friction_fit else {}),
            **(
                {"tuning": result.config.selection.to_dict()}
                if result.config.selection is not None
                else {}
            ),
            **temperature_document(result),
            **load_friction_document(result),
        }
    )


def load_friction_document(result: IdentificationResult) -> dict[str, Any]:
    """parameters.yaml `load_friction` when the friction's load-dependent term is on (else
    empty): `chosen` (for `mode=predict`), fL per joint, the iteration and the twin's note."""
    fit = result.metrics.get("load_friction")
    if fit is None:
        return {}
    joints = list(result.model.robot.joint_names)
    return {
        "load_friction": {
            "chosen": {"friction.load_dependent": "on"},
            "model": "tau_f = fv dq + fc s(dq) + fL |tau_load| s(dq), tau_load the model's own "
            "rigid-body + rotor torque (its standard parameters); fL in Nm/Nm",
            "fL": dict(zip(joints, fit["fL"], strict=True)),
            "fits": fit["fits"],
            "converged": fit["converged"],
            "twin": fit["twin"]["note"],
        }
    }


def temperature_document(result: IdentificationResult) -> dict[str, Any]:
    """parameters.yaml `temperature` when the friction's temperature term is on (else empty):
    `chosen` (for `mode=predict`: T_ref in °C per joint) and the twin's note."""
    friction = result.model.builder.friction
    if not friction_terms.uses_temperature(friction):
        return {}
    reference = [float(v) for v in np.broadcast_to(
        friction.reference_temperature, (result.model.robot.n_joints,)
    )]  # fmt: skip
    return {
        "temperature": {
            "chosen": {"friction.temperature": "on", "friction.reference_temperature": reference},
            "reference_c": reference,
            "twin": "MuJoCo's damping and frictionloss are constants: twin.xml carries fv and "
            "fc, the friction at the reference temperature T_ref (the identification data's "
            "mean unless friction.reference_temperature is set)",
        }
    }


def friction_document(result: IdentificationResult) -> dict[str, Any]:
    """A nonlinear friction model's fitted nonlinear values per joint (for `mode=predict`) and
    its physical parameters per joint (with the true value when simulated)."""
    fit = result.model.friction_fit
    comparison = result.metrics["friction"]
    joints = list(result.model.robot.joint_names)
    physical = {}
    for j, joint in enumerate(joints):
        row = {}
        for name, values in comparison["identified"].items():
            entry = {"value": values[j]}
            if name in comparison.get("true", {}):
                entry["true"] = comparison["true"][name][j]
            row[name] = entry
        physical[joint] = row
    return {
        "plugin": result.config.plugins["friction"].info.name,
        "nonlinear_names": list(fit.names),
        "nonlinear": {
            joint: dict(zip(fit.names, map(float, values), strict=True))
            for joint, values in zip(joints, result.model.builder.nonlinear, strict=True)
        },
        "physical": physical,
    }
