"""The fleet report: per robot and joint, Coulomb fc (Nm) and viscous fv (Nm·s/rad) friction
and rotor inertia Ia (kg·m²) with their std (empty where not identifiable on its own), the
held-out fit, the last link's mass (kg) and first moments m·c (kg·m), and flags: an outlier,
fc more than k σ above the fleet's median of that joint (latest log per robot; σ = 1.4826 MAD,
at least `min_spread` × median), or a trend, fc risen by more than k σ since the robot's
first log. Written: fleet.csv, fleet_payload.csv, fleet.md (with every log given and why any
was left out) and fleet.png (fc per joint and robot, ±2 std bars, flagged joints marked).

Rationale: docs/design.md#fleet-flags
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ident_framework.reports import run_files
from ident_framework.reports.tables import COMPACT, format_cell, markdown_table

FLEET_CSV, FLEET_MARKDOWN, FLEET_PLOT = "fleet.csv", "fleet.md", "fleet.png"
FLEET_PAYLOAD_CSV = "fleet_payload.csv"
QUANTITIES = ("fc", "fv", "Ia")  # Nm, Nm·s/rad, kg·m²
PAYLOAD = ("m", "mx", "my", "mz")  # last link: kg, kg·m (mass times centre of mass)


@dataclass(frozen=True)
class LeftOut:
    """A log the fleet was given but could not identify, and why."""

    robot: str
    date: str
    path: Path
    reason: str


@dataclass
class RobotRun:
    """One identified log: robot id, date (ISO text, may be ""), its run directory."""

    robot: str
    date: str
    run_dir: Path
    joints: list[str] = field(default_factory=list)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # quantity -> (n,)
    validation_rmse: float | None = None
    validation_r2: float | None = None
    stds: dict[str, np.ndarray] = field(default_factory=dict)  # quantity -> (n,), NaN: none
    payload: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> value, std
    alone: dict[str, np.ndarray] = field(default_factory=dict)  # quantity -> (n,) identifiable

    @classmethod
    def read(cls, robot: str, date: str, run_dir: Path) -> RobotRun:
        parameters = yaml.safe_load((run_dir / run_files.PARAMETERS).read_text())
        metrics = json.loads((run_dir / run_files.METRICS).read_text())
        rows = parameters["joints"]

        def per_joint(quantity: str, key: str) -> np.ndarray:
            cells = [(row.get(quantity) or {}).get(key) for row in rows]
            return np.array([np.nan if c is None else c for c in cells], dtype=float)

        values = {q: per_joint(q, "value") for q in QUANTITIES}
        stds = {q: per_joint(q, "std") for q in QUANTITIES}
        alone = {q: per_joint(q, "identifiable_alone") != 0 for q in QUANTITIES}  # absent: yes
        physical = metrics["validation"]["physical"]
        standard = parameters.get("standard_parameters") or {}
        standard_std = parameters.get("standard_parameter_std") or {}
        payload = {
            name: (float(standard[name]), float(standard_std[name]))
            for name in (f"{p}_{len(rows)}" for p in PAYLOAD)
            if standard_std.get(name) is not None and name in standard
        }
        return cls(robot, date, run_dir, [row["joint"] for row in rows], values,
                   physical["rmse"], physical["r2"], stds, payload, alone)  # fmt: skip


def fleet_flags(runs: list[RobotRun], k: float, min_spread: float) -> list[dict[str, Any]]:
    """One row per robot, date and joint: values, fleet median and σ of fc, and the flags."""
    latest: dict[str, RobotRun] = {}
    earliest: dict[str, RobotRun] = {}
    for run in sorted(runs, key=lambda r: (r.robot, r.date)):
        latest[run.robot] = run
        earliest.setdefault(run.robot, run)
    fc = np.array([run.values["fc"] for run in latest.values()])  # (robots, n)
    median = np.median(fc, axis=0)
    spread = np.maximum(1.4826 * np.median(np.abs(fc - median), axis=0), min_spread * median)
    rows = []
    for run in sorted(runs, key=lambda r: (r.robot, r.date)):
        first = earliest[run.robot]
        for j, joint in enumerate(run.joints):
            value = run.values["fc"][j]
            outlier = run is latest[run.robot] and value > median[j] + k * spread[j]
            rise = value - first.values["fc"][j]
            trend = run is not first and rise > k * spread[j]
            rows.append({
                "robot": run.robot, "date": run.date, "joint": joint,
                **{key: value for q in QUANTITIES for key, value in (
                    (q, _cell(run.values[q], j, run.alone.get(q), q == "fc")),
                    (f"{q}_std", _cell(run.stds.get(q), j)))},
                "fleet_median_fc": float(median[j]), "fleet_sigma_fc": float(spread[j]),
                "fc_sigmas_above_median": float((value - median[j]) / spread[j]),
                "fc_rise_since_first": float(rise) if run is not first else None,
                "outlier": bool(outlier), "trend": bool(trend),
                "validation_rmse": run.validation_rmse, "validation_r2": run.validation_r2,
                "run": str(run.run_dir),
            })  # fmt: skip
    return rows


def _cell(values, j: int, alone=None, always: bool = False) -> float | None:
    """values[j], None when absent (NaN) or, unless `always`, not identifiable alone."""
    hidden = alone is not None and not alone[j] and not always
    return None if values is None or np.isnan(values[j]) or hidden else float(values[j])


def payload_rows(runs: list[RobotRun]) -> list[dict[str, Any]]:
    """One row per robot and date: the last link's payload-like parameters and their std."""
    rows = []
    for run in sorted(runs, key=lambda r: (r.robot, r.date)):
        row: dict[str, Any] = {"robot": run.robot, "date": run.date}
        for name, (value, std) in run.payload.items():
            row[name], row[f"{name}_std"] = value, std
        rows.append(row)
    return rows


def write_fleet_report(
    folder: Path, runs: list[RobotRun], k: float, min_spread: float, left_out: list[LeftOut] = ()
) -> list:
    """The report's files into `folder`; `left_out`: logs that could not be identified;
    returns the rows."""
    rows = fleet_flags(runs, k, min_spread)
    payload = payload_rows(runs)
    payload_names = list(dict.fromkeys(key for row in payload for key in row))
    for name, table, names in ((FLEET_CSV, rows, list(rows[0])),
                               (FLEET_PAYLOAD_CSV, payload, payload_names)):  # fmt: skip
        with open(folder / name, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            writer.writerows(table)
    columns = ["robot", "date", "joint", "fc", "fc_std", "fv", "fv_std", "Ia", "Ia_std",
               "fc_sigmas_above_median", "validation_rmse", "validation_r2"]  # fmt: skip
    flagged = [r for r in rows if r["outlier"] or r["trend"]]
    given = len(runs) + len(left_out)
    logs = [[run.robot, run.date, "identified", str(run.run_dir)] for run in runs] + [
        [item.robot, item.date, f"left out: {item.path}", item.reason] for item in left_out
    ]
    cell = {c: COMPACT for c in columns} | {"validation_r2": ".5f"}
    lines = [
        f"# Fleet report: {len({r['robot'] for r in rows})} robots, {len(runs)} of {given} logs "
        "identified" + (f", {len(left_out)} left out (below)" if left_out else ""),
        "",
        f"Flags: Coulomb friction fc more than {k:g} σ above the fleet median of its joint "
        f"(outlier, latest log per robot) or risen by more than {k:g} σ since the robot's first "
        f"log (trend); σ = 1.4826 MAD, at least {min_spread:g} × median. fc, fv, Ia in Nm, "
        "Nm·s/rad, kg·m²; `_std`: the standard deviation of that robot's estimate (its fit's "
        "covariance). fv, Ia and their std are empty where the parameter is identified only in "
        "combination with others (the first joints' Ia with the link inertia Izz: the value is "
        "a minimum-norm share, not comparable between robots); validation on each log's "
        "held-out tail.",
        "",
        f"## Flagged joints ({len(flagged)})",
        "",
        *markdown_table(
            [*columns, "flag"],
            [
                [format_cell(r[c], cell[c]) for c in columns]
                + [", ".join(f for f in ("outlier", "trend") if r[f])]
                for r in flagged
            ],
        ),  # fmt: skip
        "",
        f"![fc per joint and robot]({FLEET_PLOT})",
        "",
        "## Every robot and joint",
        "",
        *markdown_table(columns, [[format_cell(r[c], cell[c]) for c in columns] for r in rows]),
        "",
        f"## Logs ({given} given, {len(left_out)} left out)",
        "",
        *markdown_table(
            ["robot", "date", "log", "run directory or reason"],
            [[text.replace("|", "\\|").replace("\n", " ") for text in row] for row in logs],
        ),
        "",
        "## Payload-like parameters of the last link",
        "",
        "Mass (kg) and first moments m·c (kg·m) of the last link, those identifiable on their "
        f"own, with their std ({FLEET_PAYLOAD_CSV}): a payload changes them.",
        "",
        *markdown_table(
            payload_names,
            [[format_cell(r.get(c), COMPACT) for c in payload_names] for r in payload],
        ),
        "",
    ]
    (folder / FLEET_MARKDOWN).write_text("\n".join(lines))
    plot_fleet(rows, k, folder / FLEET_PLOT)
    return rows


def plot_fleet(rows: list[dict[str, Any]], k: float, path: Path) -> list[float]:
    """fc of each robot (latest log), one panel per joint spanning the median ± (k+1) σ
    (values beyond drawn at the edge, labelled), the k σ limit, flagged joints in red.
    Returns the drawn ±2 std bars' heights in pixels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest: dict[tuple[str, str], dict] = {}
    for row in sorted(rows, key=lambda r: r["date"]):
        latest[(row["robot"], row["joint"])] = row
    joints = list(dict.fromkeys(row["joint"] for row in rows))
    fig, axes = plt.subplots(1, len(joints), figsize=(max(8, 2.2 * len(joints)), 4.8))
    rng = np.random.default_rng(0)
    bars = []
    for ax, joint in zip(np.atleast_1d(axes), joints, strict=True):
        points = [r for (_, name), r in latest.items() if name == joint]
        median, sigma = points[0]["fleet_median_fc"], points[0]["fleet_sigma_fc"]
        ax.axhline(median, color="k", lw=1)
        ax.axhline(median + k * sigma, color="tab:orange", ls="--", lw=1)
        x = rng.uniform(-0.3, 0.3, len(points))
        flagged = np.array([r["outlier"] or r["trend"] for r in points])
        fc = np.array([r["fc"] for r in points])
        lo, hi = median - (k + 1) * sigma, median + (k + 1) * sigma
        values = np.clip(fc, lo, hi)
        beyond = values != fc
        errors = np.array([2 * (r["fc_std"] or 0.0) for r in points]) * ~beyond
        ax.errorbar(x, values, yerr=errors, fmt="none", ecolor="0.2", elinewidth=1.2, capsize=4,
                    zorder=3)  # fmt: skip
        ax.scatter(x[~flagged], values[~flagged], s=10, color="tab:blue", zorder=2)
        ax.scatter(x[flagged], values[flagged], s=40, color="tab:red", marker="^", zorder=2)
        for i in np.flatnonzero(flagged | beyond):
            label = f"{points[i]['robot']}" + (f" {fc[i]:.3g}" if beyond[i] else "")
            ax.annotate(label, (x[i], values[i]), fontsize=7, xytext=(3, -9 if beyond[i] else 3),
                        textcoords="offset points")  # fmt: skip
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.set_xlim(-0.5, 0.5)
        ax.set_xticks([])
        ax.set_xlabel(joint.replace("_joint", ""))
        ax.grid(axis="y", alpha=0.3)
        bars.append((ax, values, errors))
    np.atleast_1d(axes)[0].set_ylabel("Coulomb friction fc [Nm]")
    fig.suptitle(
        f"Fleet: fc per joint (latest log per robot, ±2 std of its fit); median (black), "
        f"+{k:g} σ (orange)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    heights = [
        float(abs(np.diff(ax.transData.transform([[0, v - e], [0, v + e]])[:, 1])[0]))
        for ax, values, errors in bars
        for v, e in zip(values, errors, strict=True)
        if e > 0
    ]
    plt.close(fig)
    return heights
