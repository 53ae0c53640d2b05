"""What mode=online writes in its run directory (names: `reports/run_files.py`), flushed as it
goes: `online/parameters.csv` (a row every `online.parameters_every_s` s of source time:
counters, sliding RMSE (Nm) and R², base parameters), `online/events.jsonl` (one JSON object
per event), and at the end `parameters.yaml` and `online/summary.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ident_framework.online.sliding_metrics import SlidingFit
from ident_framework.plain_data import to_plain
from ident_framework.reports.run_files import (
    ONLINE_EVENTS_JSONL,
    ONLINE_FOLDER,
    ONLINE_PARAMETERS_CSV,
    ONLINE_SUMMARY_JSON,
    PARAMETERS,
)


class ParametersLog:
    def __init__(self, folder: Path, names: list[str], n_joints: int):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ONLINE_PARAMETERS_CSV
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        header = "t_s updates samples_received skipped_updates pooled_rmse_Nm pooled_r2".split()
        header += [f"r2_{j + 1}" for j in range(n_joints)]
        header += [f"rmse_{j + 1}_Nm" for j in range(n_joints)] + list(names)
        self._file.write(",".join(header) + "\n")
        self._file.flush()
        self.rows = 0

    def write(
        self, t: float, counters: tuple[int, int, int], fit: SlidingFit, theta: np.ndarray
    ) -> None:
        """One row: t (s), counters (updates, samples received, skipped updates), the sliding
        fit (pooled and per joint), the base parameters theta (r,)."""
        values = [f"{t:.6f}", *map(str, counters), f"{fit.pooled_rmse:.6g}"]
        values += [f"{v:.6g}" for v in (fit.pooled_r2, *fit.r2, *fit.rmse)]
        values += [f"{v:.10g}" for v in theta]
        self._file.write(",".join(values) + "\n")
        self._file.flush()
        self.rows += 1

    def close(self) -> None:
        self._file.close()


class EventLog:
    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / ONLINE_EVENTS_JSONL
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, event: dict[str, Any]) -> None:
        self._file.write(json.dumps(to_plain(event)) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_parameters_yaml(run_dir: Path, document: dict[str, Any]) -> Path:
    path = run_dir / PARAMETERS
    partial = path.with_suffix(".yaml.partial")
    partial.write_text(yaml.safe_dump(to_plain(document), sort_keys=False))
    partial.replace(path)
    return path


def write_summary(run_dir: Path, summary: dict[str, Any]) -> Path:
    path = run_dir / ONLINE_FOLDER / ONLINE_SUMMARY_JSON
    path.write_text(json.dumps(to_plain(summary), indent=2))
    return path
