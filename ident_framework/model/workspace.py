"""Where a robot arm may go, in its base frame (m, z up), with a clearance `clearance_m`: above
the floor plane `floor_z_m` (every point); out of a base column, a cylinder about the base z
axis (`radius_m`, `height_m`) that the points from the third joint on avoid; inside boxes and
half-spaces (normal · p <= offset_m; every point, or the frames named). `WorkspaceParams` is the
config (`trajectory.workspace`); `Workspace` binds it to a robot's points and gives the signed
margin (m) of every (region, point) pair: >= 0 allowed with the clearance kept, < 0 by how much
it is missed. `ArmPoints`: the distinct origins of the frames carried by moving joints, a tool
point and points along the segments between them, in the base frame (m) for many joint
configurations at once (rationale: docs/design.md#arm-point-kinematics).
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from ident_framework.errors import UserError
from ident_framework.model.robot import RobotModel
from ident_framework.params import Params, param

COLUMN_FROM_JOINT = 3  # 1-based: points carried by this joint and later avoid the base column
_SAME_POINT_M = 1e-9  # two points closer than this in every test configuration are one point


@dataclass(frozen=True)
class PointSet:
    """names (P,); parent joint (P,) (1-based; for a segment point, its near end's); `frame_of`
    (P,) the index into the frame points or -1 for a segment point, whose `segment_ends`
    (P, 2) and `segment_fraction` (P,) place it."""

    names: tuple[str, ...]
    parent_joint: np.ndarray
    frame_of: np.ndarray
    segment_ends: np.ndarray
    segment_fraction: np.ndarray


class ArmPoints:
    """Base-frame positions of the points of a robot. tool_offset_m: (3,) m in the last joint's
    frame, or None; segment_points: points spaced evenly inside each segment."""

    def __init__(
        self,
        robot: RobotModel,
        tool_offset_m: np.ndarray | list[float] | None = None,
        segment_points: int = 2,
    ):
        self.model = robot.pin_model
        model = self.model
        self.n_joints = model.njoints - 1
        frames = [(i, f) for i, f in enumerate(model.frames) if f.parentJoint > 0]
        # points that several frames share are named after the joint (e.g. 'elbow_joint')
        frames.sort(key=lambda item: (item[1].type != pin.FrameType.JOINT, item[0]))
        joint = [f.parentJoint for _, f in frames]
        offset = [np.array(f.placement.translation) for _, f in frames]
        names = [f.name for _, f in frames]
        if tool_offset_m is not None:
            joint.append(self.n_joints)
            offset.append(np.asarray(tool_offset_m, dtype=float).reshape(3))
            names.append("tool")
        self._joint_of_frame = np.array(joint, dtype=int)
        self._offset = np.array(offset, dtype=float).reshape(-1, 3)
        self._setup_joints()
        keep, same_as = self._distinct()
        self._joint_of_frame, self._offset = self._joint_of_frame[keep], self._offset[keep]
        # chain order: by carrying joint, then along the link (distance from its joint origin)
        order = np.lexsort((np.linalg.norm(self._offset, axis=1), self._joint_of_frame))
        self._joint_of_frame, self._offset = self._joint_of_frame[order], self._offset[order]
        position = {int(keep[k]): rank for rank, k in enumerate(order)}
        kept_names = [names[keep[k]] for k in order]
        self.points = self._with_segments(kept_names, segment_points)
        # every frame name (and 'tool') -> the index of the point at its origin
        self.aliases = {name: position[same_as[k]] for k, name in enumerate(names)}

    def _setup_joints(self) -> None:
        """Per joint: parent, placement (R, p) and the 1-DoF motion (axis, revolute or not);
        `_vectorised` False when a joint is of another kind."""
        model = self.model
        data = model.createData()
        q_neutral = pin.neutral(model)
        pin.computeJointJacobians(model, data, q_neutral)
        self._parent = [int(model.parents[i]) for i in range(model.njoints)]
        self._place_r = [np.array(placement.rotation) for placement in model.jointPlacements]
        self._place_p = [np.array(placement.translation) for placement in model.jointPlacements]
        self._axis: list[np.ndarray] = [np.zeros(3)]
        self._revolute: list[bool] = [False]
        self._vectorised = model.nq == model.nv == self.n_joints
        for i in range(1, model.njoints):
            joint = model.joints[i]
            if joint.nq != 1 or joint.nv != 1:
                self._vectorised = False
                self._axis.append(np.zeros(3))
                self._revolute.append(False)
                continue
            motion = pin.getJointJacobian(model, data, i, pin.LOCAL)[:, joint.idx_v]
            linear, angular = motion[:3], motion[3:]
            revolute = np.linalg.norm(angular) > 0.5
            axis, other = (angular, linear) if revolute else (linear, angular)
            ok = np.isclose(np.linalg.norm(axis), 1.0) and np.linalg.norm(other) < 1e-12
            self._vectorised &= bool(ok)
            self._axis.append(axis)
            self._revolute.append(bool(revolute))
        self._index_q = [int(model.joints[i].idx_q) for i in range(model.njoints)]

    def _distinct(self) -> tuple[np.ndarray, list[int]]:
        """(indices of the frame points distinct from earlier ones in a few test
        configurations, and for every frame point the index of the kept one it is)."""
        rng = np.random.default_rng(0)
        q = np.stack(
            [pin.randomConfiguration(self.model, -np.pi * np.ones(self.model.nq),
                                     np.pi * np.ones(self.model.nq)) for _ in range(4)]
        )  # fmt: skip
        q[0] = pin.neutral(self.model)
        q[1:] += 0.01 * rng.standard_normal(q[1:].shape)
        where = self._frame_positions(q)  # (F, 3, 4)
        keep: list[int] = []
        same_as: list[int] = []
        for k in range(len(where)):
            match = next((j for j in keep if np.abs(where[k] - where[j]).max() <= _SAME_POINT_M), k)
            if match == k:
                keep.append(k)
            same_as.append(match)
        return np.array(keep, dtype=int), same_as

    def _with_segments(self, names: list[str], per_segment: int) -> PointSet:
        n_frames = len(names)
        all_names, parent, frame_of = list(names), list(self._joint_of_frame), list(range(n_frames))
        ends, fraction = [[0, 0]] * n_frames, [0.0] * n_frames
        for a in range(n_frames - 1):
            for k in range(1, per_segment + 1):
                share = k / (per_segment + 1)
                all_names.append(f"{names[a]}-{names[a + 1]} ({share:.0%})")
                parent.append(int(self._joint_of_frame[a]))
                frame_of.append(-1)
                ends.append([a, a + 1])
                fraction.append(share)
        return PointSet(
            names=tuple(all_names),
            parent_joint=np.array(parent, dtype=int),
            frame_of=np.array(frame_of, dtype=int),
            segment_ends=np.array(ends, dtype=int),
            segment_fraction=np.array(fraction, dtype=float),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return self.points.names

    def positions(self, q: np.ndarray) -> np.ndarray:
        """(N, P, 3) positions in m, base frame, of the points for joint positions q (N, n)
        (a view of a (P, 3, N) array)."""
        origins = self._frame_positions(np.atleast_2d(np.asarray(q, dtype=float)))
        points = self.points
        a = origins[points.segment_ends[:, 0]]
        b = origins[points.segment_ends[:, 1]]
        along = a + points.segment_fraction[:, None, None] * (b - a)
        is_frame = points.frame_of >= 0
        along[is_frame] = origins[points.frame_of[is_frame]]
        return along.transpose(2, 0, 1)

    def _frame_positions(self, q: np.ndarray) -> np.ndarray:
        """(F, 3, N) origins of the frame points (and the tool point) in m."""
        rotation, translation = (
            self._joint_poses(q) if self._vectorised else self._joint_poses_pinocchio(q)
        )
        joint = self._joint_of_frame
        return translation[joint] + np.einsum("fikn,fk->fin", rotation[joint], self._offset)

    def _joint_poses(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(J, 3, 3, N) rotations and (J, 3, N) translations of every joint frame (J = njoints,
        index 0 the base) for all N samples at once (samples last: faster batched products)."""
        n = len(q)
        count = self.model.njoints
        rotation = np.empty((count, 3, 3, n))
        translation = np.empty((count, 3, n))
        rotation[0] = np.eye(3)[:, :, None]
        translation[0] = 0.0
        for i in range(1, count):
            parent = self._parent[i]
            angle = q[:, self._index_q[i]]
            parent_r = rotation[parent]
            translation[i] = translation[parent] + np.einsum(
                "ikn,k->in", parent_r, self._place_p[i]
            )
            place_r, axis = self._place_r[i], self._axis[i]
            if self._revolute[i] and abs(abs(axis[2]) - 1.0) < 1e-12:
                # about the joint's z axis (most arms): columns of (parent P) Rz(±angle)
                turned = np.einsum("ikn,kj->ijn", parent_r, place_r)
                cos, sin = np.cos(angle), np.sin(angle) * np.sign(axis[2])
                rotation[i, :, 0] = turned[:, 0] * cos + turned[:, 1] * sin
                rotation[i, :, 1] = turned[:, 1] * cos - turned[:, 0] * sin
                rotation[i, :, 2] = turned[:, 2]
            elif self._revolute[i]:
                # placement @ Rodrigues(axis, angle) = P + sin P K + (1 - cos) P K²
                skew = np.array(
                    [[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]]
                )
                local = (
                    place_r[:, :, None]
                    + (place_r @ skew)[:, :, None] * np.sin(angle)
                    + (place_r @ skew @ skew)[:, :, None] * (1.0 - np.cos(angle))
                )
                rotation[i] = np.einsum("ikn,kjn->ijn", parent_r, local)
            else:
                rotation[i] = np.einsum("ikn,kj->ijn", parent_r, place_r)
                translation[i] += np.einsum("ikn,k->in", rotation[i], axis) * angle
        return rotation, translation

    def _joint_poses_pinocchio(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As `_joint_poses`, one Pinocchio forward-kinematics call per sample."""
        data = self.model.createData()
        count = self.model.njoints
        rotation = np.empty((count, 3, 3, len(q)))
        translation = np.empty((count, 3, len(q)))
        for k, row in enumerate(q):
            pin.forwardKinematics(self.model, data, row)
            for i in range(count):
                rotation[i, :, :, k] = data.oMi[i].rotation
                translation[i, :, k] = data.oMi[i].translation
        return rotation, translation


def _vector(default: Any = MISSING, **more: Any) -> Any:
    """A field holding a point or direction [x, y, z] (m)."""
    return param(default, each=True, length=3, finite=True, unit="m", note="[x, y, z]", **more)


def _region(cls: type) -> Any:
    """`convert` of a field holding `cls` regions: plain dicts become `cls` instances."""

    def convert(value: Any) -> Any:
        if isinstance(value, list):
            return [convert(item) for item in value]
        return cls(**value) if isinstance(value, dict) else value

    return convert


def position_limit_pairs(params: Any) -> None:
    """Rule of a trajectory's params: `position_limits`, when given, are [min, max] pairs (rad)
    with min < max."""
    for row in params.position_limits or []:
        if not (len(row) == 2 and all(math.isfinite(v) for v in row) and row[0] < row[1]):
            raise ValueError(
                f"position_limits must be [min, max] pairs (rad) with min < max, got {row}"
            )


def _min_below_max(box: WorkspaceBox) -> None:
    if not all(low < high for low, high in zip(box.min_m, box.max_m, strict=True)):
        raise ValueError(f"min_m {box.min_m} must be below max_m {box.max_m} in x, y and z")


def _unit_normal(half: HalfSpace) -> None:
    """The normal scaled to length 1 (offset_m with it); ValueError for a zero normal."""
    length = float(np.linalg.norm(half.normal))
    if length == 0.0:
        raise ValueError(f"normal must be non-zero, got {half.normal}")
    half.normal = (np.asarray(half.normal) / length).tolist()
    half.offset_m = float(half.offset_m) / length


@dataclass
class BaseColumn(Params):
    """Keep-out cylinder about the base z axis: radius_m (m), height_m (m above the floor)."""

    radius_m: float = param(0.12, gt=0, unit="m")
    height_m: float = param(0.35, gt=0, unit="m")


@dataclass
class WorkspaceBox(Params):
    """Keep-in box min_m <= p <= max_m (m, base frame) for `frames` (null: every point)."""

    min_m: list[float] = _vector()
    max_m: list[float] = _vector()
    frames: list[str] | None = None
    rules = (_min_below_max,)


@dataclass
class HalfSpace(Params):
    """Keep-in half-space normal · p <= offset_m (normal in the base frame, normalised here;
    offset_m in m) for `frames` (null: every point)."""

    normal: list[float] = _vector()
    offset_m: float = param(finite=True, unit="m")
    frames: list[str] | None = None
    rules = (_unit_normal,)


@dataclass
class WorkspaceParams(Params):
    """See the module docstring and conf/trajectory/fourier.yaml (`workspace`)."""

    floor_z_m: float | None = param(0.0, finite=True, unit="m", null=True)
    clearance_m: float = param(0.1, ge=0, unit="m")
    tool_offset_m: list[float] | None = _vector(factory=lambda: [0.0, 0.0, 0.1], null=True)
    base_column: BaseColumn | None = param(factory=BaseColumn, convert=_region(BaseColumn))
    boxes: list[WorkspaceBox] = param(factory=list, convert=_region(WorkspaceBox))
    half_spaces: list[HalfSpace] = param(factory=list, convert=_region(HalfSpace))


@dataclass(frozen=True)
class Region:
    """One region bound to a robot's points: `kind` floor | column | box | half-space, a
    description, the indices of its points."""

    kind: str
    description: str
    points: np.ndarray
    index: int = 0  # which box or half-space


class Workspace:
    """`params` bound to `robot`; `key`: the config key named in messages."""

    def __init__(
        self, robot: RobotModel, params: WorkspaceParams, key: str = "trajectory.workspace"
    ):
        self.params = params
        self.key = key
        self.arm = ArmPoints(robot, params.tool_offset_m)
        self.regions: list[Region] = []
        if params.floor_z_m is not None:
            text = f"the floor plane z = {params.floor_z_m:g} m"
            self.regions.append(Region("floor", text, self._select(None, 0)))
        column = params.base_column
        if column is not None:
            carried = np.flatnonzero(self.arm.points.parent_joint >= COLUMN_FROM_JOINT)
            text = f"the base column (radius {column.radius_m:g} m, {column.height_m:g} m high)"
            self.regions.append(Region("column", text, carried))
        for k, box in enumerate(params.boxes):
            text = f"box {k} ({box.min_m} to {box.max_m} m)"
            self.regions.append(Region("box", text, self._select(box.frames, k), k))
        for k, half in enumerate(params.half_spaces):
            normal = np.round(half.normal, 4).tolist()
            text = f"half-space {k} ({normal} · p <= {half.offset_m:.4g} m)"
            self.regions.append(Region("half-space", text, self._select(half.frames, k), k))

    def _select(self, frames: list[str] | None, index: int) -> np.ndarray:
        if frames is None:
            return np.arange(len(self.arm.names))
        aliases = self.arm.aliases
        unknown = [name for name in frames if name not in aliases]
        if unknown:
            raise UserError(
                f"{self.key}: region {index} names frame(s) {unknown} that the robot does not "
                f"have; its frames are {sorted(aliases)}."
            )
        return np.array(sorted({aliases[name] for name in frames}), dtype=int)

    @property
    def point_names(self) -> tuple[str, ...]:
        return self.arm.names

    def positions(self, q: np.ndarray) -> np.ndarray:
        """(N, P, 3) positions (m, base frame) of the points for joint positions q (N, n)."""
        return self.arm.positions(q)

    def margins(self, q: np.ndarray) -> list[np.ndarray]:
        """Per region, (N, P_region) signed margins (m) for joint positions q (N, n) rad."""
        return self.margins_at(self.positions(q))

    def margins_at(self, p: np.ndarray) -> list[np.ndarray]:
        """`margins` of the points' positions p (N, P, 3) m."""
        params, clearance = self.params, self.params.clearance_m
        out = []
        for region in self.regions:
            points = p[:, region.points]
            if region.kind == "floor":
                margin = points[..., 2] - (params.floor_z_m + clearance)
            elif region.kind == "column":
                column = params.base_column
                bottom = params.floor_z_m or 0.0
                radial = np.hypot(points[..., 0], points[..., 1]) - (column.radius_m + clearance)
                above = points[..., 2] - (bottom + column.height_m + clearance)
                below = bottom - points[..., 2]  # under the floor: the floor's violation
                margin = np.maximum(np.maximum(radial, above), below)
            elif region.kind == "box":
                box = params.boxes[region.index]
                low = points - (np.asarray(box.min_m) + clearance)
                high = (np.asarray(box.max_m) - clearance) - points
                margin = np.minimum(low, high).min(axis=-1)
            else:
                half = params.half_spaces[region.index]
                margin = (half.offset_m - clearance) - points @ np.asarray(half.normal)
            out.append(margin)
        return out

    def worst_margin(self, q: np.ndarray) -> np.ndarray:
        """(N,) the smallest margin (m) over every region and point for each configuration."""
        margins = self.margins(q)
        if not margins:
            return np.full(len(np.atleast_2d(q)), np.inf)
        return np.min([m.min(axis=1) for m in margins], axis=0)
