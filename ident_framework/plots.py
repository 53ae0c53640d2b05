"""PNG plots of a run: validation torques, per-joint RMSE, the excitation trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:
    from .pipeline import PipelineResult


def _grid(n: int) -> tuple[int, int]:
    cols = 2 if n > 1 else 1
    return (n + cols - 1) // cols, cols


def plot_validation_torque(path: Path, result: PipelineResult) -> None:
    data, stage = result.validation, result.predictions["validation"]
    t = data.timestamp - data.timestamp[0]
    rows, cols = _grid(data.n_joints)
    fig, axes = plt.subplots(rows, cols, figsize=(13, 2.6 * rows), sharex=True, squeeze=False)
    for j, ax in enumerate(axes.flat):
        if j >= data.n_joints:
            ax.set_visible(False)
            continue
        ax.plot(t, data.tau[:, j], color="0.2", lw=0.8, label="measured")
        ax.plot(t, stage.physical[:, j], color="tab:blue", lw=0.9, label="physical model")
        if stage.fusion is not None:
            ax.plot(t, stage.fusion[:, j], color="tab:orange", lw=0.9, label="fusion")
        rmse = np.sqrt(np.mean((data.tau[:, j] - stage.final[:, j]) ** 2))
        ax.set_title(f"{data.joint_names[j]}  (RMSE {rmse:.3f} Nm)", fontsize=9)
        ax.set_ylabel("torque [Nm]")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    axes.flat[0].legend(fontsize=8, loc="upper right")
    fig.suptitle("Validation trajectory: measured vs predicted joint torque")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_rmse_per_joint(path: Path, result: PipelineResult) -> None:
    names = result.robot.joint_names
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.38
    for offset, split, color in (
        (-width / 2, "train", "tab:gray"),
        (width / 2, "validation", "tab:blue"),
    ):
        values = result.metrics[split].get("fusion") or result.metrics[split]["physical"]
        ax.bar(x + offset, values["rmse_per_joint"], width, label=split, color=color)
    if "truth" in result.metrics:
        true_rmse = result.metrics["truth"]["validation_rmse_per_joint_true_parameters"]
        ax.scatter(x + width / 2, true_rmse, color="black", marker="_", s=300, zorder=3,
                   label="true parameters (validation)")  # fmt: skip
    ax.set_xticks(x, [n.replace("_joint", "") for n in names], rotation=20)
    ax.set_ylabel("RMSE [Nm]")
    ax.set_title("Torque RMSE per joint")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_excitation(path: Path, result: PipelineResult) -> None:
    trajectory = result.excitation
    t = np.linspace(0.0, trajectory.duration, 2000)
    q, dq, ddq = trajectory.evaluate(t)
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True)
    for ax, values, label in zip(
        axes, (q, dq, ddq), ("q [rad]", "dq [rad/s]", "ddq [rad/s²]"), strict=True
    ):
        for j, name in enumerate(result.robot.joint_names):
            ax.plot(t, values[:, j], lw=1, label=name.replace("_joint", ""))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=3, fontsize=8)
    axes[-1].set_xlabel("time [s]")
    axes[0].set_title(f"Excitation trajectory (cond of base regressor {result.cond:.1f})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(folder: Path, result: PipelineResult) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    plot_validation_torque(folder / "validation_torque.png", result)
    plot_rmse_per_joint(folder / "rmse_per_joint.png", result)
    if result.excitation is not None:
        plot_excitation(folder / "excitation.png", result)
