"""The engine's view of a friction plugin: linear in its parameters, or with nonlinear ones.

A friction plugin always gives `parameter_names` (linear, per joint) and `basis(dq)`. One with
nonlinear parameters (`hookspecs.NonlinearFrictionModel`) also names them
(`nonlinear_names`) and evaluates its basis for given values of them (`basis_along`), possibly
along a recording in time order (`sequential`: a state such as LuGre's bristle deflection).
A model may also use the joint temperatures (`uses_temperature`, e.g. `coulomb_viscous` with
its temperature term): its `basis(dq)` is then the friction at its reference temperature and
`temperature_basis(basis, T)` adds the temperature's share (`with_temperature`). A model may
have a load-dependent column (`load_column`): its basis holds the column per Nm of the joint's
rigid-body torque, which the regressor multiplies by |tau_load| (`RegressorBuilder`). These helpers
give all kinds one interface; `check_friction_model` checks that a plugin
declaring nonlinear parameters implements what the engine calls (`hookspecs.conform`).
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
    UserError naming the plugin and its distribution when a model that declares nonlinear
    parameters lacks a member the engine calls, or is sequential without a stepper."""
    return conform("friction", model, name, distribution)


def uses_temperature(model: Any) -> bool:
    """Whether the model's columns depend on the joint temperatures (°C) too."""
    return bool(getattr(model, "uses_temperature", False))


def load_column(model: Any) -> int | None:
    """Index of the model's load-dependent column (`coulomb_viscous` with `load_dependent`:
    its basis gives s(dq) there, the regressor multiplies it by |tau_load|), None without."""
    column = getattr(model, "load_column", None)
    return None if column is None else int(column)


def with_temperature(model: Any, columns: np.ndarray, temperature: np.ndarray) -> np.ndarray:
    """(N, n, k) the model's columns `columns` (its basis at the reference temperature,
    possibly filtered) with the share of the joint temperatures (N, n) °C."""
    return model.temperature_basis(columns, temperature)


def uses_acceleration(model: Any) -> bool:
    """Whether the model's columns depend on the joint accelerations too (`coulomb_viscous`
    with an acceleration lead: its basis takes `ddq`)."""
    return bool(getattr(model, "uses_acceleration", False))


def basis(
    model: Any,
    t: np.ndarray | None,
    dq: np.ndarray,
    nonlinear: np.ndarray | None,
    ddq: np.ndarray | None = None,
) -> np.ndarray:
    """(N, c, k) friction basis (Nm per unit linear parameter) at velocities dq (N, c) rad/s;
    `nonlinear` (c, m) the nonlinear values per column (ignored by a linear model); t (N,) s
    the sample times in time order, or None when the rows are not a time series; ddq (N, c)
    rad/s², the accelerations, which a model that `uses_acceleration` needs."""
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
    """(linear (n, k), nonlinear (n, m) or None) from per-joint physical values (scalars are
    broadcast to every joint); names the model lacks are ignored, names missing are filled by
    the model (a linear model: 0)."""
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
    """A function dq (n,) rad/s -> friction torque (n,) Nm of this step (opposing the motion
    when the parameters are physical), for a simulator calling it once per step of dt s; a
    sequential model advances its state by dt with that velocity after each call."""
    linear = np.asarray(linear, dtype=float)
    if uses_acceleration(model):
        previous: list[np.ndarray] = []

        def accelerating(dq: np.ndarray) -> np.ndarray:  # ddq from the last step's velocity
            dq = np.asarray(dq, dtype=float)
            ddq = (dq - previous[0]) / dt if previous else np.zeros_like(dq)
            previous[:] = [dq]
            row = basis(model, None, dq[None], nonlinear, ddq[None])[0]
            return np.einsum("jk,jk->j", row, linear)

        return accelerating
    if is_sequential(model):
        step = model.stepper(nonlinear, dt)
        return lambda dq: np.einsum("jk,jk->j", step(np.asarray(dq, dtype=float)), linear)

    def memoryless(dq: np.ndarray) -> np.ndarray:
        row = basis(model, None, np.asarray(dq, dtype=float)[None], nonlinear)[0]
        return np.einsum("jk,jk->j", row, linear)

    return memoryless
