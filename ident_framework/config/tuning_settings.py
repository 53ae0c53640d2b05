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


@dataclass
class TuningSettings:
    """method: cv (choose by time-blocked cross-validation) | none (use the config as given).
    recorded_only: tune only data that need preprocessing (a recording: source=csv, rtde; a
    simulation with exact accelerations is used as given). folds: blocks of one recording
    (several recordings: one fold each). guard_s: s around block boundaries left out of every
    fold. max_samples: rows the cross-validation uses at most (every k-th row beyond).
    lowpass_hz, velocity, armature, torque_offset, dead_band (rad/s), tanh_width (rad/s, per
    joint), ridge, truncate (shares of the largest singular value; `ls` only): the candidates.
    sweeps: passes over the joints when choosing each joint's friction shape."""

    method: str = "cv"
    recorded_only: bool = True
    folds: int = 5
    guard_s: float = 0.1
    max_samples: int = 20000
    lowpass_hz: list[float] = field(default_factory=lambda: [5.0, 10.0, 20.0, 40.0, 80.0])
    velocity: list[str] = field(default_factory=lambda: list(VELOCITY_SOURCES))
    armature: list[bool] = field(default_factory=lambda: [True, False])
    torque_offset: list[bool] = field(default_factory=lambda: [False, True])
    dead_band: list[float] = field(default_factory=lambda: [0.01, 0.0])
    tanh_width: list[float] = field(default_factory=lambda: [0.001, 0.003, 0.01, 0.03, 0.1])
    ridge: list[float] = field(default_factory=lambda: [1e-5, 1e-4, 1e-3, 1e-2])
    truncate: list[float] = field(default_factory=lambda: [1e-4, 1e-3, 1e-2])
    sweeps: int = 2

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if not 2 <= self.folds <= 50:
            raise ValueError(f"folds must be an integer in 2..50, got {self.folds}")
        if not (math.isfinite(self.guard_s) and self.guard_s >= 0):
            raise ValueError(f"guard_s must be >= 0 s, got {self.guard_s}")
        if self.max_samples < 100:
            raise ValueError(f"max_samples must be >= 100, got {self.max_samples}")
        if self.sweeps < 1:
            raise ValueError(f"sweeps must be >= 1, got {self.sweeps}")
        bad = [v for v in self.velocity if v not in VELOCITY_SOURCES]
        if bad:
            raise ValueError(f"velocity entries must be in {list(VELOCITY_SOURCES)}, got {bad}")
        for key in ("lowpass_hz", "dead_band", "tanh_width", "ridge", "truncate"):
            values = getattr(self, key)
            if not all(math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"{key} candidates must be numbers >= 0, got {values}")
        if any(v <= 0 for v in self.lowpass_hz + self.tanh_width):
            raise ValueError("lowpass_hz and tanh_width candidates must be > 0")
        if any(v >= 1 for v in self.truncate):
            raise ValueError(f"truncate candidates must be below 1, got {self.truncate}")

    @property
    def active(self) -> bool:
        return self.method == "cv"
