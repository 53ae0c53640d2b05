"""Pinocchio's joint torque regressor for many samples at once (a compiled numba kernel).

`BatchRegressor(model)(q, dq, ddq)` returns, for N samples, the (N, nv, 10 nj) array that
`pinocchio.computeJointTorqueRegressor(model, data, q_k, dq_k, ddq_k)` returns sample by
sample: tau = Y theta in N·m, theta per link Pinocchio's dynamic parameters
[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (kg, kg·m, kg·m²; inertia about the joint
frame origin, in the joint frame: `pin.Inertia.toDynamicParameters`), gravity `model.gravity`.

The algorithm is Pinocchio's, sample by sample and joint by joint in a numba kernel. A forward
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

The kernel, `_samples` (numba, float64, no fastmath: the compiled code does the IEEE
operations as written), loops over the samples and, in each, over the joints; the placement,
motions and body regressor of a joint stay in registers (small tuples), the joints' states in
one work array per call; the per-model constants (parents, q and v indices, joint types, axes,
placements, the rows of each link's columns) are arrays made once, at construction. The output
is allocated once and every entry written (exactly zero outside a joint's subtree). A call of
`_PARALLEL_FROM` (4096) samples or more runs it over blocks of `_BLOCK` samples in parallel
(`_samples_parallel`, `numba.prange`, a work array per block) on at most
`parallel_work.worker_limit()` threads (one inside a forked worker); smaller calls, such as
the identification's chunks of ~2000 samples, run serially: starting the threads costs more
than they save there. Both are compiled on a machine's first call and cached on disk
(`cache=True`, in `__pycache__`): ~2.5 s (serial) + ~1 s (parallel) to compile, ~0.3 s to
load in a fresh process (numba's own start-up: a trivial cached function costs as much).

Speed, UR10e on the 2-core test machine (benchmarks/bench_rigid_body_regressor.py): ~0.5 µs
per sample serially (calls of 1e3 samples, chunks of 2000, one thread), 6.5-7x the per-sample
Pinocchio loop (~3.5 µs); in parallel (single calls of 1e4-1e5 samples) 0.3-0.65 µs, 5.5-9x:
the second core of this shared VM often takes milliseconds to start, and a single call of 1e5
samples also pays for its 288 MB of fresh memory (~0.25 µs per sample, as the loop does). The
result agrees with Pinocchio to ~1e-15 of the array's largest entry
(tests/test_rigid_body_regressor.py).

Threads: numba is set up in `compiled.py` (its fork-safe threading layer). The workqueue layer
aborts the process on concurrent parallel regions (calls from several Python threads, e.g. the
online mode's), so one call at a time runs in parallel (`_PARALLEL`) and the others meanwhile
serially.

Supported (`supported`): models whose every joint is 1-DoF with nq == nv == 1 — revolute about
x/y/z (`JointModelRX/RY/RZ`), `JointModelRevoluteUnaligned`, prismatic along x/y/z
(`JointModelPX/PY/PZ`) and `JointModelPrismaticUnaligned`. Joint placements, types and axes
are read once, at construction; `model.gravity` at every call.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pinocchio as pin

from ident_framework.compiled import numba
from ident_framework.parallel_work import worker_limit

# one parallel call at a time: numba's workqueue layer aborts the process on concurrent ones
_PARALLEL = threading.Lock()
_BLOCK = 128  # samples per parallel iteration of the kernel (each with its own work arrays)
# fewer samples run serially: starting numba's workqueue threads costs ~0.04-3 ms a call on
# the 2-core test machine, more than they save below a few thousand samples
_PARALLEL_FROM = 4096

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


# The kernel's steps, inlined into it at numba's level (`inline="always"`: as separate compiled
# functions they got every array as a struct through memory at each call, ~1.5x slower).
# Small vectors travel as tuples, which stay in registers: a (6,) motion [lin; ang], a
# placement (R row-major (9), p (3,)), the body regressor's blocks.
_inline = numba.njit(inline="always")


@_inline
def _body_features(v, a):
    """(12,) features of a body's regressor (`_body_regressor`) from its spatial velocity
    v = [v_lin; w] and acceleration a = [a_lin; dw] (tuples (6,), in its frame):
    acc = a_lin + w × v_lin, dw, ww = (w0², w1², w2², w0 w1, w0 w2, w1 w2)."""
    v0, v1, v2, w0, w1, w2 = v
    acc0 = a[0] + (w1 * v2 - w2 * v1)
    acc1 = a[1] + (w2 * v0 - w0 * v2)
    acc2 = a[2] + (w0 * v1 - w1 * v0)
    w00, w11, w22, w01, w02, w12 = w0 * w0, w1 * w1, w2 * w2, w0 * w1, w0 * w2, w1 * w2
    return (acc0, acc1, acc2, a[3], a[4], a[5], w00, w11, w22, w01, w02, w12)


@_inline
def _body_regressor(features):
    """Pinocchio's `bodyRegressor` (6, 10) as a linear function of the features (12,)
    (`_body_features`): acc, dw, ww. Rows [force; torque], columns [m, mc (3), Ixx, Ixy,
    Iyy, Ixz, Iyz, Izz]:
        force  = m acc + ([dw]× + w w^T - |w|² 1) mc
        torque = -[acc]× mc + L(dw) I + [w]× L(w) I,   with I x = L(x) [Ixx, ..., Izz].
    Returned as its two non-zero blocks, row-major: force × [m, mc] (12,) and torque × [mc, I]
    (27,) (force × I and torque × m are zero). Runs compiled in the kernel and in Python
    (`_BODY_BASIS`)."""
    a0, a1, a2, d0, d1, d2, w00, w11, w22, w01, w02, w12 = features
    force = (  # rows 0-2 × columns 0-3: m acc + ([dw]× + w w^T - |w|² 1) mc
        (a0, -w11 - w22, w01 - d2, w02 + d1)
        + (a1, w01 + d2, -w00 - w22, w12 - d0)
        + (a2, w02 - d1, w12 + d0, -w00 - w11)
    )
    torque = (  # rows 3-5 × columns 1-9: -[acc]× mc, then L(dw) + [w]× L(w) (Pinocchio's
        # addBigL + crossBigL)
        (0.0, a2, -a1, d0, d1 - w02, -w12, d2 + w01, w11 - w22, w12)
        + (-a2, 0.0, a0, w02, d0 + w12, d1, w22 - w00, d2 - w01, -w02)
        + (a1, -a0, 0.0, -w01, w00 - w11, w01, d0 - w12, d1 + w02, d2)
    )
    return force, torque


def _body_basis() -> np.ndarray:
    """(12, 60): Y.ravel() = features @ _BODY_BASIS (`_body_regressor` is linear in them)."""
    basis = np.zeros((12, 6, 10))
    for k, unit in enumerate(np.eye(12)):
        force, torque = _body_regressor.py_func(tuple(unit))
        basis[k, :3, :4] = np.reshape(force, (3, 4))
        basis[k, 3:, 1:] = np.reshape(torque, (3, 9))
    return basis.reshape(12, 60)


_BODY_BASIS = _body_basis()


@_inline
def _placement(i, q, revolute, axes, rotations, translations):
    """liMi(q) = P M_j(q) of joint i at its position q, as (R (9,) row-major, p (3,)): P from
    `rotations[i]`, `translations[i]`; M_j a rotation by q about the axis (Rodrigues,
    Pinocchio's `toRotationMatrix`) or a translation by q along it."""
    a0, a1, a2 = axes[i, 0], axes[i, 1], axes[i, 2]
    p00, p01, p02 = rotations[i, 0, 0], rotations[i, 0, 1], rotations[i, 0, 2]
    p10, p11, p12 = rotations[i, 1, 0], rotations[i, 1, 1], rotations[i, 1, 2]
    p20, p21, p22 = rotations[i, 2, 0], rotations[i, 2, 1], rotations[i, 2, 2]
    t0, t1, t2 = translations[i, 0], translations[i, 1], translations[i, 2]
    if not revolute[i]:  # R = P, p = P.p + P axis q
        t0 += (p00 * a0 + p01 * a1 + p02 * a2) * q
        t1 += (p10 * a0 + p11 * a1 + p12 * a2) * q
        t2 += (p20 * a0 + p21 * a1 + p22 * a2) * q
        return (p00, p01, p02, p10, p11, p12, p20, p21, p22, t0, t1, t2)
    c, s = math.cos(q), math.sin(q)
    k0, k1 = (1.0 - c) * a0, (1.0 - c) * a1
    m00, m11, m22 = k0 * a0 + c, k1 * a1 + c, (1.0 - c) * a2 * a2 + c
    m01, m10 = k0 * a1 - s * a2, k0 * a1 + s * a2
    m02, m20 = k0 * a2 + s * a1, k0 * a2 - s * a1
    m12, m21 = k1 * a2 - s * a0, k1 * a2 + s * a0
    # R = P M_j, p = P.p
    r00, r01 = p00 * m00 + p01 * m10 + p02 * m20, p00 * m01 + p01 * m11 + p02 * m21
    r02, r10 = p00 * m02 + p01 * m12 + p02 * m22, p10 * m00 + p11 * m10 + p12 * m20
    r11, r12 = p10 * m01 + p11 * m11 + p12 * m21, p10 * m02 + p11 * m12 + p12 * m22
    r20, r21 = p20 * m00 + p21 * m10 + p22 * m20, p20 * m01 + p21 * m11 + p22 * m21
    r22 = p20 * m02 + p21 * m12 + p22 * m22
    return (r00, r01, r02, r10, r11, r12, r20, r21, r22, t0, t1, t2)


@_inline
def _moved(states, parent, c, placement):
    """liMi.actInv of motion states[parent, c] [lin; ang] (a (6,) tuple):
    lin' = R^T (lin - p × ang), ang' = R^T ang, (R, p) = `placement`."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22, t0, t1, t2 = placement
    l0, l1, l2 = states[parent, c, 0], states[parent, c, 1], states[parent, c, 2]
    g0, g1, g2 = states[parent, c, 3], states[parent, c, 4], states[parent, c, 5]
    x0 = l0 - (t1 * g2 - t2 * g1)
    x1 = l1 - (t2 * g0 - t0 * g2)
    x2 = l2 - (t0 * g1 - t1 * g0)
    y0, y1 = r00 * x0 + r10 * x1 + r20 * x2, r01 * x0 + r11 * x1 + r21 * x2
    y2, z0 = r02 * x0 + r12 * x1 + r22 * x2, r00 * g0 + r10 * g1 + r20 * g2
    z1, z2 = r01 * g0 + r11 * g1 + r21 * g2, r02 * g0 + r12 * g1 + r22 * g2
    return (y0, y1, y2, z0, z1, z2)


@_inline
def _joint_motion(v, a, revolute, axis, dq, ddq):
    """(v_i, a_i, S) of joint i from its parent's moved v, a (6,): the joint's velocity S dq
    and acceleration v_i x S dq + S ddq added, S its motion subspace (Pinocchio's
    JointTorqueRegressorForwardStep; these joints have no bias acceleration c). Revolute:
    S = [0; axis], v x S dq = [v_lin × axis; w × axis] dq; prismatic: S = [axis; 0],
    v x S dq = [w × axis; 0] dq."""
    a0, a1, a2 = axis[0], axis[1], axis[2]
    v0, v1, v2, w0, w1, w2 = v
    if revolute:
        w0, w1, w2 = w0 + a0 * dq, w1 + a1 * dq, w2 + a2 * dq
        return (
            (v0, v1, v2, w0, w1, w2),
            (
                a[0] + (v1 * a2 - v2 * a1) * dq,
                a[1] + (v2 * a0 - v0 * a2) * dq,
                a[2] + (v0 * a1 - v1 * a0) * dq,
                a[3] + (w1 * a2 - w2 * a1) * dq + a0 * ddq,
                a[4] + (w2 * a0 - w0 * a2) * dq + a1 * ddq,
                a[5] + (w0 * a1 - w1 * a0) * dq + a2 * ddq,
            ),
            (0.0, 0.0, 0.0, a0, a1, a2),
        )
    return (
        (v0 + a0 * dq, v1 + a1 * dq, v2 + a2 * dq, w0, w1, w2),
        (
            a[0] + (w1 * a2 - w2 * a1) * dq + a0 * ddq,
            a[1] + (w2 * a0 - w0 * a2) * dq + a1 * ddq,
            a[2] + (w0 * a1 - w1 * a0) * dq + a2 * ddq,
            a[3],
            a[4],
            a[5],
        ),
        (a0, a1, a2, 0.0, 0.0, 0.0),
    )


@_inline
def _store(states, i, c, motion):
    for r in range(6):
        states[i, c, r] = motion[r]


@_inline
def _write(out, s, row, block, column, body):
    """out[s, row, block:block + 10] = column^T Y: a Jacobian column (6,) of link i in its
    frame times its body regressor Y = `body` (`_body_regressor`'s blocks)."""
    force, torque = body
    j0, j1, j2, j3, j4, j5 = column
    out[s, row, block] = j0 * force[0] + j1 * force[4] + j2 * force[8]
    for k in range(1, 4):
        linear = j0 * force[k] + j1 * force[4 + k] + j2 * force[8 + k]
        angular = j3 * torque[k - 1] + j4 * torque[8 + k] + j5 * torque[17 + k]
        out[s, row, block + k] = linear + angular
    for k in range(4, 10):
        out[s, row, block + k] = j3 * torque[k - 1] + j4 * torque[8 + k] + j5 * torque[17 + k]


@numba.njit(cache=True)
def _samples(start, stop, q, dq, ddq, base_acceleration, constants, out):
    """out[start:stop] (N, nv, 10 nj) = the regressor at q, dq, ddq (N, nv) of those samples,
    in this thread: per sample the forward pass, each link's columns written as soon as its
    state is known. base_acceleration (6,) = -gravity; `constants`: `BatchRegressor.
    _constants`. Work array `states` (nj + 1, 2 + max depth, 6), once per call: per joint
    v_i, a_i, then its depth_i Jacobian columns, all in its frame; row 0: the base, v = 0,
    a = -g (Pinocchio's a_gf[0])."""
    parents, index_q, index_v, revolute, axes, rotations, translations, rows, depth = constants
    states = np.zeros((parents.shape[0], 2 + depth.max(), 6))
    for r in range(6):
        states[0, 1, r] = base_acceleration[r]
    for s in range(start, stop):
        for r in range(out.shape[1]):  # zero outside each joint's subtree (`np.empty` out)
            for k in range(out.shape[2]):
                out[s, r, k] = 0.0
        for i in range(1, parents.shape[0]):
            parent, iv, above, block = parents[i], index_v[i], depth[parents[i]], 10 * (i - 1)
            move = _placement(i, q[s, index_q[i]], revolute, axes, rotations, translations)
            v, a, own = _joint_motion(
                _moved(states, parent, 0, move),
                _moved(states, parent, 1, move),
                revolute[i],
                axes[i],
                dq[s, iv],
                ddq[s, iv],
            )
            _store(states, i, 0, v)
            _store(states, i, 1, a)
            body = _body_regressor(_body_features(v, a))
            for c in range(above):  # the ancestors' columns, then the joint's own, S
                column = _moved(states, parent, 2 + c, move)
                _store(states, i, 2 + c, column)
                _write(out, s, rows[i, c], block, column, body)
            _store(states, i, 2 + above, own)
            _write(out, s, rows[i, above], block, own, body)


@numba.njit(cache=True, parallel=True)
def _samples_parallel(q, dq, ddq, base_acceleration, constants, out):
    """`_samples` over all samples, blocks of `_BLOCK` samples in parallel (numba.prange)."""
    n = q.shape[0]
    for b in numba.prange((n + _BLOCK - 1) // _BLOCK):
        stop = min(n, (b + 1) * _BLOCK)
        _samples(b * _BLOCK, stop, q, dq, ddq, base_acceleration, constants, out)


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
        previous = numba.get_num_threads()
        threads = min(previous, worker_limit(), -(-n // _BLOCK))
        # in parallel unless small, on one core, or another thread's call runs in parallel
        if threads > 1 and n >= _PARALLEL_FROM and _PARALLEL.acquire(blocking=False):
            numba.set_num_threads(threads)
            try:
                _samples_parallel(q, dq, ddq, base_acceleration, self._constants, out)
            finally:
                numba.set_num_threads(previous)
                _PARALLEL.release()
        else:
            _samples(0, n, q, dq, ddq, base_acceleration, self._constants, out)
        return out
