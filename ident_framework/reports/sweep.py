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

log = logging.getLogger(__name__)

COLUMNS = (
    "run", "overrides", "estimator", "friction", "residual", "n_base", "cond",
    "train_rmse", "train_r2", "validation_rmse", "validation_r2", "validation_rmse_slow",
    "wall_time_s",
)  # fmt: skip


def _final(stage: dict[str, Any]) -> dict[str, Any]:
    return stage.get("fusion") or stage["physical"]


def collect_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for metrics_file in sorted(sweep_dir.glob("*/metrics.json"), key=lambda p: p.parent.name):
        run = metrics_file.parent
        metrics = json.loads(metrics_file.read_text())
        overrides_file = run / ".hydra" / "overrides.yaml"
        overrides = yaml.safe_load(overrides_file.read_text()) if overrides_file.exists() else []
        plugins = yaml.safe_load((run / "parameters.yaml").read_text()).get("plugins", {})
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
                "joint_names": yaml.safe_load((run / "parameters.yaml").read_text())["robot"][
                    "joint_names"
                ],
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


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    return "" if value is None else str(value)


def write_comparison(sweep_dir: Path) -> list[dict[str, Any]]:
    """Write comparison.csv and comparison.md (sorted by validation RMSE) into sweep_dir."""
    rows = collect_rows(sweep_dir)
    with open(sweep_dir / "comparison.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    ranked = sorted(rows, key=lambda r: r["validation_rmse"])
    lines = [
        "| rank | " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for rank, row in enumerate(ranked, start=1):
        lines.append(f"| {rank} | " + " | ".join(_cell(row[c]) for c in COLUMNS) + " |")
    (sweep_dir / "comparison.md").write_text(
        "# Sweep comparison (ranked by validation RMSE, Nm)\n\n"
        + "\n".join(lines)
        + "\n\n![validation RMSE per joint](comparison_rmse_per_joint.png)\n"
    )
    if rows:
        plot_rmse_per_joint(rows, sweep_dir / "comparison_rmse_per_joint.png")
    return rows


class SweepReport(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        rows = write_comparison(sweep_dir)
        print(f"comparison of {len(rows)} runs: {sweep_dir / 'comparison.md'}")
