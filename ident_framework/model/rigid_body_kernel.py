"""The rigid-body regressor's numba loops: the fallback where the C kernel beside it
(`rigid_body_kernel.c`, the same operations in the same order) cannot be built (`c_kernels.py`).
"""

from __future__ import annotations

import math

import numpy as np

from ident_framework.c_kernels import numba_for_fallback

numba = numba_for_fallback()

BLOCK = 128  # samples per parallel iteration of the kernel (each with its own work arrays)

# the kernel's steps, inlined (~1.5x faster); small vectors travel as tuples (in registers): a
# (6,) motion [lin; ang], a placement (R row-major (9), p (3,)), the body regressor's blocks
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
    (27,)."""
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
def samples(start, stop, q, dq, ddq, base_acceleration, constants, out):
    """out[start:stop] (N, nv, 10 nj) = the regressor at q, dq, ddq (N, nv) of those samples,
    in this thread. base_acceleration (6,) = -gravity; `constants`: `BatchRegressor.
    _constants`. `states` (nj + 1, 2 + max depth, 6): per joint v_i, a_i, then its depth_i
    Jacobian columns, in its frame; row 0: the base."""
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
def samples_parallel(q, dq, ddq, base_acceleration, constants, out):
    """`samples` over all samples, blocks of `BLOCK` samples in parallel (numba.prange)."""
    n = q.shape[0]
    for b in numba.prange((n + BLOCK - 1) // BLOCK):
        stop = min(n, (b + 1) * BLOCK)
        samples(b * BLOCK, stop, q, dq, ddq, base_acceleration, constants, out)
