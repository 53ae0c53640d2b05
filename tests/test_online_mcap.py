"""mode=online with mcap=true: online/run.mcap read back with the mcap reader, every message
validated against its channel's JSON schema, and matched against what the service saw (its
summary, events.jsonl, the replayed recording)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from ident_framework.testing.cli import FAST, running_service

pytestmark = pytest.mark.slow
TOPICS = {"/online/joint_states", "/online/torque", "/online/events", "/online/drift"}


def read_mcap(path: Path) -> tuple[dict[str, list[tuple[int, dict]]], object]:
    """topic -> [(log time ns, message)], every message validated; and the summary section."""
    jsonschema = pytest.importorskip("jsonschema")
    from mcap.reader import make_reader

    messages: dict[str, list[tuple[int, dict]]] = {}
    validators: dict[int, object] = {}
    with open(path, "rb") as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            assert schema.encoding == "jsonschema" and channel.message_encoding == "json"
            if schema.id not in validators:
                body = json.loads(schema.data)
                jsonschema.Draft202012Validator.check_schema(body)
                validators[schema.id] = jsonschema.Draft202012Validator(body)
            document = json.loads(message.data)
            validators[schema.id].validate(document)
            messages.setdefault(channel.topic, []).append((message.log_time, document))
    return messages, summary


def test_mcap_of_a_simulated_run_stopped_with_ctrl_c(tmp_path):
    """The simulated robot with a payload change (1.5 -> 3.5 kg at 12 s), as fast as possible,
    stopped with SIGINT after 16 s of source time: a complete file (summary section), one
    joint state per sample, one torque per update, the events of events.jsonl and its drift
    alarms; the last 5 s of torques give the service's own sliding RMSE and R²."""
    run = tmp_path / "run"
    with running_service(
        run,
        "online.time_factor=null",
        "online.twin.every_s=null",
        "online.payload_change={t_s: 12.0, mass_kg: 3.5}",
        "mcap=true",
    ) as service:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            state = httpx.get(service.url + "api/state", timeout=10).json()
            if (state.get("t") or 0.0) > 16.0:
                break
            time.sleep(0.2)
        assert service.stop(signal.SIGINT) == 0, service.output
    summary = json.loads((run / "online" / "summary.json").read_text())
    assert summary["stop_reason"].startswith("stopped")
    messages, mcap_summary = read_mcap(run / "online" / "run.mcap")
    assert mcap_summary is not None  # finished: summary section written on Ctrl-C
    assert set(messages) == TOPICS
    assert {c.topic for c in mcap_summary.channels.values()} == TOPICS
    counts = summary["mcap"]
    assert counts["dropped_samples"] == counts["dropped_steps"] == 0
    states, torques = messages["/online/joint_states"], messages["/online/torque"]
    assert len(states) == summary["samples_received"] == counts["samples"]
    assert len(torques) == summary["updates"] == counts["steps"]
    # the recorded torque of each processed (centre) sample is the effort of that sample
    effort = {at: body["effort"] for at, body in states}
    joints = states[0][1]["name"]
    for at, body in torques[:: max(1, len(torques) // 500)]:
        assert [body["measured"][j] for j in joints] == effort[at]
        residual = [body["measured"][j] - body["predicted"][j] for j in joints]
        np.testing.assert_allclose([body["residual"][j] for j in joints], residual, atol=1e-12)
    # the sliding window of the service (online.window_s = 5 s: 2500 samples) from the file
    last = torques[-2500:]
    error = np.array([[b["measured"][j] - b["predicted"][j] for j in joints] for _, b in last])
    measured = np.array([[b["measured"][j] for j in joints] for _, b in last])
    np.testing.assert_allclose(
        np.sqrt(np.mean(error**2, axis=0)), summary["sliding"]["rmse"], rtol=1e-7
    )
    r2 = 1 - np.sum(error**2, axis=0) / np.sum((measured - measured.mean(axis=0)) ** 2, axis=0)
    np.testing.assert_allclose(r2, summary["sliding"]["r2"], rtol=1e-7)
    # events: those of events.jsonl, in order; the drift channel holds the drift alarms
    logged = [
        json.loads(line) for line in (run / "online" / "events.jsonl").read_text().splitlines()
    ]
    assert [body for _, body in messages["/online/events"]] == logged
    drifts = [body for _, body in messages["/online/drift"]]
    assert drifts and drifts == [e for e in logged if e["kind"] == "drift"]
    assert [(e["joint"], e["t"]) for e in drifts] == [
        (e["joint"], e["t"]) for e in summary["drift_events"]
    ]
    assert all(12.0 - 0.03 <= e["t"] <= 12.5 for e in drifts)
    assert [at for at, _ in messages["/online/drift"]] == [round(e["t"] * 1e9) for e in drifts]
    assert "run.mcap:" in service.output


def test_mcap_of_a_replayed_recording_holds_its_samples_exactly(tmp_path):
    """source=csv to the end of the recording: the joint states are the CSV's rows, to the
    bit, at the recording's timestamps."""
    from ident_framework.model.robot import load_robot
    from ident_framework.rtde.playback import default_motion
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams

    robot = load_robot("ur12e")
    n = robot.n_joints
    data = MujocoSource(MujocoSourceParams()).acquire(robot, default_motion(robot, period_s=8.0))
    csv = tmp_path / "log.csv"
    names = [f"{kind}_{j}" for kind in ("actual_q", "actual_qd", "actual_current_as_torque")
             for j in range(n)]  # fmt: skip
    np.savetxt(
        csv,
        np.column_stack([data.timestamp, data.q, data.dq, data.tau]),
        delimiter=",",
        header=",".join(["timestamp", *names]),
        comments="",
        fmt="%.17g",  # every double exactly
    )
    command = [sys.executable, "-m", "ident_framework", "mode=online", *FAST, "source=csv"]
    command += [f"source.path={csv}", "online.time_factor=null", "online.twin.every_s=null"]
    command += ["mcap=true", f"hydra.run.dir={tmp_path / 'run'}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    header = csv.read_text().splitlines()[0].split(",")
    table = np.loadtxt(csv, delimiter=",", skiprows=1)
    rows = len(table)
    messages, mcap_summary = read_mcap(tmp_path / "run" / "online" / "run.mcap")
    assert mcap_summary is not None
    states = messages["/online/joint_states"]
    assert len(states) == rows
    columns = [
        header.index(f"{kind}_{j}")
        for kind in ("actual_q", "actual_qd", "actual_current_as_torque")
        for j in range(n)
    ]
    got = np.array([[*s["position"], *s["velocity"], *s["effort"]] for _, s in states])
    np.testing.assert_array_equal(got, table[:, columns])
    times = np.array([at for at, _ in states])
    np.testing.assert_array_equal(
        times, np.round(table[:, header.index("timestamp")] * 1e9).astype(np.int64)
    )
    assert len(messages["/online/torque"]) == rows - 24
    assert [e["kind"] for _, e in messages["/online/events"]][-1] == "end"
