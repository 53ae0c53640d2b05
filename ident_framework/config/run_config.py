"""The validated form of a composed Hydra config: every plugin resolved, every value checked.

`validate_config` runs before any job starts (`preflight.py`) and again inside each job; a bad
value fails with its config key, a required value left unset (`???`) with an example command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ident_framework.config.online_settings import OnlineSettings, online_settings
from ident_framework.config.plugin_config import build_params, group_values, validate_plugin_config
from ident_framework.config.registry import PluginInfo, PluginRegistry
from ident_framework.data.checks import CheckParams
from ident_framework.data.preprocessing import PreprocessingParams
from ident_framework.errors import UserError, did_you_mean
from ident_framework.hookspecs import PLUGIN_GROUPS
from ident_framework.model.base_parameters import METHODS
from ident_framework.model.coupling import CoupledJoints
from ident_framework.params import Params, param

__all__ = ["PLUGIN_GROUPS", "RunConfig", "SelectedPlugin", "validate_config"]
SPLIT = "split"  # the validation option that holds out the tail of the identification data
# what a run does: modes/pipeline.py, predict.py, rehearsal/, online/, distributed.py (both)
MODES = ("identify", "predict", "rehearse", "online", "factor", "combine")
LOOP_DESIGNS = ("seeded", "aimed")  # how the closed loop's later rounds design their excitation


@dataclass
class RobotSettings:
    """model: ur12e | ur10e | ur5e | urdf | mjcf; path: model file for urdf/mjcf;
    acceleration_limits: rad/s² per joint (UR publishes none); coupled_joints: motors that
    drive two joints (`model/coupling.py`), e.g. [{joints: [5, 6], ratio: 1.0}]."""

    model: str = "ur12e"
    path: str | None = None
    acceleration_limits: list[float] | None = None
    coupled_joints: list[CoupledJoints] = field(default_factory=list)


@dataclass
class RegressorSettings:
    """Extra regressor columns per joint: rotor inertia (armature) and a constant offset."""

    armature: bool = True
    torque_offset: bool = False


@dataclass
class BaseParameterSettings(Params):
    """tolerance: singular values below tolerance × the largest are unidentifiable;
    method: svd (orthonormal combinations) or qr (named regroupings, Gautier);
    warn_relative_std_percent: base parameters whose std exceeds this share of their value
    are reported as poorly identified."""

    tolerance: float = param(1e-8, gt=0, lt=1)
    method: str = param("svd", choices=METHODS)
    warn_relative_std_percent: float = param(10.0, gt=0)


@dataclass
class SplitSettings(Params):
    """fraction: share of the identification recording (its tail) held out for validation."""

    fraction: float = param(0.3, ge=0.05, le=0.9)


@dataclass
class LoopSettings(Params):
    """Closed identification loop (`modes/closed_loop.py`). iterations: identification rounds
    (1: a single run); target_r2: stop once the validation R² reaches it (None: every round);
    design: seeded (the configured search, a new seed) or aimed (also minimising cond of the
    base regressor of all recordings so far plus the candidate)."""

    iterations: int = param(1, ge=1)
    target_r2: float | None = param(None, gt=0, lt=1, note="an R² to reach")
    design: str = param("seeded", choices=LOOP_DESIGNS)

    @property
    def active(self) -> bool:
        return self.iterations > 1


def _strings(value: Any) -> list[str]:
    """One string or a list of them, as a list of strings."""
    return [value] if isinstance(value, str) else [str(item) for item in value]


def _part_of_parts(settings: DistributedSettings) -> None:
    if not settings.part < settings.parts:
        raise ValueError(
            f"part must be in 0 .. parts-1 = {settings.parts - 1}, got {settings.part}"
        )


@dataclass
class DistributedSettings(Params):
    """Exact distributed identification (`modes/distributed.py`): `mode=factor` reduces part
    `part` (0 .. parts-1, equal numbers of samples in time order) of `parts` of the recording
    to sufficient statistics; `mode=combine` merges those of `inputs` (job folders, statistics
    files or globs) and solves. halo_s: s on each side of a part preprocessed with it but not
    identified on (None: long enough for the filters' edge transients to decay)."""

    part: int = param(0, ge=0)
    parts: int = param(1, ge=1)
    halo_s: float | None = param(None, ge=0, unit="s")
    inputs: list[str] | None = param(None, convert=_strings)
    rules = (_part_of_parts,)


# tuning=cv / tuning=none: every key with its unit in conf/tuning/cv.yaml; `identify/tuning/`
TUNING_METHODS = ("cv", "none")
VELOCITY_SOURCES = ("measured", "differentiated")
TUNING_RULES = ("min", "one_se", "one_se_paired")  # identify/tuning/rules.py
PARTITIONS = ("time", "kind")  # identify/tuning/folds.py


def _increasing_speed_bands(settings: TuningSettings) -> None:
    bands = settings.speed_bands
    if not bands[0] < bands[1] < bands[2]:
        raise ValueError(f"speed_bands must be 3 increasing speeds > 0 rad/s, got {bands}")


@dataclass
class TuningSettings(Params):
    """method: cv (choose by cross-validation) | none (use the config as given); the plural
    names are candidate lists of the option they tune (conf/tuning/cv.yaml)."""

    method: str = param("cv", choices=TUNING_METHODS)
    sources: list[str] = field(default_factory=lambda: ["csv", "rtde", "rosbag"])
    folds: int = param(5, ge=2, le=50)
    guard_s: float = param(0.1, ge=0, unit="s")
    max_samples: int = param(20000, ge=100)
    cutoffs_hz: list[float] = param(
        factory=lambda: [5.0, 10.0, 20.0, 40.0, 80.0], each=True, gt=0, unit="Hz"
    )
    velocity_sources: list[str] = param(
        factory=lambda: list(VELOCITY_SOURCES), each=True, choices=VELOCITY_SOURCES
    )
    armature_columns: list[bool] = field(default_factory=lambda: [True, False])
    offset_columns: list[bool] = field(default_factory=lambda: [False, True])
    dead_bands: list[float] = param(factory=lambda: [0.01, 0.0], each=True, ge=0, unit="rad/s")
    tanh_widths: list[float] = param(
        factory=lambda: [0.001, 0.003, 0.01, 0.03, 0.1], each=True, gt=0, unit="rad/s"
    )
    saturation_widths: list[float] = param(factory=list, each=True, gt=0, unit="rad/s")
    acceleration_leads: list[float] = param(factory=list, each=True, ge=0, unit="s")
    stribeck_velocities: list[float] = param(
        factory=lambda: [0.002, 0.005, 0.01, 0.03, 0.1], each=True, gt=0, unit="rad/s"
    )
    ridges: list[float] = param(factory=lambda: [1e-5, 1e-4, 1e-3, 1e-2], each=True, ge=0)
    truncations: list[float] = param(factory=lambda: [1e-4, 1e-3, 1e-2], each=True, ge=0, lt=1)
    prior_weights: list[float] = param(
        factory=lambda: [1.0, 10.0, 100.0, 1e3, 1e4, 1e5], each=True, gt=0
    )
    sweeps: int = param(2, ge=1)
    rule: str = param("min", choices=TUNING_RULES)
    partitions: list[str] = param(
        factory=lambda: ["time"], each=True, nonempty=True, choices=PARTITIONS
    )
    shape_partitions: list[str] = param(
        factory=lambda: ["time"], each=True, nonempty=True, choices=PARTITIONS
    )
    friction_models: list[str] = field(default_factory=list)
    speed_bands: list[float] = param(
        factory=lambda: [0.01, 0.05, 0.2], each=True, length=3, gt=0, unit="rad/s"
    )
    turn_s: float = param(0.5, gt=0, unit="s")
    rules = (_increasing_speed_bands,)

    @property
    def active(self) -> bool:
        return self.method == "cv"


# mode=rehearse: what it plants and the tolerances it must meet (keys: conf/config.yaml)
REHEARSAL_SOURCE = "mujoco"  # the data source a rehearsal simulates the planted robot with


def _plants_a_change(settings: RehearsalSettings) -> None:
    joint = [settings.viscous_added, settings.coulomb_added, settings.armature_added]
    joint_added = any(any(v > 0 for v in values) for values in joint if values is not None)
    defaults_used = any(values is None for values in joint) and settings.joint_dynamics_added > 0
    scaled = settings.link_scale != 1.0 and settings.scaled_links != []
    if not (settings.payload_mass_kg > 0 or scaled or joint_added or defaults_used):
        raise ValueError(
            "the rehearsal plants no change (payload_mass_kg 0, link_scale 1, no joint "
            "dynamics added), and a rehearsal that recovers unchanged parameters proves "
            "nothing: plant at least one change"
        )


@dataclass
class RehearsalSettings(Params):
    """Planted changes (applied to the robot model to make the rehearsal's "real" robot) and
    the tolerances of the recovery checks (percent unless said otherwise). The payload's
    centre of mass is in the last link's frame (UR: the flange frame); scaled_links are
    1-based (link k is moved by joint k); registry_dir: where passed rehearsals are recorded
    (None: ~/.ident_framework/rehearsals)."""

    payload_mass_kg: float = param(2.0, ge=0, unit="kg")
    payload_position_m: list[float] = param(
        factory=lambda: [0.0, 0.0, 0.05], each=True, length=3, finite=True, unit="m"
    )
    payload_radius_m: float = param(0.03, ge=0, unit="m")
    link_scale: float = param(1.1, gt=0)
    scaled_links: list[int] | None = param(None, each=True, ge=1, note="1-based link numbers")
    joint_dynamics_added: float = param(0.5, ge=0)
    viscous_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")
    coulomb_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")
    armature_added: list[float] | None = param(None, each=True, ge=0, note="one per joint")

    min_validation_r2: float = param(0.99, le=1)
    base_max_relative_std_percent: float = param(0.25, gt=0, unit="%")
    base_relative_error_percent: float = param(5.0, gt=0, unit="%")
    base_norm_error_percent: float = param(5.0, gt=0, unit="%")
    friction_relative_error_percent: float = param(10.0, gt=0, unit="%")
    change_torque_error_percent: float = param(10.0, gt=0, unit="%")
    payload_relative_error_percent: float = param(5.0, gt=0, unit="%")
    change_relative_error_percent: float = param(20.0, gt=0, unit="%")
    armature_relative_error_percent: float = param(35.0, gt=0, unit="%")

    registry_dir: str | None = None
    rules = (_plants_a_change,)


def check_rehearsal_sources(source: Any, validation: Any) -> None:
    """mode=rehearse simulates the planted robot: the identification source must be the
    simulator, without a model file of its own, and so must a validation source."""
    options = {
        "source": "source=mujoco",
        "validation": "validation=mujoco, mujoco_fourier or split",
    }
    for key, plugin in {"source": source, "validation": validation.source}.items():
        if plugin is None:
            continue
        if plugin.info.name != REHEARSAL_SOURCE:
            raise UserError(
                f"mode=rehearse simulates the robot model with planted changes, but {key} is "
                f"'{plugin.info.name}'. Use {options[key]} for the rehearsal; the real robot's "
                "data are for the run after it."
            )
        if plugin.params.model_path is not None:  # the mujoco source's
            raise UserError(
                f"mode=rehearse builds the simulated robot from the robot model with planted "
                f"changes, so {key}.model_path is not used: remove it. To rehearse on a twin "
                "from an earlier run, give it as the robot: robot=mjcf robot.path=twin.xml."
            )


@dataclass(frozen=True)
class SelectedPlugin:
    """A plugin chosen by config, with its validated parameters."""

    info: PluginInfo
    params: Any

    def create(self) -> Any:
        """The plugin's object, checked against its protocol (`PluginInfo.create`)."""
        return self.info.create(self.params)


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
    mcap: bool = False  # also write run.mcap (reports/mcap_export.py)
    mode: str = "identify"
    run: str | None = None  # mode=predict: the run directory of an identification
    rehearsal: RehearsalSettings = field(default_factory=RehearsalSettings)
    loop: LoopSettings = field(default_factory=LoopSettings)
    checks: CheckParams = field(default_factory=CheckParams)
    tuning: TuningSettings = field(default_factory=TuningSettings)
    # what tuning=cv chose (identify/tuning/selection.Selection), set by the selection step
    selection: Any = None
    distributed: DistributedSettings = field(default_factory=DistributedSettings)
    online: OnlineSettings = field(default_factory=OnlineSettings)


# core config sections (not plugin groups) -> their schema
SECTION_SCHEMAS: dict[str, type] = {
    "robot": RobotSettings,
    "preprocessing": PreprocessingParams,
    "regressor": RegressorSettings,
    "base_parameters": BaseParameterSettings,
    "rehearsal": RehearsalSettings,
    "loop": LoopSettings,
    "checks": CheckParams,
    "tuning": TuningSettings,
    "distributed": DistributedSettings,
}


# the keys that select an option inside a group's YAML
SELECTOR_KEYS = ("plugin", "model")
# required values of the built-in configs: what they are and an example value per option
REQUIRED_VALUES: dict[str, tuple[str, dict[str, str]]] = {
    "robot.path": ("the robot's model file", {"urdf": "arm.urdf", "mjcf": "arm.xml"}),
    "source.path": ("the log to identify from", {"csv": "log.csv", "rosbag": "ident_bag"}),
    "validation.path": ("the log to validate on", {"csv": "val.csv", "rosbag": "val_bag"}),
    "source.host": ("the robot's IP address", {"rtde": "192.168.1.10"}),
}
COMMAND = "python -m ident_framework"


def _option_of(cfg: DictConfig, group: str) -> str | None:
    node = OmegaConf.select(cfg, group, throw_on_missing=False)
    if not isinstance(node, DictConfig):
        return None
    for selector in SELECTOR_KEYS:
        if selector in node and not OmegaConf.is_missing(node, selector):
            value = node[selector]
            if isinstance(value, str):
                return value
    return None


def missing_values_message(cfg: DictConfig) -> str | None:
    """None when every required value of `cfg` is set; otherwise which option needs which key
    and an example command giving them."""
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith("hydra."))
    if not missing:
        return None
    needs, example = [], []
    for key in missing:
        group = key.split(".", 1)[0]
        option = _option_of(cfg, group)
        what, examples = REQUIRED_VALUES.get(key, ("a value", {}))
        sample = examples.get(option or "", "VALUE")
        choice = f"{group}={option}" if option and "." in key else None
        needs.append(f"{choice + ' needs ' if choice else ''}{key} ({what})")
        if choice and choice not in example:
            example.append(choice)
        example.append(f"{key}={sample}")
    paths = any(key.rsplit(".", 1)[-1].endswith("path") for key in missing)
    return (
        f"Required config value{'s' if len(missing) > 1 else ''} not given: {'; '.join(needs)}. "
        f"Give {'them' if len(missing) > 1 else 'it'} on the command line, e.g. "
        f"`{COMMAND} {' '.join(example)}`"
        + (" (a relative path is taken from the directory you launch from)." if paths else ".")
    )


def _section(cfg: DictConfig, key: str) -> dict[str, Any]:
    return group_values(cfg[key], key) if key in cfg and cfg[key] is not None else {}


def _settings(cfg: DictConfig, key: str) -> Any:
    """The validated schema instance of the core section `key`."""
    schema = SECTION_SCHEMAS[key]
    return build_params(schema, _section(cfg, key), key, f"the {key} settings", name_owner=False)


def validate_config(cfg: DictConfig, registry: PluginRegistry) -> RunConfig:
    """Check a composed config; raise UserError naming the first bad key."""
    missing = missing_values_message(cfg)
    if missing:
        raise UserError(missing)
    plugins = {}
    for group, kind in PLUGIN_GROUPS.items():
        if group not in cfg:
            raise UserError(f"The config has no '{group}' group; pick one with {group}=<option>.")
        plugins[group] = _plugin(group_values(cfg[group], group), kind, group, registry)
    plugins["friction"].create()  # a friction model that lacks what the engine calls fails here

    values = _section(cfg, "validation")
    if values.get("plugin") == SPLIT:
        values.pop("plugin")
        owner = f"validation={SPLIT}"
        split = build_params(SplitSettings, values, "validation", owner, name_owner=False)
        validation = ValidationChoice(split=split)
    else:
        trajectory = values.pop("trajectory", None)
        validation = ValidationChoice(source=_plugin(values, "data_source", "validation", registry))
        if trajectory is not None:
            key = "validation.trajectory"
            validation.trajectory = _plugin(trajectory, "trajectory", key, registry)

    mode = str(cfg.get("mode", "identify"))
    if mode not in MODES:
        raise UserError(
            f"mode={mode} is not a mode;{did_you_mean(mode, MODES)} Use one of {list(MODES)}."
        )
    run = cfg.get("run")
    if mode == "predict" and not run:
        raise UserError(
            "mode=predict applies a saved identification to a new recording: give "
            "run=DIR (the run directory of that identification) and source=csv source.path=FILE."
        )
    rehearsal = _settings(cfg, "rehearsal")
    if mode == "rehearse":
        check_rehearsal_sources(plugins["source"], validation)
    loop = _settings(cfg, "loop")
    _check_loop(loop, mode, plugins["source"])
    seed, chunk_size = cfg.get("seed", 0), cfg.get("chunk_size", 2000)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UserError(f"seed must be an integer, got {seed!r}.")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise UserError(f"chunk_size must be an integer >= 1 (samples), got {chunk_size!r}.")
    return RunConfig(
        robot=_settings(cfg, "robot"),
        plugins=plugins,
        validation=validation,
        preprocessing=_settings(cfg, "preprocessing"),
        regressor=_settings(cfg, "regressor"),
        base_parameters=_settings(cfg, "base_parameters"),
        seed=seed,
        chunk_size=chunk_size,
        plots=bool(cfg.get("plots", True)),
        mcap=_flag(cfg, "mcap"),
        mode=mode,
        run=str(run) if run else None,
        rehearsal=rehearsal,
        loop=loop,
        checks=_settings(cfg, "checks"),
        tuning=_settings(cfg, "tuning"),
        distributed=_settings(cfg, "distributed"),
        online=online_settings(_section(cfg, "online")),
    )


def _flag(cfg: DictConfig, key: str) -> bool:
    value = cfg.get(key, False)
    if not isinstance(value, bool):
        raise UserError(f"{key} must be true or false, got {value!r}.")
    return value


def _plugin(values: dict[str, Any], kind: str, key: str, registry: PluginRegistry) -> Any:
    return SelectedPlugin(*validate_plugin_config(values, kind, key, registry))


def _check_loop(loop: LoopSettings, mode: str, source: SelectedPlugin) -> None:
    """A closed loop records new excitations: it needs a data source that moves a robot."""
    if not loop.active:
        return
    if mode != "identify":
        raise UserError(
            f"loop.iterations={loop.iterations} repeats an identification; mode={mode} "
            "runs no closed loop. Use loop.iterations=1 with this mode."
        )
    if not source.create().moves_robot:
        raise UserError(
            f"loop.iterations={loop.iterations} records a new excitation each round, but the "
            f"data source '{source.info.name}' (source=...) reads a recording and moves no "
            "robot. Use a source that moves one (source=mujoco simulates it), or "
            "loop.iterations=1 to identify from the recording once."
        )
