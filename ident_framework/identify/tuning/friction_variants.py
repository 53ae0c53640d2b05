"""The friction model chosen by `tuning=cv`: first the configured model's own variants, then
the models of `tuning.friction_models`.

A friction plugin may offer variants of its settings (`FrictionModel.tuning_variants`, the
simplest first). Each gets the whole `selection.select_options` on the same folds at its own
fitted shape, its per-fold mean square times (N + p) / (N - p) (p fitted nonlinear parameters,
N torque rows). Then each model listed (the configured one as configured, the others at their
defaults) gets the same, a nonlinear one at its fitted shape (`friction_fit.shape_for_tuning`).
Each time the simplest (the configured) is kept unless another wins by more than the paired
standard error (`rules.choose`, `one_se_paired`).

Rationale: docs/design.md#tuning-by-cross-validation
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
    names = list(dict.fromkeys([configured, *config.tuning.friction_models]))
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


RULE = "one_se_paired"  # a variant must win fold by fold (the simplest first)


def with_settings(config: RunConfig, settings: dict[str, Any]) -> RunConfig:
    """`config` with the friction plugin's parameters `settings` (name -> value) set."""
    friction = config.plugins["friction"]
    params = replace(friction.params, **settings)
    return replace(
        config, plugins={**config.plugins, "friction": SelectedPlugin(friction.info, params)}
    )


def select_friction(
    config: RunConfig,
    robot: RobotModel,
    recorded: Dataset,
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None,
    prepare: Prepare,
) -> tuple[RunConfig, RegressorBuilder]:
    """(the tuned config, its regressor): the configured friction model's variant chosen by
    the cross-validation (module doc), then the friction model (`select_friction_model`)."""
    variants = config.plugins["friction"].create().tuning_variants()
    if not variants:
        return select_friction_model(config, robot, recorded, checked, prepare)
    prepared: dict[int, tuple[RunConfig, tuple[RunConfig, RegressorBuilder]]] = {}

    def once(candidate: RunConfig) -> tuple[RunConfig, RegressorBuilder]:
        """`prepare`, once per variant (its shape fit is the costly part)."""
        if id(candidate) not in prepared:
            prepared[id(candidate)] = (candidate, prepare(candidate))
        return prepared[id(candidate)][1]

    recordings = recordings_of(recorded)
    configs = [with_settings(config, settings) for settings in variants]
    selections, factors = [], []
    rows = recorded.n_samples * robot.n_joints  # the torque rows the shapes were fitted to
    for candidate in configs:
        ready, builder = once(candidate)
        selections.append(select_options(ready, robot, builder, recordings, checked)[0].selection)
        lower, upper = builder.friction.nonlinear_bounds()
        fitted = int(np.sum(np.asarray(lower) < np.asarray(upper))) * robot.n_joints
        factors.append((rows + fitted) / max(rows - fitted, 1))
    table = _table(selections, factors)
    picked = _pick(table)
    for i, row in enumerate(table):
        row["chosen"] = i == picked
    tuned, builder = select_friction_model(configs[picked], robot, recorded, checked, once)
    name = config.plugins["friction"].info.name
    table = [
        {"friction": f"{name}[{_shown(settings)}]", **row}
        for row, settings in zip(table, variants, strict=True)
    ]
    chosen = tuned.selection.chosen
    if tuned.plugins["friction"].info.name == name:  # (another model chosen: its settings)
        chosen = {**{f"friction.{k}": v for k, v in variants[picked].items()}, **chosen}
    selection = replace(
        tuned.selection,
        friction_models=[*table, *tuned.selection.friction_models],
        chosen=chosen,
    )
    return replace(tuned, selection=selection), builder


def _table(selections: list[Any], factors: list[float]) -> list[dict[str, Any]]:
    """Per variant its CV figures (Nm) and, with each variant's mean squares times its final
    prediction error factor, its per-fold RMSE and their difference to the first's (mean, SE)."""
    raw = np.array([[np.nan if v is None else v for v in s.fold_rmse] for s in selections])
    folds = raw * np.sqrt(np.asarray(factors))[:, None]
    return [
        {
            "cv_rmse": float(selection.cv_rmse),
            "cv_se": float(selection.cv_se),
            "fpe_factor": float(factors[i]),
            "fold_rmse_fpe": [float(v) if np.isfinite(v) else None for v in folds[i]],
            "difference_to_configured": mean,
            "difference_se": spread,
        }
        for i, (selection, (mean, spread)) in enumerate(
            zip(selections, difference_to_first(folds), strict=True)
        )
    ]


def _pick(table: list[dict[str, Any]]) -> int:
    """The variant chosen by `RULE` on the corrected figures, the first the simplest."""
    factors = np.sqrt([row["fpe_factor"] for row in table])
    rmse = np.array([row["cv_rmse"] for row in table]) * factors
    se = np.array([row["cv_se"] for row in table]) * factors
    folds = np.array([[np.nan if v is None else v for v in row["fold_rmse_fpe"]] for row in table])
    picked, _ = choose(rmse, se, [(i,) for i in range(len(table))], RULE, folds)
    return int(picked)


def _shown(settings: dict[str, Any]) -> str:
    return ",".join(f"{key}={value}" for key, value in settings.items())
