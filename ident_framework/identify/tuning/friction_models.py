"""`tuning.friction_models`: the friction model itself chosen by the cross-validation.

Each model listed (the configured one as configured, the others at their defaults) gets the
whole `selection.select_options` on the same folds, a nonlinear one at its fitted shape
(`friction_fit.shape_for_tuning`). The configured model is kept unless another wins by more
than the paired standard error (`rules.choose`, `one_se_paired`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import RunConfig, SelectedPlugin
from ident_framework.data.dataset import Dataset, recordings_of
from ident_framework.identify.tuning.rules import choose, difference_to_first
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
    table = [
        {
            "friction": name,
            "cv_rmse": float(rmse[i]),
            "cv_se": float(se[i]),
            "difference_to_configured": mean,
            "difference_se": spread,
            "chosen": i == picked,
        }
        for i, (name, (mean, spread)) in enumerate(
            zip(names, difference_to_first(folds), strict=True)
        )
    ]
    chosen_config, chosen_builder = tuned[picked]
    chosen = chosen_config.selection.chosen
    if picked > 0:  # mode=predict rebuilds the chosen model from the saved config (first)
        friction = chosen_config.plugins["friction"]
        settings = {"plugin": names[picked], **asdict(friction.params)}
        chosen = {"friction": settings, **chosen}
    selection = replace(chosen_config.selection, friction_models=table, chosen=chosen)
    return replace(chosen_config, selection=selection), chosen_builder
