"""Pinocchio's joint torque regressor for many samples at once: `BatchRegressor(model)(q, dq,
ddq)` gives the (N, nv, 10 nj) array of `pinocchio.computeJointTorqueRegressor` per sample
(tau = Y theta in N·m, theta per link [m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] in
kg, kg·m, kg·m² about the joint frame origin) to ~1e-15 of the largest entry. The kernel is
`rigid_body_kernel.c` (`c_kernels.py`; numba's `rigid_body_kernel.py` without a C compiler);
calls of `_PARALLEL_FROM` samples or more run on threads, with the same result.
`supported(model)`: every joint 1-DoF revolute or prismatic. Rationale and speed:
docs/design.md#batch-rigid-body-regressor
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import c_int, c_int64, c_void_p

import numpy as np
import pinocchio as pin

from ident_framework import c_kernels
from ident_framework.parallel_work import worker_limit

# one numba parallel call at a time: its workqueue layer aborts the process on concurrent ones
_PARALLEL = threading.Lock()
_PARALLEL_FROM = 4096  # fewer samples run serially (starting threads costs more than it saves)
BLOCK = 128  # samples a thread of the C kernel takes at a time


class _Model(ctypes.Structure):
    """The C kernel's `rigid_body_model`: sizes, then pointers to `BatchRegressor._constants`."""

    _fields_ = [
        *((name, c_int64) for name in ("bodies", "max_depth", "nq", "nv", "columns")),
        *((name, c_void_p) for name in ("parents", "index_q", "index_v", "depth", "rows")),
        *((name, c_void_p) for name in ("revolute", "axes", "rotations", "translations")),
    ]


_POINTER = ctypes.POINTER(_Model)
_SIGNATURES = {  # (model, [start, stop | n], q, dq, ddq, base acceleration, out[, threads, block])
    "rigid_body_samples": (c_int, [_POINTER, c_int64, c_int64, *[c_void_p] * 5]),
    "rigid_body_samples_parallel": (c_int, [_POINTER, c_int64, *[c_void_p] * 5, c_int64, c_int64]),
}


def c_kernel() -> ctypes.CDLL | None:
    """The C kernel (`rigid_body_kernel.c`), or None: numba's then runs (`c_kernels.py`)."""
    return c_kernels.load(__package__, "rigid_body_kernel.c", _SIGNATURES)


# Pinocchio short name -> (revolute, axis index) of the axis-aligned 1-DoF joints
_ALIGNED = {
    f"JointModel{kind}{axis}": (kind == "R", k) for kind in "RP" for k, axis in enumerate("XYZ")
}
# short name -> revolute, of the joints whose axis is a member of the joint model (`.axis`)
_UNALIGNED = {"JointModelRevoluteUnaligned": True, "JointModelPrismaticUnaligned": False}


def joint_motion(joint: pin.JointModel) -> tuple[bool, np.ndarray] | None:
    """(revolute, axis (3,) in the joint frame) of a supported 1-DoF joint, else None."""
    if joint.nq != 1 or joint.nv != 1:
        return None
    name = joint.shortname()
    if name in _ALIGNED:
        revolute, k = _ALIGNED[name]
        return revolute, np.eye(3)[k]
    if name in _UNALIGNED:
        return _UNALIGNED[name], np.array(joint.extract().axis, dtype=float).reshape(3)
    return None


def supported(model: pin.Model) -> bool:
    """Whether `BatchRegressor` handles `model`: every joint 1-DoF of a supported type."""
    joints = list(model.joints)[1:]
    return (
        len(joints) > 0
        and model.nq == model.nv == len(joints)
        and all(joint_motion(joint) is not None for joint in joints)
    )


class BatchRegressor:
    """Pinocchio's joint torque regressor of a fixed model, for many samples at once."""

    def __init__(self, model: pin.Model):
        if not supported(model):
            kinds = sorted({j.shortname() for j in list(model.joints)[1:]})
            raise ValueError(
                f"BatchRegressor supports 1-DoF revolute/prismatic joints only, not {kinds}"
            )
        self.model = model
        self.n_joints = n = model.njoints - 1
        revolute, axes = np.zeros(n + 1, dtype=np.bool_), np.zeros((n + 1, 3))
        rotations, translations = np.zeros((n + 1, 3, 3)), np.zeros((n + 1, 3))
        ancestors: list[list[int]] = [[]]  # per joint: v indices from the base down to it
        for i in range(1, n + 1):
            revolute[i], axes[i] = joint_motion(model.joints[i])
            rotations[i] = model.jointPlacements[i].rotation
            translations[i] = model.jointPlacements[i].translation
            ancestors.append([*ancestors[model.parents[i]], int(model.joints[i].idx_v)])
        depth = np.array([len(rows) for rows in ancestors], dtype=np.int64)
        rows = np.zeros((n + 1, int(depth.max())), dtype=np.int64)
        for i, row in enumerate(ancestors):
            rows[i, : len(row)] = row
        index_q = [0] + [int(model.joints[i].idx_q) for i in range(1, n + 1)]
        index_v = [0] + [int(model.joints[i].idx_v) for i in range(1, n + 1)]
        # the kernel's per-model arguments: parents, q and v index, revolute, axis (3,) in the
        # joint frame, P's rotation (3, 3) and translation (3,), the rows of each link's
        # columns (its ancestors' v indices, padded) and their count; entry 0: the base
        self._constants = (
            np.array(model.parents, dtype=np.int64),
            np.array(index_q, dtype=np.int64),
            np.array(index_v, dtype=np.int64),
            revolute,
            axes,
            rotations,
            translations,
            rows,
            depth,
        )
        self._c_constants = self._c_view()

    def _c_view(self) -> _Model:
        """The C kernel's view of `_constants`: sizes and pointers (remade on unpickling)."""
        names = ("parents", "index_q", "index_v", "revolute", "axes", "rotations")
        names += ("translations", "rows", "depth")
        return _Model(
            bodies=self.n_joints + 1,
            max_depth=self._constants[7].shape[1],
            nq=self.model.nq,
            nv=self.model.nv,
            columns=10 * self.n_joints,
            **{name: a.ctypes.data for name, a in zip(names, self._constants, strict=True)},
        )

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_c_constants"}  # pointers

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._c_constants = self._c_view()

    def __call__(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, nv, 10 nj) joint torque regressor (N·m per unit parameter) at joint positions
        q (N, nq) rad (m for a prismatic joint), velocities dq (N, nv) rad/s (m/s) and
        accelerations ddq (N, nv) rad/s² (m/s²); `pin.computeJointTorqueRegressor` per row."""
        # C-contiguous, aligned, writeable float64: one compiled specialisation of the kernel
        q, dq, ddq = (np.require(a, np.float64, "CAW") for a in (q, dq, ddq))
        n, nv = len(q), self.model.nv
        if q.shape != (n, self.model.nq) or not dq.shape == ddq.shape == (n, nv):
            raise ValueError(f"q, dq, ddq have shapes {q.shape}, {dq.shape}, {ddq.shape}")
        out = np.empty((n, nv, 10 * self.n_joints))  # every entry written by the kernel
        if n == 0:
            return out
        base_acceleration = -np.array(self.model.gravity.vector, dtype=np.float64)
        library = c_kernel()
        if library is None:
            self._numba(q, dq, ddq, base_acceleration, out)
            return out
        arrays = (q.ctypes.data, dq.ctypes.data, ddq.ctypes.data, base_acceleration.ctypes.data)
        model = ctypes.byref(self._c_constants)
        threads = min(worker_limit(), -(-n // BLOCK))
        if threads > 1 and n >= _PARALLEL_FROM:
            status = library.rigid_body_samples_parallel(
                model, n, *arrays, out.ctypes.data, threads, BLOCK
            )
        else:
            status = library.rigid_body_samples(model, 0, n, *arrays, out.ctypes.data)
        if status != 0:
            raise MemoryError("the rigid-body regressor's C kernel is out of memory")
        return out

    def _numba(self, q, dq, ddq, base_acceleration, out) -> None:  # noqa: ANN001
        """`out` = the regressor by the numba kernel (`rigid_body_kernel.py`; ~0.25 s to start)."""
        from ident_framework.model import rigid_body_kernel as kernel

        n = len(q)
        previous = kernel.numba.get_num_threads()
        threads = min(previous, worker_limit(), -(-n // kernel.BLOCK))
        # in parallel unless small, on one core, or another thread's call runs in parallel
        if threads > 1 and n >= _PARALLEL_FROM and _PARALLEL.acquire(blocking=False):
            kernel.numba.set_num_threads(threads)
            try:
                kernel.samples_parallel(q, dq, ddq, base_acceleration, self._constants, out)
            finally:
                kernel.numba.set_num_threads(previous)
                _PARALLEL.release()
        else:
            kernel.samples(0, n, q, dq, ddq, base_acceleration, self._constants, out)
