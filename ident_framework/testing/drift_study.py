"""A simulated recording in which the payload changes part-way through (drift study), used by
`experiments/drift_payload.py` and its test: the MuJoCo twin runs the true robot with the first
payload, then the same true robot with the second, continuing from the exact simulated state of
the first piece's last row; the controller knows only the nominal model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.hookspecs import LinearProblem, Trajectory
from ident_framework.identify.linear_problem import build_problem
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.simulation.perturbed_robot import (
    PerturbationParams,
    SimulatedTruth,
    perturb_robot,
)
from ident_framework.simulation.tracking import SimulationParams, simulate


@dataclass
class TimeWindow:
    """The piece [start, start + duration] (s) of a trajectory, re-timed to start at 0."""

    trajectory: Trajectory
    start: float
    duration: float

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.trajectory.evaluate(np.asarray(t, dtype=float) + self.start)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "time_window",
            "start_s": self.start,
            "duration_s": self.duration,
            "trajectory": self.trajectory.describe(),
        }


@dataclass
class PayloadChangeRecording:
    """data: the joined recording (rows before change_time_s from the first robot, the rest
    from the second); truths: true parameters before and after; state_jump_rad: max |q| jump
    between the first piece's last state and the second piece's start (rad)."""

    data: Dataset
    change_time_s: float
    truth_before: SimulatedTruth
    truth_after: SimulatedTruth
    state_jump_rad: float


def payload_robots(
    nominal: RobotModel, perturbation: PerturbationParams, masses_kg: tuple[float, float], seed: int
) -> list[tuple[RobotModel, SimulatedTruth]]:
    """The true robot with each payload mass (kg); everything else from `perturbation`, seed."""
    return [
        perturb_robot(nominal, replace(perturbation, payload_mass_kg=float(mass)), seed)
        for mass in masses_kg
    ]


def simulate_payload_change(
    nominal: RobotModel,
    trajectory: Trajectory,
    change_time_s: float,
    masses_kg: tuple[float, float] = (1.5, 3.5),
    perturbation: PerturbationParams | None = None,
    simulation: SimulationParams | None = None,
    seed: int = 0,
) -> PayloadChangeRecording:
    """Simulate `trajectory` (s: 0 .. duration) on the true robot with payload masses_kg[0]
    until change_time_s, then with masses_kg[1]; perturbation seed `seed`, noise seeds derived
    from it (one per piece)."""
    if not 0.0 < change_time_s < trajectory.duration:
        raise ValueError(
            f"change_time_s must lie inside the trajectory (0, {trajectory.duration}) s, "
            f"got {change_time_s}"
        )
    perturbation = perturbation or PerturbationParams()
    simulation = simulation or SimulationParams()
    (robot_a, truth_a), (robot_b, truth_b) = payload_robots(nominal, perturbation, masses_kg, seed)
    window = TimeWindow(trajectory, 0.0, change_time_s)
    first = simulate(robot_a, nominal, window, simulation, 2 * seed + 1, False, truth_a)
    # the second piece continues from the exact state of the first piece's last row (the
    # moment of the change); keep the second piece's row, recorded with the new payload
    window = TimeWindow(trajectory, change_time_s, trajectory.duration - change_time_s)
    final = first.metadata["final_state"]
    start = (np.array(final["q"]), np.array(final["dq"]))
    second = simulate(robot_b, nominal, window, simulation, 2 * seed + 2, False, truth_b, start)
    jump = float(np.max(np.abs(second.q[0] - first.q[-1])))
    first = first.select(first.timestamp < change_time_s - 1e-9)
    columns = {}
    for name in ("q", "dq", "tau", "ddq", "q_target", "dq_target", "ddq_target"):
        a, b = getattr(first, name), getattr(second, name)
        columns[name] = None if a is None or b is None else np.vstack([a, b])
    data = Dataset(
        timestamp=np.concatenate([first.timestamp, second.timestamp + change_time_s]),
        joint_names=first.joint_names,
        metadata={
            "source": "mujoco payload change (drift_study)",
            "change_time_s": float(change_time_s),
            "payload_kg": [float(m) for m in masses_kg],
            "truth_before": truth_a.to_dict(),
            "truth_after": truth_b.to_dict(),
            "trajectory": trajectory.describe(),
            "pieces": [
                {k: v for k, v in piece.metadata.items() if k != "true_robot_mjcf"}
                for piece in (first, second)
            ],
        },
        **columns,
    )
    return PayloadChangeRecording(data, float(change_time_s), truth_a, truth_b, jump)


@dataclass
class DriftSetup:
    """The recording, validation recordings before and after the change (same motion, own
    noise), the LS problem in base parameters, and triangular factors R of [W_base | tau] of the
    recording's two parts and of both validation recordings (RMSE of many parameter vectors)."""

    recording: PayloadChangeRecording
    validation_before: Dataset
    validation_after: Dataset
    problem: LinearProblem
    base: BaseParameters
    factors: dict[str, tuple[np.ndarray, int]]  # name -> (R, rows): before/after/val_*


def base_factor(
    builder: RegressorBuilder, base: BaseParameters, data: Dataset, rows: slice | np.ndarray
) -> tuple[np.ndarray, int]:
    """(R, number of rows) with R the triangular factor of [W_base | tau] of the given rows."""
    part = data.select(rows)
    regressor = builder.compute(part.q, part.dq, part.ddq) @ base.basis
    stacked = np.hstack([regressor.reshape(-1, base.rank), part.tau.reshape(-1, 1)])
    return np.linalg.qr(stacked, mode="r"), stacked.shape[0]


def prepare_drift_setup(
    builder: RegressorBuilder,
    trajectory: Trajectory,
    validation_trajectory: Trajectory,
    change_time_s: float,
    masses_kg: tuple[float, float] = (1.5, 3.5),
    perturbation: PerturbationParams | None = None,
    simulation: SimulationParams | None = None,
    seed: int = 0,
    chunk_size: int = 2000,
) -> DriftSetup:
    """Simulate the payload change and both validation recordings, build the LS problem.
    The simulation should record exact accelerations (record_acceleration=True): the data are
    used as they are, without preprocessing."""
    simulation = simulation or SimulationParams(record_acceleration=True)
    perturbation = perturbation or PerturbationParams()
    nominal = builder.robot
    recording = simulate_payload_change(
        nominal, trajectory, change_time_s, masses_kg, perturbation, simulation, seed
    )
    if recording.data.ddq is None:
        raise ValueError("the drift study needs record_acceleration=True")
    robots = payload_robots(nominal, perturbation, masses_kg, seed)
    validation = [
        simulate(robot, nominal, validation_trajectory, simulation, 2 * seed + 3 + i, False, truth)
        for i, (robot, truth) in enumerate(robots)
    ]
    problem, base, _ = build_problem(
        builder, recording.data, chunk_size, tolerance=1e-8, progress=False
    )
    before = recording.data.timestamp < change_time_s
    factors = {
        "before": base_factor(builder, base, recording.data, before),
        "after": base_factor(builder, base, recording.data, ~before),
        "validation_before": base_factor(builder, base, validation[0], slice(None)),
        "validation_after": base_factor(builder, base, validation[1], slice(None)),
    }
    return DriftSetup(recording, validation[0], validation[1], problem, base, factors)


def rmse_of(factor: tuple[np.ndarray, int], thetas: np.ndarray) -> np.ndarray:
    """Torque RMSE (Nm) of base parameter vectors thetas (k, r) (or (r,)) on the rows behind
    factor = (R of [W | tau], rows): ||W theta - tau|| = ||R [theta; -1]||."""
    r_factor, rows = factor
    thetas = np.atleast_2d(thetas)
    augmented = np.hstack([thetas, -np.ones((len(thetas), 1))])
    return np.linalg.norm(augmented @ r_factor.T, axis=1) / np.sqrt(rows)


def least_squares_on(factor: tuple[np.ndarray, int]) -> np.ndarray:
    """Base parameters (r,) of the LS fit of the rows behind factor."""
    r_factor = factor[0]
    k = r_factor.shape[1] - 1
    return np.linalg.solve(r_factor[:k, :k], r_factor[:k, k])


def phase_matched_reference(
    times: np.ndarray, values: np.ndarray, change_time_s: float, period_s: float
) -> np.ndarray:
    """For each time t >= change_time_s, the value at the same phase of a periodic excitation
    (period_s) in the last period before the change; NaN before the change."""
    times = np.asarray(times, dtype=float)
    out = np.full(times.shape, np.nan)
    after = times >= change_time_s
    periods = np.floor((times[after] - change_time_s) / period_s) + 1.0
    earlier = times[after] - periods * period_s
    before = (times >= change_time_s - period_s) & (times < change_time_s)
    out[after] = np.interp(earlier, times[before], np.asarray(values)[before])
    return out


def recovery_time(
    times: np.ndarray,
    values: np.ndarray,
    reference: np.ndarray | float,
    change_time_s: float,
    tolerance: float = 0.1,
    grace_s: float = 0.0,
) -> float:
    """Seconds after change_time_s from which `values` stay within (1 + tolerance) ×
    `reference` until the end of the record (inf: never). Excursions shorter than grace_s
    (s, from the first to the last sample outside) are ignored, unless one ends the record."""
    times = np.asarray(times, dtype=float)
    after = times >= change_time_s
    if not np.any(after):
        return float("inf")
    reference = np.broadcast_to(np.asarray(reference, dtype=float), times.shape)
    outside = after & ~(np.asarray(values) <= (1.0 + tolerance) * reference)
    index = np.flatnonzero(outside)
    if grace_s > 0.0 and len(index):
        runs = np.split(index, np.flatnonzero(np.diff(index) > 1) + 1)
        end = len(times) - 1
        kept = [r for r in runs if times[r[-1]] - times[r[0]] >= grace_s or r[-1] == end]
        index = np.concatenate(kept or [np.empty(0, dtype=int)])
    if not len(index):
        return float(times[after][0] - change_time_s)
    last = int(index[-1])
    if last == len(times) - 1:
        return float("inf")
    return float(times[last + 1] - change_time_s)
