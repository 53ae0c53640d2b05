"""At the end of a `-m` sweep, whichever Hydra launcher ran it: comparison.md and .csv, one
row per job the command line expands to, failed jobs included.

A job that fails writes `failed.json` (error, exit code, overrides) instead of results and
the sweep goes on; a job that left neither (killed, out of memory, timed out) is reported as
such. The command then exits with the worst job's code (2: user errors only).
"""

from __future__ import annotations

import csv
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ident_framework.reports import run_files
from ident_framework.reports.tables import COMPACT, format_cell, markdown_table

log = logging.getLogger(__name__)

COLUMNS = (
    "run", "status", "overrides", "estimator", "friction", "residual", "n_base", "cond",
    "train_rmse", "train_r2", "validation_rmse", "validation_r2", "validation_rmse_slow",
    "wall_time_s",
)  # fmt: skip


def _final(split: dict[str, Any]) -> dict[str, Any]:
    return split.get("fusion") or split["physical"]


# the outcome of the last sweep this process reported: the command line's exit code
LAST_SWEEP: dict[str, int] = {"jobs": 0, "failed": 0, "exit_code": 0}


def _order(name: str) -> tuple[int, str]:
    return (int(name), "") if name.isdigit() else (1 << 30, name)


def collect_rows(sweep_dir: Path, jobs: list[tuple[str, list[str]]] | None = None) -> list[dict]:
    """One row per job of `jobs` ((subdirectory, overrides)) and per other job directory with
    results; a job without results is a failed row."""
    expected = dict(jobs or [])
    results = (run_files.METRICS, run_files.FAILED_JOB, run_files.FACTOR_SUMMARY)
    found = {p.parent.name for name in results for p in sweep_dir.glob(f"*/{name}")}
    rows = []
    for name in sorted(set(expected) | found, key=_order):
        run = sweep_dir / name
        if (run / run_files.METRICS).exists():
            rows.append(_result_row(run))
        elif (run / run_files.FACTOR_SUMMARY).exists():
            rows.append(_factor_row(run, expected.get(name)))
        else:
            rows.append(failed_row(run, expected.get(name)))
    return rows


FACTOR_COLUMNS = (
    "run", "status", "overrides", "part", "source", "rows", "samples", "time_s",
    "statistics_kb", "wall_time_s", "peak_memory_mb",
)  # fmt: skip


def _factor_row(run: Path, overrides: list[str] | None) -> dict[str, Any]:
    """A `mode=factor` job's row: its part, statistics file (kB), wall time (s), peak memory
    (MB)."""
    summary = json.loads((run / run_files.FACTOR_SUMMARY).read_text())
    span = summary.get("time_s") or [None, None]
    return {
        "run": run.name,
        "status": "ok",
        "overrides": " ".join(overrides or []),
        "part": f"{summary.get('index')} of {summary.get('count')}",
        "source": summary.get("file") or summary.get("source"),
        "rows": "..".join(map(str, summary.get("rows") or [])),
        "samples": summary.get("samples"),
        "time_s": f"{span[0]:.3f}..{span[1]:.3f}" if None not in span else None,
        "statistics_kb": summary.get("statistics_file_bytes", 0) / 1024,
        "wall_time_s": summary.get("wall_time_s"),
        "peak_memory_mb": summary.get("peak_memory_mb"),
    }


def _result_row(run: Path) -> dict[str, Any]:
    metrics = json.loads((run / run_files.METRICS).read_text())
    overrides_file = run / run_files.HYDRA_FOLDER / run_files.HYDRA_OVERRIDES
    overrides = yaml.safe_load(overrides_file.read_text()) if overrides_file.exists() else []
    parameters = yaml.safe_load((run / run_files.PARAMETERS).read_text())
    plugins = parameters.get("plugins", {})
    train, validation = _final(metrics["train"]), _final(metrics["validation"])
    return {
        "run": run.name,
        "status": "ok",
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


def write_comparison(
    sweep_dir: Path, jobs: list[tuple[str, list[str]]] | None = None
) -> list[dict[str, Any]]:
    """comparison.csv and comparison.md (by validation RMSE, failed jobs last) in sweep_dir;
    `jobs`: the expected jobs (`expected_jobs`)."""
    rows = collect_rows(sweep_dir, jobs)
    results = [row for row in rows if row["status"] == "ok" and "joint_names" in row]
    factor = any("part" in row for row in rows) and not results
    with open(sweep_dir / run_files.COMPARISON_CSV, "w", newline="") as handle:
        columns = FACTOR_COLUMNS if factor else COLUMNS
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    if factor:
        (sweep_dir / run_files.COMPARISON_MARKDOWN).write_text(factor_table(sweep_dir, rows))
        return rows
    ranked = sorted(
        rows, key=lambda r: (r["status"] != "ok", r.get("validation_rmse") or 0.0, _order(r["run"]))
    )
    ranks = _ranks(ranked)
    cells = [
        [rank, *(format_cell(row.get(c), COMPACT).replace("|", "\\|") for c in COLUMNS)]
        for rank, row in zip(ranks, ranked, strict=True)
    ]
    lines = markdown_table(["rank", *COLUMNS], cells)
    tied = any(rank.endswith("=") for rank in ranks)
    (sweep_dir / run_files.COMPARISON_MARKDOWN).write_text(
        "# Sweep comparison (ranked by validation RMSE, Nm)\n\n"
        + "\n".join(lines)
        + (f"\n\n{TIE_NOTE}" if tied else "")
        + (f"\n\n![validation RMSE per joint]({run_files.COMPARISON_PLOT})\n" if results else "\n")
    )
    if results:
        plot_rmse_per_joint(results, sweep_dir / run_files.COMPARISON_PLOT)
    return rows


def factor_table(sweep_dir: Path, rows: list[dict[str, Any]]) -> str:
    """comparison.md of a factor sweep: what it is, its parts in order, how to combine them."""
    done = sum(row["status"] == "ok" for row in rows)
    cells = [
        [format_cell(row.get(c), COMPACT).replace("|", "\\|") for c in FACTOR_COLUMNS]
        for row in rows
    ]
    return "\n".join([
        f"# Factor sweep (mode=factor): {done} of {len(rows)} parts reduced",
        "",
        "Each job reduced one part of the recording to the sufficient statistics of the "
        f"least-squares problem ({run_files.STATISTICS}); parts are not fitted or validated on "
        "their own, so there is nothing to rank. Merge, solve and validate them with "
        f"`python -m ident_framework mode=combine distributed.inputs=[{sweep_dir}]` (the same "
        "robot, friction and regressor options; docs/modes/distributed.md).",
        "",
        *markdown_table(FACTOR_COLUMNS, cells),
        "",
    ])  # fmt: skip


TIE_NOTE = (
    "A rank with `=`: the same validation RMSE and R² as another run's, to the digits shown: "
    "a tie, not a ranking (e.g. estimator=rls without forgetting is least squares)."
)


def _ranks(ranked: list[dict[str, Any]]) -> list[str]:
    """Each row's rank: runs whose validation RMSE and R² print the same share a rank, marked
    `=`; failed jobs after, untied."""

    def shown(row: dict[str, Any]) -> tuple[str, str] | None:
        if row["status"] != "ok" or row.get("validation_rmse") is None:
            return None
        return tuple(format_cell(row.get(c), COMPACT) for c in ("validation_rmse", "validation_r2"))

    keys = [shown(row) for row in ranked]
    ranks = []
    for i, key in enumerate(keys):
        first = i
        while key is not None and first > 0 and keys[first - 1] == key:
            first -= 1
        tie = key is not None and keys.count(key) > 1
        ranks.append(f"{first + 1}{'=' if tie else ''}")
    return ranks


_started: list[DictConfig] = []  # the config of a sweep that started and has not been reported


def report_unfinished_sweep() -> bool:
    """Write the comparison of a sweep whose launcher gave up (Hydra then skips
    on_multirun_end); True when there was one."""
    if not _started:
        return False
    SweepReport().on_multirun_end(_started[-1])
    return True


class SweepReport(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _started.append(config)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _started.clear()
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        rows = write_comparison(sweep_dir, expected_jobs(config))
        failed = [row for row in rows if row["status"] != "ok"]
        LAST_SWEEP.update(jobs=len(rows), failed=len(failed), exit_code=sweep_exit_code(rows))
        print(f"comparison of {len(rows)} runs: {sweep_dir / run_files.COMPARISON_MARKDOWN}")
        for row in failed:
            log.error("job %s %s", row["run"], row["status"])


EXIT_CRASH = 1  # a job raised something that is not a user error


def in_sweep() -> bool:
    """True inside a job of a `-m` sweep (any launcher)."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def record_failed_job(error: BaseException, exit_code: int) -> Path:
    """Write `failed.json` into this job's directory: the error, the job's own exit code, its
    overrides and, for a crash, the traceback."""
    hydra = HydraConfig.get()
    run_dir = Path(hydra.runtime.output_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "error": str(error) or type(error).__name__,
        "kind": type(error).__name__,
        "exit_code": exit_code,
        "overrides": list(hydra.overrides.task),
    }
    if exit_code == EXIT_CRASH:
        record["traceback"] = "".join(traceback.format_exception(error))
    target = run_dir / run_files.FAILED_JOB
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=2))
    partial.replace(target)
    return target


def expected_jobs(config: DictConfig) -> list[tuple[str, list[str]]]:
    """(job subdirectory, overrides) of every job of the basic sweeper's expansion; [] for
    another sweeper or subdirectories not named by job number."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweeper = str(OmegaConf.select(config, "hydra.sweeper._target_", default=""))
    sweep = OmegaConf.to_container(config.hydra.sweep, resolve=False)
    subdir = sweep.get("subdir") if isinstance(sweep, dict) else None
    if not sweeper.endswith("BasicSweeper") or subdir != "${hydra.job.num}":
        return []
    overrides = list(OmegaConf.select(config, "hydra.overrides.task", default=[]) or [])
    parsed = OverridesParser.create().parse_overrides(overrides)
    batches = BasicSweeper.split_arguments(parsed, None)
    jobs = [job for batch in batches for job in batch]
    return [(str(number), list(job)) for number, job in enumerate(jobs)]


def failed_row(job_dir: Path, overrides: list[str] | None) -> dict[str, Any]:
    """The comparison row of a job without results: its failure record, or "no result"."""
    failure_file = job_dir / run_files.FAILED_JOB
    if failure_file.exists():
        failure = json.loads(failure_file.read_text())
        status = f"failed (exit {failure['exit_code']}): {failure['error']}"
        overrides = failure.get("overrides", overrides)
        code = int(failure["exit_code"])
    else:
        status = (
            "failed: no result (the job did not finish: killed, out of memory or timed out; "
            "see the launcher's log)"
        )
        code = EXIT_CRASH
    return {"run": job_dir.name, "status": status, "overrides": " ".join(overrides or []),
            "exit_code": code}  # fmt: skip


def sweep_exit_code(rows: list[dict[str, Any]]) -> int:
    """0 when every job has results; else the worst failed job's code (a crash, 1, beats 2)."""
    codes = {row["exit_code"] for row in rows if row.get("exit_code")}
    return EXIT_CRASH if EXIT_CRASH in codes else max(codes, default=0)
