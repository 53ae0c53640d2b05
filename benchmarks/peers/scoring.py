"""One scorer for every tool: predictions against the torque as recorded in the validation
file, at the file's own timestamps (numpy only).

A prediction row belongs to the recorded row whose timestamp it carries (within
`EXACT_TOLERANCE_S`, plus the rounding of a timestamp printed with 9 significant digits).
When fewer than `EXACT_SHARE` of the predicted rows carry recorded timestamps (a tool that
resampled the data onto its own grid), the predictions are interpolated linearly onto the
recorded timestamps inside their span, and the score says so (`alignment`). Recorded rows
without a prediction (filter ends, borders, non-finite values) are counted, never hidden.

R² as DESIGN.md defines it: 1 − Σ_j Σ_k e² / Σ_j Σ_k (τ − mean_j τ)², each joint about its own
mean over the scored rows.

Error by speed band: every scored (row, joint) sample falls in the band of that joint's own
recorded |dq| in the validation file (`SPEED_BANDS`, rad/s, lower bound included): rest < 0.01,
creep 0.01-0.05, slow 0.05-0.2, fast >= 0.2; per band its share of the scored samples and the
RMSE over them (joints pooled).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

EXACT_TOLERANCE_S = 1e-6
EXACT_SHARE = 0.99
SPEED_BANDS = (("rest", 0.0, 0.01), ("creep", 0.01, 0.05), ("slow", 0.05, 0.2),
               ("fast", 0.2, math.inf))  # fmt: skip


@dataclass(frozen=True)
class Columns:
    """Where a validation file keeps its time (column) and its dq and torque (prefixes, the
    joint index appended)."""

    time: str = "timestamp"
    dq: str = "actual_qd_"
    tau: str = "actual_current_as_torque_"


CONTRACT_COLUMNS = Columns()


@dataclass(frozen=True)
class Torques:
    """Torque rows: t (N,) s, tau (N, n) Nm; dq (N, n) rad/s as recorded, when read."""

    t: np.ndarray
    tau: np.ndarray
    dq: np.ndarray | None = None


@dataclass(frozen=True)
class Score:
    """Errors of one tool's predictions on one validation file."""

    rmse: float  # Nm, all scored rows and joints
    r2: float
    rmse_per_joint: list[float]
    r2_per_joint: list[float]
    n_recorded: int  # rows of the validation file
    n_scored: int  # recorded rows with a prediction
    n_not_predicted: int  # recorded rows without one
    n_predictions_off_grid: int  # predicted rows at no recorded timestamp (exact alignment)
    alignment: str  # "exact" | "interpolated"
    speed_bands: list[dict] | None = None  # see speed_bands(); None without recorded dq

    def to_dict(self) -> dict:
        return asdict(self)


def read_columns(path: Path, time_column: str, prefix: str, n_joints: int) -> Torques:
    """`time_column` and `<prefix>0..<prefix>{n-1}` of a comma-separated file with a header."""
    with open(path, encoding="utf-8") as handle:
        header = handle.readline().strip().split(",")
    wanted = [time_column, *(f"{prefix}{j}" for j in range(n_joints))]
    missing = [name for name in wanted if name not in header]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing}; header: {header[:12]}...")
    table = np.loadtxt(
        path, delimiter=",", skiprows=1, usecols=[header.index(n) for n in wanted], ndmin=2
    )
    return Torques(table[:, 0], table[:, 1:])


def read_recorded(path: Path, n_joints: int, columns: Columns = CONTRACT_COLUMNS) -> Torques:
    """The torque and joint velocity as recorded in a validation CSV (by default the
    contract's `actual_current_as_torque_j`, Nm, and `actual_qd_j`, rad/s)."""
    torque = read_columns(path, columns.time, columns.tau, n_joints)
    velocity = read_columns(path, columns.time, columns.dq, n_joints)
    return Torques(torque.t, torque.tau, velocity.tau)


def read_predictions(path: Path, n_joints: int) -> Torques:
    """A prediction file: `timestamp, ..., tau_pred_0..n-1` (both tools write these)."""
    return read_columns(path, "timestamp", "tau_pred_", n_joints)


def match_rows(t_recorded: np.ndarray, t_predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(recorded index, predicted index) of the predictions that carry a recorded timestamp."""
    scale = np.max(np.abs(t_recorded), initial=0.0)
    tolerance = EXACT_TOLERANCE_S + 1e-9 * scale  # %.9g of the largest timestamp
    right = np.clip(np.searchsorted(t_recorded, t_predicted), 1, len(t_recorded) - 1)
    left = right - 1
    nearest = np.where(
        np.abs(t_recorded[left] - t_predicted) <= np.abs(t_recorded[right] - t_predicted),
        left,
        right,
    )
    close = np.abs(t_recorded[nearest] - t_predicted) <= tolerance
    return nearest[close], np.flatnonzero(close)


def predicted_on_recorded(recorded: Torques, predicted: Torques) -> tuple[np.ndarray, str, int]:
    """Predictions on the recorded rows: (N, n) with NaN where there is none, the alignment
    and the number of predicted rows at no recorded timestamp."""
    out = np.full(recorded.tau.shape, np.nan)
    rec, pred = match_rows(recorded.t, predicted.t)
    if len(predicted.t) and len(pred) >= EXACT_SHARE * len(predicted.t):
        out[rec] = predicted.tau[pred]
        return out, "exact", len(predicted.t) - len(pred)
    inside = (recorded.t >= predicted.t[0]) & (recorded.t <= predicted.t[-1])
    for j in range(recorded.tau.shape[1]):
        out[inside, j] = np.interp(recorded.t[inside], predicted.t, predicted.tau[:, j])
    return out, "interpolated", len(predicted.t) - len(pred)


def speed_bands(
    tau: np.ndarray, prediction: np.ndarray, dq: np.ndarray, scored: np.ndarray
) -> list[dict]:
    """Per band of `SPEED_BANDS`: the scored (row, joint) samples whose own |dq| is in it, their
    share of all scored samples and the RMSE over them (Nm; NaN for an empty band)."""
    speed, error = np.abs(dq[scored]), (tau - prediction)[scored]
    bands = []
    for name, low, high in SPEED_BANDS:
        inside = (speed >= low) & (speed < high)
        n = int(inside.sum())
        bands.append({
            "band": name, "low_rad_s": low, "high_rad_s": high, "n": n,
            "share": n / error.size if error.size else math.nan,
            "rmse": float(np.sqrt(np.mean(error[inside] ** 2))) if n else math.nan,
        })  # fmt: skip
    return bands


def score(recorded: Torques, predicted: Torques, rows: np.ndarray | None = None) -> Score:
    """Score `predicted` against `recorded`; `rows` (bool, recorded rows) restricts the scored
    rows further (e.g. to those every tool predicted)."""
    on_recorded, alignment, off_grid = predicted_on_recorded(recorded, predicted)
    scored = np.all(np.isfinite(on_recorded), axis=1)
    if rows is not None:
        scored &= rows
    return score_rows(recorded.tau, on_recorded, scored, alignment, off_grid, recorded.dq)


def score_rows(
    tau: np.ndarray, prediction: np.ndarray, scored: np.ndarray, alignment: str, off_grid: int,
    dq: np.ndarray | None = None,
) -> Score:  # fmt: skip
    """Metrics over the rows `scored` of (N, n) recorded and predicted torques (`dq`: the
    recorded velocity, for the speed bands)."""
    measured, error = tau[scored], tau[scored] - prediction[scored]
    if not len(measured):
        nan = float("nan")
        n = tau.shape[1]
        return Score(nan, nan, [nan] * n, [nan] * n, len(tau), 0, len(tau), off_grid, alignment)
    sse = np.sum(error**2, axis=0)
    sst = np.sum((measured - measured.mean(axis=0)) ** 2, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2_joint = 1.0 - sse / sst
    return Score(
        rmse=float(np.sqrt(np.mean(error**2))),
        r2=float(1.0 - sse.sum() / sst.sum()),
        rmse_per_joint=np.sqrt(sse / len(measured)).tolist(),
        r2_per_joint=r2_joint.tolist(),
        n_recorded=len(tau),
        n_scored=int(scored.sum()),
        n_not_predicted=int(len(tau) - scored.sum()),
        n_predictions_off_grid=int(off_grid),
        alignment=alignment,
        speed_bands=None if dq is None else speed_bands(tau, prediction, dq, scored),
    )


def predicted_rows(recorded: Torques, predicted: Torques) -> np.ndarray:
    """Bool (N,): the recorded rows `predicted` has a finite prediction for."""
    on_recorded, _, _ = predicted_on_recorded(recorded, predicted)
    return np.all(np.isfinite(on_recorded), axis=1)
