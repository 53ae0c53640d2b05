"""The `rehearsal:` config section: what `mode=rehearse` plants and the tolerances it must meet
(every key with its unit: conf/config.yaml). Apart from `modes/rehearsal/`: no pipeline import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ident_framework.errors import UserError
from ident_framework.params import Params, param

REHEARSAL_SOURCE = "mujoco"  # the data source a rehearsal simulates the planted robot with


def _plants_a_change(settings: RehearsalSettings) -> None:
    joint = [settings.viscous_added, settings.coulomb_added, settings.armature_added]
    joint_added = any(any(v > 0 for v in values) for values in joint if values is not None)
    defaults_used = any(values is None for values in joint) and settings.joint_dynamics_added > 0
    scaled = settings.link_scale != 1.0 and settings.scaled_links != []
    if not (settings.payload_mass_kg > 0 or scaled or joint_added or defaults_used):
        raise ValueError(
            "the rehearsal plants no change (payload_mass_kg 0, link_scale 1, no joint "
            "dynamics added), and a rehearsal that recovers unchanged parameters proves "
            "nothing: plant at least one change"
        )


@dataclass
class RehearsalSettings(Params):
    """Planted changes (applied to the robot model to make the rehearsal's "real" robot) and
    the tolerances of the recovery checks (percent unless said otherwise). The payload's
    centre of mass is in the last link's frame (UR: the flange frame); scaled_links are
    1-based (link k is moved by joint k); registry_dir: where passed rehearsals are recorded
    (None: ~/.ident_framework/rehearsals)."""

    payload_mass_kg: float = param(2.0, ge=0, unit="kg")
    payload_position_m: list[float] = param(
        factory=lambda: [0.0, 0.0, 0.05], each=True, length=3, finite=True, unit="m"
    )
    payload_radius_m: float = param(0.03, ge=0, unit="m")
    link_scale: float = param(1.1, gt=0)
    scaled_links: list[int] | None = param(None, each=True, ge=1, note="1-based link numbers")
    joint_dynamics_added: float = param(0.5, ge=0)
    viscous_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")
    coulomb_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")
    armature_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")

    min_validation_r2: float = param(0.99, le=1)
    base_max_relative_std_percent: float = param(0.25, gt=0, unit="%")
    base_relative_error_percent: float = param(5.0, gt=0, unit="%")
    base_norm_error_percent: float = param(5.0, gt=0, unit="%")
    friction_relative_error_percent: float = param(10.0, gt=0, unit="%")
    change_torque_error_percent: float = param(10.0, gt=0, unit="%")
    payload_relative_error_percent: float = param(5.0, gt=0, unit="%")
    change_relative_error_percent: float = param(20.0, gt=0, unit="%")
    armature_relative_error_percent: float = param(35.0, gt=0, unit="%")

    registry_dir: str | None = None
    rules = (_plants_a_change,)


def check_rehearsal_sources(source: Any, validation: Any) -> None:
    """mode=rehearse simulates the planted robot: the identification source must be the
    simulator, without a model file of its own, and so must a validation source."""
    options = {
        "source": "source=mujoco",
        "validation": "validation=mujoco, mujoco_fourier or split",
    }
    for key, plugin in {"source": source, "validation": validation.source}.items():
        if plugin is None:
            continue
        if plugin.info.name != REHEARSAL_SOURCE:
            raise UserError(
                f"mode=rehearse simulates the robot model with planted changes, but {key} is "
                f"'{plugin.info.name}'. Use {options[key]} for the rehearsal; the real robot's "
                "data are for the run after it."
            )
        if plugin.params.model_path is not None:  # the mujoco source's
            raise UserError(
                f"mode=rehearse builds the simulated robot from the robot model with planted "
                f"changes, so {key}.model_path is not used: remove it. To rehearse on a twin "
                "from an earlier run, give it as the robot: robot=mjcf robot.path=twin.xml."
            )
