"""A friction plugin's torque as the true joint friction of a simulated robot.

Config `source.true_friction`: `plugin` (an installed friction plugin; null: the robot's own
MuJoCo damping and frictionloss), the plugin's own config keys, and `parameters`: true values
by the plugin's physical names, one per joint or one for all (fc and fv default to the source's
Coulomb and viscous levels). The robot's damping and frictionloss are then 0, and the plugin's
torque is applied each simulation step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.errors import UserError, closest, per_joint_values
from ident_framework.model import friction_terms


@dataclass(frozen=True)
class TrueFrictionSpec:
    """A validated `true_friction` config: the plugin's model and the physical values given."""

    plugin: str
    distribution: str
    version: str
    model: Any
    params: Any  # the plugin's validated schema instance
    given: dict[str, Any]  # physical name -> float or list of floats (one per joint)

    def resolve(self, viscous: np.ndarray, coulomb: np.ndarray) -> TrueFriction:
        """The complete true friction of n joints; fc, fv default to `coulomb`, `viscous`."""
        n = len(coulomb)
        for name, value in self.given.items():
            key = f"source.true_friction.parameters.{name}"
            per_joint_values(value, n, key, fix="give one value per joint, or one for all",
                             one_for_all=True)  # fmt: skip
        values = {"fc": coulomb, "fv": viscous, **self.given}
        linear, nonlinear = friction_terms.from_physical(self.model, values, n)
        physical = friction_terms.physical_parameters(self.model, linear, nonlinear)
        return TrueFriction(self, linear, nonlinear, physical)


@dataclass(frozen=True)
class TrueFriction:
    """The true joint friction of a simulated robot: linear (n, k) and nonlinear (n, m) values
    of the plugin's model, and the same as physical values (n,) by name."""

    spec: TrueFrictionSpec
    linear: np.ndarray
    nonlinear: np.ndarray | None
    physical: dict[str, np.ndarray]

    def stepper(self, dt: float) -> Callable[[np.ndarray], np.ndarray]:
        """dq (n,) rad/s -> friction torque (n,) Nm opposing the motion, once per step of dt s."""
        return friction_terms.torque_stepper(self.spec.model, self.linear, self.nonlinear, dt)

    def to_dict(self) -> dict[str, Any]:
        """Plain description for the simulated truth (metadata, run reports)."""
        return {
            "plugin": self.spec.plugin,
            "distribution": self.spec.distribution,
            "version": self.spec.version,
            "config": dataclasses.asdict(self.spec.params),
            "parameters": {
                name: [float(v) for v in value] for name, value in self.physical.items()
            },
        }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def parse_true_friction(values: dict[str, Any] | None, key: str) -> TrueFrictionSpec | None:
    """The validated spec of a `true_friction` config (None: plugin null, MuJoCo's own joint
    friction). Raises UserError naming `key` on a bad plugin, config value or parameter."""
    from ident_framework.config.plugin_config import validate_plugin_config
    from ident_framework.config.registry import get_registry

    if values is None:
        return None
    if not isinstance(values, dict):
        raise UserError(
            f"The config '{key}' must be a mapping with a 'plugin' key, got {values!r}."
        )
    values = dict(values)
    given = values.pop("parameters", None) or {}
    if values.get("plugin") is None:
        if given or len(values) > 1:
            raise UserError(
                f"The config '{key}' gives friction parameters but no plugin: set "
                f"{key}.plugin=<a friction plugin> (or remove the parameters to keep MuJoCo's "
                "damping and frictionloss)."
            )
        return None
    info, params = validate_plugin_config(values, "friction", key, get_registry())
    model = info.factory(params)
    friction_terms.check_friction_model(model, info.name, info.distribution)
    if not isinstance(given, dict):
        raise UserError(f"The config '{key}.parameters' must be a mapping name: value.")
    names = friction_terms.physical_names(model)
    unknown = sorted(set(given) - set(names))
    if unknown:
        match = closest(unknown[0], names)
        hint = f" Did you mean '{key}.parameters.{match}'?" if match else ""
        raise UserError(
            f"Unknown true friction parameter(s) {[f'{key}.parameters.{n}' for n in unknown]} "
            f"for the friction plugin '{info.name}'.{hint} Its parameters are {list(names)}."
        )
    for name, value in given.items():
        ok = _number(value) or (
            isinstance(value, list | tuple) and value and all(_number(v) for v in value)
        )
        if not ok:
            raise UserError(
                f"Bad value for '{key}.parameters.{name}': {value!r} is neither a number nor a "
                "list of numbers (one per joint)."
            )
    given = {n: float(v) if _number(v) else [float(x) for x in v] for n, v in given.items()}
    return TrueFrictionSpec(info.name, info.distribution, info.version, model, params, given)
