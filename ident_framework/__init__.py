"""ident_framework: identify the dynamic parameters of a serial robot arm from joint data and
keep a MuJoCo digital twin consistent with it; every stage is a plugin.

The public face (`_EXPORTS`: each name and the module that defines it): for plugin authors
`hookspecs`' extension points, protocols and `hookimpl`, and `UserError`; for users `Dataset`,
the CSV log reader and writer, `RobotModel` / `load_robot`, `RegressorBuilder`, `main` (the
command line), `check_command_line`, `run_pipeline` and `get_registry`. The names are imported
on first use, so `import ident_framework` loads none of Pinocchio, MuJoCo, SciPy or PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS = {
    "hookimpl": "ident_framework.hookspecs",
    "EXTENSION_POINTS": "ident_framework.hookspecs",
    "UserError": "ident_framework.errors",
    **dict.fromkeys(
        (
            "DataSource",
            "Estimator",
            "EstimatorDefaults",
            "FrictionModel",
            "FrictionModelDefaults",
            "LinearProblem",
            "NonlinearFrictionModel",
            "ResidualInputs",
            "ResidualLearner",
            "ResidualLearnerDefaults",
            "StandardModel",
            "Trajectory",
            "TrajectoryGenerator",
        ),
        "ident_framework.hookspecs",
    ),
    "Dataset": "ident_framework.data.dataset",
    "read_csv_log": "ident_framework.data.csv_log",
    "write_csv_log": "ident_framework.data.csv_log",
    "RobotModel": "ident_framework.model.robot",
    "load_robot": "ident_framework.model.robot",
    "RegressorBuilder": "ident_framework.model.regressor",
    "main": "ident_framework.__main__",
    "check_command_line": "ident_framework.config.preflight",
    "get_registry": "ident_framework.config.registry",
    "run_pipeline": "ident_framework.modes.pipeline",
    "IdentificationResult": "ident_framework.identify.result",
}

__all__ = [  # the names of _EXPORTS
    "DataSource",
    "Dataset",
    "EXTENSION_POINTS",
    "Estimator",
    "EstimatorDefaults",
    "FrictionModel",
    "FrictionModelDefaults",
    "IdentificationResult",
    "LinearProblem",
    "NonlinearFrictionModel",
    "RegressorBuilder",
    "ResidualInputs",
    "ResidualLearner",
    "ResidualLearnerDefaults",
    "RobotModel",
    "StandardModel",
    "Trajectory",
    "TrajectoryGenerator",
    "UserError",
    "check_command_line",
    "get_registry",
    "hookimpl",
    "load_robot",
    "main",
    "read_csv_log",
    "run_pipeline",
    "write_csv_log",
]

if TYPE_CHECKING:
    from ident_framework.__main__ import main
    from ident_framework.config.preflight import check_command_line
    from ident_framework.config.registry import get_registry
    from ident_framework.data.csv_log import read_csv_log, write_csv_log
    from ident_framework.data.dataset import Dataset
    from ident_framework.errors import UserError
    from ident_framework.hookspecs import (
        EXTENSION_POINTS,
        DataSource,
        Estimator,
        EstimatorDefaults,
        FrictionModel,
        FrictionModelDefaults,
        LinearProblem,
        NonlinearFrictionModel,
        ResidualInputs,
        ResidualLearner,
        ResidualLearnerDefaults,
        StandardModel,
        Trajectory,
        TrajectoryGenerator,
        hookimpl,
    )
    from ident_framework.identify.result import IdentificationResult
    from ident_framework.model.regressor import RegressorBuilder
    from ident_framework.model.robot import RobotModel, load_robot
    from ident_framework.modes.pipeline import run_pipeline


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ident_framework' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
