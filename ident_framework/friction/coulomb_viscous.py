"""Built-in friction model `coulomb_viscous`: tau_f = fv * dq + fc * s(dq) per joint (Nm;
dq in rad/s).

The Coulomb shape s(dq) per joint: a sign with a `dead_band` (rad/s); tanh(dq / `tanh_width`);
clip(dq / `saturation_width`, -1, 1); or the Stribeck shape fc·(1 − e)·t + fs·e·t,
e = exp(-(dq / `stribeck_velocity`)²), t = tanh(dq / `stribeck_sign_width`), with a static
level fs (Nm). A joint uses Stribeck if v_s > 0, else saturation, else tanh if their width
> 0, else the dead band. `acceleration_lead` T (s) evaluates the shape at dq + T·ddq.

Optional columns: `temperature` dq·(T − T_ref) and s(dq)·(T − T_ref) (T in °C); and
`load_dependent` fL·|tau_load|·s(dq), tau_load (Nm) the model's own rigid-body and rotor torque
(`identify/load_friction.py`). The twin (MJCF) carries fc and fv only.

Rationale: docs/design.md#coulomb-viscous-friction
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.hookspecs import FrictionModelDefaults, hookimpl
from ident_framework.params import Params, param


def _per_joint(value: float | list[float] | None, key: str, unit: str = "rad/s") -> np.ndarray:
    """The model's array of a per-joint value, [0] for None (checked again: the tuning changes
    params after they were checked)."""
    if value is None:
        return np.zeros(1)
    values = np.atleast_1d(np.asarray(value, dtype=float))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError(f"{key} must be >= 0 {unit}, one value or one per joint, got {value}")
    return values


def _joint_field(default: float | None = None, **check: object) -> Any:
    """A field of one value for every joint or one per joint (a one-item list: one value)."""
    return param(default, one_or_list=True, convert=_one_item_is_one, **check)


def _one_item_is_one(value: Any) -> Any:
    return value[0] if isinstance(value, list | tuple) and len(value) == 1 else value


def _on_off(value: Any) -> Any:
    """YAML reads a bare on / off as a boolean."""
    return ("on" if value else "off") if isinstance(value, bool) else value


TEMPERATURE_MODES = ("auto", "on", "off")
TEMPERATURE_NAMES = ("fv_T", "fc_T")  # Nm·s/rad/K, Nm/K: the friction's change per kelvin
LOAD_MODES = ("auto", "on", "off")
LOAD_NAME = "fL"  # Nm/Nm: Coulomb friction per Nm of the joint's rigid-body torque
STRIBECK_NAME = "fs"  # Nm: the static friction level of the Stribeck shape


@dataclass
class CoulombViscousParams(Params):
    """See the module doc. Per-joint fields take one value or one per joint (0 or null: off).
    dead_band (rad/s); tanh_width, saturation_width (rad/s); temperature, load_dependent:
    auto | on | off; reference_temperature: T_ref (°C; null: the data's mean);
    acceleration_lead: T (s); stribeck_velocity: v_s (rad/s); stribeck_sign_width (rad/s)."""

    dead_band: float = param(0.01, ge=0, unit="rad/s")
    tanh_width: float | list[float] | None = _joint_field(ge=0, unit="rad/s")
    saturation_width: float | list[float] | None = _joint_field(ge=0, unit="rad/s")
    temperature: str = param("auto", choices=TEMPERATURE_MODES, convert=_on_off)
    reference_temperature: float | list[float] | None = _joint_field(finite=True, unit="°C")
    load_dependent: str = param("off", choices=LOAD_MODES, convert=_on_off)
    acceleration_lead: float | list[float] | None = _joint_field(ge=0, unit="s")
    stribeck_velocity: float | list[float] | None = _joint_field(ge=0, unit="rad/s")
    stribeck_sign_width: float = param(0.005, gt=0, unit="rad/s")


class CoulombViscousFriction(FrictionModelDefaults):
    """Viscous (Nm·s/rad) and Coulomb (Nm) friction per joint, linear in its parameters."""

    parameter_names: tuple[str, ...] = ("fv", "fc")
    parameter_units = {
        "fv_T": "Nm·s/rad/K", "fc_T": "Nm/K", LOAD_NAME: "Nm/Nm", STRIBECK_NAME: "Nm"
    }  # fmt: skip
    load_column: int | None = None  # index of fL in parameter_names (None: no load term)

    def __init__(self, params: CoulombViscousParams):
        self.dead_band = float(params.dead_band)
        self.tanh_width = _per_joint(params.tanh_width, "tanh_width")
        self.saturation_width = _per_joint(params.saturation_width, "saturation_width")
        self.acceleration_lead = _per_joint(params.acceleration_lead, "acceleration_lead", "s")
        self.uses_acceleration = bool(np.any(self.acceleration_lead > 0))
        # the temperature term: on only once the pipeline said so (`auto` is decided there)
        self.uses_temperature = params.temperature == "on"
        reference = params.reference_temperature
        self.reference_temperature = (
            None if reference is None else np.atleast_1d(np.asarray(reference, dtype=float))
        )
        if self.uses_temperature:
            self.parameter_names = ("fv", "fc", *TEMPERATURE_NAMES)
        # the load-dependent term: on only once the pipeline said so (`auto`: decided there)
        if params.load_dependent == "on":
            self.load_column = len(self.parameter_names)
            self.parameter_names = (*self.parameter_names, LOAD_NAME)
        self.stribeck_velocity = _per_joint(params.stribeck_velocity, "stribeck_velocity")
        self.stribeck_sign_width = float(params.stribeck_sign_width)
        if np.any(self.stribeck_velocity > 0):
            self.parameter_names = (*self.parameter_names, STRIBECK_NAME)

    def _broadcast(self, values: np.ndarray, n: int, key: str) -> np.ndarray:
        """`values` (one, or one per joint) as (n,): kept per (key, n) while `values` is the
        same array (`basis` runs once per window and column in the tuning)."""
        kept = self.__dict__.setdefault("_broadcasts", {}).get((key, n))
        if kept is not None and kept[0] is values:
            return kept[1]
        if values.size not in (1, n):
            raise ValueError(
                f"friction.{key} has {values.size} values for {n} joints: give one value or "
                f"one per joint"
            )
        self._broadcasts[key, n] = (values, np.broadcast_to(values, (n,)))
        return self._broadcasts[key, n][1]

    def basis(self, dq: np.ndarray, ddq: np.ndarray | None = None) -> np.ndarray:
        """(N, n, k) columns dq, s(dq + T ddq), and: the temperature columns, zero here
        (`temperature_basis` fills them); the load column s (times |tau_load| in the
        regressor); fs's column e·t. dq rad/s, ddq rad/s² (needed with a lead T > 0)."""
        n = dq.shape[-1]
        width = self._broadcast(self.tanh_width, n, "tanh_width")
        saturation = self._broadcast(self.saturation_width, n, "saturation_width")
        stribeck = STRIBECK_NAME in self.parameter_names
        velocity = self._broadcast(self.stribeck_velocity, n, "stribeck_velocity")
        turning = dq
        if self.uses_acceleration:
            if ddq is None:
                raise ValueError("friction.acceleration_lead needs the joint accelerations")
            turning = dq + self._broadcast(self.acceleration_lead, n, "acceleration_lead") * ddq
        names = self.parameter_names
        out = np.zeros((*dq.shape, len(names)))  # temperature columns stay 0 (module doc)
        out[..., 0] = dq
        for j in range(n):  # each joint's own shape: only the functions it uses are evaluated
            t = turning[..., j]
            if stribeck and velocity[j] > 0:
                near_rest = np.exp(-((t / velocity[j]) ** 2))
                smooth = np.tanh(t / self.stribeck_sign_width)
                sign = (1.0 - near_rest) * smooth
                out[..., j, names.index(STRIBECK_NAME)] = near_rest * smooth
            elif saturation[j] > 0:
                sign = np.clip(t / saturation[j], -1.0, 1.0)
            elif width[j] > 0:
                sign = np.tanh(t / width[j])
            else:
                sign = np.where(np.abs(t) > self.dead_band, np.sign(t), 0.0)
            out[..., j, 1] = sign
            if self.load_column is not None:
                out[..., j, self.load_column] = sign
        return out

    def temperature_basis(self, basis: np.ndarray, temperature: np.ndarray) -> np.ndarray:
        """`basis` (N, n, 4) with its temperature columns set: its dq and s(dq) columns times
        (T − T_ref), T (N, n) in °C."""
        if self.reference_temperature is None:
            raise ValueError("the temperature term needs its reference temperature T_ref")
        n = basis.shape[1]
        reference = self._broadcast(self.reference_temperature, n, "reference_temperature")
        out = np.array(basis, dtype=float, copy=True)
        out[..., 2:4] = (
            basis[..., 0:2] * (np.asarray(temperature, dtype=float) - reference)[..., None]
        )
        return out


@hookimpl
def register_friction_models(register) -> None:
    register("coulomb_viscous", CoulombViscousFriction, CoulombViscousParams)
