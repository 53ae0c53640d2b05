"""The settings of the `fourier` trajectory generator (`conf/trajectory/fourier.yaml`), checked
when the config is composed; shared by the generator and its search."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ident_framework.model.workspace import WorkspaceParams


@dataclass
class FourierParams:
    """Parameters of the `fourier` trajectory generator.

    n_harmonics: harmonics L per joint (>= 2: three constraints need 2L > 3 coefficients).
    base_frequency_hz: f (Hz); one period lasts 1/f s.
    n_periods: whole periods in the trajectory (duration = n_periods / f s).
    n_candidates: Monte-Carlo candidates (random coefficients and q0, full amplitude).
    n_refine: objective evaluations of the CMA-ES refinement (0: none).
    refine_sigma: initial CMA-ES step, as a fraction of the joint limits.
    n_eval_samples: time samples per period at which the search evaluates the objective and
        the torques.
    n_limit_samples: time samples per period at which the search enforces the position,
        velocity and acceleration limits.
    check_rate_hz: sampling rate (Hz) of the final check of every limit.
    cond_rate_hz: sampling rate (Hz) of the dense condition number reported by `describe`.
    position_fraction: fraction of each joint's position range, about its centre, usable.
    velocity_fraction, acceleration_fraction, torque_fraction: fraction of the velocity
        (rad/s), acceleration (rad/s²) and effort (Nm) limits usable; torques are those of the
        robot model's nominal inverse dynamics (no friction).
    position_limits: optional per-joint [min, max] (rad) narrowing the robot's position limits.
    coverage_weight: weight w of the angle-coverage term of the search: it minimises
        log cond + w × (mean over joints of the share of the joint's circle, q mod 2π in 5°
        arcs, that the excitation does not visit; `search.circle_coverage`). 0: cond alone. For a
        residual learner on sin q / cos q (a position-dependent effect such as cogging), which
        cannot know the effect at angles no recording visited. A random motion (no objective,
        e.g. `validation=mujoco_fourier`) ignores it.
    workspace: where the arm may go (floor, base column, boxes, half-spaces with a clearance;
        `model/workspace.py`), kept in the search on the evaluation grid and enforced and checked on
        the final check grid; null: joint limits only.
    progress: show a progress bar (stderr) with the best condition number so far.
    """

    n_harmonics: int = 5
    base_frequency_hz: float = 0.05
    n_periods: int = 1
    n_candidates: int = 1000
    n_refine: int = 4500
    refine_sigma: float = 0.1
    n_eval_samples: int = 150
    n_limit_samples: int = 1000
    check_rate_hz: float = 1000.0
    cond_rate_hz: float = 100.0
    position_fraction: float = 0.9
    velocity_fraction: float = 0.9
    acceleration_fraction: float = 0.9
    torque_fraction: float = 0.8
    position_limits: list[list[float]] | None = None
    coverage_weight: float = 0.0
    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
    progress: bool = True

    def __post_init__(self) -> None:
        def check(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        def integer(value: Any, low: int) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= low

        check(
            integer(self.n_harmonics, 2),
            f"n_harmonics must be an integer >= 2, got {self.n_harmonics}",
        )
        for name in ("n_periods", "n_candidates", "n_limit_samples"):
            value = getattr(self, name)
            check(integer(value, 1), f"{name} must be an integer >= 1, got {value}")
        check(integer(self.n_refine, 0), f"n_refine must be an integer >= 0, got {self.n_refine}")
        check(
            integer(self.n_eval_samples, 2 * self.n_harmonics + 1),
            f"n_eval_samples must be an integer >= 2 n_harmonics + 1, got {self.n_eval_samples}",
        )
        for name in ("base_frequency_hz", "refine_sigma", "check_rate_hz", "cond_rate_hz"):
            value = getattr(self, name)
            check(math.isfinite(value) and value > 0.0, f"{name} must be > 0, got {value}")
        for name in (
            "position_fraction",
            "velocity_fraction",
            "acceleration_fraction",
            "torque_fraction",
        ):
            value = getattr(self, name)
            check(0.0 < value <= 1.0, f"{name} must be in (0, 1], got {value}")
        check(
            isinstance(self.coverage_weight, (int, float))
            and not isinstance(self.coverage_weight, bool)
            and math.isfinite(self.coverage_weight)
            and self.coverage_weight >= 0.0,
            f"coverage_weight must be a number >= 0 (0: cond alone), got {self.coverage_weight}",
        )
        if self.position_limits is not None:
            for row in self.position_limits:
                check(
                    len(row) == 2 and all(math.isfinite(v) for v in row) and row[0] < row[1],
                    f"position_limits must be [min, max] pairs (rad) with min < max, got {row}",
                )
