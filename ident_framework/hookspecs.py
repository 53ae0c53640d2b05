"""The five extension points, as pluggy hook specifications.

Every hook is a collecting "register" hook: the plugin calls
`register(name, factory, schema)` once per option it provides, where `schema` is a dataclass
describing the option's parameters (the keys of its Hydra config besides `plugin`) and
`factory(params)` builds the working object from a validated instance of that dataclass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("ident_framework")
hookimpl = pluggy.HookimplMarker("ident_framework")

Register = Callable[[str, Callable[[Any], Any], type], None]


@hookspec
def register_data_sources(register: Register) -> None:
    """Register data sources (`interfaces.DataSource`): options of `source=` and `validation=`."""


@hookspec
def register_trajectory_generators(register: Register) -> None:
    """Register trajectory generators (`interfaces.TrajectoryGenerator`): `trajectory=`."""


@hookspec
def register_friction_models(register: Register) -> None:
    """Register joint friction models (`interfaces.FrictionModel`): `friction=`."""


@hookspec
def register_estimators(register: Register) -> None:
    """Register parameter estimators (`interfaces.Estimator`): `estimator=`."""


@hookspec
def register_residual_learners(register: Register) -> None:
    """Register residual learners (`interfaces.ResidualLearner`): `residual=`."""
