"""At the end of a `-m` sweep: one comparison table of all runs (markdown and CSV)."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from ident_framework.reports import run_files
from ident_framework.reports.tables import COMPACT, format_cell, markdown_table

log = logging.getLogger(__name__)

COLUMNS = (
    "run", "overrides", "estimator", "friction", "residual", "n_base", "cond",
    "train_rmse", "train_r2", "validation_rmse", "validation_r2", "validation_rmse_slow",
    "wall_time_s",
)  # fmt: skip


def _final(split: dict[str, Any]) -> dict[str, Any]:
    return split.get("fusion") or split["physical"]


def collect_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    rows = []
    metrics_files = sweep_dir.glob(f"*/{run_files.METRICS}")
    for metrics_file in sorted(metrics_files, key=lambda p: p.parent.name):
        run = metrics_file.parent
        metrics = json.loads(metrics_file.read_text())
        overrides_file = run / run_files.HYDRA_FOLDER / run_files.HYDRA_OVERRIDES
        overrides = yaml.safe_load(overrides_file.read_text()) if overrides_file.exists() else []
        parameters = yaml.safe_load((run / run_files.PARAMETERS).read_text())
        plugins = parameters.get("plugins", {})
        train, validation = _final(metrics["train"]), _final(metrics["validation"])
        rows.append(
            {
                "run": run.name,
                "overrides": " ".join(overrides or []),
                "estimator": plugins.get("estimator", {}).get("plugin"),
                "friction": plugins.get("friction", {}).get("plugin"),
                "residual": plugins.get("residual", {}).get("plugin"),
                "n_base": metrics["identifiability"]["n_base"],
                "cond": metrics["identifiability"]["cond"],
                "train_rmse": train["rmse"],
                "train_r2": train["r2"],
                "validation_rmse": validation["rmse"],
                "validation_r2": validation["r2"],
                "validation_rmse_slow": (validation.get("slow") or {}).get("rmse"),
                "wall_time_s": sum(metrics.get("timing_s", {}).values()),
                "validation_rmse_per_joint": validation["rmse_per_joint"],
                "joint_names": parameters["robot"]["joint_names"],
            }
        )
    return rows


def plot_rmse_per_joint(rows: list[dict[str, Any]], path: Path) -> None:
    """Grouped bars: validation RMSE (Nm) of every run, per joint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    joints = rows[0]["joint_names"]
    x = np.arange(len(joints))
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(joints) + 0.3 * len(rows)), 4.5))
    tokens = [str(row["overrides"] or "").split() for row in rows]
    shared = set.intersection(*(set(t) for t in tokens)) if tokens else set()
    for i, row in enumerate(rows):
        # Only what differs between the runs (the swept values), not the common overrides.
        label = " ".join(t for t in tokens[i] if t not in shared) or f"run {row['run']}"
        ax.bar(x - 0.4 + (i + 0.5) * width, row["validation_rmse_per_joint"], width, label=label)
    ax.set_xticks(x, [name.replace("_joint", "") for name in joints], rotation=20)
    ax.set_ylabel("validation RMSE [Nm]")
    ax.set_title("Validation torque RMSE per joint, per run")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_comparison(sweep_dir: Path) -> list[dict[str, Any]]:
    """Write comparison.csv and comparison.md (sorted by validation RMSE) into sweep_dir."""
    rows = collect_rows(sweep_dir)
    with open(sweep_dir / run_files.COMPARISON_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    ranked = sorted(rows, key=lambda r: r["validation_rmse"])
    cells = [
        [str(rank), *(format_cell(row[c], COMPACT) for c in COLUMNS)]
        for rank, row in enumerate(ranked, start=1)
    ]
    lines = markdown_table(["rank", *COLUMNS], cells)
    (sweep_dir / run_files.COMPARISON_MARKDOWN).write_text(
        "# Sweep comparison (ranked by validation RMSE, Nm)\n\n"
        + "\n".join(lines)
        + f"\n\n![validation RMSE per joint]({run_files.COMPARISON_PLOT})\n"
    )
    if rows:
        plot_rmse_per_joint(rows, sweep_dir / run_files.COMPARISON_PLOT)
    return rows


class SweepReport(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        rows = write_comparison(sweep_dir)
        print(f"comparison of {len(rows)} runs: {sweep_dir / run_files.COMPARISON_MARKDOWN}")
