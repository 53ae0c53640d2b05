"""`mcap=true`: a run as run.mcap with JSON-schema messages (what Foxglove and PlotJuggler
read): joint states and the measured, physical and fused torques of both data sets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.model.robot import load_robot
from ident_framework.testing.cli import run_cli

pytestmark = pytest.mark.slow


def test_run_mcap_holds_what_the_run_directory_holds(tmp_path: Path, ur10e_logs):
    jsonschema = pytest.importorskip("jsonschema")
    from mcap.reader import make_reader

    robot = load_robot("ur10e")
    ident, val = ur10e_logs
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={ident}", "validation=csv",
        f"validation.path={val}", "mcap=true", "plots=false", f"hydra.run.dir={run}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    table = np.loadtxt(run / "predictions_validation.csv", delimiter=",", skiprows=1)
    messages: dict[str, list] = {}
    with open(run / "run.mcap", "rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        for schema, channel, message in reader.iter_messages():
            assert schema.encoding == "jsonschema" and channel.message_encoding == "json"
            body = json.loads(message.data)
            if len(messages.get(channel.topic, [])) < 3:
                jsonschema.validate(body, json.loads(schema.data))
            messages.setdefault(channel.topic, []).append((message.log_time, body))
    assert set(messages) == {
        "/identification/joint_states_filtered", "/identification/torque",
        "/validation/joint_states_filtered", "/validation/torque",
    }  # fmt: skip
    schemas = {c.topic: summary.schemas[c.schema_id] for c in summary.channels.values()}
    filtered = json.loads(schemas["/validation/joint_states_filtered"].data)
    assert "filtered" in filtered["description"] and "low-passed" in filtered["description"]
    assert summary is not None and len(summary.channels) == 4
    torque = messages["/validation/torque"]
    states = messages["/validation/joint_states_filtered"]
    assert len(torque) == len(table) == len(states)
    joints = list(robot.joint_names)
    for kind, first in (("measured", 1), ("physical", 7), ("fused", 13)):
        values = np.array([[body[kind][j] for j in joints] for _, body in torque])
        np.testing.assert_allclose(values, table[:, first : first + 6], rtol=1e-8, atol=1e-9)
    times = np.array([at for at, _ in torque]) * 1e-9
    np.testing.assert_allclose(times, table[:, 0], atol=1e-8)
    residual = np.array([[body["residual"][j] for j in joints] for _, body in torque])
    np.testing.assert_allclose(residual, table[:, 1:7] - table[:, 13:19], atol=1e-7)
    state = states[0][1]
    assert state["name"] == joints and len(state["position"]) == 6
    # effort is the low-passed torque (the fit's), not the recorded one: it differs from it
    effort = np.array([body["effort"] for _, body in states])
    assert 0 < np.abs(effort - table[:, 1:7]).max() < 0.5 * np.abs(table[:, 1:7]).max()
