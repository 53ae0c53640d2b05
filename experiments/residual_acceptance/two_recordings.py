"""Identify on several recorded CSV logs (stacked: each preprocessed on its own, the residual
learner holds each out in turn) and validate on another, through the project's own steps —
until `source.path` takes a list (issue 13), the command line passes one file:

    python experiments/residual_acceptance/two_recordings.py IDENT1.csv IDENT2.csv -- \\
        robot=urdf robot.path=URDF validation=csv validation.path=VAL.csv residual=bpnn

Prints metrics.json's validation physical / fusion RMSE and the `residual` acceptance as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.dataset import concatenate
from ident_framework.data.preprocessing import preprocess
from ident_framework.identify.result import StepTimer
from ident_framework.modes.pipeline import identify, robot_and_regressor
from ident_framework.sources.csv import CsvSource


def main() -> None:
    split = sys.argv.index("--")
    paths, overrides = sys.argv[1:split], sys.argv[split + 1 :]
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=["source=csv", f"source.path={paths[0]}", *overrides])
        config = validate_config(cfg, get_registry())
    robot, builder = robot_and_regressor(config)
    params = config.plugins["source"].params
    recordings = [
        CsvSource(dataclasses.replace(params, path=path)).acquire(robot, None, "identification")
        for path in paths
    ]
    train = concatenate([preprocess(r, config.preprocessing) for r in recordings])
    validation_raw = config.validation.source.create().acquire(robot, None, "validation")
    validation = preprocess(validation_raw, config.preprocessing)
    result = identify(config, robot, builder, train, validation, None, None, StepTimer(), False)
    metrics = result.metrics
    out = {
        "identification": paths,
        "validation_physical_rmse": metrics["validation"]["physical"]["rmse"],
        "validation_fusion_rmse": metrics["validation"].get("fusion", {}).get("rmse"),
        "validation_physical_rmse_per_joint": metrics["validation"]["physical"]["rmse_per_joint"],
        "validation_fusion_rmse_per_joint": metrics["validation"]
        .get("fusion", {})
        .get("rmse_per_joint"),
        "residual": metrics.get("residual"),
        "validation_shares": {
            k: v for k, v in metrics["validation"].get("fusion", {}).items() if "fraction" in k
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
