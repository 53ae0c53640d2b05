"""What `tuning=cv` chose: tuning.csv (every candidate with its cross-validated RMSE) and the
summary's lines (metrics.json and parameters.yaml `tuning`: `selection.to_dict()`)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ident_framework.reports import run_files

COLUMNS = (
    "stage", "lowpass_hz", "velocity", "armature", "torque_offset", "dead_band", "tanh_width",
    "saturation_width", "acceleration_lead", "stribeck_velocity", "ridge", "truncate",
    "temperature", "load_dependent", "weight", "rank", "cv_rmse", "cv_se", "fold_wins", "chosen",
)  # fmt: skip
# cv_se: the candidate's standard error (Nm, its per-fold RMSE's spread / sqrt(folds));
# fold_wins: "k/K", in how many of the K folds it had the lowest RMSE of its stage's candidates


def write_tuning_table(folder: Path, selection: Any) -> None:
    """tuning.csv: one row per candidate tried (nothing without a selection)."""
    if selection is None:
        return
    with open(folder / run_files.TUNING_CSV, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in selection.table:
            writer.writerow({key: _cell(row.get(key)) for key in COLUMNS})


def tuning_lines(selection: Any) -> list[str]:
    """The summary's lines on the selection (none without one)."""
    if selection is None:
        return []
    chosen = ", ".join(f"{key}={_shown(value)}" for key, value in selection.chosen.items())
    per_joint = " ".join(f"{v:.4g}" for v in selection.cv_rmse_per_joint)
    windows = getattr(selection, "windows", 0)  # rows read from windows of a long recording
    lines = [
        f"tuning=cv ({selection.folds}; {len(selection.table)} candidates, "
        f"{selection.samples_used} samples{f' from {windows} windows' if windows else ''}, "
        f"{selection.seconds:.1f} s): "
        f"CV RMSE {selection.cv_rmse:.4f} Nm (per joint {per_joint}), as configured "
        f"{selection.configured_cv_rmse:.4f} Nm; table in {run_files.TUNING_CSV}",
        f"chosen: {chosen} (rule {selection.rule})",
    ]
    if selection.stability:
        stages = "; ".join(
            f"{s['stage']} {s['picked_fold_wins']}/{s['folds']}"
            + ("" if s["picked_is_best"] else " (simpler, within 1 SE)")
            for s in selection.stability
            if s["candidates"] > 1
        )
        lines.append(f"stability (folds where the pick was that fold's best): {stages}")
    if getattr(selection, "friction_models", None):
        models = "; ".join(
            f"{m['friction']} {m['cv_rmse']:.4f} ({m['difference_to_configured']:+.4f} "
            f"± {m['difference_se']:.4f})" + (" chosen" if m["chosen"] else "")
            for m in selection.friction_models
        )
        lines.append(
            f"friction model by CV RMSE (difference to the configured per fold ± its SE): {models}"
        )
    return lines


def _cell(value: Any) -> Any:
    return f"{value:.6g}" if isinstance(value, float) else value


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(f"{v:g}" for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).lower() if isinstance(value, bool) else str(value)
