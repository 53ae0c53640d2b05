"""Write a recording as `sensor_msgs/msg/JointState` messages into a ROS bag with `rosbags`,
as a ROS driver and `ros2 bag record` would (tests and studies of `source=rosbag`): "mcap" and
"db3" (a rosbag2 folder) or "bag" (ROS 1). The header stamp of sample k is
`origin_ns + round(timestamp_k * 1e9)`; the receive time is that plus `receive_delay_ns` (one
value, or one per sample: the network's jitter).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ident_framework.data.dataset import Dataset

FORMATS = ("mcap", "db3", "bag")
ORIGIN_NS = 1_764_590_400_000_000_000  # 2025-12-01 12:00 UTC: stamps since the epoch, as ROS


def write_joint_state_bag(
    data: Dataset,
    path: str | os.PathLike[str],
    *,
    fmt: str = "mcap",
    topic: str = "/joint_states",
    order: Sequence[str] | None = None,
    effort: np.ndarray | None = None,
    prefix: str = "",
    origin_ns: int = ORIGIN_NS,
    receive_delay_ns: int | np.ndarray = 300_000,
    extra_topics: Sequence[str] = ("/robot_description",),
) -> Path:
    """Write `data` (q, dq and tau, or `effort` when given, e.g. motor currents) to a bag;
    returns the path to hand to `source.path` (the rosbag2 folder, or the .bag file).

    `order`: the joint names in the order the messages list them (default: the dataset's;
    UR's drivers publish them alphabetically); `prefix`: put before every joint name (a
    driver's tf_prefix); `extra_topics`: topics of other types recorded beside, empty."""
    from rosbags.typesys import Stores, get_typestore

    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    names = list(order) if order is not None else list(data.joint_names)
    columns = [data.joint_names.index(name) for name in names]
    values = data.tau if effort is None else np.asarray(effort, dtype=float)
    store = get_typestore(Stores.ROS1_NOETIC if fmt == "bag" else Stores.ROS2_HUMBLE)
    stamps = origin_ns + np.round(np.asarray(data.timestamp) * 1e9).astype(np.int64)
    messages = [
        _joint_state(store, int(stamp), [prefix + n for n in names], data, values, columns, k)
        for k, stamp in enumerate(stamps)
    ]
    receive_ns = stamps + np.asarray(receive_delay_ns, dtype=np.int64)
    target = Path(os.fspath(path))
    if fmt == "bag":
        from rosbags.rosbag1 import Writer

        writer, serialize = Writer(target), store.serialize_ros1
    else:
        from rosbags.rosbag2 import StoragePlugin, Writer

        plugin = StoragePlugin.MCAP if fmt == "mcap" else StoragePlugin.SQLITE3
        writer = Writer(target, version=9, storage_plugin=plugin)
        serialize = store.serialize_cdr
    with writer:
        for extra in extra_topics:
            writer.add_connection(extra, "std_msgs/msg/String", typestore=store)
        connection = writer.add_connection(topic, "sensor_msgs/msg/JointState", typestore=store)
        for message, at in zip(messages, receive_ns, strict=True):
            writer.write(connection, int(at), serialize(message, "sensor_msgs/msg/JointState"))
    return target


def _joint_state(store, stamp: int, names, data: Dataset, effort, columns, k: int):
    types = store.types
    header_fields = {
        "stamp": types["builtin_interfaces/msg/Time"](sec=stamp // 10**9, nanosec=stamp % 10**9),
        "frame_id": "",
    }
    if "seq" in store.fielddefs["std_msgs/msg/Header"][1][0]:  # ROS 1 headers count messages
        header_fields["seq"] = k
    return types["sensor_msgs/msg/JointState"](
        header=types["std_msgs/msg/Header"](**header_fields),
        name=names,
        position=np.ascontiguousarray(data.q[k, columns]),
        velocity=np.ascontiguousarray(data.dq[k, columns]),
        effort=np.ascontiguousarray(effort[k, columns]),
    )
