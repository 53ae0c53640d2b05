"""Where a robot arm may go, in its base frame (m, z up), with a clearance `clearance_m`: above
the floor plane `floor_z_m` (every point); out of a base column, a cylinder about the base z
axis (`radius_m`, `height_m`) that the points from the third joint on avoid; inside boxes and
half-spaces (normal · p <= offset_m; every point, or the frames named). `WorkspaceParams` is the
config (`trajectory.workspace`); `Workspace` binds it to a robot's points
(`point_kinematics.ArmPoints`) and gives the signed margin (m) of every (region, point) pair:
>= 0 allowed with the clearance kept, < 0 by how much it is missed.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass
from typing import Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.model.point_kinematics import ArmPoints
from ident_framework.model.robot import RobotModel
from ident_framework.params import Params, param

COLUMN_FROM_JOINT = 3  # 1-based: points carried by this joint and later avoid the base column


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
