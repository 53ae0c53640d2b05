"""Joint torque regressor: tau = Y(q, dq, ddq) @ theta, linear in the standard parameters.

Columns, in order: Pinocchio's 10 inertial parameters per link
(`computeJointTorqueRegressor`), then per joint the friction model's parameters, then
optionally the rotor inertia (armature, column ddq_j on joint j) and a constant torque offset.
Pinocchio's regressor has no armature column (although `rnea` includes armature), so it is
added here. Rows are (sample, joint): the regressor of N samples has shape (N, n, p).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .interfaces import FrictionModel
from .robot_model import RobotModel

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


class RegressorBuilder:
    """Builds the regressor of one robot with one friction model, chunk by chunk."""

    def __init__(
        self,
        robot: RobotModel,
        friction: FrictionModel,
        armature: bool = True,
        torque_offset: bool = False,
    ):
        self.robot = robot
        self.friction = friction
        self.armature = armature
        self.torque_offset = torque_offset
        self._model = robot.pin_model
        self._data = self._model.createData()
        n = robot.n_joints
        self.n_inertial = 10 * n
        self.n_friction = len(friction.parameter_names) * n

    @property
    def parameter_names(self) -> list[str]:
        """Standard parameter names, e.g. `m_1`, `Izz_6`, `fv_2`, `Ia_3`, `offset_1` (1-based)."""
        n = self.robot.n_joints
        names = [f"{p}_{j + 1}" for j in range(n) for p in INERTIAL_NAMES]
        names += [f"{p}_{j + 1}" for j in range(n) for p in self.friction.parameter_names]
        if self.armature:
            names += [f"Ia_{j + 1}" for j in range(n)]
        if self.torque_offset:
            names += [f"offset_{j + 1}" for j in range(n)]
        return names

    @property
    def n_parameters(self) -> int:
        return len(self.parameter_names)

    def rigid_body(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, 10 n) Pinocchio joint torque regressor (one compiled call per sample)."""
        n_samples, n = q.shape
        out = np.empty((n_samples, n, self.n_inertial))
        model, data = self._model, self._data
        for k in range(n_samples):
            out[k] = pin.computeJointTorqueRegressor(model, data, q[k], dq[k], ddq[k])
        return out

    def compute(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, p) full regressor at joint positions (rad), velocities (rad/s) and
        accelerations (rad/s²)."""
        q, dq, ddq = (np.ascontiguousarray(a, dtype=float) for a in (q, dq, ddq))
        n_samples, n = q.shape
        out = np.zeros((n_samples, n, self.n_parameters))
        model, data = self._model, self._data
        rigid = out[:, :, : self.n_inertial]
        for k in range(n_samples):
            rigid[k] = pin.computeJointTorqueRegressor(model, data, q[k], dq[k], ddq[k])
        friction = self.friction.basis(dq)  # (N, n, k): joint j's columns act on joint j only
        k = friction.shape[-1]
        column = self.n_inertial
        for j in range(n):
            out[:, j, column + j * k : column + (j + 1) * k] = friction[:, j, :]
        column += n * k
        if self.armature:
            out[:, np.arange(n), column + np.arange(n)] = ddq
            column += n
        if self.torque_offset:
            out[:, np.arange(n), column + np.arange(n)] = 1.0
        return out

    def joint_columns(self, joint: int) -> np.ndarray:
        """Indices of the columns that can be non-zero on the row of `joint` (0-based): the
        links from that joint outwards (a joint carries only its subtree) and the joint's own
        friction, armature and offset columns."""
        n = self.robot.n_joints
        k = len(self.friction.parameter_names)
        subtree = [10 * i + c for i in range(n) if self._in_subtree(joint, i) for c in range(10)]
        own = [self.n_inertial + joint * k + c for c in range(k)]
        column = self.n_inertial + n * k
        if self.armature:
            own.append(column + joint)
            column += n
        if self.torque_offset:
            own.append(column + joint)
        return np.array(subtree + own, dtype=int)

    def _in_subtree(self, joint: int, link: int) -> bool:
        """Whether the link moved by joint `link` lies in the subtree of joint `joint`."""
        parents = self._model.parents
        current = link + 1  # Pinocchio joint index
        while current > 0:
            if current == joint + 1:
                return True
            current = parents[current]
        return False

    def standard_parameters(
        self,
        inertial: np.ndarray,
        friction: np.ndarray | None = None,
        armature: np.ndarray | None = None,
        offset: np.ndarray | None = None,
    ) -> np.ndarray:
        """Assemble a standard parameter vector in this regressor's column order.

        friction is (n, k) in the friction model's parameter order; missing parts are zero."""
        n = self.robot.n_joints
        parts = [np.asarray(inertial, dtype=float).ravel()]
        parts.append(
            np.zeros(self.n_friction) if friction is None else np.asarray(friction).ravel()
        )
        if self.armature:
            parts.append(np.zeros(n) if armature is None else np.asarray(armature, float))
        if self.torque_offset:
            parts.append(np.zeros(n) if offset is None else np.asarray(offset, float))
        theta = np.concatenate(parts)
        if theta.size != self.n_parameters:
            raise ValueError(f"{theta.size} parameters given, regressor has {self.n_parameters}")
        return theta
