"""The jobs of a sweep (`-m`) as the comparison table lists them, whichever Hydra launcher ran
them (basic, joblib, submitit, ray): every job the command line expands to is one row, a job
that failed included.

A job that fails inside a sweep does not stop the sweep: it writes `failed.json` into its job
directory (the error, its exit code, its overrides) instead of results, and returns. A job that
left neither results nor that record (killed, out of memory, a cluster timeout) is reported as
such. After the sweep the command exits with the worst job's code (2: user errors only).
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from ident_framework.reports import run_files

EXIT_CRASH = 1  # a job raised something that is not a user error


def in_sweep() -> bool:
    """True inside a job of a `-m` sweep (any launcher)."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def record_failed_job(error: BaseException, exit_code: int) -> Path:
    """Write `failed.json` into this job's directory: the one-paragraph error, the exit code the
    job would have had on its own, its overrides and, for a crash, the traceback."""
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
    """(job subdirectory, overrides) of every job the sweep's command line expands to (the
    basic sweeper's expansion, job numbers from 0); [] when the sweep is not the basic sweeper's
    or its subdirectories are not named by job number."""
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
    """0 when every job has results; else the worst failed job's code (1 beats 2: a crash is
    worse than a user error)."""
    codes = {row["exit_code"] for row in rows if row.get("exit_code")}
    if not codes:
        return 0
    return EXIT_CRASH if EXIT_CRASH in codes else max(codes)
