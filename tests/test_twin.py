"""Twin write-back: twin.xml / twin.urdf reproduce the written parameters in MuJoCo and
Pinocchio, invalid parameters are never written, and the twin is checked against the data."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from ident_framework.model.robot import RobotModel, load_robot
from ident_framework.reports.run_report import write_twin
from ident_framework.simulation.perturbed_robot import PerturbationParams, perturb_robot
from ident_framework.testing.cli import SHARED, run_cli
from ident_framework.twin.check import forward_divergence, mujoco_inverse_dynamics
from ident_framework.twin.export import (
    TwinDynamics,
    twin_model,
    twin_problems,
    twin_urdf_text,
)

TOLERANCE_NM = 1e-6


def states(n_joints: int, count: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-3.0, 3.0, (count, n_joints)) for _ in range(3))


def rigid_mujoco_inverse(model: mujoco.MjModel, q, dq, ddq) -> np.ndarray:
    """MuJoCo inverse dynamics without constraints (the friction loss is one): rigid body,
    armature and viscous damping."""
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    data = mujoco.MjData(model)
    out = np.empty_like(q)
    for k in range(len(q)):
        data.qpos[:], data.qvel[:], data.qacc[:] = q[k], dq[k], ddq[k]
        mujoco.mj_inverse(model, data)
        out[k] = data.qfrc_inverse
    return out


URDF_ARMS = ["kuka_lwr4/kuka_lwr4.urdf", "staubli_tx40/tx40_mdh_modified.urdf"]


@pytest.fixture(scope="module", params=["ur12e", "ur5e", *URDF_ARMS])
def known(request) -> tuple[RobotModel, RobotModel, TwinDynamics]:
    """A known robot (perturbed links, payload, friction, rotor inertia) and its parameters:
    built-in UR arms, and URDF arms from ../shared (skipped when absent)."""
    if request.param in URDF_ARMS:
        path = SHARED / "datasets" / request.param
        if not path.is_file():
            pytest.skip(f"{path} not available")
        nominal = load_robot("urdf", str(path))
    else:
        nominal = load_robot(request.param)
    true_robot, _ = perturb_robot(nominal, PerturbationParams(), seed=3)
    damping, frictionloss = true_robot.joint_friction()
    dynamics = TwinDynamics(
        true_robot.inertial_parameters(), true_robot.armature(), damping, frictionloss
    )
    return nominal, true_robot, dynamics


def test_twin_xml_round_trip_in_mujoco_and_pinocchio(known, tmp_path: Path):
    nominal, true_robot, dynamics = known
    write_twin(tmp_path, twin_model(nominal, dynamics))
    text = (tmp_path / "twin.xml").read_text()
    reloaded = RobotModel.from_mjcf_text("twin", text, expected_joints=nominal.joint_names)
    q, dq, ddq = states(nominal.n_joints)
    pin_error = np.abs(
        reloaded.inverse_dynamics(q, dq, ddq) - true_robot.inverse_dynamics(q, dq, ddq)
    )
    mj_error = np.abs(
        rigid_mujoco_inverse(mujoco.MjModel.from_xml_path(str(tmp_path / "twin.xml")), q, dq, ddq)
        - rigid_mujoco_inverse(true_robot.mujoco_model(), q, dq, ddq)
    )
    print(
        f"twin.xml round trip: Pinocchio {pin_error.max():.2e} Nm, MuJoCo {mj_error.max():.2e} Nm"
    )
    assert pin_error.max() < TOLERANCE_NM and mj_error.max() < TOLERANCE_NM
    damping, frictionloss = reloaded.joint_friction()
    np.testing.assert_array_equal(damping, dynamics.damping)
    np.testing.assert_array_equal(frictionloss, dynamics.frictionloss)
    np.testing.assert_array_equal(reloaded.armature(), dynamics.armature)
    # The rest of the model is untouched: same joints, limits and actuators as the robot's.
    model, original = reloaded.mujoco_model(), nominal.mujoco_model()
    assert model.nu == original.nu and model.njnt == original.njnt
    np.testing.assert_array_equal(model.jnt_range, original.jnt_range)


def test_twin_urdf_round_trip_in_pinocchio_and_mujoco(known, tmp_path: Path):
    nominal, true_robot, dynamics = known
    twin = twin_model(nominal, dynamics)
    path = tmp_path / "twin.urdf"
    path.write_text(twin_urdf_text(twin))
    # URDF has no rotor inertia: compare with the same robot without armature.
    without_armature = twin_model(
        nominal, TwinDynamics(dynamics.inertial, np.zeros(nominal.n_joints),
                              dynamics.damping, dynamics.frictionloss),
    )  # fmt: skip
    q, dq, ddq = states(nominal.n_joints, seed=1)
    model = pin.buildModelFromUrdf(str(path))
    assert tuple(model.names[1:]) == nominal.joint_names
    data = model.createData()
    from_urdf = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq, strict=True)])
    pin_error = np.abs(from_urdf - without_armature.inverse_dynamics(q, dq, ddq)).max()
    mj_model = mujoco.MjModel.from_xml_path(str(path))  # MuJoCo's own URDF importer
    mj_error = np.abs(
        rigid_mujoco_inverse(mj_model, q, dq, ddq)
        - rigid_mujoco_inverse(without_armature.mujoco_model(), q, dq, ddq)
    ).max()
    print(f"twin.urdf round trip: Pinocchio {pin_error:.2e} Nm, MuJoCo {mj_error:.2e} Nm")
    assert pin_error < TOLERANCE_NM and mj_error < TOLERANCE_NM
    np.testing.assert_allclose(mj_model.dof_frictionloss, dynamics.frictionloss, rtol=1e-12)
    np.testing.assert_allclose(mj_model.dof_damping, dynamics.damping, rtol=1e-12)


def test_invalid_parameters_are_named_per_link_and_joint():
    robot = load_robot("ur5e")
    inertial = robot.inertial_parameters().copy()
    inertial[20] = -1.0  # mass of the third link
    friction = np.ones(6)
    friction[1] = -0.5
    problems = twin_problems(robot, TwinDynamics(inertial, robot.armature(), friction, np.ones(6)))
    assert any(p.startswith("link of elbow_joint: mass") for p in problems), problems
    assert any("shoulder_lift_joint: viscous friction" in p for p in problems), problems
    valid = TwinDynamics(robot.inertial_parameters(), robot.armature(), np.ones(6), np.ones(6))
    assert twin_problems(robot, valid) == []


def test_twin_check_on_its_own_simulation_is_exact():
    """Data simulated by a model: that model's MuJoCo inverse dynamics reproduce the recorded
    torques on moving samples, and driving it with them follows the recording closely."""
    from ident_framework.simulation.tracking import SimulationParams, simulate
    from ident_framework.trajectories.fourier import FourierGenerator
    from ident_framework.trajectories.fourier.params import FourierParams

    robot = load_robot("ur5e")
    true_robot, _ = perturb_robot(robot, PerturbationParams(), seed=1)
    motion = FourierGenerator(FourierParams(n_candidates=20, n_refine=0, progress=False))
    params = SimulationParams(
        torque_noise_std=0.0, encoder_resolution=0.0, record_acceleration=True
    )
    data = simulate(true_robot, robot, motion.generate(robot, None, 1), params, 0, progress=False)
    tau = mujoco_inverse_dynamics(true_robot, data.q, data.dq, data.ddq)
    moving = np.all(np.abs(data.dq) > 0.05, axis=1)
    error = np.abs(tau - data.tau)[moving].max()
    divergence = forward_divergence(true_robot, data)
    nominal = forward_divergence(robot, data)
    after = divergence["0.5s"]["max"]
    print(f"own-simulation inverse dynamics error {error:.2e} Nm; divergence 0.5 s: {after:.2e}")
    assert error < 0.05
    # Open loop the error of the 500 Hz zero-order hold grows (measured 0.004 rad after 0.5 s,
    # up to 1.7 rad after 2 s in one window); the nominal model falls away at once.
    assert divergence["0.5s"]["max"] < 0.01 < nominal["0.5s"]["max"]


@pytest.mark.slow
def test_consistent_run_writes_a_twin_that_matches_the_identified_model(tmp_path: Path):
    run = tmp_path / "run"
    fast = ("trajectory.n_candidates=60", "trajectory.n_refine=300", "trajectory.progress=false")
    result = run_cli("estimator=consistent", *fast, "plots=false", f"hydra.run.dir={run}")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    twin = metrics["twin"]
    moving = twin["moving_samples"]
    print(
        json.dumps(moving),
        twin["inverse_dynamics"]["rmse"],
        metrics["validation"]["physical"]["rmse"],
    )
    assert abs(moving["ratio_twin_to_identified"] - 1.0) < 0.02
    assert twin["inverse_dynamics"]["rmse"] <= 1.02 * metrics["validation"]["physical"]["rmse"]
    assert (
        twin["forward_divergence_rad"]["0.5s"]["max"]
        < twin["forward_divergence_rad_nominal"]["0.5s"]["max"]
    )
    robot = RobotModel.from_mjcf_text("twin", (run / "twin.xml").read_text())
    assert robot.joint_names == load_robot("ur12e").joint_names
    assert pin.buildModelFromUrdf(str(run / "twin.urdf")).nq == 6
    assert "twin written" in result.stdout

    plain = tmp_path / "ls"
    refused = run_cli("estimator=ls", *fast, "plots=false", f"hydra.run.dir={plain}")
    assert refused.returncode == 0, refused.stderr[-3000:]
    assert not (plain / "twin.xml").exists() and not (plain / "twin.urdf").exists()
    assert "twin not written" in refused.stdout and "estimator=consistent" in refused.stdout
    assert "link of" in refused.stdout
    reasons = json.loads((plain / "metrics.json").read_text())["twin_not_written"]
    assert reasons and all(reason.split(":")[0] for reason in reasons)


def test_forward_divergence_is_the_twin_stepped_by_the_recorded_torques():
    """The batched rollout equals MuJoCo stepped by hand from each window's recorded state,
    with the recorded torque held from the last sample at or before each step's time."""
    from ident_framework.data.dataset import Dataset

    robot = load_robot("ur5e")
    rng = np.random.default_rng(4)
    t = np.cumsum(rng.uniform(0.0015, 0.0025, 600))  # jittery, ~500 Hz
    q = 0.3 * np.sin(np.outer(t, np.arange(1, 7)) * 0.7)
    dq = 0.3 * 0.7 * np.arange(1, 7) * np.cos(np.outer(t, np.arange(1, 7)) * 0.7)
    tau = rng.normal(0.0, 5.0, (len(t), 6))
    data = Dataset(t, q, dq, tau, robot.joint_names)
    horizons = (0.1, 0.3)
    found = forward_divergence(robot, data, horizons, n_windows=3)

    model = robot.mujoco_model()
    state = mujoco.MjData(model)
    qpos = [model.joint(name).qposadr[0] for name in robot.joint_names]
    dof = [model.joint(name).dofadr[0] for name in robot.joint_names]
    dt = model.opt.timestep
    starts = np.searchsorted(t, np.linspace(t[0], t[-1] - max(horizons), 3))
    errors = {h: [] for h in horizons}
    for start in starts:
        mujoco.mj_resetData(model, state)
        state.qpos[qpos], state.qvel[dof] = q[start], dq[start]
        for step in range(int(np.ceil(max(horizons) / dt - 1e-9))):
            now = t[start] + step * dt
            state.qfrc_applied[dof] = tau[np.searchsorted(t, now + 1e-12, side="right") - 1]
            mujoco.mj_step(model, state)
            for h in horizons:
                if step + 1 == int(np.ceil(h / dt - 1e-9)):
                    index = min(np.searchsorted(t, t[start] + h - 1e-9), len(t) - 1)
                    errors[h].append(np.abs(state.qpos[qpos] - q[index]))
    assert found["windows"] == 3
    for h in horizons:
        expected = np.sqrt((np.asarray(errors[h]) ** 2).mean(axis=0))
        np.testing.assert_allclose(found[f"{h:g}s"]["rms_per_joint"], expected, rtol=1e-12)


def test_twin_metrics_of_a_recording_at_rest_report_no_moving_comparison():
    """A validation recording where no joint moves (an emulated arm that stayed still): the
    moving-sample comparison is absent (None), not a division by zero, and the summary says so."""
    from ident_framework.data.dataset import Dataset
    from ident_framework.reports.summary import twin_lines
    from ident_framework.twin.check import twin_metrics

    robot = load_robot("ur12e")
    count, n = 400, robot.n_joints
    q = np.tile(np.array([0.0, -1.57, 1.57, -1.57, -1.57, 0.0]), (count, 1))
    zeros = np.zeros((count, n))
    tau = mujoco_inverse_dynamics(robot, q, zeros, zeros)
    data = Dataset(np.arange(count) * 0.002, q, zeros, tau, robot.joint_names, ddq=zeros)
    metrics = twin_metrics(robot, robot, data, tau)
    moving = metrics["moving_samples"]
    assert moving["fraction"] == 0.0
    assert moving["twin_mujoco_rmse"] is None and moving["ratio_twin_to_identified"] is None
    lines = twin_lines(SimpleNamespace(metrics={"twin": metrics}))
    assert any("no validation sample moves" in line for line in lines), lines


def test_inverse_dynamics_equals_mj_inverse_sample_by_sample():
    """`mujoco_inverse_dynamics` (whole rows copied into MjData) gives, bit for bit, what
    setting the joints' entries and calling `mj_inverse` sample by sample gives."""
    robot = load_robot("ur10e")
    rng = np.random.default_rng(7)
    q, dq, ddq = (rng.normal(size=(50, robot.n_joints)) for _ in range(3))
    model = robot.mujoco_model()
    data = mujoco.MjData(model)
    joints = [model.joint(name) for name in robot.joint_names]
    qpos = [j.qposadr[0] for j in joints]
    dof = [j.dofadr[0] for j in joints]
    expected = np.empty_like(q)
    for k in range(len(q)):
        data.qpos[qpos], data.qvel[dof], data.qacc[dof] = q[k], dq[k], ddq[k]
        mujoco.mj_inverse(model, data)
        expected[k] = data.qfrc_inverse[dof]
    assert np.array_equal(mujoco_inverse_dynamics(robot, q, dq, ddq), expected)
