"""The validated form of a composed Hydra config: every plugin resolved, every value checked.

`validate_config` runs before any job starts (see `preflight.py`) and again inside each job; a
bad value fails with the config key that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig

from .base_parameters import METHODS
from .errors import UserError
from .plugin_config import build_params, group_values, validate_plugin_config
from .plugins import PluginInfo, PluginRegistry
from .preprocessing import PreprocessingParams
from .rehearsal_settings import RehearsalSettings, check_rehearsal_sources

# config group -> extension point
PLUGIN_GROUPS = {
    "source": "data_source",
    "trajectory": "trajectory",
    "friction": "friction",
    "estimator": "estimator",
    "residual": "residual",
}
SPLIT = "split"  # the validation option that holds out the tail of the identification data
# identify: the pipeline; predict: apply a saved run to data; rehearse: the pipeline on the robot
# model with planted changes, checked against them (rehearsal.py)
MODES = ("identify", "predict", "rehearse")


@dataclass
class RobotSettings:
    """model: ur12e | ur10e | ur5e | urdf | mjcf; path: model file for urdf/mjcf;
    acceleration_limits: rad/s² per joint (UR publishes none)."""

    model: str = "ur12e"
    path: str | None = None
    acceleration_limits: list[float] | None = None


@dataclass
class RegressorSettings:
    """Extra regressor columns per joint: rotor inertia (armature) and a constant offset."""

    armature: bool = True
    torque_offset: bool = False


@dataclass
class BaseParameterSettings:
    """tolerance: singular values below tolerance × the largest are unidentifiable;
    method: svd (orthonormal combinations) or qr (named regroupings, Gautier);
    warn_relative_std_percent: base parameters whose std exceeds this share of their value
    are reported as poorly identified."""

    tolerance: float = 1e-8
    method: str = "svd"
    warn_relative_std_percent: float = 10.0

    def __post_init__(self) -> None:
        if not self.warn_relative_std_percent > 0:
            raise ValueError(
                f"warn_relative_std_percent must be > 0, got {self.warn_relative_std_percent}"
            )
        if not 0.0 < self.tolerance < 1.0:
            raise ValueError(f"tolerance must be in (0, 1), got {self.tolerance}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")


@dataclass
class SplitSettings:
    """fraction: share of the identification recording (its tail) held out for validation."""

    fraction: float = 0.3

    def __post_init__(self) -> None:
        if not 0.05 <= self.fraction <= 0.9:
            raise ValueError(f"fraction must be in [0.05, 0.9], got {self.fraction}")


@dataclass(frozen=True)
class SelectedPlugin:
    """A plugin chosen by config, with its validated parameters."""

    info: PluginInfo
    params: Any

    def create(self) -> Any:
        return self.info.factory(self.params)


@dataclass
class ValidationChoice:
    """Either a held-out split, or a data source (with a trajectory when it moves a robot)."""

    split: SplitSettings | None = None
    source: SelectedPlugin | None = None
    trajectory: SelectedPlugin | None = None


@dataclass
class RunConfig:
    robot: RobotSettings
    plugins: dict[str, SelectedPlugin]
    validation: ValidationChoice
    preprocessing: PreprocessingParams
    regressor: RegressorSettings
    base_parameters: BaseParameterSettings
    seed: int = 0
    chunk_size: int = 2000
    plots: bool = True
    mode: str = "identify"
    run: str | None = None  # mode=predict: the run directory of an identification
    rehearsal: RehearsalSettings = field(default_factory=RehearsalSettings)


def _section(cfg: DictConfig, key: str) -> dict[str, Any]:
    return group_values(cfg[key], key) if key in cfg and cfg[key] is not None else {}


def validate_config(cfg: DictConfig, registry: PluginRegistry) -> RunConfig:
    """Check a composed config; raise UserError naming the first bad key."""
    plugins = {}
    for group, kind in PLUGIN_GROUPS.items():
        if group not in cfg:
            raise UserError(f"The config has no '{group}' group; pick one with {group}=<option>.")
        info, params = validate_plugin_config(
            group_values(cfg[group], group), kind, group, registry
        )
        plugins[group] = SelectedPlugin(info, params)

    validation_values = _section(cfg, "validation")
    if validation_values.get("plugin") == SPLIT:
        validation_values.pop("plugin")
        validation = ValidationChoice(
            split=build_params(SplitSettings, validation_values, "validation", "split validation")
        )
    else:
        trajectory_values = validation_values.pop("trajectory", None)
        info, params = validate_plugin_config(
            validation_values, "data_source", "validation", registry
        )
        trajectory = None
        if trajectory_values is not None:
            trajectory = SelectedPlugin(
                *validate_plugin_config(
                    trajectory_values, "trajectory", "validation.trajectory", registry
                )
            )
        validation = ValidationChoice(source=SelectedPlugin(info, params), trajectory=trajectory)

    mode = str(cfg.get("mode", "identify"))
    if mode not in MODES:
        raise UserError(f"Unknown mode '{mode}' (config key 'mode'); available: {list(MODES)}.")
    run = cfg.get("run")
    if mode == "predict" and not run:
        raise UserError(
            "mode=predict applies a saved identification to a new recording: give "
            "run=DIR (the run directory of that identification) and source=csv source.path=FILE."
        )
    rehearsal = build_params(
        RehearsalSettings, _section(cfg, "rehearsal"), "rehearsal", "rehearsal settings"
    )
    if mode == "rehearse":
        check_rehearsal_sources(plugins["source"], validation)
    seed, chunk_size = cfg.get("seed", 0), cfg.get("chunk_size", 2000)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UserError(f"Config key 'seed' must be an integer, got {seed!r}.")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise UserError(f"Config key 'chunk_size' must be a positive integer, got {chunk_size!r}.")
    return RunConfig(
        robot=build_params(RobotSettings, _section(cfg, "robot"), "robot", "robot"),
        plugins=plugins,
        validation=validation,
        preprocessing=build_params(
            PreprocessingParams, _section(cfg, "preprocessing"), "preprocessing", "preprocessing"
        ),
        regressor=build_params(
            RegressorSettings, _section(cfg, "regressor"), "regressor", "regressor"
        ),
        base_parameters=build_params(
            BaseParameterSettings,
            _section(cfg, "base_parameters"),
            "base_parameters",
            "base parameters",
        ),
        seed=seed,
        chunk_size=chunk_size,
        plots=bool(cfg.get("plots", True)),
        mode=mode,
        run=str(run) if run else None,
        rehearsal=rehearsal,
    )
