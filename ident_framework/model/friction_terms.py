"""The engine's view of a friction plugin (`hookspecs.FrictionModel`): one interface for
models linear in their parameters, with nonlinear ones (`basis_along`, possibly `sequential`
with a state such as LuGre's bristles), using joint temperatures (`temperature_basis`),
accelerations, or a load-dependent column (multiplied by |tau_load| in `RegressorBuilder`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ident_framework.hookspecs import conform


def nonlinear_names(model: Any) -> tuple[str, ...]:
    """Per-joint names of the model's nonlinear parameters (empty: linear model)."""
    return tuple(model.nonlinear_names)


def is_nonlinear(model: Any) -> bool:
    return bool(model.nonlinear_names)


def is_sequential(model: Any) -> bool:
    """Whether the model's basis depends on the sample order (an internal state)."""
    return is_nonlinear(model) and bool(model.sequential)


def check_friction_model(model: Any, name: str, distribution: str) -> Any:
    """`model` given the defaults of the optional members of `hookspecs.FrictionModel`;
    UserError naming the plugin when it lacks a member the engine calls."""
    return conform("friction", model, name, distribution)


def uses_temperature(model: Any) -> bool:
    """Whether the model's columns depend on the joint temperatures (°C) too."""
    return bool(getattr(model, "uses_temperature", False))


def load_column(model: Any) -> int | None:
    """Index of the model's load-dependent column (its basis s(dq), times |tau_load| in the
    regressor), None without."""
    column = getattr(model, "load_column", None)
    return None if column is None else int(column)


def with_temperature(model: Any, columns: np.ndarray, temperature: np.ndarray) -> np.ndarray:
    """(N, n, k) `columns` (the basis at the reference temperature) with the share of the
    joint temperatures (N, n) °C."""
    return model.temperature_basis(columns, temperature)


def uses_acceleration(model: Any) -> bool:
    """Whether the model's basis takes the joint accelerations `ddq` too."""
    return bool(getattr(model, "uses_acceleration", False))


def basis(
    model: Any,
    t: np.ndarray | None,
    dq: np.ndarray,
    nonlinear: np.ndarray | None,
    ddq: np.ndarray | None = None,
) -> np.ndarray:
    """(N, c, k) friction basis (Nm per unit linear parameter) at velocities dq (N, c) rad/s;
    `nonlinear` (c, m) the nonlinear values; t (N,) s the sample times (None: no time
    series); ddq (N, c) rad/s² for a model that `uses_acceleration`."""
    if uses_acceleration(model):
        if ddq is None:
            raise ValueError("this friction model needs the joint accelerations (ddq)")
        return model.basis(dq, ddq)
    if not is_nonlinear(model):
        return model.basis(dq)
    return model.basis_along(t, dq, nonlinear)


def physical_parameters(
    model: Any, linear: np.ndarray, nonlinear: np.ndarray | None
) -> dict[str, np.ndarray]:
    """Per-joint values (n,) by physical name (fc Nm, fv Nm·s/rad, v_s rad/s, ...)."""
    if not is_nonlinear(model):
        return {name: linear[:, k] for k, name in enumerate(model.parameter_names)}
    return {
        key: np.asarray(value, dtype=float)
        for key, value in model.physical_parameters(linear, nonlinear).items()
    }


def from_physical(
    model: Any, physical: dict[str, Any], n: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """(linear (n, k), nonlinear (n, m) or None) from per-joint physical values (scalars
    broadcast); unknown names are ignored, missing ones filled by the model (linear: 0)."""
    values = {
        key: np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
        for key, value in physical.items()
        if value is not None
    }
    if not is_nonlinear(model):
        names = model.parameter_names
        linear = np.zeros((n, len(names)))
        for k, name in enumerate(names):
            if name in values:
                linear[:, k] = values[name]
        return linear, None
    linear, nonlinear = model.from_physical(values, n)
    return np.asarray(linear, dtype=float), np.asarray(nonlinear, dtype=float)


def physical_names(model: Any) -> tuple[str, ...]:
    """The physical parameter names of a model (what `physical_parameters` returns)."""
    if not is_nonlinear(model):
        return tuple(model.parameter_names)
    linear, nonlinear = from_physical(model, {}, 1)
    return tuple(physical_parameters(model, linear, nonlinear))


def torque_stepper(
    model: Any, linear: np.ndarray, nonlinear: np.ndarray | None, dt: float
) -> Callable[[np.ndarray], np.ndarray]:
    """A function dq (n,) rad/s -> friction torque (n,) Nm, for a simulator calling it once
    per step of dt s (a sequential model advances its state by dt after each call)."""
    linear = np.asarray(linear, dtype=float)
    accelerating = uses_acceleration(model)
    if is_sequential(model) and not accelerating:
        step = model.stepper(nonlinear, dt)
        return lambda dq: np.einsum("jk,jk->j", step(np.asarray(dq, dtype=float)), linear)
    previous: list[np.ndarray] = []

    def torque(dq: np.ndarray) -> np.ndarray:
        dq, ddq = np.asarray(dq, dtype=float), None
        if accelerating:  # ddq from the last step's velocity
            ddq = ((dq - previous[0]) / dt if previous else np.zeros_like(dq))[None]
            previous[:] = [dq]
        return np.einsum("jk,jk->j", basis(model, None, dq[None], nonlinear, ddq)[0], linear)

    return torque
