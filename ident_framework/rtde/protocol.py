"""The part of Universal Robots' RTDE wire protocol (version 2) that an output-only client uses.

Every message: a big-endian header (uint16 size of the whole message, uint8 command), then a
payload (UR's "Real-Time Data Exchange (RTDE) Guide", as UR's `rtde/serialize.py`):

- REQUEST_PROTOCOL_VERSION 'V': client uint16 version; server uint8 accepted.
- GET_URCONTROL_VERSION 'v': server uint32 major, minor, bugfix, build.
- CONTROL_PACKAGE_SETUP_OUTPUTS 'O': client float64 frequency (Hz) + comma-separated names;
  server uint8 recipe id + comma-separated RTDE types, `NOT_FOUND` for unknown names.
- CONTROL_PACKAGE_SETUP_INPUTS 'I': client names; server uint8 recipe id + types.
- CONTROL_PACKAGE_START 'S' / PAUSE 'P': server uint8 success.
- DATA_PACKAGE 'U': uint8 recipe id + the recipe's values, packed by their RTDE types.
- TEXT_MESSAGE 'M' (v2): uint8 length + message, uint8 length + source, uint8 level.

`OUTPUT_TYPES`: the controller's output fields and their RTDE types; `MIN_VERSION`: the
controller versions that introduced some of them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

HEADER = struct.Struct(">HB")
PROTOCOL_VERSION = 2

REQUEST_PROTOCOL_VERSION = ord("V")
GET_URCONTROL_VERSION = ord("v")
TEXT_MESSAGE = ord("M")
DATA_PACKAGE = ord("U")
CONTROL_PACKAGE_SETUP_OUTPUTS = ord("O")
CONTROL_PACKAGE_SETUP_INPUTS = ord("I")
CONTROL_PACKAGE_START = ord("S")
CONTROL_PACKAGE_PAUSE = ord("P")

COMMAND_NAMES = {
    REQUEST_PROTOCOL_VERSION: "REQUEST_PROTOCOL_VERSION",
    GET_URCONTROL_VERSION: "GET_URCONTROL_VERSION",
    TEXT_MESSAGE: "TEXT_MESSAGE",
    DATA_PACKAGE: "DATA_PACKAGE",
    CONTROL_PACKAGE_SETUP_OUTPUTS: "CONTROL_PACKAGE_SETUP_OUTPUTS",
    CONTROL_PACKAGE_SETUP_INPUTS: "CONTROL_PACKAGE_SETUP_INPUTS",
    CONTROL_PACKAGE_START: "CONTROL_PACKAGE_START",
    CONTROL_PACKAGE_PAUSE: "CONTROL_PACKAGE_PAUSE",
}

# Text message levels (v2).
EXCEPTION_MESSAGE, ERROR_MESSAGE, WARNING_MESSAGE, INFO_MESSAGE = 0, 1, 2, 3

NOT_FOUND = "NOT_FOUND"

# RTDE type -> struct format of its values.
TYPE_FORMATS = {
    "BOOL": "?",
    "UINT8": "B",
    "UINT32": "I",
    "UINT64": "Q",
    "INT32": "i",
    "DOUBLE": "d",
    "VECTOR3D": "3d",
    "VECTOR6D": "6d",
    "VECTOR6INT32": "6i",
    "VECTOR6UINT32": "6I",
}
TYPE_SIZES = {"VECTOR3D": 3, "VECTOR6D": 6, "VECTOR6INT32": 6, "VECTOR6UINT32": 6}


_OUTPUT_NAMES = {  # RTDE type: the output fields of that type (registers aside)
    "DOUBLE": """timestamp actual_execution_time speed_scaling target_speed_fraction
        actual_momentum actual_main_voltage actual_robot_voltage actual_robot_current
        standard_analog_input0 standard_analog_input1 standard_analog_output0
        standard_analog_output1 io_current euromap67_24V_voltage euromap67_24V_current
        tool_analog_input0 tool_analog_input1 tool_output_current tool_temperature
        tcp_force_scalar payload joint_position_deviation_ratio collision_detection_ratio""",
    "VECTOR6D": """target_q target_qd target_qdd target_current target_moment actual_q actual_qd
        actual_current actual_current_window joint_control_output actual_TCP_pose
        actual_TCP_speed actual_TCP_force target_TCP_pose target_TCP_speed joint_temperatures
        actual_joint_voltage payload_inertia ft_raw_wrench tcp_offset actual_current_as_torque""",
    "VECTOR3D": "actual_tool_accelerometer elbow_position elbow_velocity payload_cog",
    "UINT32": """runtime_state robot_status_bits safety_status_bits analog_io_types
        euromap67_input_bits euromap67_output_bits tool_mode tool_analog_input_types
        output_bit_registers0_to_31 output_bit_registers32_to_63 input_bit_registers0_to_31
        input_bit_registers32_to_63 script_control_line""",
    "INT32": "robot_mode safety_mode safety_status tool_output_voltage time_scale_source",
    "VECTOR6INT32": "joint_mode",
    "UINT64": "actual_digital_input_bits actual_digital_output_bits",
}
_REGISTERS = {"BOOL": ("bit", 128), "INT32": ("int", 48), "DOUBLE": ("double", 48)}
OUTPUT_TYPES: dict[str, str] = {
    **{name: kind for kind, names in _OUTPUT_NAMES.items() for name in names.split()},
    **{
        f"{io}put_{what}_register_{i}": kind
        for kind, (what, count) in _REGISTERS.items()
        for io in ("out", "in")
        for i in range(count)
    },
}

# Fields an e-Series controller (major version 5) offers only from the given version on.
MIN_VERSION: dict[str, tuple[int, int, int]] = {
    "actual_current_as_torque": (5, 23, 0),
    "ft_raw_wrench": (5, 9, 0),
    "payload_inertia": (5, 11, 0),
    "payload": (5, 6, 0),
    "payload_cog": (5, 6, 0),
}


def offered_type(name: str, version: Sequence[int]) -> str:
    """The RTDE type a controller of `version` (major, minor, bugfix, ...) answers for the
    output field `name`: its type, or NOT_FOUND when unknown or newer than the controller."""
    kind = OUTPUT_TYPES.get(name)
    if kind is None:
        return NOT_FOUND
    minimum = MIN_VERSION.get(name)
    if minimum is not None and tuple(version[:3]) < minimum:
        return NOT_FOUND
    return kind


def message(command: int, payload: bytes = b"") -> bytes:
    """One message: header (total size, command) + payload."""
    return HEADER.pack(HEADER.size + len(payload), command) + payload


def split_messages(buffer: bytearray) -> list[tuple[int, bytes]]:
    """Remove and return every complete (command, payload) at the front of `buffer`."""
    messages = []
    while len(buffer) >= HEADER.size:
        size, command = HEADER.unpack_from(buffer)
        if size < HEADER.size:
            raise ValueError(f"RTDE message with impossible size {size}")
        if len(buffer) < size:
            break
        messages.append((command, bytes(buffer[HEADER.size : size])))
        del buffer[:size]
    return messages


def data_format(types: Sequence[str]) -> struct.Struct:
    """Struct of a DATA_PACKAGE payload: recipe id then the values of `types` in order."""
    return struct.Struct(">B" + "".join(TYPE_FORMATS[kind] for kind in types))


def pack_text_message(text: str, source: str, level: int) -> bytes:
    """TEXT_MESSAGE payload of protocol version 2 (texts cut to 255 bytes)."""
    body, origin = text.encode()[:255], source.encode()[:255]
    return bytes([len(body)]) + body + bytes([len(origin)]) + origin + bytes([level])


def unpack_text_message(payload: bytes) -> tuple[str, str, int]:
    """(message, source, level) of a version-2 TEXT_MESSAGE payload."""
    length = payload[0]
    text = payload[1 : 1 + length].decode(errors="replace")
    offset = 1 + length
    source_length = payload[offset]
    source = payload[offset + 1 : offset + 1 + source_length].decode(errors="replace")
    return text, source, payload[offset + 1 + source_length]
