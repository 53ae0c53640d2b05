"""One sample's base regressor rows, and the base parameters of a stream known in advance.

A stream has no recording to take the SVD of: its base parameters are the *structural* ones,
the identifiable subspace of the regressor over random states within the robot's limits (what
any rich enough excitation identifies), by a batch run's accumulation and projection.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from ident_framework.errors import UserError
from ident_framework.identify.linear_problem import (
    accumulate_joint_factors,
    project_to_base,
    random_states,
)
from ident_framework.model import friction_terms
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.model.regressor import RegressorBuilder


def structural_base(
    builder: RegressorBuilder, n_states: int, tolerance: float, method: str, seed: int = 0
) -> BaseParameters:
    """Base parameters of `builder`'s regressor over `n_states` random states in the limits."""
    q, dq, ddq = random_states(builder.robot, n_states, seed)
    tau = np.zeros_like(q)
    chunks = [
        (q[s : s + 500], dq[s : s + 500], ddq[s : s + 500], tau[s : s + 500])
        for s in range(0, n_states, 500)
    ]
    factors, _ = accumulate_joint_factors(builder, chunks)
    base, _, _ = project_to_base(factors, builder.parameter_names, tolerance, method)
    return base


def check_streamable(builder: RegressorBuilder, friction_name: str) -> None:
    """A friction model with an internal state (e.g. LuGre) needs the whole recording; the
    temperature and load-dependent terms are not streamed (with auto they are off online)."""
    if friction_terms.uses_temperature(builder.friction):
        raise UserError(
            "mode=online streams joint positions, velocities and torques only: the friction's "
            "temperature term (friction.temperature=on) is not supported online. Set "
            "friction.temperature=off or auto (auto: off online, joint temperatures ignored)."
        )
    if builder.load_dependent:
        raise UserError(
            "mode=online does not support the friction's load-dependent term "
            "(friction.load_dependent=on): its column comes from the model's own rigid-body "
            "torque, refitted over a whole identification, which a recursive estimate does "
            "not do. Set friction.load_dependent=off or auto (auto: off online)."
        )
    if friction_terms.is_sequential(builder.friction):
        raise UserError(
            f"mode=online computes each sample's regressor on its own, but the friction model "
            f"'{friction_name}' (friction=...) integrates a state along the whole recording. "
            "Use a friction model whose columns depend on the current sample only "
            "(friction=coulomb_viscous, friction=none, friction=stribeck)."
        )


class SampleRegressor:
    """`rows(q, dq, ddq)` -> (n, r) base regressor rows of one sample (rad, rad/s, rad/s²)."""

    def __init__(self, builder: RegressorBuilder, base: BaseParameters):
        self.builder = builder
        self.basis = np.ascontiguousarray(base.basis)
        self._model = builder.robot.pin_model
        self._data = self._model.createData()
        n = builder.robot.n_joints
        self.n = n
        own = [builder.own_columns(j) for j in range(n)]
        self._own_rows = np.repeat(np.arange(n), [len(c) for c in own])
        self._own_cols = np.concatenate(own)
        self._full = np.zeros((n, builder.n_parameters))
        self._n_inertial = builder.n_inertial

    def standard_rows(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(n, p) regressor rows in the standard parameters (a view, overwritten next call)."""
        full = self._full
        rigid = full[:, : self._n_inertial]
        rigid[:] = pin.computeJointTorqueRegressor(self._model, self._data, q, dq, ddq)
        own = self.builder.own_terms(dq[None, :], ddq[None, :], None, rigid[None])[0]  # (n, e)
        full[self._own_rows, self._own_cols] = own.ravel()
        return full

    def rows(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        return self.standard_rows(q, dq, ddq) @ self.basis
