"""Simulated robot, MuJoCo simulation, `mujoco` data source and `point_to_point` trajectories."""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
import pytest
import yaml

from ident_framework.errors import UserError
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.hookspecs import Trajectory
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.rtde.emulated_arm import is_periodic
from ident_framework.simulation.perturbed_robot import (
    PerturbationParams,
    SimulatedTruth,
    link_is_valid,
    perturb_robot,
    truth_from_robot,
)
from ident_framework.simulation.tracking import SimulationParams, simulate
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.trajectories.point_to_point import (
    PointToPointGenerator,
    PointToPointParams,
    PointToPointTrajectory,
)

EXACT = SimulationParams(record_acceleration=True, torque_noise_std=0.0, encoder_resolution=0.0)
MOVING = 0.05  # rad/s: above this MuJoCo's friction loss equals Coulomb x sign(dq)


class Sinusoid:
    """Smooth reference: q_j = q0_j + a_j sin(w_j t)."""

    duration = 8.0
    q0 = np.array([0.0, -1.2, 1.0, -1.5, -1.5, 0.0])
    amplitude = np.array([0.5, 0.4, 0.4, 0.6, 0.6, 0.8])
    omega = 2 * np.pi * np.array([0.2, 0.15, 0.25, 0.3, 0.35, 0.4])

    def evaluate(self, t):
        t = np.asarray(t, dtype=float)[:, None]
        a, w = self.amplitude, self.omega
        return (
            self.q0 + a * np.sin(w * t),
            a * w * np.cos(w * t),
            -a * w**2 * np.sin(w * t),
        )

    def describe(self):
        return {"generator": "sinusoid"}


@pytest.fixture(scope="module")
def robot():
    return load_robot("ur12e")


@pytest.fixture(scope="module")
def truth_robot(robot):
    return perturb_robot(robot, PerturbationParams(), seed=0)


@pytest.fixture(scope="module")
def motion(robot):
    # joint limits only: this motion checks the simulator, whose exactness needs no workspace
    # (inside the default one, seed 1 has a wrist_3 sample at 0.055 rad/s with 2.5 rad/s²,
    # where MuJoCo's soft friction loss is 0.0016 Nm off Coulomb x sign(dq): DESIGN.md)
    return PointToPointGenerator(PointToPointParams(workspace=None)).generate(robot, None, seed=1)


@pytest.fixture(scope="module")
def exact_data(robot, truth_robot, motion):
    true_robot, truth = truth_robot
    return simulate(true_robot, robot, motion, EXACT, seed=0, progress=False, truth=truth)


@pytest.fixture(scope="module")
def source_data(robot, motion):
    source = MujocoSource(MujocoSourceParams())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. a torque-saturation warning fails the test
        start = time.perf_counter()
        identification = source.acquire(robot, motion, "identification")
        elapsed = time.perf_counter() - start
        validation = source.acquire(robot, motion, "validation")
    return identification, validation, elapsed


# ---------------------------------------------------------------- simulated robot
def test_perturbed_robot_is_valid_and_differs(robot, truth_robot):
    true_robot, truth = truth_robot
    nominal = robot.inertial_parameters().reshape(-1, 10)
    links = truth.inertial.reshape(-1, 10)
    assert all(link_is_valid(link) for link in links)
    assert np.all(np.abs(links[:, 0] / nominal[:, 0] - 1) > 1e-3)  # every mass changed
    assert not np.allclose(links[:, 1:4], nominal[:, 1:4], atol=1e-3)
    # the payload sits on wrist_3: 1.5 kg at 5 cm along +z of the flange frame
    assert truth.payload["link"] == "wrist_3_link"
    assert links[5, 0] > nominal[5, 0] + 1.0
    assert links[5, 3] > 0.03  # m*cz: nominal -0.016, payload +1.5 kg x 0.05 m
    # what the MJCF holds is the truth (friction, rotor inertia, links)
    np.testing.assert_allclose(true_robot.inertial_parameters(), truth.inertial)
    viscous, coulomb = true_robot.joint_friction()
    np.testing.assert_allclose(viscous, truth.viscous)
    np.testing.assert_allclose(coulomb, truth.coulomb)
    np.testing.assert_allclose(true_robot.armature(), truth.armature)
    assert np.all(truth.viscous > 0) and np.all(truth.coulomb > 0)
    np.testing.assert_allclose(truth_from_robot(true_robot).inertial, truth.inertial)
    restored = SimulatedTruth.from_dict(yaml.safe_load(yaml.safe_dump(truth.to_dict())))
    np.testing.assert_allclose(restored.inertial, truth.inertial)


@pytest.mark.parametrize("seed", range(1, 6))
def test_perturbation_keeps_links_valid(robot, seed):
    params = PerturbationParams(mass_std=0.3, com_std_m=0.03, inertia_std=0.5)
    _, truth = perturb_robot(robot, params, seed)
    assert all(link_is_valid(link) for link in truth.inertial.reshape(-1, 10))


def test_same_seed_same_robot(robot, truth_robot):
    again, truth = perturb_robot(robot, PerturbationParams(), seed=0)
    assert again.mjcf == truth_robot[0].mjcf
    np.testing.assert_array_equal(truth.inertial, truth_robot[1].inertial)
    _, other = perturb_robot(robot, PerturbationParams(), seed=1)
    assert not np.allclose(other.inertial, truth.inertial)


# ---------------------------------------------------------------- simulation
def test_recorded_torque_is_exact_inverse_dynamics(robot, truth_robot, exact_data):
    """tau_k = M(q_k) qacc_k + h(q_k, dq_k) + armature qacc_k + fv dq_k + fc sign(dq_k)."""
    true_robot, truth = truth_robot
    data = exact_data
    moving = np.abs(data.dq) > MOVING
    assert moving.mean() > 0.3
    # Pinocchio's rnea includes the armature (rotor inertia) loaded from the MJCF.
    rnea = true_robot.inverse_dynamics(data.q, data.dq, data.ddq)
    expected = rnea + truth.viscous * data.dq + truth.coulomb * np.sign(data.dq)
    error = np.abs(data.tau - expected)[moving]
    assert error.max() < 1e-4, error.max()
    # The regressor (armature as its own column) with the true parameters says the same.
    builder = RegressorBuilder(true_robot, CoulombViscousFriction(CoulombViscousParams(0.0)))
    theta = builder.standard_parameters(
        truth.inertial, np.stack([truth.viscous, truth.coulomb], axis=1), truth.armature
    )
    rows = slice(0, None, 10)
    predicted = builder.compute(data.q[rows], data.dq[rows], data.ddq[rows]) @ theta
    error = np.abs(data.tau[rows] - predicted)[moving[rows]]
    assert error.max() < 1e-4, error.max()


def test_cogging_appears_in_the_recorded_torque(robot, truth_robot, motion, exact_data):
    """unmodelled=cogging: the recorded torque minus the rigid-body + friction torque is
    A_j sin(n_j q_j + phi_j), A_j = scale x 1 % of the effort limit; nothing when off."""
    true_robot, truth = truth_robot
    periods, phase = [2, 3, 2, 1, 3, 2], [0.0, 0.4, -1.0, 2.0, 0.3, 1.5]
    params = dataclasses.replace(
        EXACT, unmodelled="cogging", unmodelled_scale=1.5, cogging_periods=periods,
        cogging_phase_rad=phase,
    )  # fmt: skip
    data = simulate(true_robot, robot, motion, params, seed=0, progress=False, truth=truth)
    moving = np.abs(data.dq) > MOVING

    def unexplained(recording):
        rnea = true_robot.inverse_dynamics(recording.q, recording.dq, recording.ddq)
        friction = truth.viscous * recording.dq + truth.coulomb * np.sign(recording.dq)
        return recording.tau - rnea - friction

    amplitude = 1.5 * 0.01 * np.asarray(robot.limits.effort)
    expected = amplitude * np.sin(np.array(periods) * data.q + np.array(phase))
    error = np.abs(unexplained(data) - expected)[moving]
    assert error.max() < 1e-4, error.max()
    assert np.all(np.ptp(expected, axis=0) > 1.5 * amplitude)  # the motion sweeps the ripple
    # A wrong period or phase would not fit: sin(n q) is no stand-in for sin(2n q).
    wrong = amplitude * np.sin(2 * np.array(periods) * data.q + np.array(phase))
    assert np.abs(unexplained(data) - wrong)[moving].max() > 0.3 * amplitude.min()
    assert data.metadata["unmodelled"]["amplitude_nm"] == pytest.approx(amplitude.tolist())
    assert data.metadata["unmodelled"]["periods"] == periods
    # Off (scale 0 or none): the recorded torque is the rigid body + friction alone.
    off = simulate(
        true_robot, robot, motion, dataclasses.replace(params, unmodelled_scale=0.0), seed=0,
        progress=False, truth=truth,
    )  # fmt: skip
    np.testing.assert_array_equal(off.tau, exact_data.tau)


def test_cogging_keys_are_checked(robot, motion):
    for bad in (0, 1.5, [2, -1], 13):
        with pytest.raises((ValueError, TypeError), match="cogging_periods"):
            SimulationParams(cogging_periods=bad)
    with pytest.raises(ValueError, match="cogging_phase_rad"):
        SimulationParams(cogging_phase_rad=float("nan"))
    with pytest.raises(UserError, match=r"validation\.cogging_periods has 2 values"):
        MujocoSource(MujocoSourceParams(unmodelled="cogging", cogging_periods=[2, 3])).acquire(
            robot, motion, "validation"
        )


def test_rows_pair_state_torque_and_acceleration(robot, truth_robot):
    """Recording every step: dq_{k+1} = dq_k + dt qacc_k, i.e. row k's torque and
    acceleration belong to the step that starts at row k's state."""
    true_robot, truth = truth_robot
    motion = PointToPointGenerator(PointToPointParams(duration_s=4.0)).generate(robot, None, 3)
    params = SimulationParams(
        record_rate_hz=1000.0, record_acceleration=True, torque_noise_std=0.0,
        encoder_resolution=0.0,
    )  # fmt: skip
    data = simulate(true_robot, robot, motion, params, seed=0, progress=False, truth=truth)
    dt = 1e-3
    np.testing.assert_allclose(np.diff(data.dq, axis=0) / dt, data.ddq[:-1], atol=1e-8)
    np.testing.assert_allclose(np.diff(data.q, axis=0) / dt, data.dq[1:], atol=1e-8)


def test_recording_rate_and_shapes(exact_data, motion):
    data = exact_data
    assert data.n_samples == int(round(motion.duration * 500)) + 1
    steps = np.diff(data.timestamp)
    np.testing.assert_allclose(steps, 1 / 500, rtol=0, atol=1e-12)
    assert data.timestamp[0] == 0.0
    for name in ("q", "dq", "tau", "ddq", "q_target", "dq_target", "ddq_target"):
        assert getattr(data, name).shape == (data.n_samples, 6), name
    q_ref, dq_ref, _ = motion.evaluate(data.timestamp)
    np.testing.assert_array_equal(data.q_target, q_ref)
    np.testing.assert_array_equal(data.dq_target, dq_ref)
    assert data.metadata["record_rate_hz"] == 500.0 and data.metadata["sim_rate_hz"] == 1000.0
    yaml.safe_dump(data.metadata)  # plain types only
    assert data.metadata["truth"]["payload"]["mass_kg"] == 1.5


def test_source_tracking_speed_and_saturation(source_data, robot):
    identification, _, elapsed = source_data
    assert elapsed < 4.0, f"20 s of simulation took {elapsed:.2f} s"
    assert identification.ddq is None  # not recorded by default
    # Nominal feed-forward + PD on a robot with unknown payload, friction and rotor inertia.
    error = np.abs(identification.q - identification.q_target)
    assert error.max() < 0.02, error.max(axis=0)
    assert max(identification.metadata["saturated_fraction"]) == 0.0
    assert np.all(np.abs(identification.tau) < robot.limits.effort)
    # metadata of the source
    assert "true_robot_mjcf" in identification.metadata
    assert identification.metadata["truth"]["origin"].startswith("perturbed ur12e")
    # positions on the 20-bit encoder grid
    ticks = identification.q / (2 * np.pi / 2**20)
    np.testing.assert_allclose(ticks, np.round(ticks), atol=1e-6)


def test_roles_differ_only_in_noise(source_data):
    identification, validation, _ = source_data
    np.testing.assert_array_equal(identification.q, validation.q)
    np.testing.assert_array_equal(identification.dq, validation.dq)
    assert identification.metadata["truth"] == validation.metadata["truth"]
    difference = identification.tau - validation.tau
    assert np.all(difference != 0)
    np.testing.assert_allclose(difference.std(), np.sqrt(2) * 0.05, rtol=0.05)


def test_tracking_with_exact_model_and_smooth_reference(robot, truth_robot, motion):
    true_robot, truth = truth_robot
    perfect = simulate(true_robot, true_robot, motion, EXACT, 0, progress=False, truth=truth)
    assert np.max(np.abs(perfect.q - perfect.q_target)) < 2e-3
    assert np.max(perfect.metadata["tracking_error_rms_rad"]) < 5e-4
    sine = Sinusoid()
    nominal = simulate(true_robot, robot, sine, EXACT, 0, progress=False, truth=truth)
    assert np.max(np.abs(nominal.q - nominal.q_target)) < 0.02
    exact = simulate(true_robot, true_robot, sine, EXACT, 0, progress=False, truth=truth)
    assert np.max(np.abs(exact.q - exact.q_target)) < 1e-3


def test_stable_without_rotor_inertia(robot):
    """The nominal UR has no armature: default gains are lowered to keep Euler stable."""
    motion = PointToPointGenerator(PointToPointParams(duration_s=4.0)).generate(robot, None, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = simulate(robot, robot, motion, EXACT, 0, progress=False)
    assert np.max(np.abs(data.q - data.q_target)) < 5e-3


def test_model_path_simulates_a_file(robot, truth_robot, tmp_path):
    true_robot, truth = truth_robot
    file = tmp_path / "real.xml"
    file.write_text(true_robot.mjcf)
    motion = PointToPointGenerator(PointToPointParams(duration_s=3.0)).generate(robot, None, 4)
    source = MujocoSource(
        MujocoSourceParams(model_path=str(file), torque_noise_std=0.0, seed=5, viscous=[1.0])
    )
    data = source.acquire(robot, motion, "identification")
    read = data.metadata["truth"]
    np.testing.assert_allclose(read["inertial"], truth.inertial, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(read["coulomb"], truth.coulomb)
    assert read["origin"] == str(file)
    reference = simulate(true_robot, robot, motion, EXACT, 0, progress=False, truth=truth)
    np.testing.assert_allclose(data.dq, reference.dq, atol=1e-9)


def test_source_errors_name_the_config_key(robot, motion):
    with pytest.raises(UserError, match=r"source\.coulomb has 2 values"):
        MujocoSource(MujocoSourceParams(coulomb=[1.0, 2.0])).acquire(robot, motion, "x")
    with pytest.raises(UserError, match=r"validation\.kd"):
        MujocoSource(MujocoSourceParams(kd=[1.0])).acquire(robot, motion, "validation")
    with pytest.raises(UserError, match="model_path"):
        MujocoSource(MujocoSourceParams(model_path="/no/such.xml")).acquire(
            robot, motion, "identification"
        )
    with pytest.raises(ValueError, match="record_rate_hz"):
        MujocoSourceParams(record_rate_hz=300.0)
    with pytest.raises(ValueError, match="mass_std"):
        MujocoSourceParams(mass_std=-0.1)


# ---------------------------------------------------------------- point_to_point
def test_point_to_point_limits_rest_and_slow_moves(robot, motion):
    params = PointToPointParams()
    assert isinstance(motion, Trajectory)
    assert motion.duration == pytest.approx(params.duration_s)
    t = np.linspace(0.0, motion.duration, 20001)
    q, dq, ddq = motion.evaluate(t)
    for index in (0, -1):  # at rest at both ends
        assert np.all(dq[index] == 0.0) and np.all(ddq[index] == 0.0)
    limits = robot.limits
    assert np.all(q >= limits.position[:, 0] + params.position_margin_rad - 1e-12)
    assert np.all(q <= limits.position[:, 1] - params.position_margin_rad + 1e-12)
    assert np.all(np.abs(dq) <= params.fast_speed[1] * limits.velocity + 1e-9)
    assert np.all(np.abs(ddq) <= params.acceleration_margin * limits.acceleration + 1e-9)
    tau = robot.inverse_dynamics(q[::10], dq[::10], ddq[::10])
    assert np.all(np.abs(tau) <= params.torque_margin * limits.effort * 1.001)
    # slow moves: peak speed of every joint within 3-10 % of its limit
    assert motion.slow.sum() >= 2
    knots = motion.knots
    fast_seen = False
    for piece in range(len(knots) - 1):
        inside = (t > knots[piece]) & (t < knots[piece + 1])
        peak = np.abs(dq[inside]).max(axis=0) / limits.velocity
        if motion.slow[piece]:
            assert np.all(peak <= params.slow_speed[1] + 1e-9) and peak.max() > 0.01
        elif peak.max() > params.fast_speed[0]:
            fast_seen = True
    assert fast_seen


def test_point_to_point_is_deterministic(robot, motion):
    generator = PointToPointGenerator(PointToPointParams(workspace=None))
    again = generator.generate(robot, None, seed=1)
    np.testing.assert_array_equal(again.knots, motion.knots)
    np.testing.assert_array_equal(again.waypoints, motion.waypoints)
    other = generator.generate(robot, None, seed=2)
    assert not np.array_equal(other.waypoints[1:], motion.waypoints[1:])
    rebuilt = PointToPointTrajectory.from_description(
        yaml.safe_load(yaml.safe_dump(motion.describe()))
    )
    t = np.linspace(0, motion.duration, 777)
    for a, b in zip(rebuilt.evaluate(t), motion.evaluate(t), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_point_to_point_there_and_back_retraces_its_path_and_loops(motion):
    """mode=online's looped validation motion: the same pieces in reverse, back at rest where
    it started (periodic), with the same speeds mirrored in time and sign."""
    looped = motion.there_and_back()
    assert looped.duration == pytest.approx(2 * motion.duration)
    assert is_periodic(looped) and not is_periodic(motion)
    t = np.linspace(0.0, motion.duration, 4001)
    q, dq, ddq = motion.evaluate(t)
    q_back, dq_back, ddq_back = looped.evaluate(2 * motion.duration - t)
    np.testing.assert_allclose(q_back, q, atol=1e-12)
    np.testing.assert_allclose(dq_back, -dq, atol=1e-12)
    np.testing.assert_allclose(ddq_back, ddq, atol=1e-9)
    assert looped.slow.sum() == 2 * motion.slow.sum()


def test_point_to_point_params_are_checked():
    with pytest.raises(ValueError, match="slow_fraction"):
        PointToPointParams(slow_fraction=1.5)
    with pytest.raises(ValueError, match="fast_speed"):
        PointToPointParams(fast_speed=[0.5, 1.5])
    with pytest.raises(ValueError, match="duration_s"):
        PointToPointParams(duration_s=0.5)
