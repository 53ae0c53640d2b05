"""Read `sensor_msgs/msg/JointState` messages of a ROS bag (rosbag2 folder, `.mcap`, `.db3`
or ROS 1 `.bag`, by the pure-Python `rosbags` library) into a `Dataset`. Joints are matched
by name to the robot model, with a common name prefix (a driver's `tf_prefix`) found when the
names do not match exactly. Time is `header.stamp` (or the bag's receive time), in s from the
first kept message (`metadata["time_origin_ns"]`: that stamp in ns). Messages lacking one of
the robot's joints are skipped and counted. JointState carries no joint temperatures.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ident_framework.data.dataset import UNITS, Dataset
from ident_framework.errors import UserError, did_you_mean, per_joint_values

JOINT_STATE = "sensor_msgs/msg/JointState"
EFFORTS = ("torque", "current")  # what JointState.effort holds: Nm, or motor current in A
STAMPS = ("header", "receive")  # header.stamp, or the bag's receive (log) time


@dataclass(frozen=True)
class JointStateMessages:
    """The messages of one topic, as recorded: names per message and their values."""

    names: list[tuple[str, ...]]
    position: list[Sequence[float]]
    velocity: list[Sequence[float]]
    effort: list[Sequence[float]]
    stamp_ns: np.ndarray  # (M,) int64, header.stamp or receive time
    topics: dict[str, str]  # every topic of the bag -> its message type


def read_rosbag_log(
    path: str | os.PathLike[str],
    joint_names: Sequence[str],
    *,
    topic: str = "/joint_states",
    effort: str = "torque",
    current_to_torque: Sequence[float] | None = None,
    joint_prefix: str | None = None,
    stamp: str = "header",
    max_abs_q: float = 2 * math.pi * 1.05,
    max_abs_qd: float = 4 * math.pi,
    min_samples: int = 2,
    config_prefix: str = "source.",
) -> Dataset:
    """The JointState messages on `topic` of the bag at `path`, in the order of `joint_names`.

    Args:
        effort: "torque" (JointState.effort in Nm) or "current" (A, times `current_to_torque`
            in Nm/A per joint).
        joint_prefix: prefix of the bag's joint names (None: exact names, else the one common
            prefix found).
        stamp: "header" (header.stamp) or "receive" (the bag's receive time).
        max_abs_q, max_abs_qd: |q| (rad), |dq| (rad/s) above which values are taken to be
            degrees and refused. min_samples: fewest samples accepted.

    Raises:
        UserError: one paragraph naming the bag, topic, message and/or joint and what to do.
    """
    joint_names = tuple(joint_names)
    where = f"The ROS bag '{os.fspath(path)}' ({config_prefix}path)"
    gains = _check_options(effort, current_to_torque, stamp, len(joint_names), config_prefix)
    messages = _read_messages(Path(os.fspath(path)), topic, stamp, where, config_prefix)
    rows, order, prefix = _match_joints(messages, joint_names, joint_prefix, where, config_prefix)
    q, dq, tau = _stack(messages, rows, order, where, topic)
    stamps = messages.stamp_ns[rows]
    _check_values(
        q, dq, tau, stamps, joint_names, (max_abs_q, max_abs_qd), where, topic, config_prefix
    )
    if len(rows) < min_samples:
        raise UserError(
            f"{where} has only {len(rows)} usable messages on {topic}, but at least "
            f"{min_samples} samples are needed to identify the parameters. Record a longer "
            "motion or a faster joint-state rate."
        )
    metadata = {
        "source": "rosbag",
        "path": os.path.abspath(os.fspath(path)),
        "topic": topic,
        "stamp": stamp,
        "time_origin_ns": int(stamps[0]),
        "effort": effort,
        "joint_prefix": prefix,
        "bag_joint_order": list(messages.names[rows[0]]),
        "n_messages": len(messages.names),
        "skipped_messages": len(messages.names) - len(rows),
        "units": dict(UNITS),
    }
    if gains is not None and effort == "current":
        tau = tau * gains
        metadata["current_to_torque"] = gains.tolist()
        metadata["units"]["effort"] = "A"
        metadata["units"]["current_to_torque"] = "Nm/A"
    timestamp = (stamps - stamps[0]).astype(float) * 1e-9  # s
    return Dataset(timestamp, q, dq, tau, joint_names, metadata=metadata)


def _check_options(
    effort: str, gains: Sequence[float] | None, stamp: str, n: int, prefix: str
) -> np.ndarray | None:
    if effort not in EFFORTS:
        raise UserError(f"{prefix}effort={effort!r}: use one of {list(EFFORTS)}.")
    if stamp not in STAMPS:
        raise UserError(f"{prefix}stamp={stamp!r}: use one of {list(STAMPS)}.")
    if effort == "current" and gains is None:
        raise UserError(
            f"{prefix}effort=current needs the motor constants: give "
            f"{prefix}current_to_torque=[k_0,...,k_{n - 1}] in Nm/A, one per joint in the "
            "robot's joint order."
        )
    if gains is None:
        return None
    fix = f"give exactly {n} motor constants in Nm/A, one per joint in the robot's order"
    values = per_joint_values(
        np.asarray(gains, dtype=float), n, f"{prefix}current_to_torque", fix=fix
    )
    if not np.all(np.isfinite(values) & (values > 0)):
        raise UserError(
            f"{prefix}current_to_torque={values.tolist()} must hold finite positive motor "
            "constants in Nm/A."
        )
    return values


def _read_messages(path: Path, topic: str, stamp: str, where: str, prefix: str):
    """Every JointState message on `topic` (deserialised with the bag's own definitions)."""
    try:
        from rosbags.highlevel import AnyReader, AnyReaderError
        from rosbags.typesys import Stores, get_typestore
    except ImportError:
        raise UserError(
            f"Reading ROS bags ({prefix}path) needs the `rosbags` package, the extra `rosbag`: "
            'pip install "ident-framework[rosbag]" (or pip install rosbags).'
        ) from None

    if not path.exists():
        raise UserError(f"{where} does not exist; check {prefix}path.")
    store = Stores.ROS1_NOETIC if path.suffix == ".bag" else Stores.ROS2_HUMBLE
    try:
        with AnyReader([path], default_typestore=get_typestore(store)) as reader:
            topics = {name: info.msgtype or "?" for name, info in reader.topics.items()}
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                raise UserError(_missing_topic(where, topic, topics, prefix))
            types = {c.msgtype for c in connections}
            if types != {JOINT_STATE}:
                raise UserError(
                    f"{where}: topic {topic} carries {sorted(types)}, not {JOINT_STATE}; "
                    f"point {prefix}topic at the joint states. Topics: {_listing(topics)}."
                )
            return _collect(reader, connections, stamp, topics)
    except AnyReaderError as error:
        raise UserError(
            f"{where} cannot be read as a rosbag2 folder, .mcap, .db3 or ROS 1 .bag file "
            f"({error}). Point {prefix}path at the bag (a rosbag2 folder or one of its files)."
        ) from None


def _collect(reader, connections, stamp: str, topics: dict[str, str]) -> JointStateMessages:
    names, position, velocity, effort, stamps = [], [], [], [], []
    for connection, receive_ns, raw in reader.messages(connections=connections):
        message = reader.deserialize(raw, connection.msgtype)
        names.append(tuple(message.name))
        position.append(message.position)
        velocity.append(message.velocity)
        effort.append(message.effort)
        header = message.header.stamp
        stamps.append(
            int(header.sec) * 1_000_000_000 + int(header.nanosec)
            if stamp == "header"
            else receive_ns
        )
    return JointStateMessages(
        names, position, velocity, effort, np.asarray(stamps, dtype=np.int64), topics
    )


def _listing(topics: dict[str, str]) -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in sorted(topics.items())) or "none"


def _missing_topic(where: str, topic: str, topics: dict[str, str], prefix: str) -> str:
    states = [name for name, kind in topics.items() if kind == JOINT_STATE]
    hint = (
        f" The JointState topics are {states}: set {prefix}topic to one of them."
        if states
        else " None of them is a JointState topic: record /joint_states."
    )
    return (
        f"{where} has no topic {topic}.{did_you_mean(topic, list(topics))} Its topics: "
        f"{_listing(topics)}.{hint}"
    )


def _match_joints(
    messages: JointStateMessages,
    joint_names: tuple[str, ...],
    joint_prefix: str | None,
    where: str,
    config: str,
) -> tuple[np.ndarray, dict[tuple[str, ...], list[int]], str]:
    """(kept message rows, per name list the index of each robot joint, the prefix): a message
    is kept when it names every robot joint (with the prefix)."""
    distinct = list(dict.fromkeys(messages.names))
    prefix = joint_prefix if joint_prefix is not None else _find_prefix(distinct, joint_names)
    wanted = [prefix + name for name in joint_names]
    order: dict[tuple[str, ...], list[int]] = {}
    for names in distinct:
        if len(set(names)) != len(names):
            duplicated = sorted({n for n in names if names.count(n) > 1})
            raise UserError(f"{where}: a JointState message names {duplicated} more than once.")
        if all(name in names for name in wanted):
            order[names] = [names.index(name) for name in wanted]
    if not order:
        seen = sorted({n for names in distinct for n in names})
        missing = [name for name in wanted if name not in seen]
        raise UserError(
            f"{where}: no JointState message names every joint of the robot model; missing "
            f"{missing or wanted} (the messages name {seen}). Joints are matched by name: pick "
            f"the robot whose joints these are (robot=...), or set {config}joint_prefix to the "
            "driver's tf_prefix."
        )
    rows = np.flatnonzero([names in order for names in messages.names])
    return rows, order, prefix


def _find_prefix(distinct: list[tuple[str, ...]], joint_names: tuple[str, ...]) -> str:
    """ "" when some message names the joints exactly; else the one prefix p for which some
    message names every p + joint (e.g. "ur_"); else ""."""
    found: set[str] = set()
    for names in distinct:
        if all(name in names for name in joint_names):
            return ""
        candidates = {n[: -len(joint_names[0])] for n in names if n.endswith(joint_names[0])}
        found |= {p for p in candidates if all(p + j in names for j in joint_names)}
    return found.pop() if len(found) == 1 else ""


def _stack(
    messages: JointStateMessages,
    rows: np.ndarray,
    order: dict[tuple[str, ...], list[int]],
    where: str,
    topic: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, dq, effort), (N, n) each in the robot's joint order."""
    out = []
    for field in ("position", "velocity", "effort"):
        values = getattr(messages, field)
        sizes = np.fromiter((len(values[r]) for r in rows), dtype=int, count=len(rows))
        widths = np.fromiter((len(messages.names[r]) for r in rows), dtype=int, count=len(rows))
        short = np.flatnonzero(sizes != widths)
        if short.size:
            k = int(rows[short[0]])
            raise UserError(
                f"{where}: message {k} on {topic} has {sizes[short[0]]} {field} values for "
                f"{widths[short[0]]} joint names ({short.size} such messages). Identification "
                "needs position, velocity and effort of every joint: record them (UR's drivers "
                "publish all three)."
            )
        table = np.empty((len(rows), len(next(iter(order.values())))))
        for names, index in order.items():
            chosen = [i for i, r in enumerate(rows) if messages.names[r] == names]
            block = np.asarray([values[rows[i]] for i in chosen], dtype=float)
            table[chosen] = block[:, index]
        out.append(table)
    return out[0], out[1], out[2]


def _check_values(
    q: np.ndarray,
    dq: np.ndarray,
    tau: np.ndarray,
    stamps: np.ndarray,
    joint_names: tuple[str, ...],
    max_abs: tuple[float, float],
    where: str,
    topic: str,
    config: str,
) -> None:
    """Finite numbers, strictly increasing time, angles in rad and velocities in rad/s."""
    for field, values in (("position", q), ("velocity", dq), ("effort", tau)):
        bad = ~np.isfinite(values)
        if bad.any():
            k = int(np.argmax(bad.any(axis=1)))
            j = int(np.argmax(bad[k]))
            raise UserError(
                f"{where}: {field} of {joint_names[j]} is {values[k, j]} in message {k} on "
                f"{topic}. Remove or repair the messages with NaN/inf before identification."
            )
    steps = np.diff(stamps)
    bad = np.flatnonzero(steps <= 0)
    if bad.size:
        k = int(bad[0]) + 1
        kind = "repeats" if steps[bad[0]] == 0 else "goes backwards from"
        raise UserError(
            f"{where}: the time stamp of message {k} on {topic} {kind} the previous one "
            f"({stamps[k - 1]} ns then {stamps[k]} ns; {bad.size} such messages). Time must "
            "increase strictly: a header left unset by the publisher can be replaced by the "
            f"bag's receive time with {config}stamp=receive."
        )
    for field, values, limit, unit in (
        ("position", q, max_abs[0], "rad"),
        ("velocity", dq, max_abs[1], "rad/s"),
    ):
        peak = np.abs(values).max(axis=0)
        if np.any(peak > limit):
            j = int(np.argmax(peak))
            k = int(np.argmax(np.abs(values[:, j])))
            raise UserError(
                f"{where}: {field} of {joint_names[j]} reaches {values[k, j]:.6g} in message "
                f"{k} on {topic}, beyond the plausible {limit:.4g} {unit}; JointState holds "
                f"{unit}, these look like degrees. Convert the recording to {unit}."
            )
