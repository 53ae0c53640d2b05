"""One MJCF description feeds both engines: Pinocchio and MuJoCo must agree."""

from __future__ import annotations

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from ident_framework.errors import UserError
from ident_framework.model.robot import load_robot
from ident_framework.model.ur_description import UR_JOINTS
from ident_framework.testing.cli import SHARED


def _compare_engines(robot, n_states: int = 50, seed: int = 0) -> tuple[float, float]:
    """Max torque difference (Nm) and max FK difference of the engines at random states."""
    model = robot.mujoco_model()
    data = mujoco.MjData(model)
    pdata = robot.pin_model.createData()
    rng = np.random.default_rng(seed)
    low, high = robot.limits.position.T
    damping = robot.joint_friction()[0]  # Pinocchio ignores damping; MuJoCo's inverse has it
    torque_error = frame_error = 0.0
    for _ in range(n_states):
        q = rng.uniform(np.maximum(low, -np.pi), np.minimum(high, np.pi))
        dq = rng.uniform(-1, 1, robot.n_joints) * robot.limits.velocity
        ddq = rng.uniform(-1, 1, robot.n_joints) * robot.limits.acceleration
        data.qpos[:], data.qvel[:], data.qacc[:] = q, dq, ddq
        mujoco.mj_inverse(model, data)
        tau = pin.rnea(robot.pin_model, pdata, q, dq, ddq) + damping * dq
        torque_error = max(torque_error, float(np.abs(tau - data.qfrc_inverse).max()))
        pin.forwardKinematics(robot.pin_model, pdata, q)
        for j, name in enumerate(robot.joint_names):
            body = model.jnt_bodyid[model.joint(name).id]
            placement = pdata.oMi[j + 1]
            frame_error = max(
                frame_error,
                float(np.abs(placement.translation - data.xpos[body]).max()),
                float(np.abs(placement.rotation - data.xmat[body].reshape(3, 3)).max()),
            )
    return torque_error, frame_error


@pytest.mark.parametrize("name", ["ur12e", "ur10e", "ur5e"])
def test_builtin_robot_engines_agree(name):
    robot = load_robot(name)
    assert robot.joint_names == UR_JOINTS
    torque_error, frame_error = _compare_engines(robot)
    assert torque_error < 1e-8
    assert frame_error < 1e-10
    # with rotor inertia: Pinocchio reads MuJoCo's armature and includes it in rnea
    loaded = robot.with_dynamics(armature=np.linspace(0.4, 0.04, 6))
    np.testing.assert_allclose(loaded.armature(), np.linspace(0.4, 0.04, 6))
    assert _compare_engines(loaded)[0] < 1e-8


def test_ur_published_data_is_used():
    robot = load_robot("ur10e")
    masses = robot.inertial_parameters()[0::10]
    np.testing.assert_allclose(masses, [7.369, 13.051, 3.989, 2.1, 1.98, 0.615])
    np.testing.assert_allclose(robot.limits.effort, [330, 330, 150, 54, 54, 54])
    np.testing.assert_allclose(np.degrees(robot.limits.velocity), [120, 120, 180, 180, 180, 180])
    ur5e = load_robot("ur5e")
    # UR5e: shoulder height d1 = 0.1625 m
    data = ur5e.pin_model.createData()
    pin.forwardKinematics(ur5e.pin_model, data, np.zeros(6))
    assert data.oMi[1].translation[2] == pytest.approx(0.1625)


def test_with_dynamics_round_trip():
    robot = load_robot("ur12e")
    theta = robot.inertial_parameters()
    changed = robot.with_dynamics(inertial=theta * 1.1, damping=np.full(6, 2.0))
    np.testing.assert_allclose(changed.inertial_parameters(), theta * 1.1, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(changed.joint_friction()[0], 2.0)
    assert _compare_engines(changed)[0] < 1e-8


@pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="shared datasets absent")
@pytest.mark.parametrize(
    "path", ["kuka_lwr4/kuka_lwr4.urdf", "staubli_tx40/tx40_mdh_modified.urdf"]
)
def test_urdf_arms_load_into_both_engines(path):
    robot = load_robot("urdf", str(SHARED / "datasets" / path))
    assert robot.n_joints in (6, 7)
    assert np.all(np.isfinite(robot.limits.velocity))
    torque_error, frame_error = _compare_engines(robot)
    assert torque_error < 1e-8 and frame_error < 1e-10
    # the URDF read by Pinocchio directly gives the same dynamics (up to MuJoCo's XML digits)
    direct = pin.buildModelFromUrdf(str(SHARED / "datasets" / path))
    q = np.full(robot.n_joints, 0.3)
    tau_direct = pin.rnea(direct, direct.createData(), q, q, q)
    tau = pin.rnea(robot.pin_model, robot.pin_model.createData(), q, q, q)
    np.testing.assert_allclose(tau, tau_direct, atol=1e-6)


def test_mjcf_robot_from_file(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(load_robot("ur5e").mjcf)
    robot = load_robot("mjcf", str(path))
    assert robot.joint_names == UR_JOINTS
    assert _compare_engines(robot)[0] < 1e-8


def test_bad_robot_inputs_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="robot.path"):
        load_robot("urdf", None)
    with pytest.raises(UserError, match="does not exist"):
        load_robot("mjcf", str(tmp_path / "missing.xml"))
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='x'><link name='a'>")
    with pytest.raises(UserError, match="broken.urdf"):
        load_robot("urdf", str(broken))
    with pytest.raises(UserError, match="unknown robot 'ur3'"):
        load_robot("ur3")
