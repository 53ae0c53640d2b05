"""Settings of the model-selection step (`tuning=cv` / `tuning=none`): candidate grids (the
configured value is always tried too), folds and rows used. Every key with its unit:
conf/tuning/cv.yaml; what is chosen and how: `identify/tuning/`.
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
    """method: cv (choose by cross-validation) | none (use the config as given); the plural
    names are candidate lists of the option they tune (conf/tuning/cv.yaml)."""

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
