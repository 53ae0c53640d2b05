"""The closed loop's outputs: loop.csv, loop.md (the rounds as a table), loop_trajectories.yaml
and plots/loop_r2.png; the same table closes the summary of a closed-loop run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ident_framework.plain_data import to_plain, yaml_text
from ident_framework.reports import run_files
from ident_framework.reports.tables import format_cell, markdown_table

if TYPE_CHECKING:
    from ident_framework.hookspecs import Trajectory
    from ident_framework.identify.result import IdentificationResult

R2_SOURCES = {  # which model a round's validation R² is of
    "twin": "twin inverse dynamics (MuJoCo)",
    "physical": "identified physical model",
}
COLUMNS = (  # (key in a round's record, table header, number format)
    ("iteration", "iteration", "d"),
    ("seed", "seed", "d"),
    ("recordings", "recordings", "d"),
    ("samples", "samples so far", "d"),
    ("n_base", "n_base", "d"),
    ("cond", "cond", ".1f"),
    ("validation_rmse", "validation RMSE [Nm]", ".4f"),
    ("validation_r2", "R²", ".5f"),
    ("r2_source", "R² of", ""),
    ("physical_r2", "physical R²", ".5f"),
    ("rmse_ratio_to_true", "RMSE / true", ".3f"),
    ("wall_time_s", "wall time [s]", ".1f"),
)


def loop_table(loop: dict[str, Any]) -> list[str]:
    """The rounds as a Markdown table, followed by the target and which R² was judged."""
    header = [title for _, title, _ in COLUMNS]
    rows = [
        [format_cell(record.get(key), spec) for key, _, spec in COLUMNS]
        for record in loop["iterations"]
    ]
    sources = sorted({R2_SOURCES[r["r2_source"]] for r in loop["iterations"]})
    target = loop["target_r2"]
    outcome = (
        "no target (loop.target_r2=null)"
        if target is None
        else f"target R² {target}: {'reached' if loop['reached'] else 'not reached'} after "
        f"{len(loop['iterations'])} of {loop['max_iterations']} rounds"
    )
    return [*markdown_table(header, rows), "", f"R² of: {', '.join(sources)}. {outcome}."]


def write_loop_outputs(
    folder: Path, result: IdentificationResult, excitations: Sequence[Trajectory]
) -> None:
    """loop.csv, loop.md, loop_trajectories.yaml (every round's excitation) and
    plots/loop_r2.png of a closed-loop run whose final round is `result`."""
    from ident_framework.reports.plots import plot_loop_r2

    loop = result.metrics["loop"]
    keys = [key for key, _, _ in COLUMNS] + ["excitation_cond"]
    rows = [",".join(keys)]
    for record in loop["iterations"]:
        rows.append(",".join("" if record[k] is None else str(record[k]) for k in keys))
    (folder / run_files.LOOP_CSV).write_text("\n".join(rows) + "\n")
    title = f"# Closed identification loop ({result.model.robot.name})\n\n"
    (folder / run_files.LOOP_MARKDOWN).write_text(title + "\n".join(loop_table(loop)) + "\n")
    rounds = [
        {"iteration": record["iteration"], "seed": record["seed"], **to_plain(e.describe())}
        for record, e in zip(loop["iterations"], excitations, strict=True)
    ]
    (folder / run_files.LOOP_TRAJECTORIES).write_text(yaml_text(rounds))
    if result.config.plots:
        (folder / run_files.PLOTS).mkdir(exist_ok=True)
        plot_loop_r2(folder / run_files.PLOTS / run_files.LOOP_R2_PLOT, loop)
