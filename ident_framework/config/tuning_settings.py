"""Settings of the model-selection step (`tuning=cv` / `tuning=none`, conf/tuning/*.yaml).

Candidate grids (a list per option; the configured value is always tried too), the number of
folds and how many rows the cross-validation uses. What is chosen and how: see
`identify/tuning/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ident_framework.params import Params, param

METHODS = ("cv", "none")
VELOCITY_SOURCES = ("measured", "differentiated")
RULES = ("min", "one_se", "one_se_paired")  # identify/tuning/rules.py
PARTITIONS = ("time", "kind")  # identify/tuning/folds.py


def _increasing_speed_bands(settings: TuningSettings) -> None:
    bands = settings.speed_bands
    if not bands[0] < bands[1] < bands[2]:
        raise ValueError(f"speed_bands must be 3 increasing speeds > 0 rad/s, got {bands}")


@dataclass
class TuningSettings(Params):
    """method: cv (choose by time-blocked cross-validation) | none (use the config as given).
    sources: the data sources (source=...) whose identification data are tuned (recorded
    logs by default; add mujoco to tune a simulated robot's data too).
    folds: blocks of one recording
    (several recordings: one fold each). guard_s: s around block boundaries left out of every
    fold. max_samples: rows the cross-validation uses at most (every k-th row beyond).
    The candidates (plural names; the configured value is tried too): cutoffs_hz
    (preprocessing.lowpass_hz), velocity_sources (preprocessing.use_measured_velocity),
    armature_columns, offset_columns (regressor.*), dead_bands, tanh_widths, saturation_widths
    (rad/s, friction.* of coulomb_viscous; each joint's shape and width), acceleration_leads
    (s, friction.acceleration_lead, one for every joint: chosen after the preprocessing; [] or
    [0]: not tuned), stribeck_velocities (rad/s, friction.stribeck_velocity per joint, none
    a candidate too), ridges, truncations (estimator.* of ls),
    prior_weights (estimator.weight of geometric, chosen last, on the chosen columns).
    sweeps: passes over the joints when choosing each joint's friction shape.
    rule: how a stage picks among its candidates: min (lowest CV RMSE) | one_se (the simplest
    within one standard error of the lowest) | one_se_paired (within the SE of each
    candidate's per-fold difference to the lowest); `identify/tuning/rules.py`.
    partitions: the folds, time (blocks or recordings, `folds.plan_folds`) and/or kind (per
    joint, its rows at rest / creeping / slow / turning round held out in turn,
    `folds.motion_kinds`; both: the CV error averages the two partitions' mean squares);
    shape_partitions: the same for the stages of each joint's Coulomb shape and the lead.
    friction_models: friction plugins whose whole selection is compared on the same folds, the
    configured one kept unless another wins by more than one paired standard error
    (`identify/tuning/friction_variants.py`); empty: the configured model only.
    speed_bands: rad/s, the upper limits of rest, creep and slow. turn_s: s, the longest
    turn-round that is a reversal (a longer passage through low speed is a hold)."""

    method: str = param("cv", choices=METHODS)
    sources: list[str] = field(default_factory=lambda: ["csv", "rtde", "rosbag"])
    folds: int = param(5, ge=2, le=50)
    guard_s: float = param(0.1, ge=0, unit="s")
    max_samples: int = param(20000, ge=100)
    cutoffs_hz: list[float] = param(
        factory=lambda: [5.0, 10.0, 20.0, 40.0, 80.0], each=True, gt=0, unit="Hz"
    )
    velocity_sources: list[str] = param(
        factory=lambda: list(VELOCITY_SOURCES), each=True, choices=VELOCITY_SOURCES
    )
    armature_columns: list[bool] = field(default_factory=lambda: [True, False])
    offset_columns: list[bool] = field(default_factory=lambda: [False, True])
    dead_bands: list[float] = param(factory=lambda: [0.01, 0.0], each=True, ge=0, unit="rad/s")
    tanh_widths: list[float] = param(
        factory=lambda: [0.001, 0.003, 0.01, 0.03, 0.1], each=True, gt=0, unit="rad/s"
    )
    saturation_widths: list[float] = param(factory=list, each=True, gt=0, unit="rad/s")
    acceleration_leads: list[float] = param(factory=list, each=True, ge=0, unit="s")
    stribeck_velocities: list[float] = param(
        factory=lambda: [0.002, 0.005, 0.01, 0.03, 0.1], each=True, gt=0, unit="rad/s"
    )
    ridges: list[float] = param(factory=lambda: [1e-5, 1e-4, 1e-3, 1e-2], each=True, ge=0)
    truncations: list[float] = param(factory=lambda: [1e-4, 1e-3, 1e-2], each=True, ge=0, lt=1)
    prior_weights: list[float] = param(
        factory=lambda: [1.0, 10.0, 100.0, 1e3, 1e4, 1e5], each=True, gt=0
    )
    sweeps: int = param(2, ge=1)
    rule: str = param("min", choices=RULES)
    partitions: list[str] = param(
        factory=lambda: ["time"], each=True, nonempty=True, choices=PARTITIONS
    )
    shape_partitions: list[str] = param(
        factory=lambda: ["time"], each=True, nonempty=True, choices=PARTITIONS
    )
    friction_models: list[str] = field(default_factory=list)
    speed_bands: list[float] = param(
        factory=lambda: [0.01, 0.05, 0.2], each=True, length=3, gt=0, unit="rad/s"
    )
    turn_s: float = param(0.5, gt=0, unit="s")
    rules = (_increasing_speed_bands,)

    @property
    def active(self) -> bool:
        return self.method == "cv"
