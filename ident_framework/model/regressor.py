"""Joint torque regressor: tau = Y(q, dq, ddq) @ theta (Nm), shape (N, n, p), linear in the
standard parameters. Columns: Pinocchio's 10 inertial parameters per link; per joint the
friction model's parameters; optionally rotor inertia (ddq_j on joint j) and a torque offset;
per coupled motor (`model/coupling.py`) its friction and rotor inertia columns. Nonlinear
friction parameters are taken at `nonlinear` (n, m); a sequential model's basis comes from the
whole recording (`friction_basis(t, dq)`, sliced: `compute(..., friction=)`). A load-dependent
friction column is multiplied by |tau_load| = |Y_rb theta_rb + Ia ddq| (Nm) at
`load_inertial`, `load_armature` (nominal until `with_load`). `regressor_builder`: the one a
run's config asks for.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pinocchio as pin

from ident_framework.hookspecs import FrictionModel
from ident_framework.model import friction_terms
from ident_framework.model.coupling import Coupling
from ident_framework.model.coupling import resolve as resolve_couplings
from ident_framework.model.rigid_body_regressor import BatchRegressor, supported
from ident_framework.model.robot import RobotModel

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


class RegressorBuilder:
    """Builds the regressor of one robot with one friction model, chunk by chunk."""

    def __init__(
        self,
        robot: RobotModel,
        friction: FrictionModel,
        armature: bool = True,
        torque_offset: bool = False,
        nonlinear: np.ndarray | None = None,
        parallel_friction: bool = False,
        couplings: tuple[Coupling, ...] = (),
    ):
        self.robot = robot
        # a model given directly (not by its plugin factory) gets the optional members' defaults
        friction_terms.check_friction_model(friction, type(friction).__name__, "(not registered)")
        self.parallel_friction = parallel_friction  # see identify/linear_problem.recording_friction
        self.friction = friction
        self.armature = armature
        self.torque_offset = torque_offset
        self.couplings = tuple(couplings)
        self._model = robot.pin_model
        self._data = self._model.createData()
        # vectorised over the samples when every joint is a 1-DoF revolute/prismatic one
        self._batch = BatchRegressor(self._model) if supported(self._model) else None
        n = robot.n_joints
        self.n_inertial = 10 * n
        self.n_friction = len(friction.parameter_names) * n
        self.nonlinear: np.ndarray | None = None  # (n, m) nonlinear friction values
        if friction_terms.is_nonlinear(friction):
            configured = friction_terms.from_physical(friction, {}, n)[1]
            self.nonlinear = configured if nonlinear is None else self._checked(nonlinear)
        self.load_column = friction_terms.load_column(friction)
        # (10 n,) inertial parameters and (n,) rotor inertia (kg·m²) of tau_load: nominal
        self.load_inertial = robot.inertial_parameters()
        self.load_armature = robot.armature()

    @property
    def load_dependent(self) -> bool:
        """Whether a friction column is multiplied by |tau_load| (see the module doc)."""
        return self.load_column is not None

    def with_load(self, theta: np.ndarray) -> RegressorBuilder:
        """The same regressor with tau_load from the standard parameters `theta` (their inertial
        part and rotor inertia; zero rotor inertia without the armature columns)."""
        theta = np.asarray(theta, dtype=float)
        other = copy.copy(self)
        other.load_inertial = theta[: self.n_inertial].copy()
        n = self.robot.n_joints
        if self.armature:
            start = self.n_inertial + self.n_friction
            other.load_armature = theta[start : start + n].copy()
        else:
            other.load_armature = np.zeros(n)
        return other

    def load_torque(self, rigid: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n) tau_load = Y_rb theta_rb + Ia ddq in Nm from the rigid-body rows (N, n, 10 n)
        and the accelerations (N, n) rad/s² (`load_inertial`, `load_armature`)."""
        return rigid @ self.load_inertial + self.load_armature * ddq

    def _checked(self, nonlinear: np.ndarray) -> np.ndarray:
        shape = (self.robot.n_joints, len(friction_terms.nonlinear_names(self.friction)))
        values = np.array(nonlinear, dtype=float)
        if values.shape != shape:
            raise ValueError(f"nonlinear friction values have shape {values.shape}, not {shape}")
        return values

    def with_nonlinear(self, nonlinear: np.ndarray) -> RegressorBuilder:
        """The same regressor with the friction's nonlinear parameters at `nonlinear` (n, m)."""
        other = copy.copy(self)
        other.nonlinear = self._checked(nonlinear)
        return other

    @property
    def sequential(self) -> bool:
        """Whether the friction basis depends on the sample order (see the module doc)."""
        return friction_terms.is_sequential(self.friction)

    @property
    def uses_temperature(self) -> bool:
        """Whether the friction columns need the joint temperatures (a temperature term)."""
        return friction_terms.uses_temperature(self.friction)

    @property
    def uses_acceleration(self) -> bool:
        """Whether the friction columns need the joint accelerations (an acceleration lead)."""
        return friction_terms.uses_acceleration(self.friction)

    def friction_basis(
        self, t: np.ndarray | None, dq: np.ndarray, ddq: np.ndarray | None = None
    ) -> np.ndarray:
        """(N, n, k) friction columns at velocities dq (N, n) rad/s (and ddq rad/s²); t (N,) s:
        the sample times of a recording (None: no time series)."""
        return friction_terms.basis(self.friction, t, dq, self.nonlinear, ddq)

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
        for coupling in self.couplings:
            names += [f"{p}_m{coupling.driven + 1}" for p in self.motor_parameters]
        return names

    @property
    def motor_parameters(self) -> tuple[str, ...]:
        """Per coupled motor: the friction model's parameters, then Ia with `armature`."""
        return (*self.friction.parameter_names, *(("Ia",) if self.armature else ()))

    @property
    def n_coupled(self) -> int:
        """Columns of the coupled motors (0 without couplings)."""
        return len(self.couplings) * len(self.motor_parameters)

    def coupled_columns(self) -> np.ndarray:
        """Indices of the coupled motors' columns (the last `n_coupled` of the regressor)."""
        return np.arange(self.n_parameters - self.n_coupled, self.n_parameters)

    def coupled_friction_columns(self) -> np.ndarray:
        """Indices of the coupled motors' friction columns (`coupled_columns` without Ia)."""
        k, m = len(self.friction.parameter_names), len(self.motor_parameters)
        return np.array([c for i, c in enumerate(self.coupled_columns()) if i % m < k], int)

    def coupled_terms(self, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, n_coupled): every coupled motor's columns (friction basis at ω, rotor inertia
        ω̇) on every joint's row, times the transmission weight (1 on b, r on a, else 0)."""
        n = dq.shape[1]
        parts = []
        for coupling in self.couplings:
            at_motor = dq.copy()
            at_motor[:, coupling.driven] = coupling.motor_speed(dq)
            at_motor_ddq = ddq.copy()
            at_motor_ddq[:, coupling.driven] = coupling.motor_speed(ddq)
            motor = [self.friction_basis(None, at_motor, at_motor_ddq)[:, coupling.driven, :]]
            if self.load_column is not None:  # no load term: two joints share its load
                motor[0][:, self.load_column] = 0.0
            if self.armature:
                motor.append(coupling.motor_speed(ddq)[:, None])
            motor_columns = np.concatenate(motor, axis=-1)  # (N, m) Nm per unit parameter
            parts.append(coupling.weights(n)[None, :, None] * motor_columns[:, None, :])
        return np.concatenate(parts, axis=-1) if parts else np.zeros((*dq.shape, 0))

    @property
    def n_parameters(self) -> int:
        return len(self.parameter_names)

    def rigid_body(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, 10 n) Pinocchio's joint torque regressor (N·m per unit parameter) at q (N, n)
        rad, dq rad/s, ddq rad/s²: by `BatchRegressor` when supported, else per sample."""
        if self._batch is not None:
            return self._batch(q, dq, ddq)
        return self.rigid_body_pinocchio(q, dq, ddq)

    def rigid_body_pinocchio(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """`rigid_body` by one `pin.computeJointTorqueRegressor` call per sample (any joint)."""
        out = np.empty((len(q), self._model.nv, self.n_inertial))
        model, data, regressor = self._model, self._data, pin.computeJointTorqueRegressor
        for k, (q_k, dq_k, ddq_k) in enumerate(zip(q, dq, ddq, strict=True)):
            out[k] = regressor(model, data, q_k, dq_k, ddq_k)
        return out

    def own_terms(
        self,
        dq: np.ndarray,
        ddq: np.ndarray,
        friction: np.ndarray | None = None,
        rigid: np.ndarray | None = None,
    ) -> np.ndarray:
        """(N, n, e): each joint's own columns on its row: the friction basis (`friction` if
        given), ddq_j (rotor inertia) and 1 (offset) when enabled, the coupled motors' columns.
        `rigid`: these rows' rigid-body regressor (N, n, 10 n), for a load-dependent column."""
        basis = self.friction_basis(None, dq, ddq) if friction is None else friction
        if self.load_column is not None:
            if rigid is None:
                raise ValueError("the load-dependent friction column needs the rigid-body rows")
            basis = np.array(basis, dtype=float, copy=True)
            basis[..., self.load_column] *= np.abs(self.load_torque(rigid, ddq))
        parts = [basis]
        if self.armature:
            parts.append(ddq[:, :, None])
        if self.torque_offset:
            parts.append(np.ones((*dq.shape, 1)))
        if self.couplings:
            parts.append(self.coupled_terms(dq, ddq))
        return np.concatenate(parts, axis=-1)

    def compute(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, friction: np.ndarray | None = None
    ) -> np.ndarray:
        """(N, n, p) full regressor at joint positions (rad), velocities (rad/s) and
        accelerations (rad/s²); `friction`: these rows' friction basis (see the module doc)."""
        q, dq, ddq = (np.ascontiguousarray(a, dtype=float) for a in (q, dq, ddq))
        out = np.zeros((*q.shape, self.n_parameters))
        out[:, :, : self.n_inertial] = self.rigid_body(q, dq, ddq)
        own = self.own_terms(dq, ddq, friction, out[:, :, : self.n_inertial])
        for j in range(q.shape[1]):
            out[:, j, self.own_columns(j)] = own[:, j, :]
        return out

    def own_columns(self, joint: int) -> np.ndarray:
        """Indices of the columns of `own_terms` for `joint` (0-based)."""
        n, k = self.robot.n_joints, len(self.friction.parameter_names)
        own = [self.n_inertial + joint * k + c for c in range(k)]
        column = self.n_inertial + n * k
        if self.armature:
            own.append(column + joint)
            column += n
        if self.torque_offset:
            own.append(column + joint)
        own += self.coupled_columns().tolist()
        return np.array(own, dtype=int)

    def subtree_block(self, joint: int) -> slice | np.ndarray:
        """`subtree_columns(joint)` as a slice when contiguous (a view), else the index array."""
        columns = self.subtree_columns(joint)
        if columns.size and np.all(np.diff(columns) == 1):
            return slice(int(columns[0]), int(columns[-1]) + 1)
        return columns

    def subtree_columns(self, joint: int) -> np.ndarray:
        """Inertial columns that can be non-zero on the row of `joint` (0-based): its subtree's."""
        n = self.robot.n_joints
        return np.array(
            [10 * i + c for i in range(n) if self._in_subtree(joint, i) for c in range(10)],
            dtype=int,
        )

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
        coupled: np.ndarray | None = None,
    ) -> np.ndarray:
        """A standard parameter vector in this regressor's column order: friction (n, k),
        coupled (n_coupled,) in `parameter_names`' order; missing parts are zero."""
        n = self.robot.n_joints
        parts = [np.asarray(inertial, dtype=float).ravel()]
        parts.append(
            np.zeros(self.n_friction) if friction is None else np.asarray(friction).ravel()
        )
        if self.armature:
            parts.append(np.zeros(n) if armature is None else np.asarray(armature, float))
        if self.torque_offset:
            parts.append(np.zeros(n) if offset is None else np.asarray(offset, float))
        if self.couplings:
            parts.append(
                np.zeros(self.n_coupled) if coupled is None else np.asarray(coupled, float).ravel()
            )
        theta = np.concatenate(parts)
        if theta.size != self.n_parameters:
            raise ValueError(f"{theta.size} parameters given, regressor has {self.n_parameters}")
        return theta


def regressor_builder(config: Any, robot: RobotModel) -> RegressorBuilder:
    """The regressor of `robot` with the friction plugin and regressor columns of `config`
    (a `config.run_config.RunConfig`)."""
    model = config.plugins["friction"].create()
    return RegressorBuilder(
        robot,
        model,
        armature=config.regressor.armature,
        torque_offset=config.regressor.torque_offset,
        parallel_friction=config.preprocessing.parallel_friction(
            friction_terms.is_nonlinear(model)
        ),
        couplings=resolve_couplings(config.robot.coupled_joints, robot.n_joints),
    )
