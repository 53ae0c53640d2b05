"""A run as an MCAP file (`run.mcap`, the `mcap` package) that Foxglove and PlotJuggler open with
no conversion: JSON messages with JSON schemas ("jsonschema" schema encoding, "json" message
encoding, the encodings both tools read natively).

Per data set (`identification`, `validation`), one message per sample at the sample's time:

- `/<set>/joint_states`: like sensor_msgs/msg/JointState: `header.stamp` {sec, nsec},
  `name`, `position` (rad), `velocity` (rad/s), `effort` (the measured torque, Nm);
- `/<set>/torque`: `measured`, `physical` (identified model), `fused` (physical + residual
  learner; equals physical without one) and `residual` (measured − fused), each an object of
  joint name → Nm, so every joint is a plottable field of its own.

Log and publish times are in ns: `metadata["time_origin_ns"]` of the recording (a ROS bag's
first stamp) plus the sample time, else the sample time itself. Written to a temporary name and
renamed, so a reader never sees half a file.
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


def joint_state_schema() -> dict:
    return {
        "title": "ident_framework.JointState",
        "description": "Joint states (sensor_msgs/msg/JointState fields): rad, rad/s, Nm",
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


def torque_schema(joints: tuple[str, ...]) -> dict:
    per_joint = {
        "type": "object",
        "properties": {name: {"type": "number"} for name in joints},
    }
    return {
        "title": "ident_framework.JointTorques",
        "description": "Joint torques in Nm: measured, identified physical model, fused "
        "(physical + residual learner), residual = measured - fused",
        "type": "object",
        "properties": {
            "timestamp": _STAMP,
            **{kind: per_joint for kind in ("measured", "physical", "fused", "residual")},
        },
    }


def write_run_mcap(
    path: str | os.PathLike[str],
    sets: dict[str, tuple[Dataset, np.ndarray, np.ndarray]],
) -> Path:
    """Write `sets` (name -> (data, physical torque, fused torque), (N, n) in Nm) to `path`."""
    try:
        from mcap.writer import Writer
    except ImportError:
        raise UserError(
            "mcap=true needs the `mcap` package, the extra `mcap`: "
            'pip install "ident-framework[mcap]".'
        ) from None
    target = Path(os.fspath(path))
    partial = target.with_name(target.name + ".partial")
    with open(partial, "wb") as stream:
        writer = Writer(stream)
        writer.start(profile="", library="ident_framework")
        for name, (data, physical, fused) in sets.items():
            _write_set(writer, name, data, np.asarray(physical), np.asarray(fused))
        writer.finish()
    os.replace(partial, target)
    return target


def _write_set(writer, name: str, data: Dataset, physical: np.ndarray, fused: np.ndarray) -> None:
    joints = tuple(data.joint_names)
    states = writer.register_channel(
        f"/{name}/joint_states", "json", _schema(writer, joint_state_schema())
    )
    torques = writer.register_channel(
        f"/{name}/torque", "json", _schema(writer, torque_schema(joints))
    )
    origin = int(data.metadata.get("time_origin_ns", 0))
    times = origin + np.round(np.asarray(data.timestamp) * 1e9).astype(np.int64)
    for k, at in enumerate(times.tolist()):
        stamp = {"sec": at // 1_000_000_000, "nsec": at % 1_000_000_000}
        state = {
            "header": {"stamp": stamp, "frame_id": ""},
            "name": list(joints),
            "position": data.q[k].tolist(),
            "velocity": data.dq[k].tolist(),
            "effort": data.tau[k].tolist(),
        }
        measured = data.tau[k]
        torque = {
            "timestamp": stamp,
            "measured": dict(zip(joints, measured.tolist(), strict=True)),
            "physical": dict(zip(joints, physical[k].tolist(), strict=True)),
            "fused": dict(zip(joints, fused[k].tolist(), strict=True)),
            "residual": dict(zip(joints, (measured - fused[k]).tolist(), strict=True)),
        }
        writer.add_message(states, at, json.dumps(state).encode(), at, sequence=k)
        writer.add_message(torques, at, json.dumps(torque).encode(), at, sequence=k)


def _schema(writer, schema: dict) -> int:
    return writer.register_schema(
        name=schema["title"], encoding="jsonschema", data=json.dumps(schema).encode()
    )


def write_result_mcap(folder: Path, result) -> Path:
    """`run.mcap` of an identification result (`identify.result.IdentificationResult`): its
    identification and validation data with the measured, physical and fused torques."""
    sets = {
        role: (data, result.predictions[split].physical, result.predictions[split].final)
        for role, split, data in (
            ("identification", "train", result.data.train),
            ("validation", "validation", result.data.validation),
        )
    }
    return write_run_mcap(folder / MCAP_FILE, sets)
