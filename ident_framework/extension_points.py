"""The one declaration of the extension points: hook, config group(s), protocol, label and
built-in options of each. The plugin registry (`config/registry.py`), the config groups a run
resolves (`config/run_config.py`) and the list of built-in plugin modules derive from it; the
hooks themselves are the pluggy hook specifications in `hookspecs.py`.

`conform` is where a plugin object meets its protocol: the engine checks it there (once, when
a factory returns it) and gives it the defaults of the optional members it leaves out, so no
other engine code probes a plugin object for what it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ident_framework import interfaces
from ident_framework.errors import UserError

ENTRY_POINT_GROUP = "ident_framework"  # pluggy project name and entry-point group
DISTRIBUTION = "ident-framework"  # the distribution of the core and its built-in plugins


@dataclass(frozen=True)
class ExtensionPoint:
    """One extension point. `groups`: the config groups whose options it provides (the first
    is the run's own; `validation` and `validation.trajectory` reuse sources and trajectories);
    `builtins`: the modules of the package that register its built-in options, in
    registration order, one option each, named as its module (`estimator=rls` is
    `ident_framework.estimators.rls`): the registry knows the options without importing
    them; `defaults`: the class holding the protocol's optional members."""

    kind: str
    hook: str
    groups: tuple[str, ...]
    protocol: type
    label: str
    builtins: tuple[str, ...]
    defaults: type | None = None

    @property
    def group(self) -> str:
        return self.groups[0]

    def builtin_options(self) -> dict[str, str]:
        """Built-in option name -> the module that registers it, in registration order."""
        return {module.rpartition(".")[2]: module for module in self.builtins}

    def optional_members(self) -> dict[str, Any]:
        """Optional member name -> default (a plain function for a method)."""
        if self.defaults is None:
            return {}
        return {name: vars(self.defaults)[name] for name in _own_names(self.defaults)}

    def required_members(self) -> tuple[str, ...]:
        """Members every object must have; result attributes (trailing underscore) only once
        fitted, so they are checked on the object `fit` returns."""
        optional = self.optional_members()
        names = _own_names(*_protocol_classes(self.protocol))
        return tuple(sorted(name for name in names if name not in optional))


def _protocol_classes(protocol: type) -> list[type]:
    return [
        k for k in protocol.__mro__ if k.__module__ == interfaces.__name__ and k is not Protocol
    ]


def _own_names(*classes: type) -> set[str]:
    """Public attributes, annotated or defined, of `classes` (their own, not inherited)."""
    names: set[str] = set()
    for klass in classes:
        names |= {n for n in vars(klass).get("__annotations__", {}) if not n.startswith("_")}
        names |= {n for n in vars(klass) if not n.startswith("_")}
    return names


EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint(
        "data_source",
        "register_data_sources",
        ("source", "validation"),
        interfaces.DataSource,
        "data source",
        (
            "ident_framework.sources.mujoco",
            "ident_framework.sources.csv",
            "ident_framework.sources.rtde",
            "ident_framework.sources.rosbag",
        ),
    ),
    ExtensionPoint(
        "trajectory",
        "register_trajectory_generators",
        ("trajectory", "validation.trajectory"),
        interfaces.TrajectoryGenerator,
        "trajectory",
        ("ident_framework.trajectories.fourier", "ident_framework.trajectories.point_to_point"),
    ),
    ExtensionPoint(
        "friction",
        "register_friction_models",
        ("friction",),
        interfaces.FrictionModel,
        "friction",
        ("ident_framework.friction.none", "ident_framework.friction.coulomb_viscous"),
        interfaces.FrictionModelDefaults,
    ),
    ExtensionPoint(
        "estimator",
        "register_estimators",
        ("estimator",),
        interfaces.Estimator,
        "estimator",
        (
            "ident_framework.estimators.geometric",
            "ident_framework.estimators.ls",
            "ident_framework.estimators.wls",
            "ident_framework.estimators.consistent",
            "ident_framework.estimators.rls",
        ),
        interfaces.EstimatorDefaults,
    ),
    ExtensionPoint(
        "residual",
        "register_residual_learners",
        ("residual",),
        interfaces.ResidualLearner,
        "residual",
        ("ident_framework.residuals.none", "ident_framework.residuals.bpnn"),
        interfaces.ResidualLearnerDefaults,
    ),
)

POINTS: dict[str, ExtensionPoint] = {point.kind: point for point in EXTENSION_POINTS}
# the run's own config group of each extension point -> its kind
PLUGIN_GROUPS: dict[str, str] = {point.group: point.kind for point in EXTENSION_POINTS}
# every built-in plugin module, in registration order: the one place the core names them
BUILTIN_PLUGINS: tuple[str, ...] = tuple(m for point in EXTENSION_POINTS for m in point.builtins)

NONLINEAR_FRICTION_MEMBERS = (
    "nonlinear_bounds",
    "initial_nonlinear",
    "basis_along",
    "physical_parameters",
    "from_physical",
)


def _friction_requirements(model: Any) -> tuple[str, ...]:
    """Methods a friction model must have besides `basis`: those of NonlinearFrictionModel
    when it declares nonlinear parameters, and `stepper` when it is sequential too."""
    if not model.nonlinear_names:
        return ()
    return NONLINEAR_FRICTION_MEMBERS + (("stepper",) if model.sequential else ())


# extra requirements that depend on the object's own declarations
_CONDITIONAL: dict[str, Callable[[Any], tuple[str, ...]]] = {"friction": _friction_requirements}


def conform(kind: str, obj: Any, name: str, distribution: str, fitted: bool = False) -> Any:
    """`obj` (made by the `kind` plugin `name` of `distribution`) with the defaults of the
    optional members it lacks; UserError naming the plugin and its distribution when it lacks
    a required member. `fitted`: also check the result attributes (trailing underscore), for
    the object an estimator's `fit` returns. Returns `obj`."""
    point = POINTS[kind]
    for member, default in point.optional_members().items():
        if not hasattr(obj, member):
            value = default.__get__(obj) if callable(default) else default
            try:
                setattr(obj, member, value)
            except AttributeError:
                raise UserError(
                    f"The {point.label} plugin '{name}' from distribution '{distribution}' has "
                    f"no '{member}' and its objects take no new attributes: declare it (or "
                    f"inherit ident_framework.interfaces.{point.defaults.__name__}), or "
                    "uninstall that distribution."
                ) from None
    required = [m for m in point.required_members() if fitted or not m.endswith("_")]
    missing = [m for m in required if not hasattr(obj, m)]
    if not missing and kind in _CONDITIONAL:
        missing = [m for m in _CONDITIONAL[kind](obj) if not callable(getattr(obj, m, None))]
        if missing:
            raise UserError(
                f"The {point.label} plugin '{name}' from distribution '{distribution}' declares "
                f"nonlinear parameters {list(obj.nonlinear_names)} but does not implement "
                f"{missing} (see ident_framework.interfaces.NonlinearFrictionModel). Fix or "
                "uninstall that distribution."
            )
    if missing:
        raise UserError(
            f"The {point.label} plugin '{name}' from distribution '{distribution}' does not "
            f"implement {missing} (see ident_framework.interfaces.{point.protocol.__name__}). "
            "Fix or uninstall that distribution."
        )
    return obj
