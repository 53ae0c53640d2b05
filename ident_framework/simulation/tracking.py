"""Closed-loop MuJoCo simulation of a robot following a reference, recorded like RTDE would.

`simulate` drives the "real" robot along a reference (q rad, dq rad/s, ddq rad/s², t s) with
computed-torque feed-forward from the controller's model plus joint PD feedback; the motors
saturate at the effort limits. It returns a `Dataset` (torques in Nm). Explicit Euler (MuJoCo's
`eulerdamp` off): every recorded row satisfies the rigid-body + rotor-inertia + viscous +
Coulomb model exactly. Optional thermal model: joint temperatures (°C) run linearly over the
recording and scale the MJCF's damping and frictionloss by (1 - k (T - T0)). Optional torques
the identified model lacks (`source.unmodelled`), applied each sim step as a generalised force:
extra static friction at low speed (stribeck), friction depending on the joint angle
(position), a joint-side cogging ripple A_j sin(n_j q_j + phi_j) (motor-side cogging is not
simulated).

Rationale (integrator): docs/design.md#simulated-robot
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import mujoco
import numpy as np
import pinocchio as pin

from ident_framework.data.dataset import UNITS, Dataset
from ident_framework.errors import UserError, per_joint_values
from ident_framework.hookspecs import Trajectory
from ident_framework.model.robot import RobotModel
from ident_framework.model.ur_description import UR_JOINTS
from ident_framework.params import Params, param
from ident_framework.progress import progress as progress_bar
from ident_framework.simulation.perturbed_robot import SimulatedTruth, truth_from_robot
from ident_framework.simulation.true_friction import TrueFriction

# PD gains that track a UR e-Series arm to ~5e-5 rad at 1 kHz, base to wrist 3.
UR_KP = (2000.0, 2000.0, 1500.0, 600.0, 600.0, 400.0)  # Nm/rad
UR_KD = (100.0, 100.0, 80.0, 15.0, 10.0, 5.0)  # Nm·s/rad
ENCODER_RESOLUTION = 2.0 * math.pi / 2**20  # rad, a 20-bit absolute encoder
_FEEDFORWARD_COULOMB_SMOOTHING = 0.01  # rad/s, tanh width of the controller's Coulomb term
_PROGRESS_CHUNK = 1000  # steps per progress-bar update
UNMODELLED_EFFECTS = ("none", "stribeck", "position", "cogging")
COGGING_FRACTION = 0.01  # cogging amplitude per unit unmodelled_scale, of the joint's effort limit
MAX_COGGING_PERIODS = 12  # cycles per joint revolution: a low-harmonic, joint-side ripple
STRIBECK_VELOCITY = 0.05  # rad/s, width of the extra static friction
_SIGN_SMOOTHING = 0.002  # rad/s, tanh width standing in for sign(dq)
COGGING_NOTE = (
    "cycles per joint revolution, one for all joints or one per joint: the joint-side ripple is "
    "periodic in the joint angle; motor-side cogging at pole pairs x gear ratio per revolution "
    "is not simulated"
)


def unmodelled_friction(
    kind: str, scale: float, coulomb: np.ndarray, q: np.ndarray, dq: np.ndarray
) -> np.ndarray:
    """Friction torque (Nm, opposing the motion) that Coulomb-viscous friction does not model.

    stribeck: extra static friction at low speed, 0.5·fc·exp(−(dq/0.05)²)·sign(dq), i.e. the
    static level is 1.5 × the Coulomb level (Stribeck effect). position: friction that depends
    on the joint angle (e.g. gear eccentricity), 0.15·fc·(1 + sin 2q)·sign(dq). Both scaled by
    `scale`; sign(dq) is a steep tanh (width 0.002 rad/s)."""
    sign = np.tanh(dq / _SIGN_SMOOTHING)
    if kind == "stribeck":
        return scale * 0.5 * coulomb * np.exp(-((dq / STRIBECK_VELOCITY) ** 2)) * sign
    return scale * 0.3 * coulomb * 0.5 * (1.0 + np.sin(2.0 * q)) * sign  # position


def cogging(params: Any, effort: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint the cogging ripple amplitude_j · sin(periods_j · q_j + phase_j) (q in rad, joint
    side): amplitude (Nm, unmodelled_scale × COGGING_FRACTION × the effort limit), periods per
    joint revolution, phase (rad); UserError when a joint has no finite effort limit."""
    effort = np.asarray(effort, dtype=float)
    if not np.all(np.isfinite(effort) & (effort > 0)):
        raise UserError(
            "source.unmodelled=cogging sizes the ripple by each joint's effort limit, but the "
            f"robot's effort limits are {effort.tolist()} Nm. Give the robot finite effort "
            "limits (URDF <limit effort=...>, MJCF actuatorfrcrange), or choose another "
            "source.unmodelled effect."
        )
    n = len(effort)
    periods = per_joint_values(params.cogging_periods, n, "cogging_periods", one_for_all=True)
    phase = per_joint_values(params.cogging_phase_rad, n, "cogging_phase_rad", one_for_all=True)
    return params.unmodelled_scale * COGGING_FRACTION * effort, periods, phase


def unmodelled_torque(
    params: Any, effort: np.ndarray, coulomb: np.ndarray
) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """The unmodelled torque (Nm) the motors must supply, as a function of (q rad, dq rad/s),
    per `params.unmodelled`; None when there is none."""
    if params.unmodelled == "none" or params.unmodelled_scale == 0:
        return None
    if params.unmodelled == "cogging":
        amplitude, periods, phase = cogging(params, effort)
        return lambda q, dq: amplitude * np.sin(periods * q + phase)
    kind, scale = params.unmodelled, params.unmodelled_scale
    return lambda q, dq: unmodelled_friction(kind, scale, coulomb, q, dq)


def unmodelled_metadata(params: Any, effort: np.ndarray) -> dict:
    """metadata["unmodelled"]: the planted effect, its scale, and for cogging the amplitude
    (Nm), periods per revolution and phase (rad) per joint."""
    out = {"kind": params.unmodelled, "scale": float(params.unmodelled_scale)}
    if params.unmodelled == "cogging" and params.unmodelled_scale > 0:
        amplitude, periods, phase = cogging(params, effort)
        out.update(
            amplitude_nm=amplitude.tolist(), periods=periods.tolist(), phase_rad=phase.tolist()
        )
    return out


def _rates_divide(params: SimulationParams) -> None:
    check_rates(params.sim_rate_hz, params.record_rate_hz)


@dataclass
class SimulationParams(Params):
    """How the robot is simulated and recorded; each key is described in
    conf/source/mujoco.yaml. record_rate_hz must divide sim_rate_hz; kp, kd None:
    `default_gains`; unmodelled: `unmodelled_torque`; friction_temperature_coefficient k (1/K):
    the MJCF's damping and frictionloss are scaled by (1 - k (T - friction_reference_c)) at
    every recorded sample (a plugin's true friction is not scaled)."""

    sim_rate_hz: float = param(1000.0, gt=0, unit="Hz")
    record_rate_hz: float = param(500.0, gt=0, unit="Hz")
    kp: list[float] | None = param(None, each=True, ge=0, unit="Nm/rad")
    kd: list[float] | None = param(None, each=True, ge=0, unit="Nm·s/rad")
    torque_noise_std: float | list[float] = param(0.05, one_or_list=True, ge=0, unit="Nm")
    encoder_resolution: float = param(ENCODER_RESOLUTION, ge=0, unit="rad")
    record_acceleration: bool = False
    unmodelled: str = param("none", choices=UNMODELLED_EFFECTS)
    unmodelled_scale: float = param(1.0, ge=0)
    cogging_periods: int | list[int] = param(
        2, one_or_list=True, ge=1, le=MAX_COGGING_PERIODS, note=COGGING_NOTE
    )
    cogging_phase_rad: float | list[float] = param(0.0, one_or_list=True, finite=True, unit="rad")
    temperature_c: list[float] | None = param(
        None, each=True, length=2, gt=-30, lt=130, unit="°C", note="[T_start, T_end]"
    )
    friction_temperature_coefficient: float = param(0.0, ge=0, lt=0.05, unit="1/K")
    friction_reference_c: float = param(25.0, finite=True, unit="°C")
    rules = (_rates_divide,)


def check_rates(sim_rate_hz: float, record_rate_hz: float) -> int:
    """Sim steps per recorded sample; ValueError unless record_rate_hz divides sim_rate_hz."""
    for name, value in (("sim_rate_hz", sim_rate_hz), ("record_rate_hz", record_rate_hz)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive rate in Hz, got {value}")
    ratio = sim_rate_hz / record_rate_hz
    if ratio < 1 - 1e-9 or abs(ratio - round(ratio)) > 1e-9:
        raise ValueError(
            f"record_rate_hz ({record_rate_hz}) must divide sim_rate_hz ({sim_rate_hz}) "
            "into a whole number of steps per sample"
        )
    return int(round(ratio))


def default_gains(
    true_robot: RobotModel, q_reference: np.ndarray, sim_rate_hz: float
) -> tuple[np.ndarray, np.ndarray]:
    """(kp Nm/rad, kd Nm·s/rad) per joint, tuned on the robot being driven. UR arms: UR_KP,
    UR_KD (kd scaled by rate/1 kHz and kp by its square below 1 kHz); other arms: bandwidth
    0.1·sim rate rad/s, damping ratio 0.7 on the largest joint inertia M_jj (kg·m²) along the
    reference. Both lowered per joint as far as the explicit integrator needs: kd·dt <= 0.5·M_jj
    and kp·dt² <= 0.25·M_jj with the smallest M_jj."""
    model = true_robot.pin_model
    data = model.createData()
    rows = q_reference[:: max(1, len(q_reference) // 50)]
    inertia = np.array([np.diag(pin.crba(model, data, row)) for row in rows])  # (rows, n) M_jj
    if tuple(true_robot.joint_names) == UR_JOINTS:
        scale = min(1.0, sim_rate_hz / 1000.0)
        kp, kd = np.array(UR_KP) * scale**2, np.array(UR_KD) * scale
    else:
        omega, zeta = 0.1 * sim_rate_hz, 0.7
        kp = inertia.max(axis=0) * omega**2
        kd = 2.0 * zeta * omega * inertia.max(axis=0)
    dt = 1.0 / sim_rate_hz
    smallest = inertia.min(axis=0)
    factor = np.minimum(
        1.0,
        np.minimum(0.5 * smallest / np.maximum(kd * dt, 1e-300),
                   np.sqrt(0.25 * smallest / np.maximum(kp * dt**2, 1e-300))),
    )  # fmt: skip
    return kp * factor**2, kd * factor


def simulation_model(true_robot: RobotModel, sim_rate_hz: float) -> mujoco.MjModel:
    """The true robot's MuJoCo model ready to simulate: one motor per joint replacing the file's
    actuators, torque clamped at the effort limits, explicit Euler at 1/sim_rate_hz, no contacts."""
    spec = true_robot.mujoco_spec()
    for actuator in list(spec.actuators):
        spec.delete(actuator)
    for name in true_robot.joint_names:
        motor = spec.add_actuator()
        motor.name = f"{name}_ident_motor"
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.target = name
        motor.set_to_motor()
        motor.gear = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    model = spec.compile()
    for index, effort in enumerate(true_robot.limits.effort):
        joint = model.joint(true_robot.joint_names[index]).id
        if not model.jnt_actfrclimited[joint] and math.isfinite(effort):
            model.jnt_actfrclimited[joint] = 1
            model.jnt_actfrcrange[joint] = [-effort, effort]
    model.opt.timestep = 1.0 / sim_rate_hz
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP)
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    return model


def _per_joint(value: float | Sequence[float] | None, n: int, name: str) -> np.ndarray:
    return per_joint_values(value, n, name, fix="give one value per joint, or one for all",
                            one_for_all=True)  # fmt: skip


def controller_feedforward(
    controller_robot: RobotModel, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
) -> np.ndarray:
    """(N, n) computed torque (Nm) of the controller's model along the reference: rigid body
    + rotor inertia, plus the model's own viscous and (smoothed) Coulomb friction if it has
    any (the nominal UR models have none)."""
    torque = controller_robot.inverse_dynamics(q, dq, ddq)
    viscous, coulomb = controller_robot.joint_friction()
    if np.any(viscous) or np.any(coulomb):
        torque += viscous * dq + coulomb * np.tanh(dq / _FEEDFORWARD_COULOMB_SMOOTHING)
    return torque


def simulate(
    true_robot: RobotModel,
    controller_robot: RobotModel,
    trajectory: Trajectory,
    params: SimulationParams,
    seed: int,
    progress: bool = True,
    truth: SimulatedTruth | None = None,
    initial_state: tuple[np.ndarray, np.ndarray] | None = None,
    friction: TrueFriction | None = None,
) -> Dataset:
    """Run the true robot along `trajectory` under the controller and record it.

    Row k is sim step k·(sim/record rate): t_k (s), the state at the start of that step (q
    quantised to the encoder), tau_k the motors' torque during the step (after clamping) +
    Gaussian noise from `seed`, the reference as targets, qacc_k as `ddq` if asked for. `truth`
    (default: read from `true_robot`) goes to metadata["truth"]; `initial_state` (q rad, dq
    rad/s; default: the reference at t = 0); metadata["final_state"]: the exact last state.
    `friction`: a friction plugin's torque applied each step (the true robot should then have
    no damping and frictionloss of its own).
    """
    n = true_robot.n_joints
    if tuple(controller_robot.joint_names) != tuple(true_robot.joint_names):
        raise ValueError(
            f"controller joints {list(controller_robot.joint_names)} differ from the simulated "
            f"robot's {list(true_robot.joint_names)}"
        )
    ratio = check_rates(params.sim_rate_hz, params.record_rate_hz)
    dt = 1.0 / params.sim_rate_hz
    n_steps = int(math.floor(trajectory.duration * params.sim_rate_hz + 1e-9)) + 1
    n_rows = (n_steps - 1) // ratio + 1
    n_steps = (n_rows - 1) * ratio + 1  # the last step is a recorded one

    # Reference and feed-forward at the sim rate, in one vectorised pass each.
    time = np.arange(n_steps) * dt
    q_ref, dq_ref, ddq_ref = (np.asarray(a, dtype=float) for a in trajectory.evaluate(time))
    feedforward = controller_feedforward(controller_robot, q_ref, dq_ref, ddq_ref)
    if params.kp is None or params.kd is None:
        kp_default, kd_default = default_gains(true_robot, q_ref, params.sim_rate_hz)
    kp = _per_joint(params.kp if params.kp is not None else kp_default, n, "kp")
    kd = _per_joint(params.kd if params.kd is not None else kd_default, n, "kd")
    noise_std = _per_joint(params.torque_noise_std, n, "torque_noise_std")
    # ctrl_k = ff_k + kp (q_ref,k - q_k) + kd (dq_ref,k - dq_k) = base_k - kp q_k - kd dq_k
    base = feedforward + kp * q_ref + kd * dq_ref

    model = simulation_model(true_robot, params.sim_rate_hz)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = initial_state or (q_ref[0], dq_ref[0])
    mujoco.mj_forward(model, data)
    coulomb = true_robot.joint_friction()[1]
    plugin_torque = None
    if friction is not None:
        plugin_torque = friction.stepper(dt)
        coulomb = friction.physical.get("fc", coulomb)
    thermal = thermal_friction(model, true_robot, params, time[::ratio][:n_rows])
    extra = unmodelled_torque(params, true_robot.limits.effort, coulomb)
    q, dq, tau, ddq = _run_steps(
        model, data, base, kp, kd, (n_rows, ratio, n_steps), plugin_torque, extra, progress,
        thermal,
    )  # fmt: skip
    if data.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)].number or not np.all(np.isfinite(tau)):
        raise UserError(
            f"The MuJoCo simulation of {true_robot.name} diverged (bad accelerations): the PD "
            f"gains kp={kp.tolist()}, kd={kd.tolist()} are too stiff for the explicit "
            f"integrator at {params.sim_rate_hz} Hz. Lower source.kd / source.kp or raise "
            "source.sim_rate_hz."
        )
    reference, gains = (time, q_ref, dq_ref, ddq_ref), (kp, kd, noise_std)
    out = _recording(true_robot, params, seed, truth, reference, (q, dq, tau, ddq), ratio, gains)
    return with_temperatures(out, params)


def _run_steps(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    base: np.ndarray,
    kp: np.ndarray,
    kd: np.ndarray,
    counts: tuple[int, int, int],
    plugin_torque: Callable[[np.ndarray], np.ndarray] | None,
    extra: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
    progress: bool,
    thermal: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step the PD-controlled simulation (ctrl_k = base_k - kp q_k - kd dq_k, plus the plugin's
    friction and the unmodelled torque); counts: (rows, sim steps per row, sim steps). Returns per
    row (q, dq) at the start of its step, the actuator torque and qacc of that step."""
    n_rows, ratio, n_steps = counts
    n = len(kp)
    qpos, qvel, ctrl = data.qpos, data.qvel, data.ctrl  # views, updated in place by mj_step
    qfrc, qacc = data.qfrc_actuator, data.qacc
    kp_q, kd_dq = np.empty(n), np.empty(n)

    q = np.empty((n_rows, n))
    dq = np.empty((n_rows, n))
    tau = np.empty((n_rows, n))
    ddq = np.empty((n_rows, n))
    step = mujoco.mj_step
    with progress_bar(
        total=n_steps, desc="MuJoCo", unit="step", enabled=progress, leave=False
    ) as bar:
        for start in range(0, n_rows, _PROGRESS_CHUNK // ratio or 1):
            stop = min(n_rows, start + (_PROGRESS_CHUNK // ratio or 1))
            for row in range(start, stop):
                k0 = row * ratio
                if thermal is not None:
                    thermal(row)
                q[row] = qpos
                dq[row] = qvel
                for k in range(k0, k0 + ratio if row < n_rows - 1 else k0 + 1):
                    np.multiply(kp, qpos, out=kp_q)
                    np.multiply(kd, qvel, out=kd_dq)
                    np.subtract(base[k], kp_q, out=ctrl)
                    ctrl -= kd_dq
                    if plugin_torque is not None or extra is not None:
                        applied = 0.0 if plugin_torque is None else -plugin_torque(qvel)
                        if extra is not None:
                            applied = applied - extra(qpos, qvel)
                        data.qfrc_applied[:] = applied
                    step(model, data)
                    if k == k0:
                        tau[row] = qfrc
                        ddq[row] = qacc
            bar.update(min(n_steps, stop * ratio) - min(n_steps, start * ratio))
    return q, dq, tau, ddq


def _recording(
    true_robot: RobotModel,
    params: SimulationParams,
    seed: int,
    truth: SimulatedTruth | None,
    reference: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    recorded: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ratio: int,
    gains: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> Dataset:
    """The recorded rows as measured: torque noise drawn from `seed`, q quantised to the
    encoder; the reference as targets; metadata (gains, noise, tracking error, saturation,
    truth, final state). reference: (sim times, q_ref, dq_ref, ddq_ref) at the sim rate;
    recorded: (q, dq, tau, ddq) per row; gains: (kp, kd, torque noise std) per joint."""
    time, q_ref, dq_ref, ddq_ref = reference
    q, dq, tau, ddq = recorded
    kp, kd, noise_std = gains
    n_rows = len(q)
    rows = np.arange(n_rows) * ratio
    tau_measured = tau + np.random.default_rng(seed).normal(size=tau.shape) * noise_std
    if params.encoder_resolution > 0:
        q_measured = np.round(q / params.encoder_resolution) * params.encoder_resolution
    else:
        q_measured = q.copy()
    error = q - q_ref[rows]
    effort = np.asarray(true_robot.limits.effort, dtype=float)
    saturated = np.mean(np.abs(tau) >= effort * (1.0 - 1e-9), axis=0)
    if np.any(saturated > 0):
        warnings.warn(
            f"The simulated motors saturated at their effort limits on "
            f"{np.round(100 * saturated, 2).tolist()} % of the samples per joint.",
            stacklevel=3,
        )
    truth = truth if truth is not None else truth_from_robot(true_robot)
    metadata = {
        "source": "mujoco",
        "robot": true_robot.name,
        "units": dict(UNITS),
        "sim_rate_hz": float(params.sim_rate_hz),
        "record_rate_hz": float(params.record_rate_hz),
        "integrator": "Euler, eulerdamp disabled (explicit damping)",
        "kp": kp.tolist(),
        "kd": kd.tolist(),
        "torque_noise_std": noise_std.tolist(),
        "encoder_resolution": float(params.encoder_resolution),
        "noise_seed": int(seed),
        "tracking_error_rms_rad": np.sqrt(np.mean(error**2, axis=0)).tolist(),
        "tracking_error_max_rad": np.max(np.abs(error), axis=0).tolist(),
        "saturated_fraction": saturated.tolist(),
        "truth": truth.to_dict(),
        "unmodelled": unmodelled_metadata(params, true_robot.limits.effort),
        "true_robot_mjcf": true_robot.mjcf,
        "final_state": {"q": q[-1].tolist(), "dq": dq[-1].tolist()},
    }
    return Dataset(
        timestamp=time[rows].copy(),
        q=q_measured,
        dq=dq,
        tau=tau_measured,
        joint_names=tuple(true_robot.joint_names),
        ddq=ddq if params.record_acceleration else None,
        q_target=q_ref[rows].copy(),
        dq_target=dq_ref[rows].copy(),
        ddq_target=ddq_ref[rows].copy(),
        metadata=metadata,
    )


def joint_temperatures(params: SimulationParams, t: np.ndarray, n: int) -> np.ndarray | None:
    """(len(t), n) °C of the thermal model at the recorded times t (s), or None without one:
    linear from T_start at the first to T_end at the last sample, the same on every joint."""
    if params.temperature_c is None:
        return None
    start, end = params.temperature_c
    share = (t - t[0]) / (t[-1] - t[0]) if len(t) > 1 else np.zeros(len(t))
    return np.repeat((start + (end - start) * share)[:, None], n, axis=1)


def thermal_friction(
    model: mujoco.MjModel, robot: RobotModel, params: SimulationParams, t: np.ndarray
) -> Callable[[int], None] | None:
    """row -> set the model's damping (Nm·s/rad) and frictionloss (Nm) to the MJCF's scaled to
    the temperature of recorded row `row` (t: the recorded times, s); None without a thermal
    model or with k = 0."""
    temperature = joint_temperatures(params, t, robot.n_joints)
    if temperature is None or params.friction_temperature_coefficient == 0:
        return None
    dofs = np.array([model.jnt_dofadr[model.joint(name).id] for name in robot.joint_names])
    damping, frictionloss = model.dof_damping[dofs].copy(), model.dof_frictionloss[dofs].copy()
    k, t0 = float(params.friction_temperature_coefficient), float(params.friction_reference_c)

    def set_row(row: int) -> None:
        scale = 1.0 - k * (temperature[row] - t0)
        model.dof_damping[dofs] = damping * scale
        model.dof_frictionloss[dofs] = frictionloss * scale

    return set_row


def with_temperatures(dataset: Dataset, params: SimulationParams) -> Dataset:
    """The recording with its joint temperatures and the truth's thermal model, if any."""
    temperature = joint_temperatures(params, dataset.timestamp, dataset.n_joints)
    if temperature is None:
        return dataset
    dataset.metadata["truth"]["temperature"] = {
        "coefficient_per_k": float(params.friction_temperature_coefficient),
        "reference_c": float(params.friction_reference_c),
        "temperature_c": list(params.temperature_c),
    }
    return replace(dataset, temperature=temperature)
