"""The simulated robot behind the RTDE emulator: a MuJoCo arm stepped in real time.

The robot is the `mujoco` data source's seeded "real" robot (a known truth), under
`simulate`'s controller (nominal computed-torque feed-forward plus joint PD). `advance()` runs
one controller period and returns the RTDE fields of the state at its start: `actual_q` (rad,
quantised), `actual_qd` (rad/s), `actual_current_as_torque` (Nm, with noise), `actual_current`
(A), targets, `joint_temperatures` (°C, first-order I²R model), TCP pose and speed (base frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np
import pinocchio as pin

from ident_framework.hookspecs import Trajectory
from ident_framework.model.robot import RobotModel
from ident_framework.model.ur_description import UR_JOINTS
from ident_framework.simulation.perturbed_robot import PerturbationParams, perturb_robot
from ident_framework.simulation.tracking import (
    ENCODER_RESOLUTION,
    check_rates,
    controller_feedforward,
    default_gains,
    simulation_model,
)

UR_MOTOR_CONSTANTS = (13.2, 13.2, 9.3, 4.6, 4.6, 4.6)  # Nm/A per joint, illustrative
AMBIENT_C = 25.0  # °C
_THERMAL_TIME_CONSTANT_S = 600.0
_HEATING_C_PER_A2 = 0.8  # steady-state temperature rise per A² of RMS current


@dataclass
class TwinSettings:
    """seed: the simulated robot (as `source=mujoco source.seed=`); torque_noise_std: Nm;
    encoder_resolution: rad; sim_rate_hz / record_rate_hz: MuJoCo steps and RTDE samples per
    s; loop: restart a periodic trajectory at its end; motor_constants: Nm/A per joint (None:
    UR-like values for UR arms, 10 Nm/A otherwise)."""

    seed: int = 0
    noise_seed: int = 1
    torque_noise_std: float = 0.05
    encoder_resolution: float = ENCODER_RESOLUTION
    sim_rate_hz: float = 1000.0
    record_rate_hz: float = 500.0
    loop: bool = True
    motor_constants: list[float] | None = None
    perturbation: PerturbationParams = field(default_factory=PerturbationParams)


def is_periodic(trajectory: Trajectory, tolerance: float = 1e-6) -> bool:
    """True when the trajectory ends where it starts, at rest (it can loop without a jump)."""
    q, dq, ddq = trajectory.evaluate(np.array([0.0, trajectory.duration]))
    return bool(
        np.abs(q[1] - q[0]).max() < tolerance
        and np.abs(dq).max() < tolerance
        and np.abs(ddq).max() < 1e3 * tolerance
    )


class RealTimeTwin:
    """The simulated arm following `trajectory` (see the module docstring)."""

    def __init__(self, nominal: RobotModel, trajectory: Trajectory, settings: TwinSettings):
        self.nominal = nominal
        self.settings = settings
        self.true_robot, self.truth = perturb_robot(nominal, settings.perturbation, settings.seed)
        self.ratio = check_rates(settings.sim_rate_hz, settings.record_rate_hz)
        self.dt = 1.0 / settings.sim_rate_hz
        self.trajectory = trajectory
        self.looping = settings.loop and is_periodic(trajectory)
        n = nominal.n_joints
        self.n_steps = max(1, int(round(trajectory.duration * settings.sim_rate_hz)))
        time = np.arange(self.n_steps + 1) * self.dt
        self.q_ref, self.dq_ref, self.ddq_ref = trajectory.evaluate(time)
        self.feedforward = controller_feedforward(nominal, self.q_ref, self.dq_ref, self.ddq_ref)
        self.kp, self.kd = default_gains(self.true_robot, self.q_ref, settings.sim_rate_hz)
        # ctrl_k = ff_k + kp (q_ref,k - q_k) + kd (dq_ref,k - dq_k) = base_k - kp q_k - kd dq_k
        self.base = self.feedforward + self.kp * self.q_ref + self.kd * self.dq_ref
        constants = settings.motor_constants
        if constants is None:
            constants = UR_MOTOR_CONSTANTS if tuple(nominal.joint_names) == UR_JOINTS else [10.0]
        self.motor_constants = np.broadcast_to(np.asarray(constants, float), (n,)).copy()

        self.model = simulation_model(self.true_robot, settings.sim_rate_hz)
        self.data = mujoco.MjData(self.model)
        self.data.qpos[:], self.data.qvel[:] = self.q_ref[0], self.dq_ref[0]
        mujoco.mj_forward(self.model, self.data)
        self.rng = np.random.default_rng(settings.noise_seed)
        self.step_index = 0  # sim steps since start
        self.temperatures = np.full(n, AMBIENT_C + 5.0)
        self._pin = self.true_robot.pin_model
        self._pin_data = self._pin.createData()
        self._tcp_frame = self._pin.nframes - 1
        self._kp_q, self._kd_dq = np.empty(n), np.empty(n)

    def reference_index(self, step: int) -> int:
        """Row of the precomputed reference at sim step `step`."""
        return step % self.n_steps if self.looping else min(step, self.n_steps)

    def advance(self) -> dict[str, object]:
        """One controller period (see the module docstring): RTDE fields of its first step."""
        data, n = self.data, self.nominal.n_joints
        k0 = self.step_index
        row = self.reference_index(k0)
        q, dq = data.qpos.copy(), data.qvel.copy()
        tau = np.empty(n)
        ctrl = np.empty(n)
        for offset in range(self.ratio):
            index = self.reference_index(k0 + offset)
            np.multiply(self.kp, data.qpos, out=self._kp_q)
            np.multiply(self.kd, data.qvel, out=self._kd_dq)
            np.subtract(self.base[index], self._kp_q, out=data.ctrl)
            data.ctrl -= self._kd_dq
            if offset == 0:
                ctrl[:] = data.ctrl
            mujoco.mj_step(self.model, data)
            if offset == 0:
                tau[:] = data.qfrc_actuator
        self.step_index += self.ratio
        if not np.all(np.isfinite(data.qpos)):
            raise RuntimeError("the simulation diverged (non-finite joint positions)")

        settings = self.settings
        measured = tau + self.rng.normal(size=n) * settings.torque_noise_std
        resolution = settings.encoder_resolution
        q_measured = np.round(q / resolution) * resolution if resolution > 0 else q
        current = measured / self.motor_constants
        period = self.ratio * self.dt
        decay = period / _THERMAL_TIME_CONSTANT_S
        steady = AMBIENT_C + _HEATING_C_PER_A2 * current**2
        self.temperatures += decay * (steady - self.temperatures)
        pose, speed = self._tcp(q, dq)
        return {
            "timestamp": k0 * self.dt,
            "actual_q": q_measured,
            "actual_qd": dq,
            "actual_current": current,
            "actual_current_as_torque": measured,
            "target_q": self.q_ref[row],
            "target_qd": self.dq_ref[row],
            "target_qdd": self.ddq_ref[row],
            "target_moment": self.feedforward[row],
            "target_current": self.feedforward[row] / self.motor_constants,
            "joint_control_output": ctrl / self.motor_constants,
            "joint_temperatures": self.temperatures.copy(),
            "actual_TCP_pose": pose,
            "actual_TCP_speed": speed,
            "target_TCP_pose": pose,
            "target_TCP_speed": speed,
            "actual_joint_voltage": np.full(n, 48.0),
            "actual_main_voltage": 48.0,
            "actual_robot_voltage": 48.0,
            "actual_robot_current": float(np.abs(current).sum() / 10.0),
            "robot_mode": 7,  # RUNNING
            "joint_mode": [253] * n,  # JOINT_RUNNING
            "safety_mode": 1,  # NORMAL
            "safety_status": 1,
            "runtime_state": 2,  # PLAYING
            "robot_status_bits": 0b0011,  # power on, program running
            "safety_status_bits": 0b1,  # normal mode
            "speed_scaling": 1.0,
            "target_speed_fraction": 1.0,
        }

    def _tcp(self, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose [x, y, z, rx, ry, rz] (m, rad axis-angle) and spatial velocity (m/s, rad/s)
        of the last frame of the chain, in the base frame."""
        model, data = self._pin, self._pin_data
        pin.forwardKinematics(model, data, q, dq)
        placement = pin.updateFramePlacement(model, data, self._tcp_frame)
        velocity = pin.getFrameVelocity(
            model, data, self._tcp_frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        )
        pose = np.concatenate([placement.translation, pin.log3(placement.rotation)])
        return pose, np.concatenate([velocity.linear, velocity.angular])

    @property
    def time(self) -> float:
        """Simulated time (s) of the next sample."""
        return self.step_index * self.dt

    def describe(self) -> dict[str, object]:
        """What a user should know about the simulated robot."""
        return {
            "robot": self.nominal.name,
            "seed": self.settings.seed,
            "truth_origin": self.truth.origin,
            "trajectory": self.trajectory.describe(),
            "looping": self.looping,
            "motor_constants_nm_per_a": self.motor_constants.tolist(),
            "kp": self.kp.tolist(),
            "kd": self.kd.tolist(),
            "record_rate_hz": self.settings.record_rate_hz,
        }
