"""One job (no `-m`): its config composed once, then run through Hydra's own job runner.

`@hydra.main` would compose it twice more (each ~0.25 s): the preflight composes it with the
Hydra object `@hydra.main` would build, validates it, and `run` does what `Hydra.run` does
(callbacks, `run_job`: run directory, `.hydra/`, logging). Anything else (`-m`, `--cfg`,
`--info`, `-cp`/`-cn`/`-cd`, `hydra.mode=`, ...) goes through `@hydra.main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hydra._internal.callbacks import Callbacks
from hydra._internal.hydra import Hydra
from hydra._internal.utils import (
    create_automatic_config_search_path,
    detect_calling_file_or_module_from_task_function,
    detect_task_name,
)
from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import run_job
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf

_OTHER_COMMANDS = ("multirun", "cfg", "info", "shell_completion", "help", "hydra_help")
_OTHER_SOURCES = ("config_path", "config_name", "config_dir", "experimental_rerun")


def is_plain_run(args: argparse.Namespace) -> bool:
    """Whether Hydra's parsed command line is one job from the packaged config."""
    if any(getattr(args, flag, None) for flag in _OTHER_COMMANDS + _OTHER_SOURCES):
        return False
    return not any(o.lstrip("+~").startswith("hydra.mode") for o in args.overrides)


@dataclass
class SingleRun:
    """A plain run: the Hydra object, the config name and the composed config (with `hydra`)."""

    hydra: Hydra
    config_name: str
    config: DictConfig | None = None

    def job_config(self) -> DictConfig:
        """The job's part of the config (without the `hydra` node), as the job sees it."""
        assert self.config is not None, "compose the run first"
        return OmegaConf.masked_copy(self.config, [k for k in self.config if k != "hydra"])


def hydra_for(task_function: Callable[..., Any], config_module: str) -> Hydra:
    """The Hydra object `@hydra.main(config_path="pkg://<config_module>")` builds for
    `task_function` (same task name and search path), made the global one."""
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task_function)
    search_path = create_automatic_config_search_path(
        calling_file, calling_module, f"pkg://{config_module}"
    )
    GlobalHydra.instance().clear()
    return Hydra.create_main_hydra2(
        task_name=detect_task_name(calling_file, calling_module), config_search_path=search_path
    )


def compose_run(run: SingleRun, overrides: list[str]) -> DictConfig:
    """The config of `overrides` in RUN mode, with Hydra's logging configured, as `Hydra.run`
    composes it."""
    return run.hydra.compose_config(
        config_name=run.config_name,
        overrides=[*overrides, "hydra.mode=RUN"],
        with_log_configuration=True,
        run_mode=RunMode.RUN,
    )


def run(single: SingleRun, task_function: Callable[[DictConfig], Any]) -> Any:
    """Run the composed job as `Hydra.run` does; the job's return value."""
    cfg = single.config
    assert cfg is not None, "compose the run first"
    try:
        if cfg.hydra.mode is None:
            cfg.hydra.mode = RunMode.RUN
        callbacks = Callbacks(cfg)
        callbacks.on_run_start(config=cfg, config_name=single.config_name)
        context = HydraContext(config_loader=single.hydra.config_loader, callbacks=callbacks)
        result = run_job(
            hydra_context=context,
            task_function=task_function,
            config=cfg,
            job_dir_key="hydra.run.dir",
            job_subdir_key=None,
            configure_logging=True,
        )
        callbacks.on_run_end(config=cfg, config_name=single.config_name, job_return=result)
        return result.return_value
    finally:
        GlobalHydra.instance().clear()
