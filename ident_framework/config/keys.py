"""The keys each config section accepts, and the message for a key that does not exist: the
section's valid keys and the closest match.

A section's keys are those of its composed YAML plus the fields of its schema (a core section's
or the selected plugin's). A schema field the YAML does not list, and an entry of an open
mapping (`source.true_friction.parameters`), are added with `+key=value`: only then is `+` the
right advice.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, ListConfig, OmegaConf

from ident_framework.config.registry import PluginRegistry
from ident_framework.config.run_config import COMMAND, SECTION_SCHEMAS, SPLIT, SplitSettings
from ident_framework.errors import UserError, closest
from ident_framework.hookspecs import PLUGIN_GROUPS, POINTS

# section path -> extension point of the plugin named by its `plugin` key (besides the groups)
NESTED_PLUGINS = {"source.true_friction": "friction", "validation.trajectory": "trajectory"}
# an interpolation of another section: ${a.b} or ${oc.select:a.b,default}
_FOLLOWS = re.compile(r"^\$\{(?:oc\.select:)?([A-Za-z_][\w.]*)(?:,[^}]*)?\}$")


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
