"""Compose and validate every job's config before any job runs (a bad value in a sweep's third
job would otherwise surface after two ran): the command line is expanded as the basic sweeper
does, each job's config composed and validated; any problem becomes a `UserError`.

A plain one-job command line is composed once, with the Hydra object `@hydra.main` would build,
and run by `run_single` as `Hydra.run` runs it (`@hydra.main` would compose it twice more, each
~0.25 s); anything else (`-m`, `--cfg`, `-cp`, `hydra.mode=`, ...) goes through `@hydra.main`.

An override of a key that does not exist gets the section's valid keys (its YAML's and its
schema's) and the closest one; `+key=value` is advised only for a schema field the YAML does
not list or an entry of an open mapping (`source.true_friction.parameters`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import omegaconf._utils
import yaml
from hydra import compose, initialize_config_module
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import (
    create_automatic_config_search_path,
    detect_calling_file_or_module_from_task_function,
    detect_task_name,
    get_args_parser,
)
from hydra.core.global_hydra import GlobalHydra
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import IntervalSweep
from hydra.core.utils import run_job
from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf._utils import get_yaml_loader as _omegaconf_yaml_loader
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ident_framework.config.registry import PluginRegistry, get_registry
from ident_framework.config.run_config import (
    COMMAND,
    SECTION_SCHEMAS,
    SPLIT,
    RunConfig,
    SplitSettings,
    validate_config,
)
from ident_framework.errors import UserError, closest
from ident_framework.hookspecs import PLUGIN_GROUPS, POINTS

CONFIG_MODULE = "ident_framework.conf"
CONFIG_NAME = "config"
_INFO_FLAGS = ("help", "hydra_help", "info", "shell_completion")
_OTHER_COMMANDS = ("multirun", "cfg", "info", "shell_completion", "help", "hydra_help")
_OTHER_SOURCES = ("config_path", "config_name", "config_dir", "experimental_rerun")
# section path -> extension point of the plugin named by its `plugin` key (besides the groups)
NESTED_PLUGINS = {"source.true_friction": "friction", "validation.trajectory": "trajectory"}
# an interpolation of another section: ${a.b} or ${oc.select:a.b,default}
_FOLLOWS = re.compile(r"^\$\{(?:oc\.select:)?([A-Za-z_][\w.]*)(?:,[^}]*)?\}$")


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


def use_libyaml_loader() -> None:
    """Make `OmegaConf.load` (Hydra reads every config file with it) parse with libyaml's
    parser where PyYAML has it: a run's config files in ~0.003 s instead of ~0.05 s. The loader
    is OmegaConf's otherwise (its float resolver, no timestamps, duplicate keys refused), so the
    values are the same; a YAML syntax error's message lacks the quoted snippet."""
    if hasattr(yaml, "CSafeLoader"):
        omegaconf._utils.get_yaml_loader = _libyaml_loader


@cache
def _libyaml_loader() -> type:
    """OmegaConf's YAML loader on libyaml's parser (made once)."""
    loader = type("OmegaConfCLoader", (yaml.CSafeLoader,), {})
    loader.construct_mapping = _refusing_duplicates  # type: ignore[method-assign]
    loader.yaml_implicit_resolvers = _omegaconf_yaml_loader().yaml_implicit_resolvers
    return loader


def _refusing_duplicates(self: Any, node: yaml.MappingNode, deep: bool = False) -> Any:
    """OmegaConf's `construct_mapping`: a mapping with a key twice is an error."""
    keys = set()
    for key_node, _ in node.value:
        if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
            continue
        if key_node.value in keys:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key_node.value}",
                key_node.start_mark,
            )
        keys.add(key_node.value)
    return yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)


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


def asks_for_help(argv: list[str]) -> bool:
    """Whether the command line asks for --help or --hydra-help."""
    args = get_args_parser().parse_args(argv)
    return bool(args.help or args.hydra_help)


@contextmanager
def shared_group_listing() -> Iterator[None]:
    """While Hydra prints --help or --hydra-help: one config repository per loader, config
    name and overrides for all of its `get_group_options` calls (it lists every config group's
    options, ~90 calls, each building a repository with a deep copy of Hydra's config store:
    ~0.25 s of --help). The repository does not change between the calls; the lists are the
    same."""
    original = ConfigLoaderImpl.get_group_options
    repositories: dict[tuple[Any, ...], Any] = {}

    def get_group_options(
        self: ConfigLoaderImpl,
        group_name: str,
        results_filter: ObjectType | None = ObjectType.CONFIG,
        config_name: str | None = None,
        overrides: list[str] | None = None,
    ) -> list[str]:
        key = (self, config_name, tuple(overrides or ()))
        if key not in repositories:
            parsed = self._parse_overrides_and_create_caching_repo(config_name, list(key[2]))
            repositories[key] = parsed[1]
        return repositories[key].get_group_options(group_name, results_filter)

    ConfigLoaderImpl.get_group_options = get_group_options  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConfigLoaderImpl.get_group_options = original  # type: ignore[method-assign]


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
            break
        except ConfigCompositionException as error:
            override = _unknown_key(error, remaining)
            if override is None:
                if not unknown:
                    raise
                cfg = compose_job([o for o in remaining if "." not in o])
                break
            unknown.append(override)
            remaining.remove(override)
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


@dataclass(frozen=True)
class SectionKeys:
    """What a config section accepts: `listed` (in its YAML), `schema` (its schema's fields, or
    None), `owner` (for messages), `open_mapping` (no fixed keys: every entry is added with +)."""

    listed: tuple[str, ...]
    schema: tuple[str, ...] | None
    owner: str
    open_mapping: bool = False

    @property
    def valid(self) -> list[str]:
        return sorted(set(self.listed) | set(self.schema or ()))


def _fields(schema: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(schema))


def _plugin_schema(
    node: DictConfig, kind: str, registry: PluginRegistry
) -> tuple[tuple[str, ...] | None, str]:
    name = node.get("plugin") if isinstance(node, DictConfig) else None
    label = POINTS[kind].label
    if not name:
        return None, f"the {label} config"
    try:
        info = registry.get(kind, str(name))
    except UserError:
        return None, f"the {label} config (plugin '{name}' is not installed)"
    return ("plugin", *_fields(info.schema)), info.owner


def section_keys(cfg: DictConfig, path: str, registry: PluginRegistry) -> SectionKeys:
    """The keys of the section at dotted `path` ("" the top level) of the composed `cfg`."""
    node = cfg if not path else _select(cfg, path)
    listed = tuple(str(k) for k in node) if isinstance(node, DictConfig) else ()
    schema: tuple[str, ...] | None = None
    owner = f"the section '{path}'" if path else "the top level of the config"
    if path in SECTION_SCHEMAS:
        schema, owner = _fields(SECTION_SCHEMAS[path]), f"the {path} settings"
    elif path in PLUGIN_GROUPS:
        schema, owner = _plugin_schema(node, PLUGIN_GROUPS[path], registry)
    elif path == "validation":
        if isinstance(node, DictConfig) and node.get("plugin") == SPLIT:
            schema, owner = ("plugin", *_fields(SplitSettings)), "validation=split"
        else:
            schema, owner = _plugin_schema(node, "data_source", registry)
            schema = None if schema is None else (*schema, "trajectory")
            owner = f"{owner} (validation)"
    elif path in NESTED_PLUGINS:
        schema, owner = _plugin_schema(node, NESTED_PLUGINS[path], registry)
        if path == "source.true_friction":
            schema = ("plugin", "parameters", *(schema or ()))
            owner = f"source.true_friction ({owner})"
    open_mapping = schema is None and isinstance(node, DictConfig) and not listed
    return SectionKeys(listed, schema, owner, open_mapping)


def _all_keys(node: Any, prefix: str = "") -> Iterable[str]:
    """Every dotted key of a plain nested dict."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}{key}"
            yield path
            yield from _all_keys(value, f"{path}.")


def _select(cfg: DictConfig, path: str) -> Any:
    try:
        return OmegaConf.select(cfg, path, throw_on_missing=False)
    except Exception:  # an interpolation that does not resolve: not a section to look into
        return None


def unknown_key_message(cfg: DictConfig, key: str, override: str, registry: PluginRegistry) -> str:
    """The message for an override `key` (given as `override`) that `cfg` (composed without it)
    has no place for: the section's valid keys and the closest one, or the `+` form."""
    parts = key.split(".")
    followed = _followed_section(cfg, parts, override)
    if followed is not None:
        return followed
    node: Any = cfg
    depth = 0
    while depth < len(parts) and isinstance(node, DictConfig) and parts[depth] in node:
        depth += 1
        node = _select(cfg, ".".join(parts[:depth]))
    section = ".".join(parts[:depth])
    if depth == len(parts):  # the key exists: Hydra refused the override for another reason
        unknown = _unknown_entries(node, override)
        if unknown:
            keys = section_keys(cfg, key, registry)
            match = closest(unknown[0], keys.valid)
            hint = f" Did you mean '{key}.{match}'?" if match else ""
            shown = ", ".join(f"'{key}.{name}'" for name in unknown)
            return (
                f"Unknown config key{'s' if len(unknown) > 1 else ''} {shown} (in {override})."
                f"{hint} The keys of {keys.owner} are: {', '.join(keys.valid)}."
            )
        return f"Cannot set {override}: {key} exists but does not take this value."
    if not isinstance(node, DictConfig):
        shown = "a list" if isinstance(node, ListConfig) else f"the value {node!r}"
        return (
            f"'{key}' (in {override}) does not exist: {section} holds {shown}, not keys of its "
            f"own. Set it as a whole with {section}=VALUE."
        )
    name = parts[depth]
    keys = section_keys(cfg, section, registry)
    value = override.split("=", 1)[1] if "=" in override else "VALUE"
    place = f"{section}.{name}" if section else name
    if keys.open_mapping or (keys.schema is not None and name in keys.schema):
        why = (
            f"{section} is an open mapping (it has no fixed keys)"
            if keys.open_mapping
            else f"'{place}' is a key of {keys.owner} that its config file does not list"
        )
        return f"{why}: add it with a leading +, as +{place}={value}."
    valid = keys.valid
    match = closest(name, valid)
    if match is not None:
        hint = f" Did you mean '{section + '.' if section else ''}{match}'?"
    elif section in PLUGIN_GROUPS:  # a key of another option of the group
        others = _options_with_key(PLUGIN_GROUPS[section], name, registry)
        hint = "".join(
            f" '{section}.{field}' is a key of {section}={option}." for option, field in others
        )
    else:  # e.g. a section's key given at the top level
        match = _closest_elsewhere(cfg, key, name)
        hint = f" Did you mean '{match}'?" if match else ""
    return (
        f"Unknown config key '{place}' (in {override}).{hint} The keys of {keys.owner} are: "
        f"{', '.join(valid)}. `{COMMAND} --cfg job` prints the whole composed config."
    )


def _unknown_entries(node: Any, override: str) -> list[str]:
    """The keys of a mapping given as the value of `override` (`key={a: 1, b: 2}`) that the
    section `node` does not have ([] when the value is no mapping)."""
    if not isinstance(node, DictConfig):
        return []
    try:
        value = OverridesParser.create().parse_override(override).value()
    except Exception:  # not parsable: Hydra's own message stands
        return []
    if not isinstance(value, dict):
        return []
    return sorted(str(name) for name in value if name not in node)


def _followed_section(cfg: DictConfig, parts: list[str], override: str) -> str | None:
    """The message for a key inside a section that interpolates another one
    (`source.workspace: ${oc.select:trajectory.workspace,null}`); None when there is none."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
        if isinstance(node, str) and node.startswith("${"):
            section = ".".join(parts[: depth + 1])
            rest = ".".join(parts[depth + 1 :])
            value = override.split("=", 1)[1] if "=" in override else "VALUE"
            match = _FOLLOWS.match(node)
            if match is None:
                return (
                    f"Cannot set {override}: {section} is taken from elsewhere ({node} in its "
                    f"config file), it has no keys of its own to set; set it as a whole with "
                    f"{section}=VALUE."
                )
            target = match.group(1)
            return (
                f"Cannot set {override}: {section} follows {target} ({node} in its config "
                f"file), one setting for both: give {target}.{rest}={value} instead."
            )
    return None


def _options_with_key(kind: str, name: str, registry: PluginRegistry) -> list[tuple[str, str]]:
    """(option, key) for the installed options of an extension point whose schema has a key
    close to `name`."""
    found = []
    for option in registry.names(kind):
        match = closest(name, _fields(registry.get(kind, option).schema), cutoff=0.8)
        if match:
            found.append((option, match))
    return found


def _closest_elsewhere(cfg: DictConfig, key: str, name: str) -> str | None:
    """The config path closest to `key` whose last part is close to `name`."""
    paths = list(_all_keys(OmegaConf.to_container(cfg, resolve=False)))
    by_last = [p for p in paths if closest(name, [p.rsplit(".", 1)[-1]], cutoff=0.8)]
    return closest(key, by_last, cutoff=0.0) if by_last else None
