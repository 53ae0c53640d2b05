"""The `rehearsal:` config section: what `mode=rehearse` plants and the tolerances it must meet.

Kept apart from `modes/rehearsal/` so that `run_config.py` can validate it without importing the
pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ident_framework.errors import UserError
from ident_framework.params import Params, param

REHEARSAL_SOURCE = "mujoco"  # the data source a rehearsal simulates the planted robot with


def _plants_a_change(settings: RehearsalSettings) -> None:
    if not settings.plants_anything():
        raise ValueError(
            "the rehearsal plants no change (payload_mass_kg 0, link_scale 1, no joint "
            "dynamics added), and a rehearsal that recovers unchanged parameters proves "
            "nothing: plant at least one change"
        )


@dataclass
class RehearsalSettings(Params):
    """Planted changes (applied to the robot model to make the rehearsal's "real" robot):

    payload_mass_kg: payload added to the last link (0: none); payload_position_m: its centre
        of mass in the last link's frame, m (UR: the flange frame); payload_radius_m: it is a
        solid sphere of this radius, m.
    link_scale: factor on the mass, first and second moments of the links in `scaled_links`
        (centre of mass kept; 1: none); scaled_links: 1-based link numbers (link k is moved by
        joint k); None: the middle link, (n + 1) // 2.
    joint_dynamics_added: share of the default UR-like joint dynamics
        (`default_joint_dynamics` of simulation/perturbed_robot.py) added to every joint's
        viscous friction (Nm·s/rad), Coulomb friction (Nm) and rotor inertia (kg·m²);
        viscous_added, coulomb_added, armature_added: per joint, replace that default.

    Tolerances (percent unless said otherwise): min_validation_r2 (pooled R² on the validation
    motion); base parameters whose relative std is below base_max_relative_std_percent must be
    within base_relative_error_percent of the planted model's, and all of them together within
    base_norm_error_percent (norm); friction_relative_error_percent per joint (fv, fc);
    change_torque_error_percent: torque error of the identified change relative to the planted
    change; on the size of each planted change: payload_relative_error_percent (identified
    payload mass), armature_relative_error_percent (rotor inertia: with Coulomb friction,
    MuJoCo's soft friction loss near zero velocity acts partly like inertia and the identified
    rotor inertia comes out 5-25 % high) and change_relative_error_percent (the others).

    registry_dir: where passed rehearsals are recorded (None: ~/.ident_framework/rehearsals).
    """

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

    def plants_anything(self) -> bool:
        joint = [self.viscous_added, self.coulomb_added, self.armature_added]
        joint_added = any(any(v > 0 for v in values) for values in joint if values is not None)
        defaults_used = any(values is None for values in joint) and self.joint_dynamics_added > 0
        scaled = self.link_scale != 1.0 and self.scaled_links != []
        return self.payload_mass_kg > 0 or scaled or joint_added or defaults_used


def check_rehearsal_sources(source: Any, validation: Any) -> None:
    """mode=rehearse simulates the planted robot: the identification source must be the
    simulator, without a model file of its own, and so must a validation source."""
    selected = [("source", source)]
    if validation.source is not None:
        selected.append(("validation", validation.source))
    options = {
        "source": "source=mujoco",
        "validation": "validation=mujoco, mujoco_fourier or split",
    }
    for key, plugin in selected:
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
