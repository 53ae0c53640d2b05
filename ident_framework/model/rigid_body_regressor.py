"""Pinocchio's joint torque regressor for many samples at once (numpy, vectorised over samples).

`BatchRegressor(model)(q, dq, ddq)` returns, for N samples, the (N, nv, 10 nj) array that
`pinocchio.computeJointTorqueRegressor(model, data, q_k, dq_k, ddq_k)` returns sample by
sample: tau = Y theta in N·m, theta per link Pinocchio's dynamic parameters
[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (kg, kg·m, kg·m²; inertia about the joint
frame origin, in the joint frame: `pin.Inertia.toDynamicParameters`), gravity `model.gravity`.

The algorithm is Pinocchio's with the loops over joints in Python and every step one numpy
operation over all N samples. A forward pass gives each joint frame's spatial velocity v_i and
acceleration a_i (gravity as the base acceleration -g, Pinocchio's `a_gf`) in the joint's own
frame, as [linear; angular] (m/s, rad/s; m/s², rad/s²). Link i's body regressor Y_i (6, 10)
gives its spatial force [N; N·m] Y_i theta_i = I_i a_i + v_i x* I_i v_i (`pin.bodyRegressor`).
Pinocchio's entry for joint j's torque and link i (i in j's subtree) is S_j^T X*_{j<-i} Y_i:
the force moved from frame i to frame j and projected on j's motion subspace S_j. A force
transform being the dual of a motion transform, this is (X_{i<-j} S_j)^T Y_i, where X_{i<-j} S_j
is column j of link i's body Jacobian in frame i, which the forward pass carries along with v_i
and a_i. Link i's ten columns on the rows of its ancestors are thus one batched product
(N, k, 6) @ (N, 6, 10). Entries outside a joint's subtree are exactly zero, as in Pinocchio.

The forward pass keeps the samples on the last axis ((6, 2 + k, N) per joint: v_i, a_i and
the k Jacobian columns), where numpy's element-wise operations run over long contiguous rows;
the final products are batched over the first axis. On the 2-core test machine the UR10e
takes ~1.4-2.2 µs per sample in calls of 1e3-1e4 samples against ~3.3-3.5 µs for the
per-sample Pinocchio loop; a single call of 1e5 samples is slower per sample (~3 µs: its
temporaries outgrow the caches), so call it in chunks of a few thousand, as the callers do
(benchmarks/bench_rigid_body_regressor.py). The result agrees with Pinocchio to ~1e-15 of
the array's largest entry (tests/test_rigid_body_regressor.py).

Supported (`supported`): models whose every joint is 1-DoF with nq == nv == 1 — revolute about
x/y/z (`JointModelRX/RY/RZ`), `JointModelRevoluteUnaligned`, prismatic along x/y/z
(`JointModelPX/PY/PZ`) and `JointModelPrismaticUnaligned`. Joint placements, types and axes
are read once, at construction; `model.gravity` at every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

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


def _skew(x: np.ndarray) -> np.ndarray:
    """[x]× (3, 3): [x]× y = x × y."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _inverse_motion_transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """(6, 6) matrix of M.actInv on motions [linear; angular], M = (rotation, translation):
    linear' = R^T (linear - p × angular), angular' = R^T angular."""
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = rotation.T
    out[:3, 3:] = -rotation.T @ _skew(translation)
    return out


def _body_regressor(acc: np.ndarray, dw: np.ndarray, ww: np.ndarray) -> np.ndarray:
    """(..., 6, 10) Pinocchio's `bodyRegressor` as a linear function of acc = a + w × v
    (..., 3), dw (..., 3) and ww = (w0², w1², w2², w0 w1, w0 w2, w1 w2) (..., 6), for the body's
    spatial velocity [v; w] and acceleration [a; dw] in its frame. Rows [force; torque],
    columns [m, mc (3), Ixx, Ixy, Iyy, Ixz, Iyz, Izz]:
        force  = m acc + ([dw]× + w w^T - |w|² 1) mc
        torque = -[acc]× mc + L(dw) I + [w]× L(w) I,   with I x = L(x) [Ixx, ..., Izz]."""
    out = np.zeros((*acc.shape[:-1], 6, 10))
    a0, a1, a2 = acc[..., 0], acc[..., 1], acc[..., 2]
    d0, d1, d2 = dw[..., 0], dw[..., 1], dw[..., 2]
    w00, w11, w22, w01, w02, w12 = (ww[..., k] for k in range(6))
    out[..., :3, 0] = acc
    force_mc = (
        (-w11 - w22, w01 - d2, w02 + d1),
        (w01 + d2, -w00 - w22, w12 - d0),
        (w02 - d1, w12 + d0, -w00 - w11),
    )
    torque_mc = ((0.0, a2, -a1), (-a2, 0.0, a0), (a1, -a0, 0.0))
    torque_inertia = (  # L(dw) + [w]× L(w) (Pinocchio's addBigL + crossBigL)
        (d0, d1 - w02, -w12, d2 + w01, w11 - w22, w12),
        (w02, d0 + w12, d1, w22 - w00, d2 - w01, -w02),
        (-w01, w00 - w11, w01, d0 - w12, d1 + w02, d2),
    )
    for row in range(3):
        for col in range(3):
            out[..., row, 1 + col] = force_mc[row][col]
            out[..., 3 + row, 1 + col] = torque_mc[row][col]
        for col in range(6):
            out[..., 3 + row, 4 + col] = torque_inertia[row][col]
    return out


# (12, 60): Y.ravel() = [acc, dw, ww] @ _BODY_BASIS (`_body_regressor` is linear in them)
_UNIT = np.eye(12)
_BODY_BASIS = _body_regressor(_UNIT[:, :3], _UNIT[:, 3:6], _UNIT[:, 6:]).reshape(12, 60)


@dataclass(frozen=True)
class _Joint:
    """One 1-DoF joint. `parent`: Pinocchio index of its parent (0: the base); `index_q`,
    `index_v`: its q and v index; `revolute`, `axis` (3,): rotation about / translation along
    the unit axis, in the joint frame; `subspace` S (6,): its motion subspace; `cross_axis`
    (3, 3): C with x × axis = C x; `rows`: v indices of its ancestors from the base down to
    itself (the rows its link's columns fill).

    The motion transform parent frame -> joint frame, liMi(q).actInv with
    liMi = P M_j(q), P = `model.jointPlacements[i]`, is G_0 + sum_t f_t(q) G_t, `transforms`
    = [G_0; G_1; ...] (6 T, 6), each G_t = (a part of M_j^-1) P^-1: for a revolute joint
    f = (cos q, sin q), from R_j(q)^T = a a^T + cos q (1 - a a^T) - sin q [a]×; for a
    prismatic one f = (q,), from linear' = linear - q a × angular. An axis-aligned revolute
    joint (axis sign·e_k; `plane` = (i1, i2) = (k + 1, k + 2) mod 3, `sign`) has only
    G_0 = P^-1 and is then rotated in place, in both halves:
    x_i1' = cos q x_i1 + sign sin q x_i2, x_i2' = cos q x_i2 - sign sin q x_i1."""

    parent: int
    index_q: int
    index_v: int
    revolute: bool
    axis: np.ndarray
    subspace: np.ndarray
    cross_axis: np.ndarray
    transforms: np.ndarray
    plane: tuple[int, int] | None
    sign: float
    rows: tuple[int, ...]


def _joint(model: pin.Model, i: int, rows: tuple[int, ...]) -> _Joint:
    joint = model.joints[i]
    motion = joint_motion(joint)
    if motion is None:
        raise ValueError(f"joint {model.names[i]} ({joint.shortname()}) is not supported")
    revolute, axis = motion
    placement = model.jointPlacements[i]
    placement_inv = _inverse_motion_transform(
        np.array(placement.rotation, dtype=float), np.array(placement.translation, dtype=float)
    )
    skew = _skew(axis)
    nonzero = np.flatnonzero(axis)
    plane, sign = None, 1.0
    if revolute and nonzero.size == 1 and abs(axis[nonzero[0]]) == 1.0:
        k = int(nonzero[0])
        plane, sign = ((k + 1) % 3, (k + 2) % 3), float(axis[k])
        local = [np.eye(6)]
    elif revolute:
        along = np.outer(axis, axis)
        local = [np.kron(np.eye(2), part) for part in (along, np.eye(3) - along, -skew)]
    else:
        shift = np.zeros((6, 6))
        shift[:3, 3:] = -skew
        local = [np.eye(6), shift]
    zero = np.zeros(3)
    return _Joint(
        parent=int(model.parents[i]),
        index_q=int(joint.idx_q),
        index_v=int(joint.idx_v),
        revolute=revolute,
        axis=axis,
        subspace=np.concatenate([zero, axis] if revolute else [axis, zero]),
        cross_axis=-skew,
        transforms=np.concatenate([part @ placement_inv for part in local]),  # (6 T, 6)
        plane=plane,
        sign=sign,
        rows=rows,
    )


class BatchRegressor:
    """Pinocchio's joint torque regressor of a fixed model, vectorised over the samples."""

    def __init__(self, model: pin.Model):
        if not supported(model):
            kinds = sorted({j.shortname() for j in list(model.joints)[1:]})
            raise ValueError(
                f"BatchRegressor supports 1-DoF revolute/prismatic joints only, not {kinds}"
            )
        self.model = model
        self.n_joints = model.njoints - 1
        rows: list[tuple[int, ...]] = [()]
        joints = []
        for i in range(1, model.njoints):
            rows.append((*rows[model.parents[i]], int(model.joints[i].idx_v)))
            joints.append(_joint(model, i, rows[i]))
        self._joints = tuple(joints)
        # a joint's state is dropped after its last child has used it
        self._last_child = {int(model.parents[i]): i for i in range(1, model.njoints)}

    def __call__(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, nv, 10 nj) joint torque regressor (N·m per unit parameter) at joint positions
        q (N, nq) rad (m for a prismatic joint), velocities dq (N, nv) rad/s (m/s) and
        accelerations ddq (N, nv) rad/s² (m/s²); `pin.computeJointTorqueRegressor` per row."""
        q, dq, ddq = (np.asarray(a, dtype=float) for a in (q, dq, ddq))
        n, nv = len(q), self.model.nv
        if q.shape != (n, self.model.nq) or not dq.shape == ddq.shape == (n, nv):
            raise ValueError(f"q, dq, ddq have shapes {q.shape}, {dq.shape}, {ddq.shape}")
        out = np.zeros((n, nv, 10 * self.n_joints))
        q_t, dq_t, ddq_t = (np.ascontiguousarray(a.T) for a in (q, dq, ddq))  # samples last
        cos_t, sin_t = np.cos(q_t), np.sin(q_t)
        gravity = self.model.gravity
        base = np.zeros((6, 2, n))  # base frame: v = 0, a = -g (Pinocchio's a_gf[0])
        base[:3, 1] = -np.asarray(gravity.linear, dtype=float)[:, None]
        base[3:, 1] = -np.asarray(gravity.angular, dtype=float)[:, None]
        # per joint (6, 2 + k, N): v_i, a_i, then the k body Jacobian columns of its ancestors
        states: dict[int, np.ndarray] = {0: base}
        for i, joint in enumerate(self._joints, start=1):
            iq, iv = joint.index_q, joint.index_v
            factors = (cos_t[iq], sin_t[iq]) if joint.revolute else (q_t[iq],)
            state = _forward(joint, states[joint.parent], factors, dq_t[iv], ddq_t[iv])
            if self._last_child[joint.parent] == i:
                del states[joint.parent]
            if i in self._last_child:
                states[i] = state
            block, rows = slice(10 * (i - 1), 10 * i), joint.rows
            if rows == tuple(range(rows[0], rows[0] + len(rows))):
                _link_columns(state, out[:, rows[0] : rows[-1] + 1, block])
            else:
                out[:, list(rows), block] = _link_columns(state)
        return out


def _forward(
    joint: _Joint,
    parent: np.ndarray,
    factors: tuple[np.ndarray, ...],
    dq: np.ndarray,
    ddq: np.ndarray,
) -> np.ndarray:
    """Joint i's state (6, m + 1, N) from its parent's (6, m, N): every column moved into
    frame i (liMi.actInv, `_Joint`), then the joint's velocity S dq and acceleration
    v_i x S dq + S ddq added and the Jacobian column S appended (Pinocchio's
    JointTorqueRegressorForwardStep; these joints have no bias acceleration c).
    factors: (cos q, sin q) (revolute) or (q,) (prismatic), each (N,)."""
    m, n = parent.shape[1], parent.shape[2]
    state = np.empty((6, m + 1, n))
    moved = state[:, :m]
    if joint.plane is not None:
        np.matmul(joint.transforms, parent.reshape(6, m * n), out=moved.reshape(6, m * n))
        cos, sin = factors[0], joint.sign * factors[1]
        first, second = state[joint.plane[0] : 6 : 3, :m], state[joint.plane[1] : 6 : 3, :m]
        turned = first * cos
        turned += second * sin
        second *= cos
        second -= first * sin
        first[...] = turned
    else:
        parts = (joint.transforms @ parent.reshape(6, m * n)).reshape(-1, 6, m, n)
        np.multiply(parts[1], factors[0], out=moved)
        moved += parts[0]
        if len(factors) > 1:
            moved += parts[2] * factors[1]
    v, a = state[:, 0], state[:, 1]
    axis, crossed = joint.axis[:, None], joint.cross_axis
    if joint.revolute:  # v x S dq = [v_lin × axis; w × axis] dq
        v[3:] += axis * dq
        a[:3] += (crossed @ v[:3]) * dq
        a[3:] += (crossed @ v[3:]) * dq + axis * ddq
    else:  # v x S dq = [w × axis; 0] dq
        v[:3] += axis * dq
        a[:3] += (crossed @ v[3:]) * dq + axis * ddq
    state[:, m] = joint.subspace[:, None]
    return state


def _link_columns(state: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(N, k, 10) link i's columns on its ancestors' rows, (X_{i<-j} S_j)^T Y_i for the k
    Jacobian columns of `state` (`_forward`), Y_i its body regressor; written into `out` if
    given."""
    n = state.shape[2]
    v, w = state[:3, 0], state[3:, 0]
    features = np.empty((12, n))  # acc = a + w × v, dw, ww (`_body_regressor`)
    features[:3] = state[:3, 1]
    features[0] += w[1] * v[2] - w[2] * v[1]
    features[1] += w[2] * v[0] - w[0] * v[2]
    features[2] += w[0] * v[1] - w[1] * v[0]
    features[3:6] = state[3:, 1]
    np.multiply(w, w, out=features[6:9])
    np.multiply(w[0], w[1:], out=features[9:11])
    np.multiply(w[1], w[2], out=features[11])
    body = (features.T @ _BODY_BASIS).reshape(n, 6, 10)
    jacobian = np.ascontiguousarray(state[:, 2:].transpose(2, 1, 0))  # (N, k, 6)
    return np.matmul(jacobian, body, out=out)
