"""Whether the friction gets its temperature term, and at which reference temperature.

`friction.temperature` (`coulomb_viscous`): `off`; `on` (the data must record joint
temperatures, °C); `auto`: off when a dataset records none, else chosen by `tuning=cv`, else
on. T_ref (`friction.reference_temperature`, °C per joint) is fixed here, before any fold or
estimate: the configured value, else the identification data's mean, rounded to 0.01 °C.
"""

from __future__ import annotations

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.identify.tuning.selection import apply_chosen


def with_temperature(config: RunConfig, mode: str, reference: list[float] | None) -> RunConfig:
    """`config` with friction.temperature = mode and friction.reference_temperature set."""
    return apply_chosen(
        config, {"friction.temperature": mode, "friction.reference_temperature": reference}
    )


def resolve_temperature(
    config: RunConfig,
    identification: Dataset,
    validation: Dataset | None,
    tuned: bool,
) -> RunConfig:
    """`config` with the temperature term decided (on / off, or auto left to the tuning when
    `tuned`) and T_ref fixed. UserError when it is on and a recording has no temperatures."""
    mode = getattr(config.plugins["friction"].params, "temperature", None)
    if mode is None or mode == "off":
        return config
    lacking = [
        (role, data)
        for role, data in (("identification", identification), ("validation", validation))
        if data is not None and data.temperature is None
    ]
    if lacking:
        if mode == "on":
            role, data = lacking[0]
            n = data.n_joints
            raise UserError(
                f"friction.temperature=on needs joint temperatures, but the {role} data "
                f"({', '.join(data.recording_paths)}) record none: add the columns "
                f"joint_temperatures_0..joint_temperatures_{n - 1} (°C, as RTDE's "
                "joint_temperatures) to the recording, or set friction.temperature=auto or off."
            )
        return with_temperature(config, "off", None)
    params = config.plugins["friction"].params
    reference = params.reference_temperature
    if reference is None:
        mean = np.mean(np.asarray(identification.temperature, dtype=float), axis=0)
        reference = [round(float(v), 2) for v in mean]
    elif np.ndim(reference) == 0:
        reference = [float(reference)] * identification.n_joints
    if len(reference) != identification.n_joints:
        raise UserError(
            f"friction.reference_temperature has {len(reference)} values for the "
            f"{identification.n_joints} joints: give one temperature in °C, or one per joint."
        )
    return with_temperature(config, "auto" if mode == "auto" and tuned else "on", list(reference))
