"""Settings of the model-selection step (`tuning=cv` / `tuning=none`, conf/tuning/*.yaml).

Candidate grids (a list per option; the configured value is always tried too), the number of
folds and how many rows the cross-validation uses. What is chosen and how: see
`identify/tuning/`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

METHODS = ("cv", "none")
VELOCITY_SOURCES = ("measured", "differentiated")
RULES = ("min", "one_se", "one_se_paired")  # identify/tuning/rules.py
PARTITIONS = ("time", "kind")  # identify/tuning/folds.py


@dataclass
class TuningSettings:
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
    (`identify/tuning/friction_models.py`); empty: the configured model only.
    speed_bands: rad/s, the upper limits of rest, creep and slow. turn_s: s, the longest
    turn-round that is a reversal (a longer passage through low speed is a hold)."""

    method: str = "cv"
    sources: list[str] = field(default_factory=lambda: ["csv", "rtde", "rosbag"])
    folds: int = 5
    guard_s: float = 0.1
    max_samples: int = 20000
    cutoffs_hz: list[float] = field(default_factory=lambda: [5.0, 10.0, 20.0, 40.0, 80.0])
    velocity_sources: list[str] = field(default_factory=lambda: list(VELOCITY_SOURCES))
    armature_columns: list[bool] = field(default_factory=lambda: [True, False])
    offset_columns: list[bool] = field(default_factory=lambda: [False, True])
    dead_bands: list[float] = field(default_factory=lambda: [0.01, 0.0])
    tanh_widths: list[float] = field(default_factory=lambda: [0.001, 0.003, 0.01, 0.03, 0.1])
    saturation_widths: list[float] = field(default_factory=list)
    acceleration_leads: list[float] = field(default_factory=list)
    stribeck_velocities: list[float] = field(
        default_factory=lambda: [0.002, 0.005, 0.01, 0.03, 0.1]
    )
    ridges: list[float] = field(default_factory=lambda: [1e-5, 1e-4, 1e-3, 1e-2])
    truncations: list[float] = field(default_factory=lambda: [1e-4, 1e-3, 1e-2])
    prior_weights: list[float] = field(default_factory=lambda: [1.0, 10.0, 100.0, 1e3, 1e4, 1e5])
    sweeps: int = 2
    rule: str = "min"
    partitions: list[str] = field(default_factory=lambda: ["time"])
    shape_partitions: list[str] = field(default_factory=lambda: ["time"])
    friction_models: list[str] = field(default_factory=list)
    speed_bands: list[float] = field(default_factory=lambda: [0.01, 0.05, 0.2])
    turn_s: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if not 2 <= self.folds <= 50:
            raise ValueError(f"folds must be an integer in 2..50, got {self.folds}")
        if not (math.isfinite(self.guard_s) and self.guard_s >= 0):
            raise ValueError(f"guard_s must be >= 0 s, got {self.guard_s}")
        if self.max_samples < 100:
            raise ValueError(f"max_samples must be >= 100, got {self.max_samples}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {list(RULES)}, got {self.rule!r}")
        for key in ("partitions", "shape_partitions"):
            values = getattr(self, key)
            if not values or any(p not in PARTITIONS for p in values):
                raise ValueError(
                    f"{key} must be a non-empty list of {list(PARTITIONS)}, got {values}"
                )
        bands = self.speed_bands
        if len(bands) != 3 or not (0 < bands[0] < bands[1] < bands[2] < math.inf):
            raise ValueError(f"speed_bands must be 3 increasing speeds > 0 rad/s, got {bands}")
        if not (math.isfinite(self.turn_s) and self.turn_s > 0):
            raise ValueError(f"turn_s must be > 0 s, got {self.turn_s}")
        if self.sweeps < 1:
            raise ValueError(f"sweeps must be >= 1, got {self.sweeps}")
        bad = [v for v in self.velocity_sources if v not in VELOCITY_SOURCES]
        if bad:
            raise ValueError(
                f"velocity_sources entries must be in {list(VELOCITY_SOURCES)}, got {bad}"
            )
        for key in (
            "cutoffs_hz", "dead_bands", "tanh_widths", "saturation_widths",
            "acceleration_leads", "stribeck_velocities", "ridges", "truncations",
        ):  # fmt: skip
            values = getattr(self, key)
            if not all(math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"{key} candidates must be numbers >= 0, got {values}")
        positive = (
            self.cutoffs_hz + self.tanh_widths + self.saturation_widths + self.stribeck_velocities
        )
        if any(v <= 0 for v in positive):
            raise ValueError(
                "cutoffs_hz, tanh_widths, saturation_widths and stribeck_velocities candidates "
                "must be > 0"
            )
        if not all(math.isfinite(v) and v > 0 for v in self.prior_weights):
            raise ValueError(
                f"prior_weights candidates must be numbers > 0, got {self.prior_weights}"
            )
        if any(v >= 1 for v in self.truncations):
            raise ValueError(f"truncations candidates must be below 1, got {self.truncations}")

    @property
    def active(self) -> bool:
        return self.method == "cv"
