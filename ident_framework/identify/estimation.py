"""Estimation step: the configured estimator on the linear problem, and the standard
parameters the engine predicts with."""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.hookspecs import Estimator, LinearProblem, conform
from ident_framework.model.base_parameters import BaseParameters


def require_samples(data: Dataset, n_parameters: int, role: str) -> None:
    """UserError when `data` has fewer samples than the model has parameters."""
    if data.n_samples < n_parameters:
        where = data.metadata.get("path", data.metadata.get("source", "the recording"))
        raise UserError(
            f"The {role} data ({where}) has {data.n_samples} samples after preprocessing, fewer "
            f"than the {n_parameters} parameters of the model: the identification would be "
            "underdetermined. Record a longer motion (tens of seconds) or use fewer regressor "
            "columns (friction=none, regressor.armature=false)."
        )


def estimate(
    selected: Any, problem: LinearProblem, base: BaseParameters
) -> tuple[Estimator, np.ndarray]:
    """(fitted estimator, standard parameters theta) of the selected estimator plugin
    (`config.run_config.SelectedPlugin`). Estimators of physical parameters give all of them
    (`standard_coef_`); the others give base parameters, mapped to the minimum-norm standard
    vector."""
    fitted = selected.create().fit(problem)
    info = selected.info
    estimator = conform(info.kind, fitted, info.name, info.distribution, fitted=True)
    standard = estimator.standard_coef_
    theta = (
        np.asarray(standard)
        if standard is not None
        else base.to_standard(np.asarray(estimator.coef_))
    )
    return estimator, theta
