"""One tool run of the benchmark: the command, where it writes, and what came out of it."""

from __future__ import annotations

import json
import os
import re
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from .measure import RunStats, run_measured


@dataclass
class Settings:
    """What every run shares (from the command line)."""

    out: Path  # results folder of this benchmark run
    data: Path  # cache of converted / simulated data
    figaroh_python: Path | None  # None: FIGAROH unavailable (reason in figaroh_missing)
    figaroh_missing: str = ""
    memory_cap_gb: float | None = 12.0
    timeout_s: float = 3600.0
    skip_figaroh_above: int | None = None
    ours_variants: dict[str, list[str]] = field(default_factory=dict)
    log: object = print
    repeat: int = 1  # runs of each tool on a timed case (UR10e), alternating; the median kept
    tune_figaroh_up_to: int | None = 20_000  # FIGAROH tuned on at most this many samples
    figaroh_full_grid: bool = False  # FIGAROH tuned: the whole grid, not the staged search
    busy: bool = False  # timed cases: both tools again beside one process spinning on a core


@dataclass
class ToolRun:
    """A finished (or skipped) run of one tool on one case."""

    case: str
    size: int  # identification samples given to the tool
    tool: str  # "ours" | "figaroh"
    label: str  # "ours", "figaroh", "ours[dead_band=0]" ...
    ident: str  # which identification data the tool used
    prediction: Path | None = None
    stats: RunStats | None = None
    status: str = "ok"  # ok | failed: ... | MemoryError at the cap | skipped: ...
    reported: dict = field(default_factory=dict)  # the tool's own figures


def _slug(case: str, size: int, label: str) -> str:
    """A file name for a run (no brackets or spaces: Hydra parses hydra.run.dir)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{case}-{size}-{label}").strip("_")


def _env() -> dict[str, str]:
    """The tools' environment: a user's default Python, which caches compiled modules. Some
    shells (this machine's among them) set PYTHONDONTWRITEBYTECODE; then an editable checkout
    compiles its ~190 modules again on every run (0.2-0.3 s here) while a pip-installed tool
    (FIGAROH in its venv) was compiled at install time."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("HYDRA_FULL_ERROR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _status(stats: RunStats, missing_output: bool) -> str:
    if stats.timed_out:
        return "failed: timed out"
    if stats.returncode != 0 and stats.memory_error:
        return "MemoryError at the cap"
    if stats.returncode != 0:
        last = Path(stats.log).read_text(errors="replace").strip().splitlines()[-1:]
        message = last[0].removeprefix("error: ")[:90] if last else ""
        return f"failed (exit {stats.returncode}): {message}"
    if missing_output:
        return "failed: no prediction file"
    return "ok"


def run_ours(
    settings: Settings, case: str, size: int, label: str, ident: str, overrides: list[str],
    command: list[str], poll: bool = True,
) -> ToolRun:  # fmt: skip
    """`python -m ident_framework OVERRIDES hydra.run.dir=...` under the memory cap (`poll`:
    see `measure.run_measured`)."""
    folder = settings.out / "runs" / _slug(case, size, label)
    run = ToolRun(case, size, "ours", label, ident)
    settings.log(f"[{case}] {label} on {ident}: running the command line")
    log = settings.out / "logs" / f"{_slug(case, size, label)}.log"
    try:
        stats = run_measured(
            [*command, *overrides, f"hydra.run.dir={folder}"], log, cwd=settings.out,
            env=_env(), memory_cap_gb=settings.memory_cap_gb, timeout_s=settings.timeout_s,
            poll=poll,
        )  # fmt: skip
    except OSError as error:  # the command could not start: a failure row, not a crash
        run.status = f"failed: could not start ({error})"
        settings.log(f"[{case}] {label}: {run.status}")
        return run
    prediction = folder / "predictions_validation.csv"
    run.stats, run.status = stats, _status(stats, not prediction.exists())
    if run.status == "ok":
        try:
            metrics = json.loads((folder / "metrics.json").read_text())
            physical = metrics["validation"]["physical"]
            run.reported = {
                "validation_rmse": physical["rmse"],
                "validation_r2": physical["r2"],
                "n_base": metrics["identifiability"]["n_base"],
                "cond": metrics["identifiability"]["cond"],
                "timing_s": metrics.get("timing_s", {}),
            }
            run.prediction = prediction
        except (OSError, ValueError, KeyError, TypeError) as error:
            run.status = f"failed: unreadable metrics.json ({type(error).__name__}: {error})"
    settings.log(
        f"[{case}] {label}: {run.status}, {stats.wall_s:.1f} s, {stats.peak_memory_mb:.0f} MB"
    )
    return run


def run_figaroh(
    settings: Settings, case: str, size: int, label: str, ident: str, driver: str, args: list[str],
    poll: bool = True,
) -> ToolRun:  # fmt: skip
    """A FIGAROH driver of `peers/` with FIGAROH's venv, under the memory cap (`poll`: see
    `measure.run_measured`)."""
    run = ToolRun(case, size, "figaroh", label, ident)
    if settings.figaroh_python is None:
        run.status = f"skipped: {settings.figaroh_missing}"
        return run
    if settings.skip_figaroh_above is not None and size > settings.skip_figaroh_above:
        run.status = f"skipped: above --skip-figaroh-above {settings.skip_figaroh_above}"
        settings.log(f"[{case}] {label} on {ident}: {run.status}")
        return run
    folder = settings.out / "runs" / _slug(case, size, label)
    script = Path(__file__).with_name(driver)
    settings.log(f"[{case}] {label} on {ident}: running FIGAROH 1.0.2")
    try:
        stats = run_measured(
            [str(settings.figaroh_python), str(script), *args, "--out", str(folder)],
            settings.out / "logs" / f"{_slug(case, size, label)}.log",
            cwd=settings.out,
            env=_env(),
            memory_cap_gb=settings.memory_cap_gb,
            timeout_s=settings.timeout_s,
            poll=poll,
        )
    except OSError as error:
        run.status = f"failed: could not start ({error})"
        settings.log(f"[{case}] {label}: {run.status}")
        return run
    prediction = folder / "PRED.csv"
    result_file = folder / "result.json"
    result = json.loads(result_file.read_text()) if result_file.exists() else {}
    error = result.get("error") or ""
    if stats.returncode != 0 and "MemoryError" in error:
        stats = RunStats(**{**stats.to_dict(), "memory_error": True})
    run.stats, run.status = stats, _status(stats, not prediction.exists())
    if run.status == "ok":
        run.prediction = prediction
    run.reported = {
        key: result.get(key)
        for key in (
            "figaroh_validation_rmse",
            "n_base_params",
            "cond_base_regressor",
            "error",
            "timings_s",
            "n_train_samples",
            "n_val_samples",
            "setting",
            "tuning",
        )
        if key in result
    }
    settings.log(
        f"[{case}] {label}: {run.status}, {stats.wall_s:.1f} s, {stats.peak_memory_mb:.0f} MB"
    )
    return run


def median_run(runs: list[ToolRun], memory: ToolRun | None = None) -> ToolRun:
    """The run of median wall time among repeated runs of one tool on the same data (the
    first failed one when any failed), with every run's wall time in `stats.walls_s`. The
    runs compute the same result (both tools are deterministic): only the time differs.
    `memory`: a run of the same command whose process tree was polled (the timed runs were
    not): its memory figures replace the chosen run's."""
    failed = [r for r in [*runs, *([memory] if memory else [])] if r.status != "ok" or not r.stats]
    if failed:
        return failed[0]
    walls = [r.stats.wall_s for r in runs]
    middle = statistics.median_low(walls)
    chosen = runs[walls.index(middle)]
    measured = {}
    if memory is not None:
        fields = ("peak_memory_mb", "peak_rss_mb", "max_process_rss_mb", "max_tree_rss_mb")
        measured = {name: getattr(memory.stats, name) for name in (*fields, "max_tree_pss_mb")}
    chosen.stats = replace(chosen.stats, walls_s=tuple(walls), **measured)
    return chosen
