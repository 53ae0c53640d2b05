"""Where a robot arm may go: the floor (table) plane, a keep-out column around the robot's base,
keep-in boxes and half-spaces, all in the robot's base frame (m, z up), with a clearance.

`WorkspaceParams` is the config (`trajectory.workspace`, read by `source=rtde` for its check
too); `Workspace` binds it to a robot and gives, for many joint configurations at once, the
signed margin of every (region, point) pair: >= 0 inside the allowed space with the clearance
kept, < 0 by how much (m) a point is too close or beyond. The points (`point_kinematics.ArmPoints`)
are the origins of the robot's link frames, a tool point and points along the links; they are
points on the joint axes, not the links' surfaces, so the clearance must cover the links' radius.

Regions and the points they apply to:
- floor: every point stays `clearance_m` above `floor_z_m`;
- base column: a cylinder about the base z axis from the floor up (`radius_m`, `height_m`; the
  base and shoulder housing) that the points from the third joint on (forearm, wrist, tool)
  stay out of by `clearance_m` (the upper arm starts inside it, at the shoulder);
- boxes, half-spaces (normal · p <= offset_m): every point, or the frames named, stays inside
  by `clearance_m`.
The floor, boxes and half-spaces are convex: a link segment whose end points are inside is
inside. The column is not, hence the points along the links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ident_framework.errors import UserError
from ident_framework.model.point_kinematics import ArmPoints
from ident_framework.model.robot import RobotModel

COLUMN_FROM_JOINT = 3  # 1-based: points carried by this joint and later avoid the base column


def _vector(value: list[float], name: str) -> list[float]:
    values = [float(v) for v in value]
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{name} must be three finite numbers [x, y, z] in m, got {value}")
    return values


@dataclass
class BaseColumn:
    """Keep-out cylinder about the base z axis: radius_m (m), height_m (m above the floor)."""

    radius_m: float = 0.12
    height_m: float = 0.35

    def __post_init__(self) -> None:
        for name in ("radius_m", "height_m"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be > 0 m, got {value}")


@dataclass
class WorkspaceBox:
    """Keep-in box min_m <= p <= max_m (m, base frame) for `frames` (null: every point)."""

    min_m: list[float]
    max_m: list[float]
    frames: list[str] | None = None

    def __post_init__(self) -> None:
        self.min_m, self.max_m = _vector(self.min_m, "min_m"), _vector(self.max_m, "max_m")
        if not all(low < high for low, high in zip(self.min_m, self.max_m, strict=True)):
            raise ValueError(f"min_m {self.min_m} must be below max_m {self.max_m} in x, y and z")


@dataclass
class HalfSpace:
    """Keep-in half-space normal · p <= offset_m (normal in the base frame, normalised here;
    offset_m in m) for `frames` (null: every point)."""

    normal: list[float]
    offset_m: float
    frames: list[str] | None = None

    def __post_init__(self) -> None:
        normal = np.asarray(_vector(self.normal, "normal"))
        length = float(np.linalg.norm(normal))
        if length == 0.0 or not math.isfinite(self.offset_m):
            raise ValueError(
                f"normal must be non-zero and offset_m finite, got {self.normal} and "
                f"{self.offset_m}"
            )
        self.normal = (normal / length).tolist()
        self.offset_m = float(self.offset_m) / length


@dataclass
class WorkspaceParams:
    """See the module docstring and conf/trajectory/fourier.yaml (`workspace`)."""

    floor_z_m: float | None = 0.0
    clearance_m: float = 0.1
    tool_offset_m: list[float] | None = field(default_factory=lambda: [0.0, 0.0, 0.1])
    base_column: BaseColumn | None = field(default_factory=BaseColumn)
    boxes: list[WorkspaceBox] = field(default_factory=list)
    half_spaces: list[HalfSpace] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.floor_z_m is not None and not math.isfinite(self.floor_z_m):
            raise ValueError(
                f"floor_z_m must be a finite height in m or null, got {self.floor_z_m}"
            )
        if not (math.isfinite(self.clearance_m) and self.clearance_m >= 0.0):
            raise ValueError(f"clearance_m must be >= 0 m, got {self.clearance_m}")
        if self.tool_offset_m is not None:
            self.tool_offset_m = _vector(self.tool_offset_m, "tool_offset_m")
        # plain dicts (e.g. from a Python caller) become the region dataclasses
        if isinstance(self.base_column, dict):
            self.base_column = BaseColumn(**self.base_column)
        self.boxes = [b if isinstance(b, WorkspaceBox) else WorkspaceBox(**b) for b in self.boxes]
        self.half_spaces = [
            h if isinstance(h, HalfSpace) else HalfSpace(**h) for h in self.half_spaces
        ]


@dataclass(frozen=True)
class Region:
    """One region bound to a robot's points: `kind` floor | column | box | half-space, a
    description for messages, and the indices of the points it applies to."""

    kind: str
    description: str
    points: np.ndarray
    index: int = 0  # which box or half-space


class Workspace:
    """`params` bound to `robot` (see the module docstring); `key` is the config key named
    in messages (e.g. 'trajectory.workspace')."""

    def __init__(
        self, robot: RobotModel, params: WorkspaceParams, key: str = "trajectory.workspace"
    ):
        self.params = params
        self.key = key
        self.arm = ArmPoints(robot, params.tool_offset_m)
        every = np.arange(len(self.arm.names))
        self.regions: list[Region] = []
        if params.floor_z_m is not None:
            self.regions.append(
                Region("floor", f"the floor plane z = {params.floor_z_m:g} m", every)
            )
        column = params.base_column
        if column is not None:
            carried = np.flatnonzero(self.arm.points.parent_joint >= COLUMN_FROM_JOINT)
            self.regions.append(
                Region(
                    "column",
                    f"the base column (radius {column.radius_m:g} m, {column.height_m:g} m high)",
                    carried,
                )
            )
        for k, box in enumerate(params.boxes):
            self.regions.append(
                Region(
                    "box", f"box {k} ({box.min_m} to {box.max_m} m)", self._select(box.frames, k), k
                )  # fmt: skip
            )
        for k, half in enumerate(params.half_spaces):
            normal = np.round(half.normal, 4).tolist()
            self.regions.append(
                Region(
                    "half-space",
                    f"half-space {k} ({normal} · p <= {half.offset_m:.4g} m)",
                    self._select(half.frames, k),
                    k,
                )  # fmt: skip
            )

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
        """Per region, (N, P_region) signed margins in m for joint positions q (N, n) rad:
        >= 0 allowed with the clearance kept, < 0 by how much it is missed."""
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
