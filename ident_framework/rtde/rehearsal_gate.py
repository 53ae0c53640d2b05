"""The rehearsal gate: a record of a passed rehearsal per robot model, required before a real
robot is moved. A passed `mode=rehearse` run writes `<directory>/<fingerprint>.json` (the
fingerprint: SHA-256 of the MJCF text, joint names and limits); a source that moves a real
robot calls `require_passed_rehearsal(robot)` first.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ident_framework.errors import UserError
from ident_framework.model.robot import RobotModel
from ident_framework.model.ur_description import UR_MODELS

DEFAULT_DIRECTORY = Path("~/.ident_framework/rehearsals")
RECORD_VERSION = 1


def registry_directory(directory: Path | str | None = None) -> Path:
    """The folder of passed-rehearsal records (default ~/.ident_framework/rehearsals)."""
    return Path(os.path.expanduser(str(directory if directory is not None else DEFAULT_DIRECTORY)))


def robot_fingerprint(robot: RobotModel) -> str:
    """SHA-256 (hex) of the robot's MJCF text, joint names and joint limits."""
    content = {
        "mjcf": robot.mjcf,
        "joint_names": list(robot.joint_names),
        "limits": {
            kind: getattr(robot.limits, kind).tolist()
            for kind in ("position", "velocity", "acceleration", "effort")
        },
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_passed_rehearsal(
    robot: RobotModel, report: dict[str, Any], directory: Path | None = None
) -> Path:
    """Write the record of a passed rehearsal of `robot` (`report`: rehearsal.json's content);
    returns its path. A report that did not pass is refused (ValueError)."""
    if report.get("passed") is not True:
        raise ValueError("only a passed rehearsal can be recorded")
    folder, fingerprint = registry_directory(directory), robot_fingerprint(robot)
    record = {
        "record_version": RECORD_VERSION,
        "fingerprint": fingerprint,
        "robot": robot.name,
        "joint_names": list(robot.joint_names),
        "passed": True,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "report": report,
    }
    path = folder / f"{fingerprint}.json"
    temporary = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=folder, prefix=".record-", suffix=".json", delete=False
        ) as handle:
            temporary = Path(handle.name)
            json.dump(record, handle, indent=2)
        os.replace(temporary, path)  # atomic: a reader never sees half a record
    except OSError as error:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise UserError(
            f"Cannot record the passed rehearsal in {folder} (rehearsal.registry_dir): {error}. "
            "Give a writable folder with rehearsal.registry_dir=DIR."
        ) from None
    return path


def require_passed_rehearsal(robot: RobotModel, directory: Path | None = None) -> dict[str, Any]:
    """The record of a passed rehearsal of exactly this robot model; else a UserError."""
    folder, fingerprint = registry_directory(directory), robot_fingerprint(robot)
    path = folder / f"{fingerprint}.json"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        record = None
    except (OSError, ValueError) as error:
        raise UserError(
            f"The rehearsal record {path} cannot be read ({error}). Delete it and rehearse "
            f"again: {_rehearse_command(robot)}."
        ) from None
    if (
        not isinstance(record, dict)
        or record.get("passed") is not True
        or record.get("fingerprint") != fingerprint
    ):
        raise UserError(
            f"No passed rehearsal is recorded for the robot model '{robot.name}' (fingerprint "
            f"{fingerprint[:12]}, looked in {folder}). Before a real robot moves, the whole "
            "identification chain must have recovered planted parameter changes on this exact "
            f"model: run `{_rehearse_command(robot)}` with the same robot settings (model file, "
            "robot.acceleration_limits) as the real run, and rehearsal.registry_dir if you "
            "changed it. A changed model file or changed limits need a new rehearsal."
        )
    return record


def _rehearse_command(robot: RobotModel) -> str:
    if robot.name in UR_MODELS:
        return f"python -m ident_framework mode=rehearse robot={robot.name}"
    return "python -m ident_framework mode=rehearse robot=mjcf robot.path=FILE (or robot=urdf)"
