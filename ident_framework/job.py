"""One Hydra job: validate the config, run the mode it names, write the run directory. Each
mode's modules are imported only when the job runs that mode."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.modes.pipeline import run_pipeline
from ident_framework.reports.run_files import SUMMARY
from ident_framework.reports.run_report import (
    print_summary,
    staged_outputs,
    write_run_directory,
    write_summary,
)

log = logging.getLogger(__name__)


def run_one_job(cfg: DictConfig) -> float:
    """Returns the objective for optimising sweepers (e.g. optuna): the CV RMSE (Nm) of the
    options `tuning=cv` chose when a selection ran, else the final validation RMSE (Nm)."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = validate_config(cfg, get_registry())
    if config.mode == "predict":
        from ident_framework.modes.predict import run_prediction
        from ident_framework.reports.summary import prediction_summary_lines

        with staged_outputs(run_dir) as staging:
            metrics = run_prediction(config, staging)
            lines = prediction_summary_lines(metrics)
            write_summary(staging, lines)
        print("\n".join([*lines, f"outputs in {run_dir}"]))
        final = metrics.get("fusion") or metrics["physical"]
        return float(final["rmse"])
    if config.mode == "rehearse":
        from ident_framework.modes.rehearsal.run import run_rehearsal_job

        return run_rehearsal_job(config, cfg, run_dir)
    if config.mode == "online":
        from ident_framework.online.service import run_online  # the web stack: only here
        from ident_framework.online.summary import print_online_summary

        return print_online_summary(run_online(config, cfg, run_dir), run_dir)
    if config.mode in ("factor", "combine"):  # exact distributed identification
        from ident_framework.modes.distributed import run_combine, run_factor
        from ident_framework.modes.distributed import summary_lines as distributed_summary

        run = run_factor if config.mode == "factor" else run_combine
        with staged_outputs(run_dir) as staging:
            outcome = run(config, cfg, staging)
            lines = distributed_summary(config.mode, outcome)
            if config.mode == "factor":  # combine writes a single run's summary.txt
                write_summary(staging, lines)
            else:
                lines += (staging / SUMMARY).read_text().splitlines()
        print("\n".join([*lines, f"outputs in {run_dir}"]))
        validation = outcome.get("validation", outcome.get("train", {})).get("physical", {})
        return float(validation.get("rmse", math.nan))
    with staged_outputs(run_dir) as staging:
        if config.loop.active:
            from ident_framework.modes.closed_loop import run_closed_loop
            from ident_framework.reports.summary import write_loop_outputs

            loop = run_closed_loop(config)
            result = loop.final
            write_run_directory(staging, result, cfg)
            write_loop_outputs(staging, result, loop.excitations)
        else:
            result = run_pipeline(config)
            write_run_directory(staging, result, cfg)
        if config.mcap:
            from ident_framework.reports.mcap_export import write_result_mcap

            write_result_mcap(staging, result)
    print_summary(result, run_dir)
    if result.config.selection is not None:
        return float(result.config.selection.cv_rmse)
    final = result.metrics["validation"].get("fusion") or result.metrics["validation"]["physical"]
    return float(final["rmse"])
