"""The settings of the `fourier` trajectory generator (`conf/trajectory/fourier.yaml`), checked
when the config is composed; shared by the generator and its search."""

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
