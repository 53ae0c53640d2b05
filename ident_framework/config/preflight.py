"""Compose and validate every job's config before any job runs (a bad value in a sweep's third
job would otherwise surface after two ran): the command line is expanded as the basic sweeper
does, each job's config composed and validated; any problem becomes a `UserError`.

A plain one-job command line is composed once, with the Hydra object `@hydra.main` would build,
and run by `run_single` as `Hydra.run` runs it (`@hydra.main` would compose it twice more, each
~0.25 s); anything else (`-m`, `--cfg`, `-cp`, `hydra.mode=`, ...) goes through `@hydra.main`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hydra import compose, initialize_config_module
from hydra._internal.callbacks import Callbacks
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import (
    create_automatic_config_search_path,
    detect_calling_file_or_module_from_task_function,
    detect_task_name,
    get_args_parser,
)
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import IntervalSweep
from hydra.core.utils import run_job
from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ident_framework.config.keys import unknown_key_message
from ident_framework.config.registry import PluginRegistry, get_registry
from ident_framework.config.run_config import RunConfig, validate_config
from ident_framework.errors import UserError

CONFIG_MODULE = "ident_framework.conf"
CONFIG_NAME = "config"
_INFO_FLAGS = ("help", "hydra_help", "info", "shell_completion")
_OTHER_COMMANDS = ("multirun", "cfg", "info", "shell_completion", "help", "hydra_help")
_OTHER_SOURCES = ("config_path", "config_name", "config_dir", "experimental_rerun")


def _one_paragraph(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _job_overrides(overrides: list[str], multirun: bool) -> list[list[str]]:
    if not multirun:
        return [overrides]
    loader = GlobalHydra.instance().config_loader()
    parser = OverridesParser.create(config_loader=loader)
    jobs = [o for o in overrides if _is_job_override(o)]
    # an optimising sweeper's interval(a,b) (hydra/sweeper=optuna): both ends are checked
    jobs = [_interval_ends(o, parser) for o in jobs]
    return BasicSweeper.split_arguments(parser.parse_overrides(jobs), None)[0]


def _interval_ends(override: str, parser: OverridesParser) -> str:
    """`key=a,b` for `key=interval(a,b)` (which the basic sweeper cannot expand)."""
    parsed = parser.parse_override(override)
    if not isinstance(value := parsed.value(), IntervalSweep):
        return override
    ends = [value.start, value.end]
    if "int" in value.tags:
        ends = [int(v) for v in ends]
    return f"{parsed.get_key_element()}={ends[0]},{ends[1]}"


def _is_job_override(override: str) -> bool:
    key = override.lstrip("+~").split("=", 1)[0]
    return not (key.startswith("hydra.") or key.startswith("hydra/") or key == "hydra")


def check_command_line(argv: list[str]) -> list[RunConfig]:
    """Validated configs of every job the command line would run (none for --help etc.)."""
    return prepare_command_line(argv)[0]


def prepare_command_line(
    argv: list[str], task_function: Callable[..., Any] | None = None
) -> tuple[list[RunConfig], SingleRun | None]:
    """(validated configs of every job, the composed run of a plain one-job command line for
    `run_single`, given the command's `@hydra.main` `task_function`; else None)."""
    args = get_args_parser().parse_args(argv)
    if any(getattr(args, flag, None) for flag in _INFO_FLAGS):
        return [], None
    registry = get_registry()
    GlobalHydra.instance().clear()
    ready = False  # a composed single run keeps its Hydra object (the global one) for the run
    try:
        if task_function is not None and _is_plain_run(args):
            hydra = _hydra_for(task_function)
            config = _compose_job(  # as Hydra.run composes it (hydra.mode as @hydra.main)
                list(args.overrides),
                registry,
                lambda o: hydra.compose_config(
                    CONFIG_NAME, [*o, "hydra.mode=RUN"], RunMode.RUN, with_log_configuration=True
                ),
            )
            single = SingleRun(hydra, config)
            configs = [validate_config(single.job_config(), registry)]
            ready = True
            return configs, single
        with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
            configs = []
            for job in _job_overrides(list(args.overrides), bool(args.multirun)):
                overrides = [o for o in job if _is_job_override(o)]
                cfg = _compose_job(overrides, registry, lambda o: compose(CONFIG_NAME, overrides=o))
                configs.append(validate_config(cfg, registry))
            return configs, None
    except MissingConfigException as error:
        raise UserError(_unknown_option_message(error)) from None
    except (HydraException, OmegaConfBaseException) as error:
        raise UserError(
            f"Bad command line or config: {_one_paragraph(str(error))} "
            "Run `python -m ident_framework --help` to list the config groups and options."
        ) from None
    finally:
        if not ready:
            GlobalHydra.instance().clear()


def _unknown_key(error: ConfigCompositionException, overrides: list[str]) -> str | None:
    """The override Hydra refused because its key does not exist (None: another error)."""
    if not isinstance(error.__cause__, ConfigAttributeError | ConfigKeyError):
        return None
    match = re.match(r"Could not override '([^']+)'", str(error))
    if match is None:
        return None
    return next((o for o in overrides if o.split("=", 1)[0] == match.group(1)), None)


def _compose_job(
    overrides: list[str], registry: PluginRegistry, compose_job: Callable[[list[str]], DictConfig]
) -> DictConfig:
    """The job's composed config. An override of a key that does not exist gets the valid keys
    of its section and the closest one (the config composed again without it to know them)."""
    remaining, unknown = list(overrides), []
    while True:
        try:
            cfg = compose_job(remaining)
        except ConfigCompositionException as error:
            override = _unknown_key(error, remaining)
            if override is None:
                if not unknown:
                    raise
                cfg = compose_job([o for o in remaining if "." not in o])
                break
            unknown.append(override)
            remaining.remove(override)
            continue
        break
    if unknown:
        raise UserError(
            " ".join(unknown_key_message(cfg, o.split("=", 1)[0], o, registry) for o in unknown)
        )
    return cfg


def _unknown_option_message(error: MissingConfigException) -> str:
    text = str(error)
    match = re.search(r"Could not find '([^/']+)/([^']+)'", text)
    options = re.findall(r"^\s+(\S+)$", text.split("Available options", 1)[-1], re.MULTILINE)
    if match:
        group, option = match.groups()
        return (
            f"unknown {group} option '{option}'; installed: {options}. "
            f"Pick one with {group}=<option>, or install the plugin that provides '{option}'."
        )
    return f"Bad command line or config: {_one_paragraph(text)}"


def _is_plain_run(args: argparse.Namespace) -> bool:
    """Whether Hydra's parsed command line is one job from the packaged config."""
    if any(getattr(args, flag, None) for flag in _OTHER_COMMANDS + _OTHER_SOURCES):
        return False
    return not any(o.lstrip("+~").startswith("hydra.mode") for o in args.overrides)


@dataclass
class SingleRun:
    """A plain run: the Hydra object and the composed config (with its `hydra` node)."""

    hydra: Hydra
    config: DictConfig

    def job_config(self) -> DictConfig:
        """The job's part of the config (without the `hydra` node), as the job sees it."""
        return OmegaConf.masked_copy(self.config, [k for k in self.config if k != "hydra"])


def _hydra_for(task_function: Callable[..., Any]) -> Hydra:
    """The Hydra object `@hydra.main(config_path="pkg://<CONFIG_MODULE>")` builds for
    `task_function` (same task name and search path), made the global one."""
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task_function)
    search_path = create_automatic_config_search_path(
        calling_file, calling_module, f"pkg://{CONFIG_MODULE}"
    )
    GlobalHydra.instance().clear()
    return Hydra.create_main_hydra2(
        task_name=detect_task_name(calling_file, calling_module), config_search_path=search_path
    )


def run_single(single: SingleRun, task_function: Callable[[DictConfig], Any]) -> Any:
    """Run the composed job as `Hydra.run` does; the job's return value."""
    cfg = single.config
    try:
        if cfg.hydra.mode is None:
            cfg.hydra.mode = RunMode.RUN
        callbacks = Callbacks(cfg)
        callbacks.on_run_start(config=cfg, config_name=CONFIG_NAME)
        context = HydraContext(config_loader=single.hydra.config_loader, callbacks=callbacks)
        result = run_job(
            hydra_context=context,
            task_function=task_function,
            config=cfg,
            job_dir_key="hydra.run.dir",
            job_subdir_key=None,
            configure_logging=True,
        )
        callbacks.on_run_end(config=cfg, config_name=CONFIG_NAME, job_return=result)
        return result.return_value
    finally:
        GlobalHydra.instance().clear()
