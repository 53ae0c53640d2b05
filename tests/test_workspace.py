"""Points of the arm (batched forward kinematics) and the workspace regions' margins."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from ident_framework.errors import UserError
from ident_framework.model.robot import load_robot
from ident_framework.model.ur_description import UR_HOME, UR_MODELS
from ident_framework.model.workspace import (
    ArmPoints,
    BaseColumn,
    Workspace,
    WorkspaceBox,
    WorkspaceParams,
)

TOOL = np.array([0.0, 0.02, 0.1])  # off the last joint's axis, so wrist_3 moves it


@pytest.fixture(scope="module", params=UR_MODELS)
def robot(request):
    return load_robot(request.param)


def _pinocchio_points(robot, q: np.ndarray, names: list[str]) -> np.ndarray:
    """(N, len(names), 3) frame origins (and 'tool') by Pinocchio, one sample at a time."""
    model = robot.pin_model
    data = model.createData()
    out = np.empty((len(q), len(names), 3))
    for k, row in enumerate(q):
        pin.framesForwardKinematics(model, data, row)
        for i, name in enumerate(names):
            if name == "tool":
                out[k, i] = data.oMf[model.getFrameId("wrist_3_link")].act(TOOL)
            else:
                out[k, i] = data.oMf[model.getFrameId(name)].translation
    return out


def test_batched_points_match_pinocchio(robot):
    """Every frame origin, the tool point and the points along the links, for random poses
    over the whole joint range, agree with Pinocchio's forward kinematics (and so does the
    per-sample fallback used for other joint types)."""
    arm = ArmPoints(robot, TOOL)
    q = np.random.default_rng(3).uniform(-2 * np.pi, 2 * np.pi, (200, 6))
    got = arm.positions(q)
    frames = [n for n in arm.aliases if n != "tool"] + ["tool"]
    expected = _pinocchio_points(robot, q, frames)
    for i, name in enumerate(frames):
        np.testing.assert_allclose(got[:, arm.aliases[name]], expected[:, i], atol=1e-12)
    # a point along a link is where it says, between the two origins
    points = arm.points
    k = int(np.flatnonzero(points.frame_of < 0)[0])
    a, b = points.segment_ends[k]
    share = points.segment_fraction[k]
    np.testing.assert_allclose(got[:, k], got[:, a] + share * (got[:, b] - got[:, a]), atol=1e-12)
    arm._vectorised = False
    np.testing.assert_allclose(arm.positions(q[:20]), got[:20], atol=1e-12)


def test_points_are_distinct_and_named_after_joints(robot):
    arm = ArmPoints(robot, [0.0, 0.0, 0.1], segment_points=0)
    assert arm.names == (
        "shoulder_pan_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint",
        "tool",
    )  # fmt: skip
    assert arm.aliases["forearm_link"] == arm.aliases["elbow_joint"]
    assert arm.aliases["upper_arm_link"] == arm.aliases["shoulder_pan_joint"]


def test_floor_margin_is_height_minus_clearance(robot):
    """Margins are the points' heights minus floor and clearance; the shoulder's height is
    Pinocchio's (always the base height d1)."""
    workspace = Workspace(
        robot, WorkspaceParams(floor_z_m=0.02, clearance_m=0.03, base_column=None)
    )
    q = np.array([UR_HOME, np.zeros(6)])
    heights = workspace.positions(q)[..., 2]
    expected = _pinocchio_points(robot, q, ["shoulder_link", "wrist_2_link", "wrist_3_link"])
    assert heights[:, 0] == pytest.approx(expected[:, 0, 2])
    [floor] = workspace.margins(q)
    np.testing.assert_allclose(floor, heights - 0.05)
    assert workspace.worst_margin(q) == pytest.approx(heights.min(axis=1) - 0.05)


def test_base_column_keeps_the_wrist_and_tool_out():
    """A pose folding the forearm down along the upper arm with the tool turned towards the
    base axis puts the tool inside the column; the shoulder and the upper arm, which start
    inside it, are exempt."""
    robot = load_robot("ur10e")
    workspace = Workspace(robot, WorkspaceParams(floor_z_m=None, clearance_m=0.0,
                                                 base_column=BaseColumn(0.15, 0.4)))  # fmt: skip
    [column] = workspace.regions
    names = [workspace.point_names[i] for i in column.points]
    assert "shoulder_pan_joint" not in names and "elbow_joint" in names and "tool" in names
    assert not any(name.startswith("shoulder_pan_joint-") for name in names)
    folded = np.array([[0.0, -np.pi / 2, -3.0, -np.pi / 2, -np.pi, 0.0]])
    p = workspace.positions(folded)[0]
    radial = np.hypot(p[:, 0], p[:, 1])
    inside = (radial < 0.15) & (p[:, 2] < 0.4)
    margin = workspace.margins(folded)[0][0]
    expected = np.maximum(np.maximum(radial - 0.15, p[:, 2] - 0.4), -p[:, 2])[column.points]
    np.testing.assert_allclose(margin, expected)
    assert inside[workspace.arm.aliases["tool"]]
    assert margin.min() < -0.03
    assert workspace.worst_margin(np.array([UR_HOME]))[0] > 0.0


def test_boxes_and_half_spaces_for_named_frames():
    robot = load_robot("ur5e")
    params = WorkspaceParams(
        floor_z_m=None, base_column=None, clearance_m=0.01,
        boxes=[WorkspaceBox([-2, -2, -2], [2, 0.1, 2], frames=["wrist_3_link", "tool"])],
        half_spaces=[{"normal": [0, 0, 2], "offset_m": 1.6}],  # z <= 0.8 m, normalised
    )  # fmt: skip
    workspace = Workspace(robot, params)
    box, half = workspace.regions
    assert [workspace.point_names[i] for i in box.points] == ["wrist_3_joint", "tool"]
    assert len(half.points) == len(workspace.point_names)
    assert params.half_spaces[0].normal == [0.0, 0.0, 1.0]
    assert params.half_spaces[0].offset_m == pytest.approx(0.8)
    q = np.array([UR_HOME])
    p = workspace.positions(q)[0]
    box_margin, half_margin = (m[0] for m in workspace.margins(q))
    np.testing.assert_allclose(box_margin, 0.1 - 0.01 - p[box.points, 1])  # y is the binding side
    np.testing.assert_allclose(half_margin, 0.8 - 0.01 - p[:, 2])
    with pytest.raises(UserError, match=r"names frame\(s\) \['flange'\].*its frames are"):
        Workspace(robot, WorkspaceParams(boxes=[WorkspaceBox([0, 0, 0], [1, 1, 1], ["flange"])]))


@pytest.mark.parametrize(
    "bad",
    [
        {"clearance_m": -0.01},
        {"floor_z_m": float("nan")},
        {"tool_offset_m": [0.0, 0.1]},
        {"base_column": {"radius_m": 0.0, "height_m": 0.3}},
        {"boxes": [{"min_m": [0, 0, 1], "max_m": [1, 1, 0.5]}]},
        {"half_spaces": [{"normal": [0, 0, 0], "offset_m": 1.0}]},
    ],
)
def test_bad_workspace_values_are_rejected(bad):
    with pytest.raises(ValueError):
        WorkspaceParams(**bad)


def test_one_setting_for_the_design_and_the_rtde_check():
    """source=rtde's check reads trajectory.workspace (and the validation motion keeps to it):
    a floor and a box given once reach all three; source.floor_z_m says where it went."""
    from hydra import compose, initialize_config_module

    from ident_framework.config.plugin_config import build_params, group_values
    from ident_framework.config.search_path import register_plugin_search_path
    from ident_framework.sources.rtde import RtdeSourceParams
    from ident_framework.trajectories.fourier.params import FourierParams
    from ident_framework.trajectories.point_to_point import PointToPointParams

    register_plugin_search_path()
    overrides = ["source=rtde", "source.host=192.0.2.1", "trajectory.workspace.floor_z_m=0.2",
                 "trajectory.workspace.boxes=[{min_m:[-1,-1,0],max_m:[1,0.3,1.5]}]"]  # fmt: skip

    def params(cfg, key, schema):
        values = group_values(cfg[key], key)
        values.pop("plugin")
        return build_params(schema, values, key, "test")

    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=overrides)
        refused = compose("config", overrides=[*overrides, "source.floor_z_m=0.1"])
    design = params(cfg, "trajectory", FourierParams).workspace
    check = params(cfg, "source", RtdeSourceParams).workspace
    validation = build_params(PointToPointParams, {
        k: v for k, v in group_values(cfg.validation.trajectory, "v").items() if k != "plugin"
    }, "validation.trajectory", "test").workspace  # fmt: skip
    assert design == check == validation
    assert check.floor_z_m == 0.2 and check.boxes[0].max_m == [1.0, 0.3, 1.5]
    with pytest.raises(UserError, match=r"give trajectory\.workspace\.floor_z_m=0\.1 instead"):
        params(refused, "source", RtdeSourceParams)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_to_point_motion_keeps_to_the_workspace(robot, seed):
    """The validation motion (point_to_point, default settings) passes source=rtde's check;
    with joint limits only the same generator sends the arm through the table."""
    from ident_framework.model.motion_safety import SafetyLimits, check_trajectory
    from ident_framework.sources.rtde import RtdeSourceParams, safety_limits
    from ident_framework.trajectories.point_to_point import (
        PointToPointGenerator,
        PointToPointParams,
    )

    limits = safety_limits(RtdeSourceParams(host="192.0.2.1"))
    motion = PointToPointGenerator(PointToPointParams()).generate(robot, None, seed)
    report = check_trajectory(robot, motion, limits)
    assert report.safe, [v.describe() for v in report.violations]
    free = PointToPointGenerator(PointToPointParams(workspace=None)).generate(robot, None, seed)
    assert check_trajectory(robot, free, SafetyLimits()).min_floor_clearance_m < 0.0
