"""Built-in friction model `coulomb_viscous`: tau_f = fv * dq + fc * s(dq) per joint.

s(dq) is the Coulomb "sign" of each joint, one of three shapes per joint:

- a sign with a dead band (the source study's choice): below `dead_band` rad/s the Coulomb
  column is zero, so samples near rest do not pull the Coulomb estimate either way;
- a smooth sign tanh(dq / w) of width `tanh_width` w (rad/s): friction that builds up over a
  small speed range, as a harmonic drive's;
- a saturated sign clip(dq / w, -1, 1) of width `saturation_width` w (rad/s): friction
  proportional to the speed below w and fc above, the shape of MuJoCo's soft friction loss
  (which holds a joint at rest by a small creep: the friction at rest follows that creep).

`tanh_width` and `saturation_width` take one value for every joint or a list of one per joint;
a joint with a saturation width > 0 uses the saturated sign, else one with a tanh width > 0 the
tanh, else the dead-band sign. `tuning=cv` chooses the dead band and each joint's shape and
width from the identification data.

Acceleration lead (`acceleration_lead` T, s, one or one per joint): the Coulomb shape is
evaluated at dq + T·ddq instead of dq, so the friction turns round before the velocity does
when the joint decelerates, and at rest follows the small accelerations that hold it. This is
MuJoCo's soft friction loss: its force is fc·sat((ddq + dq/T)·k) with T = dmax·timeconst/2
(0.0095 s at MuJoCo's default `solreffriction`, `solimpfriction`); a tanh of width w is the
smooth form of sat(·/w). T = 0 (the default): the shape of dq alone. `tuning=cv` chooses it per
joint with the shape (`tuning.acceleration_leads`).

Stribeck shape (`stribeck_velocity` v_s, rad/s, one or one per joint): a fourth Coulomb shape,
with two columns, fc·(1 − e)·t + fs·e·t, e = exp(-(dq / v_s)²), t = tanh(dq / w_s): the friction
is the static level fs (Nm) at rest and tends to the sliding level fc within a few v_s, the
Stribeck curve of `plugins/ident-stribeck` with v_s fixed instead of fitted, so it is linear in
fc and fs and `tuning=cv` chooses each joint's v_s from a grid (`tuning.stribeck_velocities`)
among the other shapes. Both levels are friction (kept >= 0 by the physically consistent
estimators): fs > fc is a drive's stiction, fs < fc a friction softer near rest than sliding
(MuJoCo's soft friction loss, proportional to the creep below its width). w_s
(`stribeck_sign_width`, rad/s) keeps the friction continuous at rest (presliding). A joint with
v_s = 0 uses its other shape (its fs column is zero and fs not identifiable); one with v_s > 0
uses this shape whatever its tanh or saturation width. The twin (MJCF) carries fc and fv only.

Temperature term (`temperature: on`; joint temperatures T in °C recorded beside the motion,
e.g. RTDE's `joint_temperatures`): two more columns per joint, linear in their parameters,
dq·(T − T_ref) and s(dq)·(T − T_ref), i.e. fv(T) = fv + fv_T·(T − T_ref) and fc(T) = fc +
fc_T·(T − T_ref) (harmonic-drive friction falls as the joint warms: fv_T, fc_T < 0).
T_ref (°C per joint, `reference_temperature`) is fixed when the model is identified (default:
the identification data's mean per joint) and saved with it, so fv and fc are the friction at
T_ref. `temperature: auto` lets the pipeline decide (`identify/temperature.py`): off without
recorded temperatures, else chosen by `tuning=cv` (on without tuning).

Load-dependent term (`load_dependent: on`): one more column per joint, |tau_load| s(dq), i.e.
tau_f = fv dq + fc s(dq) + fL |tau_load| s(dq): a harmonic drive's friction grows with the
torque it transmits. fL (Nm of friction per Nm of load, dimensionless, >= 0) uses the
joint's own Coulomb shape s (dead-band sign or tanh of its width): it is a Coulomb friction
whose level grows with the load, fc + fL |tau_load|, so the shape the tuning chooses serves
both and the term adds no width of its own. tau_load (Nm, per joint) is the model's own
rigid-body and rotor-inertia torque, never the measured one, so that the column exists on any
motion (validation, mode=predict): `basis` gives s(dq) in the fL column and the
regressor multiplies it by |Y_rb theta_rb + Ia ddq| from the rigid-body rows it computes
anyway (`model/regressor.py`, `RegressorBuilder.with_load`). The identification starts from
the nominal robot model's torque and refits with its own until fL and the fit settle
(`identify/load_friction.py`). `load_dependent: auto` is chosen by `tuning=cv` and off
without tuning; the default is off: with the geometric estimator `auto` moved the held-out RMSE
by -0.3 % (TX40) to +1.2 % (Panda) and nothing on the KUKA and simulated UR10e (chosen off
there), so leave-one-dataset-out keeps it off, and its columns cost ~0.2 s of the tuning at
10^5 samples. Off without tuning because the term is n more parameters whose column is only as
good as the model's own torque, and on data whose friction does not depend on the load (a
simulator's) it fits noise (measured: +0.1-0.2 % on a simulated UR10e), untuned least squares
gives large negative fL on weakly loaded joints (a real KUKA LWR4+: -0.7 to -1.3, one case 13 %
worse, experiments/README.md), and the twin (MuJoCo) cannot carry it. mode=online and
mode=factor refuse `on` (no whole identification to iterate tau_load over) and leave `auto` off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ident_framework.hookspecs import FrictionModelDefaults, hookimpl
from ident_framework.params import Params, param


def _per_joint(
    value: float | list[float] | None, key: str, unit: str = "rad/s"
) -> np.ndarray | None:
    """The model's array of a per-joint value (params may be changed after they were checked:
    the tuning tries candidates)."""
    if value is None:
        return None
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
    """dead_band: joint speed (rad/s) below which sign(dq) is taken as 0; tanh_width: width
    (rad/s) of a smooth sign tanh(dq / w) instead, one value or one per joint (0 or null: the
    dead-band sign); saturation_width: width (rad/s) of a saturated sign clip(dq / w, -1, 1)
    instead, one value or one per joint (0 or null: tanh or dead band). temperature: auto | on |
    off, the temperature term (module doc); reference_temperature: T_ref in °C, one value or one
    per joint (null: the identification data's mean); load_dependent: auto | on | off, the load-
    dependent term fL (module doc); acceleration_lead: T in s, the Coulomb shape taken at dq +
    T·ddq, one value or one per joint (0 or null: at dq; module doc); stribeck_velocity: v_s
    in rad/s of the Stribeck shape, one value or one per joint (0 or null: none), and
    stribeck_sign_width its sign's width w_s in rad/s (module doc)."""

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
        width = _per_joint(params.tanh_width, "tanh_width")
        self.tanh_width = np.zeros(1) if width is None else width
        width = _per_joint(params.saturation_width, "saturation_width")
        self.saturation_width = np.zeros(1) if width is None else width
        lead = _per_joint(params.acceleration_lead, "acceleration_lead", "s")
        self.acceleration_lead = np.zeros(1) if lead is None else lead
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
        velocity = _per_joint(params.stribeck_velocity, "stribeck_velocity")
        self.stribeck_velocity = np.zeros(1) if velocity is None else velocity
        self.stribeck_sign_width = float(params.stribeck_sign_width)
        if np.any(self.stribeck_velocity > 0):
            self.parameter_names = (*self.parameter_names, STRIBECK_NAME)

    def _broadcast(self, values: np.ndarray, n: int, key: str) -> np.ndarray:
        if values.size not in (1, n):
            raise ValueError(
                f"friction.{key} has {values.size} values for {n} joints: give one value or "
                f"one per joint"
            )
        return np.broadcast_to(values, (n,))

    def basis(self, dq: np.ndarray, ddq: np.ndarray | None = None) -> np.ndarray:
        """(N, n, k) columns dq, s(dq + T ddq) (and, with the temperature term, its two
        columns at T = T_ref, i.e. zero: `temperature_basis` fills them; with the load term,
        s per Nm of load: the regressor multiplies it by |tau_load|; with the Stribeck shape,
        fs's column e·t, where fc's is (1 − e)·t: module doc); dq rad/s, ddq rad/s² (needed
        with an acceleration lead T > 0)."""
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
        """`basis` (N, n, 4) from `basis` (possibly low-passed like the torque) with its
        temperature columns set: its dq and s(dq) columns times (T − T_ref), T (N, n) in °C.
        Temperature changes over minutes, so the product of the filtered columns with T is
        the filtered product."""
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
