"""Recovery checks of a rehearsal: identified parameters against the planted truth.

Only identifiable quantities are compared: base parameters (beta = C theta of the run's base),
friction per joint where it is identifiable on its own, and the size of every planted change.
The size of a change is measured in torque: over the identification motion, the identified
model's torque change from the unplanted model, W (theta_id - theta_model), is fitted by
least squares as sum_k a_k W dtheta_k over the planted changes dtheta_k; a_k = 1 means change
k was recovered in full, a_k = 0 that it went unnoticed. So a rehearsal on unchanged
parameters cannot pass: the changes must be detected, not only the truth matched.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.config.run_config import RehearsalSettings
from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import chunk_slices, recording_friction
from ident_framework.identify.result import IdentificationResult
from ident_framework.identify.truth import FRICTION_TRUTH_KEYS, true_standard_parameters
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.modes.rehearsal.planting import RehearsalRobot

UNOBSERVABLE = 1e-6  # a change whose torque is below this share of the largest one is not seen


@dataclass(frozen=True)
class Check:
    """One recovery check. `error` is compared with `tolerance`: at most (limit "max") or at
    least (limit "min"); an error of None (nothing identified) fails."""

    name: str
    quantity: str
    unit: str
    model: float | None
    planted: float | None
    identified: float | None
    error: float | None
    error_unit: str
    tolerance: float
    limit: str = "max"
    note: str = ""

    @property
    def passed(self) -> bool:
        if self.error is None or not np.isfinite(self.error):
            return False
        return self.error <= self.tolerance if self.limit == "max" else self.error >= self.tolerance

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        note = fields.pop("note")
        return {**fields, "passed": self.passed, "note": note}


def relative_percent(identified: float, planted: float) -> float:
    return float(100.0 * abs(identified - planted) / abs(planted)) if planted != 0 else np.inf


def torque_gram(
    builder: RegressorBuilder, data: Dataset, columns: np.ndarray, chunk_size: int
) -> np.ndarray:
    """G = (W M)ᵀ (W M) for standard-parameter columns M (p, k), W the regressor of `data`
    stacked over samples and joints: G[a, b] is the inner product of the torques (Nm) of
    columns a and b over the whole recording."""
    gram = np.zeros((columns.shape[1], columns.shape[1]))
    friction = recording_friction(builder, data)  # a sequential friction model's whole basis
    for rows in chunk_slices(data.n_samples, chunk_size):
        part = None if friction is None else friction[rows]
        torques = builder.compute(data.q[rows], data.dq[rows], data.ddq[rows], part) @ columns
        flat = torques.reshape(-1, columns.shape[1])
        gram += flat.T @ flat
    return gram


def validation_check(result: IdentificationResult, settings: RehearsalSettings) -> Check:
    r2 = float(result.metrics["validation"]["physical"]["r2"])
    true_r2 = result.metrics.get("truth", {}).get("validation_r2_true_parameters")
    return Check(
        "validation_r2",
        "pooled R² of the identified model on the validation motion",
        "",
        None,
        true_r2,
        r2,
        r2,
        "R²",
        settings.min_validation_r2,
        "min",
        "planted: the R² the planted parameters reach",
    )


def base_parameter_checks(
    result: IdentificationResult, theta_model: np.ndarray, settings: RehearsalSettings
) -> tuple[list[Check], dict[str, Any]]:
    """The norm of the base-parameter error, and each base parameter the data determine well
    (relative std below the bound) against the planted model's; plus every base parameter's
    values for the report."""
    base, truth = result.model.base, result.diagnostics.truth_theta
    beta_true, beta_id, beta_model = (
        base.to_base(t) for t in (truth, result.model.theta, theta_model)
    )
    norm_error = 100.0 * np.linalg.norm(beta_id - beta_true) / np.linalg.norm(beta_true)
    checks = [
        Check(
            "base_parameters_norm",
            f"all {base.rank} base parameters: |beta_id - beta_planted| / |beta_planted|",
            "",
            float(np.linalg.norm(beta_model)),
            float(np.linalg.norm(beta_true)),
            float(np.linalg.norm(beta_id)),
            float(norm_error),
            "%",
            settings.base_norm_error_percent,
            note="model, planted, identified: norms",
        )
    ]
    std = result.model.estimator.coef_std_
    relative_std = (
        100.0 * np.asarray(std) / np.abs(beta_id) if std is not None else np.full(base.rank, np.nan)
    )
    combinations = base.combinations()
    details = []
    for i, name in enumerate(base.names):
        error = relative_percent(beta_id[i], beta_true[i])
        details.append(
            {
                "name": name,
                "combination": combinations[i],
                "model": float(beta_model[i]),
                "planted": float(beta_true[i]),
                "identified": float(beta_id[i]),
                "relative_std_percent": float(relative_std[i]),
                "relative_error_percent": float(error),
                "checked": bool(relative_std[i] < settings.base_max_relative_std_percent),
            }
        )
        if relative_std[i] < settings.base_max_relative_std_percent:
            checks.append(
                Check(
                    f"base_parameter_{name}",
                    f"base parameter {name} (relative std {relative_std[i]:.3g} %)",
                    "",
                    float(beta_model[i]),
                    float(beta_true[i]),
                    float(beta_id[i]),
                    float(error),
                    "%",
                    settings.base_relative_error_percent,
                )
            )
    summary = {
        "method": base.method,
        "n_base": base.rank,
        "n_checked": int(sum(d["checked"] for d in details)),
        "max_relative_std_percent": settings.base_max_relative_std_percent,
        "standard_deviations": std is not None,
        "parameters": details,
    }
    return checks, summary


def friction_checks(
    result: IdentificationResult, rehearsal: RehearsalRobot, settings: RehearsalSettings
) -> tuple[list[Check], list[str]]:
    """Viscous (fv) and Coulomb (fc) friction per joint, where planted non-zero and
    identifiable on its own; a planted friction the friction model cannot represent fails."""
    builder = result.model.builder
    index = {name: i for i, name in enumerate(builder.parameter_names)}
    alone = result.model.base.identifiable_alone()
    friction = result.config.plugins["friction"].info.name
    checks, notes = [], []
    units = {"viscous": "Nm·s/rad", "coulomb": "Nm"}
    for key, field in FRICTION_TRUTH_KEYS.items():
        planted = np.asarray(getattr(rehearsal.truth, field), dtype=float)
        model = np.asarray(getattr(rehearsal.model_truth, field), dtype=float)
        for j, joint in enumerate(result.model.robot.joint_names):
            name = f"{key}_{j + 1}"
            if planted[j] == 0.0:
                continue
            quantity = f"{field} friction of {joint}"
            if name not in index:
                checks.append(
                    Check(
                        name, quantity, units[field], float(model[j]), float(planted[j]),
                        None, None, "%", settings.friction_relative_error_percent,
                        note=f"the friction model '{friction}' has no parameter {key}",
                    )
                )  # fmt: skip
                continue
            if not alone[index[name]]:
                notes.append(f"{name} is not identifiable on its own: covered by the base check")
                continue
            identified = float(result.model.theta[index[name]])
            checks.append(
                Check(
                    name, quantity, units[field], float(model[j]), float(planted[j]), identified,
                    relative_percent(identified, planted[j]), "%",
                    settings.friction_relative_error_percent,
                )
            )  # fmt: skip
    return checks, notes


def change_checks(
    result: IdentificationResult,
    rehearsal: RehearsalRobot,
    theta_model: np.ndarray,
    settings: RehearsalSettings,
) -> tuple[list[Check], dict[str, Any]]:
    """Is each planted change detected, and by its planted size? (see the module docstring)"""
    builder = result.model.builder
    deltas = [
        true_standard_parameters(builder, change.truth.to_dict()) - theta_model
        for change in rehearsal.changes
    ]
    columns = np.column_stack(
        [result.model.theta - theta_model, result.diagnostics.truth_theta - theta_model, *deltas]
    )
    gram = torque_gram(builder, result.data.train, columns, result.config.chunk_size)
    planted_norm, samples = np.sqrt(gram[1, 1]), result.data.train.tau.size
    error_norm = np.sqrt(max(gram[0, 0] - 2.0 * gram[0, 1] + gram[1, 1], 0.0))
    checks = [
        Check(
            "planted_change_torque",
            "torque error of the identified change / the planted change (identification motion)",
            "Nm (RMS)",
            0.0,
            float(planted_norm / np.sqrt(samples)),
            float(np.sqrt(gram[0, 0] / samples)),
            float(100.0 * error_norm / planted_norm) if planted_norm > 0 else None,
            "%",
            settings.change_torque_error_percent,
            note="model, planted, identified: RMS torque change from the unplanted model",
        )
    ]
    sizes = np.sqrt(np.diag(gram)[2:])
    seen = sizes > UNOBSERVABLE * max(sizes.max(initial=0.0), 1e-300)
    amplitudes = np.full(len(deltas), np.nan)
    if np.any(seen):
        block = gram[2:, 2:][np.ix_(seen, seen)]
        amplitudes[seen] = np.linalg.lstsq(block, gram[2:, 0][seen], rcond=None)[0]
    for k, change in enumerate(rehearsal.changes):
        size = change.planted_value - change.model_value
        identified = change.model_value + amplitudes[k] * size
        tolerance = {
            "payload": settings.payload_relative_error_percent,
            "armature": settings.armature_relative_error_percent,
        }.get(change.name, settings.change_relative_error_percent)
        checks.append(
            Check(
                f"planted_{change.name}",
                f"size of the planted change: {change.description}",
                change.unit,
                change.model_value,
                change.planted_value,
                float(identified) if seen[k] else None,
                float(100.0 * abs(amplitudes[k] - 1.0)) if seen[k] else None,
                "% of the change",
                tolerance,
                note=""
                if seen[k]
                else "not representable by the regressor (friction=none? "
                "regressor.armature=false?): the identification cannot see this change",
            )
        )
    names = [change.name for change in rehearsal.changes]
    summary = {
        "amplitudes": dict(zip(names, amplitudes.tolist(), strict=True)),
        "torque_rms_nm": dict(zip(names, (sizes / np.sqrt(samples)).tolist(), strict=True)),
    }
    return checks, summary


def recovery_checks(
    result: IdentificationResult, rehearsal: RehearsalRobot, settings: RehearsalSettings
) -> tuple[list[Check], dict[str, Any]]:
    """Every check of a rehearsal run, and the details behind them for the report."""
    if result.diagnostics.truth_theta is None:
        raise ValueError("the rehearsal run carries no true parameters")
    theta_model = true_standard_parameters(result.model.builder, rehearsal.model_truth.to_dict())
    base_checks, base_summary = base_parameter_checks(result, theta_model, settings)
    friction, notes = friction_checks(result, rehearsal, settings)
    changes, change_summary = change_checks(result, rehearsal, theta_model, settings)
    if not base_summary["standard_deviations"]:
        notes.append(
            "the estimator gives no standard deviations: base parameters are checked by the norm"
        )
    checks = [validation_check(result, settings), *changes, *friction, *base_checks]
    return checks, {"base_parameters": base_summary, "changes": change_summary, "notes": notes}
