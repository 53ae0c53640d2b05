"""`tuning.friction_models`: the friction model itself chosen by the cross-validation.

Each model listed (a friction plugin's name: `coulomb_viscous`, `stribeck`, `lugre`, ...; the
configured one with its configured settings, the others with their defaults) gets the whole
selection of `selection.select_options` on the same folds, a nonlinear model scored at its
shape fitted to the identification data (`friction_fit.shape_for_tuning`). The configured
model is kept unless another beats it by more than the standard error of their per-fold
difference (`rules.choose` with `one_se_paired`, the configured model the simplest): a model
must win fold by fold, not on the pooled figure alone. Without a list, only the configured
model is tuned (the default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import RunConfig, SelectedPlugin
from ident_framework.data.dataset import Dataset, recordings_of
from ident_framework.identify.tuning.rules import choose
from ident_framework.identify.tuning.selection import select_options
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel

Prepare = Callable[[RunConfig], tuple[RunConfig, RegressorBuilder]]


def with_friction_model(config: RunConfig, name: str) -> RunConfig:
    """`config` with the friction plugin `name` at its defaults (the configured one as is)."""
    if config.plugins["friction"].info.name == name:
        return config
    info = get_registry().get("friction", name)
    plugins = {**config.plugins, "friction": SelectedPlugin(info, info.schema())}
    return replace(config, plugins=plugins)


def select_friction_model(
    config: RunConfig,
    robot: RobotModel,
    recorded: Dataset,
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None,
    prepare: Prepare,
) -> tuple[RunConfig, RegressorBuilder]:
    """(the tuned config, its regressor) of the friction model chosen among
    `tuning.friction_models` (module doc); `prepare(config)` gives a model's config and
    regressor ready for the selection (its friction terms resolved, its shape fitted)."""
    configured = config.plugins["friction"].info.name
    names = [configured, *(n for n in dict.fromkeys(config.tuning.friction_models))]
    names = list(dict.fromkeys(names))
    recordings = recordings_of(recorded)
    tuned = []
    for name in names:
        candidate, builder = prepare(with_friction_model(config, name))
        tuned.append(select_options(candidate, robot, builder, recordings, checked))
    if len(tuned) == 1:
        return tuned[0]
    selections = [c.selection for c, _ in tuned]
    rmse = np.array([s.cv_rmse for s in selections])
    se = np.array([s.cv_se for s in selections])
    folds = np.array([[np.nan if v is None else v for v in s.fold_rmse] for s in selections])
    picked, best = choose(rmse, se, [(i,) for i in range(len(names))], "one_se_paired", folds)
    difference = folds - folds[0]
    finite = np.all(np.isfinite(folds), axis=0)
    table = [
        {
            "friction": name,
            "cv_rmse": float(rmse[i]),
            "cv_se": float(se[i]),
            "difference_to_configured": float(np.mean(difference[i, finite])),
            "difference_se": float(
                np.std(difference[i, finite], ddof=1) / np.sqrt(max(int(finite.sum()), 1))
            )
            if finite.sum() > 1
            else 0.0,
            "chosen": i == picked,
        }
        for i, name in enumerate(names)
    ]
    chosen_config, chosen_builder = tuned[picked]
    chosen = chosen_config.selection.chosen
    if picked > 0:  # mode=predict rebuilds the chosen model from the saved config (first)
        friction = chosen_config.plugins["friction"]
        settings = {"plugin": names[picked], **asdict(friction.params)}
        chosen = {"friction": settings, **chosen}
    selection = replace(chosen_config.selection, friction_models=table, chosen=chosen)
    return replace(chosen_config, selection=selection), chosen_builder
