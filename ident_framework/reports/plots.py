"""PNG plots of a run: validation torques, per-joint RMSE, the excitation trajectory (and for
mode=predict the first two for the predicted recording).

Drawn on matplotlib `Figure` objects (Agg, no pyplot state; matplotlib imported only when
drawing) with margins fixed in inches (no `tight_layout`); long series are decimated to the
pixel columns they cover (`decimated`: the same picture).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ident_framework.reports import run_files

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ident_framework.data.dataset import Dataset
    from ident_framework.identify.result import IdentificationResult

DPI = 110


def _figure(
    width: float,
    height: float,
    margins: tuple[float, float, float, float],
    hspace: float = 0.0,
    wspace: float = 0.0,
) -> Figure:
    """An Agg figure of width x height inches with fixed margins (left, right, top, bottom)
    and gaps between panels (hspace, wspace), all in inches."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    left, right, top, bottom = margins
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        hspace=hspace,
        wspace=wspace,
    )
    return fig


def decimated(t: np.ndarray, values: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """(t, values) (N,) and (N, k) reduced for a line `columns` pixels wide: per column the
    samples where each series is lowest and highest, in time order (unchanged when N <= 4 x
    columns)."""
    n = len(t)
    if n <= 4 * columns:
        return t, values
    edges = np.linspace(0, n, columns + 1).astype(int)
    width = int(np.max(np.diff(edges)))
    starts = edges[:-1]
    index = np.minimum(starts[:, None] + np.arange(width), edges[1:, None] - 1)  # (columns, w)
    keep = [starts, edges[1:] - 1]
    for series in np.atleast_2d(values.T):
        window = series[index]
        keep += [
            index[np.arange(columns), window.argmin(1)],
            index[np.arange(columns), window.argmax(1)],
        ]
    rows = np.unique(np.concatenate(keep))
    return t[rows], values[rows]


def plot_torque(
    path: Path,
    data: Dataset,
    physical: np.ndarray,
    fusion: np.ndarray | None,
    title: str,
) -> None:
    """Measured vs predicted joint torque (Nm) over time, one panel per joint; each panel's
    title gives the RMSE of the final prediction (fusion when present)."""
    final = physical if fusion is None else fusion
    measured = data.measured_torque  # as recorded, as the metrics score it
    t = data.timestamp - data.timestamp[0]
    cols = 2 if data.n_joints > 1 else 1
    rows = (data.n_joints + cols - 1) // cols
    fig = _figure(13, 2.6 * rows, (0.75, 0.15, 0.65, 0.55), hspace=0.45, wspace=0.18)
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False)
    pixels = int(13 * DPI / cols)  # an upper bound on a panel's width in pixels
    for j, ax in enumerate(axes.flat):
        if j >= data.n_joints:
            ax.set_visible(False)
            continue
        series = [measured[:, j], physical[:, j]] + ([] if fusion is None else [fusion[:, j]])
        t_drawn, drawn = decimated(t, np.column_stack(series), pixels)
        ax.plot(t_drawn, drawn[:, 0], color="0.2", lw=0.8, label="measured")
        ax.plot(t_drawn, drawn[:, 1], color="tab:blue", lw=0.9, label="physical model")
        if fusion is not None:
            ax.plot(t_drawn, drawn[:, 2], color="tab:orange", lw=0.9, label="fusion")
        rmse = np.sqrt(np.mean((measured[:, j] - final[:, j]) ** 2))
        ax.set_title(f"{data.joint_names[j]}  (RMSE {rmse:.3f} Nm)", fontsize=9)
        ax.set_ylabel("torque [Nm]")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    axes.flat[0].legend(fontsize=8, loc="upper right")
    fig.suptitle(title)
    fig.savefig(path, dpi=DPI)


def plot_rmse_bars(
    path: Path,
    joint_names: Sequence[str],
    bars: Sequence[tuple[str, Sequence[float], str]],
    title: str = "Torque RMSE per joint",
    reference: tuple[str, Sequence[float]] | None = None,
) -> None:
    """Grouped bars of RMSE (Nm) per joint: `bars` is (label, values, colour) per group;
    `reference` (label, values) is drawn as a tick over the last group."""
    x = np.arange(len(joint_names))
    fig = _figure(8, 4, (0.75, 0.15, 0.4, 0.75))
    ax = fig.subplots()
    width = 0.76 / len(bars)
    offsets = (np.arange(len(bars)) - (len(bars) - 1) / 2) * width
    for offset, (label, values, color) in zip(offsets, bars, strict=True):
        ax.bar(x + offset, values, width, label=label, color=color)
    if reference is not None:
        ax.scatter(x + offsets[-1], reference[1], color="black", marker="_", s=300, zorder=3,
                   label=reference[0])  # fmt: skip
    ax.set_xticks(x, [n.replace("_joint", "") for n in joint_names], rotation=20)
    ax.set_ylabel("RMSE [Nm]")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(path, dpi=DPI)


def plot_rmse_per_joint(path: Path, result: IdentificationResult) -> None:
    bars = []
    for split, color in (("train", "tab:gray"), ("validation", "tab:blue")):
        values = result.metrics[split].get("fusion") or result.metrics[split]["physical"]
        bars.append((split, values["rmse_per_joint"], color))
    reference = None
    if "truth" in result.metrics:
        true_rmse = result.metrics["truth"]["validation_rmse_per_joint_true_parameters"]
        reference = ("true parameters (validation)", true_rmse)
    plot_rmse_bars(path, result.model.robot.joint_names, bars, reference=reference)


def plot_excitation(path: Path, result: IdentificationResult) -> None:
    trajectory = result.data.excitation
    t = np.linspace(0.0, trajectory.duration, 2000)
    q, dq, ddq = trajectory.evaluate(t)
    fig = _figure(11, 8, (0.85, 0.15, 0.4, 0.55), hspace=0.12)
    axes = fig.subplots(3, 1, sharex=True)
    for ax, values, label in zip(
        axes, (q, dq, ddq), ("q [rad]", "dq [rad/s]", "ddq [rad/s²]"), strict=True
    ):
        for j, name in enumerate(result.model.robot.joint_names):
            ax.plot(t, values[:, j], lw=1, label=name.replace("_joint", ""))
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=3, fontsize=8)
    axes[-1].set_xlabel("time [s]")
    axes[0].set_title(
        f"Excitation trajectory (cond of base regressor {result.diagnostics.cond:.1f})"
    )
    fig.savefig(path, dpi=DPI)


def write_prediction_plots(
    folder: Path,
    data: Dataset,
    physical: np.ndarray,
    fusion: np.ndarray | None,
    metrics: dict,
    label: str,
) -> None:
    """mode=predict: the plots an identification writes for its validation data, for the
    recording `label` predicted with a saved model (same file names)."""
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{label}: measured vs predicted joint torque (saved model)"
    plot_torque(folder / run_files.VALIDATION_TORQUE_PLOT, data, physical, fusion, title)
    bars = [("physical model", metrics["physical"]["rmse_per_joint"], "tab:blue")]
    if "fusion" in metrics:
        bars.append(("fusion", metrics["fusion"]["rmse_per_joint"], "tab:orange"))
    plot_rmse_bars(
        folder / run_files.RMSE_PER_JOINT_PLOT,
        data.joint_names,
        bars,
        f"Torque RMSE per joint: {label}",
    )


def write_plots(folder: Path, result: IdentificationResult) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    prediction = result.predictions["validation"]
    title = "Validation trajectory: measured vs predicted joint torque"
    plot_torque(
        folder / run_files.VALIDATION_TORQUE_PLOT, result.data.validation, prediction.physical,
        prediction.fusion, title,
    )  # fmt: skip
    plot_rmse_per_joint(folder / run_files.RMSE_PER_JOINT_PLOT, result)
    if result.data.excitation is not None:
        plot_excitation(folder / run_files.EXCITATION_PLOT, result)


def plot_loop_r2(path: Path, loop: dict) -> None:
    """Closed loop: validation R² per round with the target (log scale of 1 − R², inverted:
    better is up), and the validation RMSE per round."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    records = loop["iterations"]
    rounds = [r["iteration"] for r in records]
    r2 = np.array([r["validation_r2"] for r in records])
    gap = np.maximum(1.0 - r2, 1e-9)
    fig = _figure(8, 6, (1.1, 0.15, 0.4, 0.6), hspace=0.12)
    ax, ax_rmse = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    names = {"twin": "twin (MuJoCo inverse dynamics)", "physical": "identified physical model"}
    label = " / ".join(names[s] for s in sorted({r["r2_source"] for r in records}))
    ax.plot(rounds, gap, "o-", color="tab:blue", label=f"validation R², {label}")
    for x, value, y in zip(rounds, r2, gap, strict=True):
        ax.annotate(f"{value:.4f}", (x, y), textcoords="offset points", xytext=(0, 8),
                    ha="center", fontsize=8)  # fmt: skip
    if loop.get("target_r2") is not None:
        ax.axhline(1.0 - loop["target_r2"], color="tab:red", ls="--",
                   label=f"target R² = {loop['target_r2']}")  # fmt: skip
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{1.0 - y:.6g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.invert_yaxis()
    ax.margins(x=0.08, y=0.15)
    ax.set_ylabel("validation R²  (log scale of 1 − R²)")
    ax.set_title("Closed identification loop: validation fit per round")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    ax_rmse.plot(rounds, [r["validation_rmse"] for r in records], "o-", color="0.3")
    ax_rmse.set_ylabel("RMSE [Nm]")
    ax_rmse.set_xlabel("round (each adds one excitation recording)")
    ax_rmse.set_xticks(rounds)
    ax_rmse.grid(alpha=0.3)
    fig.savefig(path, dpi=DPI)
