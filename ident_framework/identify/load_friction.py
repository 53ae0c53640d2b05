"""Whether the friction gets its load-dependent term, and its fit by iterating tau_load.

`friction.load_dependent` (`coulomb_viscous`): `off`, `on`, or `auto` (chosen by `tuning=cv`,
off without tuning). The column |tau_load| s(dq) is linear in fL once tau_load, the model's own
rigid-body + rotor torque, is fixed: fit 1 takes it from the nominal robot model, each next
fit from the previous fit's parameters, until fL (FL_TOLERANCE) and the identification RMSE
(RMSE_TOLERANCE, relative) settle, or MAX_FITS. The final model's tau_load comes from its own
parameters, as `mode=predict` rebuilds it (`RegressorBuilder.with_load`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import predict_torque
from ident_framework.identify.metrics import torque_metrics
from ident_framework.identify.truth import friction_values
from ident_framework.identify.tuning.selection import apply_chosen
from ident_framework.model.regressor import RegressorBuilder

MAX_FITS = 5  # fits in all: the nominal-load fit and at most 4 refits
FL_TOLERANCE = 1e-3  # Nm/Nm: fL settled when no joint's moves by more between two fits
RMSE_TOLERANCE = 1e-4  # relative change of the identification RMSE that counts as settled


def resolve_load(config: RunConfig, tuned: bool) -> RunConfig:
    """`config` with the load-dependent term decided: `auto` left to the tuning when `tuned`,
    else off."""
    if getattr(config.plugins["friction"].params, "load_dependent", None) != "auto" or tuned:
        return config
    return apply_chosen(config, {"friction.load_dependent": "off"})


@dataclass
class LoadFit:
    """How the load-dependent term was fitted: per fit, every joint's fL (Nm/Nm) and the
    identification RMSE (Nm); `converged`: fL and the RMSE settled within MAX_FITS fits."""

    fl: list[list[float]]
    rmse: list[float]
    converged: bool

    @property
    def fits(self) -> int:
        return len(self.rmse)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "max_fits": MAX_FITS,
            "converged": self.converged,
            "fL_per_fit": self.fl,
            "rmse_per_fit": self.rmse,
            "tau_load": "fit 1: the nominal robot model's rigid-body + rotor torque; fit k: "
            "fit k-1's; the final model: its own parameters' (no measured torque)",
        }


def identification_rmse(problem: Any, theta: np.ndarray) -> float:
    """RMSE (Nm) over all samples and joints of `theta` (standard parameters) on the problem's
    own rows, from its per-joint factors."""
    augmented = np.append(np.asarray(theta, dtype=float), -1.0)
    squares = sum(float(np.sum((r @ augmented) ** 2)) for r in problem.standard.r_factors)
    return float(np.sqrt(squares / (problem.n_samples * len(problem.standard.r_factors))))


def fl_values(builder: RegressorBuilder, theta: np.ndarray) -> np.ndarray:
    """(n,) every joint's fL (Nm/Nm) in the standard parameters `theta`."""
    return friction_values(builder, np.asarray(theta))[:, builder.load_column].copy()


Fitted = tuple[Any, Any, float, Any, np.ndarray]  # (problem, base, cond, estimator, theta)


def fit_with_load(
    builder: RegressorBuilder, fit: Callable[[RegressorBuilder], Fitted]
) -> tuple[RegressorBuilder, Fitted, LoadFit]:
    """(builder with tau_load from the final parameters, the last fit, the record): `fit`
    identifies with the tau_load of the builder it is given; `builder` starts from the nominal
    model's."""
    fitted = fit(builder)
    fl, rmse = [fl_values(builder, fitted[-1])], [identification_rmse(fitted[0], fitted[-1])]
    converged = False
    while len(rmse) < MAX_FITS:
        fitted = fit(builder.with_load(fitted[-1]))
        fl.append(fl_values(builder, fitted[-1]))
        rmse.append(identification_rmse(fitted[0], fitted[-1]))
        settled_rmse = abs(rmse[-1] - rmse[-2]) <= RMSE_TOLERANCE * max(rmse[-2], 1e-12)
        if settled_rmse and np.max(np.abs(fl[-1] - fl[-2])) <= FL_TOLERANCE:
            converged = True
            break
    record = LoadFit([v.tolist() for v in fl], rmse, converged)
    return builder.with_load(fitted[-1]), fitted, record


def without_load_term(builder: RegressorBuilder, theta: np.ndarray) -> np.ndarray:
    """`theta` (standard parameters) with every joint's fL set to 0."""
    out = np.array(theta, dtype=float, copy=True)
    n, k = builder.robot.n_joints, len(builder.friction.parameter_names)
    out[builder.n_inertial + builder.load_column : builder.n_inertial + n * k : k] = 0.0
    return out


def load_friction_metrics(
    builder: RegressorBuilder,
    theta: np.ndarray,
    record: LoadFit,
    validation: Dataset,
    physical: np.ndarray,
    chunk_size: int,
) -> dict[str, Any]:
    """metrics.json `load_friction`: the iteration, the final fL per joint, and `twin`: what
    the twin's omission of the term costs on the validation data (RMSE with and without it;
    `physical` (N, n) Nm the model's prediction there)."""
    measured = validation.measured_torque
    without = predict_torque(builder, validation, without_load_term(builder, theta), chunk_size)
    rmse_with = float(torque_metrics(measured, physical)["rmse"])
    rmse_without = float(torque_metrics(measured, without)["rmse"])
    return {
        **record.to_dict(),
        "fL": fl_values(builder, theta).tolist(),
        "twin": {
            "omitted": True,
            "note": "MuJoCo has no load-dependent friction: twin.xml carries fv, fc and Ia "
            "only, not fL |tau_load| s(dq)",
            "validation_rmse_with_term": rmse_with,
            "validation_rmse_without_term": rmse_without,
            "cost_rmse": rmse_without - rmse_with,
        },
    }
