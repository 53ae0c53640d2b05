"""Validation of a config group against the schema dataclass of the plugin it names.

A group's config is `plugin: <name>` plus that plugin's parameters. Validation checks the
names, the types (from the dataclass annotations) and the plugin's own range checks (its
`__post_init__`), and returns the dataclass instance the plugin's factory receives.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from .errors import UserError
from .plugins import KINDS, PluginInfo, PluginRegistry


def group_values(node: Any, key: str) -> dict[str, Any]:
    """The resolved plain dict of a group's config, or a UserError naming the key."""
    if not isinstance(node, DictConfig):
        raise UserError(f"The config '{key}' must be a mapping with a 'plugin' key, got {node!r}.")
    try:
        return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]
    except MissingMandatoryValue as error:
        missing = getattr(error, "full_key", None) or key
        raise UserError(f"The config key '{missing}' needs a value: give {missing}=...") from None
    except Exception as error:  # interpolation errors of OmegaConf
        raise UserError(f"Cannot resolve the config '{key}': {error}") from None


def validate_plugin_config(
    values: dict[str, Any], kind: str, key: str, registry: PluginRegistry
) -> tuple[PluginInfo, Any]:
    """(plugin, params instance) for a group config dict such as {'plugin': 'ls', ...}."""
    label = KINDS[kind][1]
    values = dict(values)
    name = values.pop("plugin", None)
    if not name:
        raise UserError(
            f"The config '{key}' names no implementation: add 'plugin: <name>' to its YAML. "
            f"Installed {label} plugins: {registry.names(kind)}."
        )
    info = registry.get(kind, str(name))
    return info, build_params(info.schema, values, key, f"{label} plugin '{info.name}'")


def build_params(schema: type, values: dict[str, Any], key: str, owner: str) -> Any:
    """Instantiate `schema` from `values`, checking names, types and the schema's own checks."""
    fields = {field.name: field for field in dataclasses.fields(schema)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise UserError(
            f"Unknown key(s) {[f'{key}.{name}' for name in unknown]} for the {owner}; "
            f"its keys are {sorted(fields)}."
        )
    hints = typing.get_type_hints(schema)
    checked = {}
    for name, value in values.items():
        try:
            checked[name] = _check_type(value, hints[name])
        except TypeError as error:
            raise UserError(
                f"Bad value for config key '{key}.{name}' of the {owner}: {error}."
            ) from None
    try:
        return schema(**checked)
    except (ValueError, TypeError) as error:
        raise UserError(f"Bad value in config '{key}' of the {owner}: {error}.") from None


def _check_type(value: Any, annotation: Any) -> Any:
    """Return value (ints widened to float where a float is expected) or raise TypeError."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in args:
            try:
                return _check_type(value, option)
            except TypeError as error:
                errors.append(str(error))
        raise TypeError(f"{value!r} is not {_name(annotation)}")
    if annotation is type(None):
        if value is None:
            return None
        raise TypeError(f"{value!r} is not null")
    if origin in (list, tuple) or annotation in (list, tuple):
        if not isinstance(value, list | tuple):
            raise TypeError(f"{value!r} is not a list")
        item = args[0] if args else Any
        return [_check_type(v, item) for v in value]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise TypeError(f"{value!r} is not a mapping")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{value!r} is not a number")
        return float(value)
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{value!r} is not an integer")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{value!r} is not true/false")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a string")
        return value
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise TypeError(f"{value!r} is not a mapping")
        return build_params(annotation, value, "", annotation.__name__)
    return value


def _name(annotation: Any) -> str:
    return str(annotation).replace("typing.", "").replace("NoneType", "null")
