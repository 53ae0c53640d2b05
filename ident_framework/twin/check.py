"""Check the written twin against recorded data, in MuJoCo (not Pinocchio): inverse dynamics
(`mj_inverse`: rigid body, armature, damping and MuJoCo's soft-constraint friction loss, ≈
fc·sign(dq) above a few hundredths of a rad/s) and forward simulation driven by the recorded
torques (zero-order hold), compared with the recorded joint positions after each horizon.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.identify.metrics import torque_metrics
from ident_framework.model.robot import RobotModel

HORIZONS_S = (0.5, 2.0)
N_WINDOWS = 8
MOVING_RAD_S = 0.05  # above this speed MuJoCo's friction loss is ≈ fc·sign(dq)


def mujoco_inverse_dynamics(
    robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
) -> np.ndarray:
    """(N, n) joint torques (Nm) from MuJoCo's inverse dynamics of `robot`'s MJCF. Each
    sample's whole qpos, qvel, qacc rows are built first (the joints' columns set, the rest as
    `MjData` starts) and copied in with one slice assignment each (fancy-indexed assignments
    per sample cost as much as `mj_inverse` itself)."""
    model = robot.mujoco_model()
    data = mujoco.MjData(model)
    qpos, dof = _addresses(model, robot)
    rows = []
    for start, columns, values in (
        (data.qpos, qpos, q),
        (data.qvel, dof, dq),
        (data.qacc, dof, ddq),
    ):
        row = np.repeat(start[None, :], len(q), axis=0)
        row[:, columns] = values
        rows.append(row)
    positions, velocities, accelerations = rows
    full = np.empty((len(q), model.nv))
    # the MjData arrays' views taken once (each attribute access makes a new view)
    qpos_in, qvel_in, qacc_in, torque_out = data.qpos, data.qvel, data.qacc, data.qfrc_inverse
    for k in range(len(q)):
        qpos_in[:] = positions[k]
        qvel_in[:] = velocities[k]
        qacc_in[:] = accelerations[k]
        mujoco.mj_inverse(model, data)
        full[k] = torque_out
    return full[:, dof]


def forward_divergence(
    robot: RobotModel,
    data: Dataset,
    horizons_s: tuple[float, ...] = HORIZONS_S,
    n_windows: int = N_WINDOWS,
) -> dict[str, object]:
    """Joint-position divergence (rad) of the twin driven by the recorded torques from the
    recorded q, dq at `n_windows` evenly spread starts: per horizon each joint's RMS over windows
    of |q_sim − q_meas| ("rms_per_joint") and its maximum ("max")."""
    from mujoco import rollout  # the batched forward simulation (C, no Python per step)

    model = robot.mujoco_model()
    state = mujoco.MjData(model)
    qpos, dof = _addresses(model, robot)
    t = np.asarray(data.timestamp, dtype=float)
    torque = data.measured_torque
    longest = max(horizons_s)
    last_start = t[-1] - longest
    if last_start < t[0]:
        return {"windows": 0, "note": f"recording shorter than {longest} s"}
    starts = np.searchsorted(t, np.linspace(t[0], last_start, n_windows))
    dt = model.opt.timestep
    steps = {h: int(np.ceil(h / dt - 1e-9)) for h in horizons_s}  # steps to reach each horizon
    n_step = max(steps.values())
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    initial = np.empty((len(starts), mujoco.mj_stateSize(model, spec)))
    control = np.zeros((len(starts), n_step, model.nv))
    for i, start in enumerate(starts):
        mujoco.mj_resetData(model, state)
        state.qpos[qpos] = data.q[start]
        state.qvel[dof] = data.dq[start]
        mujoco.mj_getState(model, state, initial[i], spec)
        # step s applies the torque recorded last at or before its time (zero-order hold)
        times = t[start] + dt * np.arange(n_step)
        held = np.searchsorted(t, times + 1e-12, side="right") - 1
        control[i][:, dof] = torque[np.clip(held, start, len(t) - 1)]
    threads = [state, mujoco.MjData(model)]  # the windows on two threads
    states, _ = rollout.rollout(
        model, threads, initial, control,
        control_spec=mujoco.mjtState.mjSTATE_QFRC_APPLIED, nstep=n_step,
    )  # fmt: skip
    positions = states[:, :, 1 : 1 + model.nq][:, :, qpos]  # FULLPHYSICS: time, qpos, ...
    result: dict[str, object] = {"windows": len(starts)}
    for horizon, n in steps.items():
        index = np.minimum(np.searchsorted(t, t[starts] + horizon - 1e-9), len(t) - 1)
        values = np.abs(positions[:, n - 1] - data.q[index])
        result[f"{horizon:g}s"] = {
            "rms_per_joint": np.sqrt((values**2).mean(axis=0)).tolist(),
            "max": float(values.max()),
        }
    return result


def twin_metrics(
    twin: RobotModel, nominal: RobotModel, data: Dataset, identified_prediction: np.ndarray
) -> dict[str, object]:
    """metrics.json `twin`: MuJoCo inverse dynamics of the twin along `data` (RMSE, R²), the
    same on the moving samples (|dq_j| ≥ MOVING_RAD_S) beside the identified model's
    `identified_prediction` (N, n) Nm, and the forward divergence of the twin and the nominal."""
    tau = mujoco_inverse_dynamics(twin, data.q, data.dq, data.ddq)
    moving = np.abs(data.dq) >= MOVING_RAD_S
    measured = data.measured_torque  # as recorded, at the recorded timestamps
    twin_moving = _masked_rmse(measured - tau, moving)
    identified_moving = _masked_rmse(measured - identified_prediction, moving)
    return {
        "inverse_dynamics": torque_metrics(measured, tau),
        "moving_samples": {
            "speed_threshold_rad_s": MOVING_RAD_S,
            "fraction": float(moving.mean()),
            "twin_mujoco_rmse": twin_moving,
            "identified_model_rmse": identified_moving,
            # None when no sample moves (e.g. a recording of an arm at rest): nothing to compare
            "ratio_twin_to_identified": (
                twin_moving / identified_moving if identified_moving else None
            ),
        },
        "forward_divergence_rad": forward_divergence(twin, data),
        "forward_divergence_rad_nominal": forward_divergence(nominal, data),
    }


def _masked_rmse(error: np.ndarray, mask: np.ndarray) -> float | None:
    """RMSE over the masked entries; None when the mask selects none."""
    if not mask.any():
        return None
    return float(np.sqrt(np.sum(np.where(mask, error, 0.0) ** 2) / int(mask.sum())))


def _addresses(model: mujoco.MjModel, robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    joints = [model.joint(name) for name in robot.joint_names]
    return np.array([j.qposadr[0] for j in joints]), np.array([j.dofadr[0] for j in joints])
