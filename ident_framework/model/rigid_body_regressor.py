"""Pinocchio's joint torque regressor for many samples at once (a compiled C kernel).

`BatchRegressor(model)(q, dq, ddq)` returns, for N samples, the (N, nv, 10 nj) array that
`pinocchio.computeJointTorqueRegressor(model, data, q_k, dq_k, ddq_k)` returns sample by
sample: tau = Y theta in N·m, theta per link Pinocchio's dynamic parameters
[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (kg, kg·m, kg·m²; inertia about the joint
frame origin, in the joint frame: `pin.Inertia.toDynamicParameters`), gravity `model.gravity`.

The algorithm is Pinocchio's, sample by sample and joint by joint in a compiled kernel. A forward
pass gives each joint frame's spatial velocity v_i and acceleration a_i (gravity as the base
acceleration -g, Pinocchio's `a_gf`) in the joint's own frame, as [linear; angular] (m/s,
rad/s; m/s², rad/s²). Link i's body regressor Y_i (6, 10) gives its spatial force [N; N·m]
Y_i theta_i = I_i a_i + v_i x* I_i v_i (`pin.bodyRegressor`). Pinocchio's entry for joint j's
torque and link i (i in j's subtree) is S_j^T X*_{j<-i} Y_i: the force moved from frame i to
frame j and projected on j's motion subspace S_j. A force transform being the dual of a motion
transform, this is (X_{i<-j} S_j)^T Y_i, where X_{i<-j} S_j is column j of link i's body
Jacobian in frame i, which the forward pass carries along with v_i and a_i (each moved by
liMi(q).actInv, liMi = P M_j(q), P = `model.jointPlacements[i]`). Link i's ten columns on the
rows of its ancestors are thus k (1, 6) @ (6, 10) products, k = i's depth. Entries outside a
joint's subtree are exactly zero, as in Pinocchio.

The kernel, `rigid_body_kernel.c` (C99, float64, built on first use and loaded with ctypes by
`c_kernels.py`; where no C compiler works, the numba kernel `rigid_body_kernel.py` runs instead,
the same operations in the same order: bit for bit the same result), loops over the samples
and, in each, over the joints; the placement, motions and body regressor of a joint stay in
registers, the joints' states in one work array per thread; the per-model constants (parents,
q and v indices, joint types, axes, placements, the rows of each link's columns) are arrays
made once, at construction (`_constants`; `_c_constants` points the C kernel at them). The
output is allocated once and every entry written (exactly zero outside a joint's subtree).

Threads: a call of `_PARALLEL_FROM` (4096) samples or more runs on at most
`parallel_work.worker_limit()` threads (one inside a forked worker): the calling thread and
threads started for the call (pthreads, joined before it returns: nothing outlives a call, so
forking is safe at any time, and calls from several Python threads at once, e.g. the online
mode's, are independent; ctypes releases the GIL), each taking blocks of `BLOCK` samples as it
comes free. Every sample is computed alike wherever it runs: the result does not depend on the
thread count. Smaller calls, such as the identification's chunks of ~2000 samples, run
serially. (The numba fallback runs in parallel likewise, over blocks of samples with
`numba.prange`, its fork-safe threading layer set in `c_kernels.py`; its workqueue layer
aborts the process on concurrent parallel regions, so one call at a time runs in parallel
(`_PARALLEL`) and the others meanwhile serially.)

Speed, UR10e on the 2-core test machine (benchmarks/bench_rigid_body_regressor.py, best of 5):
~0.6-0.7 µs per sample on one thread (calls of 1e3 samples; 0.5 µs with the output's memory
warm), as numba's, 4-4.5x the per-sample Pinocchio loop (~2.8-3.4 µs); on two threads ~0.45 µs
(single calls of 1e4 samples), 6.5x. A single call of 1e5 samples also pays for its 288 MB of
fresh memory (~0.25 µs per sample). Start: the C library loads in ~3 ms (its first build:
~0.15 s), numba in ~0.25 s (its import and first call) and ~110 MB. The result agrees with
Pinocchio to ~1e-15 of the array's largest entry (tests/test_rigid_body_regressor.py, both
engines).

Supported (`supported`): models whose every joint is 1-DoF with nq == nv == 1 — revolute about
x/y/z (`JointModelRX/RY/RZ`), `JointModelRevoluteUnaligned`, prismatic along x/y/z
(`JointModelPX/PY/PZ`) and `JointModelPrismaticUnaligned`. Joint placements, types and axes
are read once, at construction; `model.gravity` at every call.
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
# fewer samples run serially: starting numba's workqueue threads costs ~0.04-3 ms a call on
# the 2-core test machine, more than they save below a few thousand samples. The C kernel's
# threads are cheaper (2 threads: 0.36 against 0.73 µs per sample for calls of 2000, median),
# but parallel calls from 1024 samples did not change the 10⁵ command's wall time: the same
# threshold for both.
_PARALLEL_FROM = 4096
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
    "JointModelRX": (True, 0),
    "JointModelRY": (True, 1),
    "JointModelRZ": (True, 2),
    "JointModelPX": (False, 0),
    "JointModelPY": (False, 1),
    "JointModelPZ": (False, 2),
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
        """The C kernel's view of `_constants`: sizes and pointers (the arrays stay alive with
        self; a pickled or deep-copied object makes its own, `__setstate__`)."""
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
