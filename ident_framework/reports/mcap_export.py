"""A run as an MCAP file (`run.mcap`) that Foxglove and PlotJuggler open natively: JSON
messages with JSON schemas. Per data set (`identification`, `validation`), one message per
sample at its time:

- `/<set>/joint_states_filtered` (sensor_msgs/msg/JointState fields): the preprocessed
  samples the fit used, position (rad) and velocity (rad/s) filtered, effort the low-passed
  torque (Nm);
- `/<set>/torque`: `measured` (as recorded), `physical`, `fused` and `residual`
  (measured − fused), each joint name → Nm.

Times in ns: `metadata["time_origin_ns"]` (a ROS bag's first stamp) plus the sample time.
The schemas and message builders are shared with `online/mcap_recording.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError

MCAP_FILE = "run.mcap"
_STAMP = {
    "type": "object",
    "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}},
}
_ARRAY = {"type": "array", "items": {"type": "number"}}


RAW_STATES = "Joint states as received (sensor_msgs/msg/JointState fields): rad, rad/s, Nm"
FILTERED_STATES = (
    "Joint states as preprocessed for the fit (sensor_msgs/msg/JointState fields): position "
    "rad and velocity rad/s filtered, effort the low-passed torque Nm (the torque as recorded: "
    "`measured` of the torque topic)"
)


def joint_state_schema(description: str = RAW_STATES, title: str = "JointState") -> dict:
    return {
        "title": f"ident_framework.{title}",
        "description": description,
        "type": "object",
        "properties": {
            "header": {
                "type": "object",
                "properties": {"stamp": _STAMP, "frame_id": {"type": "string"}},
            },
            "name": {"type": "array", "items": {"type": "string"}},
            "position": _ARRAY,
            "velocity": _ARRAY,
            "effort": _ARRAY,
        },
    }


# torque kinds of a batch run's `/<set>/torque` messages and what each is
BATCH_TORQUES = {
    "measured": "as recorded",
    "physical": "the identified physical model",
    "fused": "physical + residual learner",
    "residual": "measured - fused",
}


def torque_schema(joints: tuple[str, ...], kinds: dict[str, str] = BATCH_TORQUES) -> dict:
    """JSON schema of a torque message: `timestamp` and, per kind, joint name -> Nm."""
    per_joint = {
        "type": "object",
        "properties": {name: {"type": "number"} for name in joints},
    }
    meanings = ", ".join(f"{kind} ({meaning})" for kind, meaning in kinds.items())
    return {
        "title": "ident_framework.JointTorques",
        "description": f"Joint torques in Nm: {meanings}",
        "type": "object",
        "properties": {"timestamp": _STAMP, **{kind: per_joint for kind in kinds}},
    }


def event_schema() -> dict:
    """JSON schema of an event message (the objects of online/events.jsonl)."""
    return {
        "title": "ident_framework.Event",
        "description": "A service event: kind (drift, response, twin, reset, start, end, ...), "
        "t (s, source time), joint (0-based) and joint_name for a drift alarm",
        "type": "object",
        "properties": {
            "kind": {"type": "string"},
            "t": {"type": ["number", "null"]},
            "joint": {"type": "integer"},
            "joint_name": {"type": "string"},
            "sigma_Nm": {"type": "number"},
        },
        "required": ["kind"],
    }


def writer_class():
    """mcap's Writer; UserError without the `mcap` package."""
    try:
        from mcap.writer import Writer
    except ImportError:
        raise UserError(
            "mcap=true needs the `mcap` package, the extra `mcap`: "
            'pip install "ident-framework[mcap]".'
        ) from None
    return Writer


def new_writer(stream):
    """An mcap Writer started on the binary `stream`; UserError without the `mcap` package."""
    writer = writer_class()(stream)
    writer.start(profile="", library="ident_framework")
    return writer


def json_channel(writer, topic: str, schema: dict) -> int:
    """A channel of JSON messages with `schema` (registered once per channel)."""
    schema_id = writer.register_schema(
        name=schema["title"], encoding="jsonschema", data=json.dumps(schema).encode()
    )
    return writer.register_channel(topic, "json", schema_id)


def stamp(ns: int) -> dict[str, int]:
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def joint_state_message(at: dict, joints: list[str], q, dq, effort) -> bytes:
    """One JointState-like message (lists of float: rad, rad/s, Nm) as JSON bytes."""
    state = {
        "header": {"stamp": at, "frame_id": ""},
        "name": joints,
        "position": q,
        "velocity": dq,
        "effort": effort,
    }
    return json.dumps(state).encode()


def torque_message(at: dict, joints: tuple[str, ...], torques: dict[str, list[float]]) -> bytes:
    """One torque message: kind -> per-joint list of Nm, as JSON bytes."""
    body = {"timestamp": at}
    for kind, values in torques.items():
        body[kind] = dict(zip(joints, values, strict=True))
    return json.dumps(body).encode()


def _write_set(writer, name: str, data: Dataset, physical: np.ndarray, fused: np.ndarray) -> None:
    joints = tuple(data.joint_names)
    schema = joint_state_schema(FILTERED_STATES, "JointStateFiltered")
    states = json_channel(writer, f"/{name}/joint_states_filtered", schema)
    torques = json_channel(writer, f"/{name}/torque", torque_schema(joints))
    origin = int(data.metadata.get("time_origin_ns", 0))
    times = origin + np.round(np.asarray(data.timestamp) * 1e9).astype(np.int64)
    recorded = data.measured_torque  # as recorded, never the low-passed torque (DESIGN.md)
    for k, at in enumerate(times.tolist()):
        measured = recorded[k]
        state = joint_state_message(
            stamp(at), list(joints), data.q[k].tolist(), data.dq[k].tolist(), data.tau[k].tolist()
        )
        torque = torque_message(
            stamp(at),
            joints,
            {
                "measured": measured.tolist(),
                "physical": physical[k].tolist(),
                "fused": fused[k].tolist(),
                "residual": (measured - fused[k]).tolist(),
            },
        )
        writer.add_message(states, at, state, at, sequence=k)
        writer.add_message(torques, at, torque, at, sequence=k)


def write_result_mcap(folder: Path, result) -> Path:
    """`run.mcap` of an identification result (`identify.result.IdentificationResult`): its
    identification and validation data with the measured, physical and fused torques."""
    target = folder / MCAP_FILE
    partial = target.with_name(target.name + ".partial")
    with open(partial, "wb") as stream:
        writer = new_writer(stream)
        for name, split, data in (
            ("identification", "train", result.data.train),
            ("validation", "validation", result.data.validation),
        ):
            predicted = result.predictions[split]
            physical, fused = np.asarray(predicted.physical), np.asarray(predicted.final)
            _write_set(writer, name, data, physical, fused)
        writer.finish()
    os.replace(partial, target)
    return target
