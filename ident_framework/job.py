"""One Hydra job: validate the config, run the pipeline, write the run directory."""

from __future__ import annotations

import logging
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .closed_loop import run_closed_loop, write_loop_outputs
from .pipeline import run_pipeline
from .plugins import get_registry
from .prediction import run_prediction
from .rehearsal import run_rehearsal_job
from .report import prediction_summary_lines, print_summary, write_run_directory
from .run_config import validate_config
from .run_directory import staged_outputs

log = logging.getLogger(__name__)


def run_one_job(cfg: DictConfig) -> float:
    """Returns the validation RMSE (Nm) of the final prediction, for sweepers that optimise."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    config = validate_config(cfg, get_registry())
    if config.mode == "predict":
        with staged_outputs(run_dir) as stage:
            metrics = run_prediction(config, stage)
            lines = prediction_summary_lines(metrics)
            (stage / "summary.txt").write_text("\n".join(lines) + "\n")
        print("\n".join([*lines, f"outputs in {run_dir}"]))
        final = metrics.get("fusion") or metrics["physical"]
        return float(final["rmse"])
    if config.mode == "rehearse":
        return run_rehearsal_job(config, cfg, run_dir)
    if config.mode == "online":
        from .online.service import run_online  # the web stack only for this mode
        from .online.summary import print_online_summary

        return print_online_summary(run_online(config, cfg, run_dir), run_dir)
    with staged_outputs(run_dir) as stage:
        if config.loop.active:
            loop = run_closed_loop(config)
            result = loop.final
            write_run_directory(stage, result, cfg)
            write_loop_outputs(stage, loop)
        else:
            result = run_pipeline(config)
            write_run_directory(stage, result, cfg)
    print_summary(result, run_dir)
    final = result.metrics["validation"].get("fusion") or result.metrics["validation"]["physical"]
    return float(final["rmse"])
