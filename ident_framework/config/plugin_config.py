"""Validation of a config group (`plugin: <name>` plus its parameters) against the schema
dataclass of that plugin: names, types (from the annotations) and declared constraints
(`ident_framework.params`); the result is the instance the plugin's factory receives.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from ident_framework.config.registry import PluginInfo, PluginRegistry
from ident_framework.errors import UserError, closest
from ident_framework.hookspecs import POINTS
from ident_framework.params import Params, declares_checks, validate


def group_values(node: Any, key: str) -> dict[str, Any]:
    """The resolved plain dict of a group's config, or a UserError naming the key."""
    if not isinstance(node, DictConfig):
        raise UserError(
            f"The config '{key}' must be a section of keys (set them one by one with "
            f"{key}.KEY=VALUE), got {node!r}."
        )
    try:
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=True)  # type: ignore[return-value]
    except MissingMandatoryValue as error:
        missing = getattr(error, "full_key", None) or key
        raise UserError(
            f"The config key '{missing}' needs a value: give {missing}=VALUE on the command line."
        ) from None
    except Exception as error:  # interpolation errors of OmegaConf
        raise UserError(f"Cannot resolve the config '{key}': {error}") from None


def validate_plugin_config(
    values: dict[str, Any], kind: str, key: str, registry: PluginRegistry
) -> tuple[PluginInfo, Any]:
    """(plugin, params instance) for a group config dict such as {'plugin': 'ls', ...}."""
    values = dict(values)
    name = values.pop("plugin", None)
    if not name:
        raise UserError(
            f"The config '{key}' names no implementation: add 'plugin: <name>' to its YAML. "
            f"Installed {POINTS[kind].label} plugins: {registry.names(kind)}."
        )
    info = registry.get(kind, str(name))
    return info, build_params(info.schema, values, key, info.owner)


def build_params(
    schema: type, values: dict[str, Any], key: str, owner: str, *, name_owner: bool = True
) -> Any:
    """Instantiate `schema` from `values`, checking names, types and the schema's own checks.
    `key`: the section's config path (`trajectory.workspace.boxes[0]`; "" none); `owner`: what
    it belongs to in messages ("the friction plugin 'stribeck'"), named in value errors when
    `name_owner`."""
    fields = {field.name: field for field in dataclasses.fields(schema)}
    prefix = f"{key}." if key else ""
    unknown = sorted(set(values) - set(fields))
    if unknown:
        shown = ", ".join(f"'{prefix}{name}'" for name in unknown)
        match = closest(unknown[0], fields)
        hint = f" Did you mean '{prefix}{match}'?" if match else ""
        raise UserError(
            f"Unknown config key{'s' if len(unknown) > 1 else ''} {shown} for {owner}.{hint} "
            f"Its keys are: {', '.join(sorted(fields))}."
        )
    note = f" ({owner})" if name_owner else ""
    hints = typing.get_type_hints(schema)
    checked = {}
    for name, value in values.items():
        try:
            checked[name] = _check_type(value, hints[name], f"{prefix}{name}", owner, name_owner)
        except TypeError:
            expected = _describe(hints[name])
            raise UserError(f"{prefix}{name} must be {expected}, got {value!r}{note}.") from None
    try:
        params = schema(**checked)
        if not isinstance(params, Params) and declares_checks(schema):
            validate(params)  # declarations on a dataclass that does not derive from Params
        return params
    except (ValueError, TypeError) as error:
        text = str(error).rstrip(".")
        qualified = _qualify(text, fields, key)
        if qualified == text and prefix not in text:  # the message names no key
            raise UserError(f"Bad value in {owner} ({key or schema.__name__}): {text}.") from None
        raise UserError(f"{qualified}{note}.") from None


def _qualify(message: str, fields: Iterable[str], key: str) -> str:
    """`message` with field names written as config keys (`lowpass_hz` ->
    `preprocessing.lowpass_hz`): its first word when a field, and any field with an underscore
    (a plain word such as `device` may be English), unless after a dot."""
    if not key:
        return message
    names = sorted(fields, key=len, reverse=True)
    first = "|".join(re.escape(name) for name in names)
    message = re.sub(rf"^({first})(?!\w)", rf"{key}.\1", message)
    named = "|".join(re.escape(name) for name in names if "_" in name)
    return re.sub(rf"(?<![\w.])({named})(?!\w)", rf"{key}.\1", message) if named else message


def _check_type(
    value: Any, annotation: Any, key: str = "", owner: str = "", name_owner: bool = True
) -> Any:
    """Return value (ints widened to float where a float is expected) or raise TypeError; a
    nested schema is built by `build_params` as the section `key` of `owner`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _check_type(value, option, key, owner, name_owner)
            except TypeError:
                continue
        raise TypeError(f"{value!r} is not {_describe(annotation)}")
    if annotation is type(None):
        if value is None:
            return None
        raise TypeError(f"{value!r} is not null")
    if origin in (list, tuple) or annotation in (list, tuple):
        if not isinstance(value, list | tuple):
            raise TypeError(f"{value!r} is not a list")
        item = args[0] if args else Any
        return [_check_type(v, item, f"{key}[{i}]", owner, name_owner) for i, v in enumerate(value)]
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise TypeError(f"{value!r} is not a mapping")
        return value
    if annotation in (float, int, bool, str):  # a bool is no number
        if not isinstance(value, _SCALARS[annotation]) or (
            isinstance(value, bool) and annotation is not bool
        ):
            raise TypeError(f"{value!r} is not {_describe(annotation)}")
        return float(value) if annotation is float else value
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise TypeError(f"{value!r} is not a mapping")
        return build_params(
            annotation, value, key, owner or annotation.__name__, name_owner=name_owner
        )
    return value


_SCALARS: dict[Any, Any] = {float: (int, float), int: int, bool: bool, str: str}
_KINDS_OF_VALUE = {
    float: ("a number", "numbers"),
    int: ("an integer", "integers"),
    bool: ("true or false", "true/false values"),
    str: ("a string", "strings"),
    dict: ("a mapping", "mappings"),
    type(None): ("null", "nulls"),
}


def _describe(annotation: Any, plural: bool = False) -> str:
    """What a value of `annotation` is, in words: 'a number or null', 'a list of numbers'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(option, plural) for option in args)
    if origin in (list, tuple) or annotation in (list, tuple):
        return ("lists" if plural else "a list") + (
            f" of {_describe(args[0], plural=True)}" if args and args[0] is not Any else ""
        )
    if origin is dict:
        annotation = dict
    if dataclasses.is_dataclass(annotation):
        return "mappings" if plural else "a mapping"
    singular, many = _KINDS_OF_VALUE.get(annotation, ("a value", "values"))
    return many if plural else singular
