"""The settings of the `fourier` trajectory generator (`conf/trajectory/fourier.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ident_framework.model.workspace import WorkspaceParams, position_limit_pairs
from ident_framework.params import Params, param


def _eval_samples_resolve_harmonics(params: FourierParams) -> None:
    if params.n_eval_samples < 2 * params.n_harmonics + 1:
        raise ValueError(
            f"n_eval_samples must be >= 2 n_harmonics + 1 = {2 * params.n_harmonics + 1}, got "
            f"{params.n_eval_samples}"
        )


@dataclass
class FourierParams(Params):
    """Parameters of the `fourier` trajectory generator.

    n_harmonics: harmonics L per joint (>= 2: three constraints need 2L > 3 coefficients).
    base_frequency_hz: f (Hz); n_periods: whole periods (duration n_periods / f s).
    n_candidates: Monte-Carlo candidates; n_refine: CMA-ES evaluations (0: none);
    refine_sigma: initial CMA-ES step, as a fraction of the joint limits.
    n_eval_samples, n_limit_samples: samples per period where the search evaluates the
        objective and torques, and enforces the position, velocity and acceleration limits.
    check_rate_hz: rate (Hz) of the final check; cond_rate_hz: of the reported cond.
    position_fraction: usable fraction of each joint's position range, about its centre;
    velocity_fraction, acceleration_fraction, torque_fraction: usable fractions of the
        velocity (rad/s), acceleration (rad/s²) and effort (Nm, nominal model) limits.
    position_limits: optional per-joint [min, max] (rad) narrowing the robot's.
    coverage_weight: w in the search's cost log cond + w × (mean share of each joint's circle,
        q mod 2π in 5° arcs, not visited); 0: cond alone. For residual learners on sin q /
        cos q. Ignored by a random motion (no objective).
    workspace: where the arm may go (`model/workspace.py`); null: joint limits only.
    progress: show a progress bar (stderr) with the best condition number so far.
    """

    n_harmonics: int = param(5, ge=2)
    base_frequency_hz: float = param(0.05, gt=0, unit="Hz")
    n_periods: int = param(1, ge=1)
    n_candidates: int = param(1000, ge=1)
    n_refine: int = param(4500, ge=0)
    refine_sigma: float = param(0.1, gt=0)
    n_eval_samples: int = param(150, ge=5)
    n_limit_samples: int = param(1000, ge=1)
    check_rate_hz: float = param(1000.0, gt=0, unit="Hz")
    cond_rate_hz: float = param(100.0, gt=0, unit="Hz")
    position_fraction: float = param(0.9, gt=0, le=1)
    velocity_fraction: float = param(0.9, gt=0, le=1)
    acceleration_fraction: float = param(0.9, gt=0, le=1)
    torque_fraction: float = param(0.8, gt=0, le=1)
    position_limits: list[list[float]] | None = None
    coverage_weight: float = param(0.0, ge=0, note="0: cond alone")
    workspace: WorkspaceParams | None = field(default_factory=WorkspaceParams)
    progress: bool = True
    rules = (_eval_samples_resolve_harmonics, position_limit_pairs)
