"""Built-in data source `csv`: a recording in the CSV contract (see `csv_log.read_csv_log`).

Serves `source=csv` (`source.path=FILE`) and `validation=csv` (`validation.path=FILE`). A
relative path is taken from the directory the user launched from, even when Hydra has changed
the working directory to the run directory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ident_framework.data.csv_columns import TORQUE_COLUMNS
from ident_framework.data.csv_log import read_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.hookspecs import hookimpl
from ident_framework.launch_path import resolve_launch_path

CONFIG_PREFIX = {"identification": "source.", "validation": "validation."}


@dataclass
class CsvSourceParams:
    """path: CSV file; current_to_torque: motor constants k_j (Nm/A) applied to
    `actual_current_*` (A) when no `actual_current_as_torque_*` (Nm) columns exist;
    torque_column: actual_current_as_torque | actual_current | target_moment (the controller's
    model torque, only on explicit request); time_column: time column name (s)."""

    path: str | None = None
    current_to_torque: list[float] | None = None
    torque_column: str = "actual_current_as_torque"
    time_column: str = "timestamp"

    def __post_init__(self) -> None:
        if not self.path:
            raise ValueError("path is required (the CSV file to read)")
        self.path = str(self.path)
        if self.torque_column not in TORQUE_COLUMNS:
            raise ValueError(
                f"torque_column must be one of {list(TORQUE_COLUMNS)}, got {self.torque_column!r}"
            )
        if not isinstance(self.time_column, str) or not self.time_column:
            raise ValueError(f"time_column must be a column name, got {self.time_column!r}")
        if self.current_to_torque is not None:
            try:
                gains = [float(k) for k in self.current_to_torque]
            except (TypeError, ValueError):
                raise ValueError(
                    "current_to_torque must be a list of motor constants in Nm/A, got "
                    f"{self.current_to_torque!r}"
                ) from None
            if not all(math.isfinite(k) and k > 0 for k in gains):
                raise ValueError(
                    f"current_to_torque must hold finite positive values (Nm/A), got {gains}"
                )
            self.current_to_torque = gains


class CsvSource:
    """Reads a recording; never moves a robot, so the engine designs no trajectory for it."""

    moves_robot = False

    def __init__(self, params: CsvSourceParams):
        self.params = params

    def acquire(
        self,
        robot: Any,
        trajectory: Any = None,
        role: str = "identification",
        *,
        min_samples: int = 2,
    ) -> Dataset:
        """Read `params.path` for `robot.joint_names`; `trajectory` is ignored. role is
        "identification" or "validation" (it picks the config key named in messages)."""
        del trajectory
        prefix = CONFIG_PREFIX.get(role, "source.")
        params = self.params
        return read_csv_log(
            resolve_launch_path(params.path or ""),
            tuple(robot.joint_names),
            current_to_torque=params.current_to_torque,
            torque_column=params.torque_column,
            time_column=params.time_column,
            min_samples=min_samples,
            config_prefix=prefix,
        )


@hookimpl
def register_data_sources(register) -> None:
    register("csv", CsvSource, CsvSourceParams)
