"""Plugin manager: built-ins registered from one list, third parties from entry points.

The extension points, their hooks and the built-in modules come from `extension_points.py`.
Built lazily once per process (`get_registry()`), because multirun launchers pickle Hydra's
singletons, not a pluggy manager.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pluggy

from ident_framework import hookspecs
from ident_framework.errors import UserError
from ident_framework.extension_points import (
    BUILTIN_PLUGINS,
    DISTRIBUTION,
    ENTRY_POINT_GROUP,
    POINTS,
    conform,
)

__all__ = ["BUILTIN_PLUGINS", "DISTRIBUTION", "ENTRY_POINT_GROUP", "PluginInfo", "PluginRegistry"]


@dataclass(frozen=True)
class PluginInfo:
    """One registered option of one extension point."""

    kind: str
    name: str
    factory: Callable[[Any], Any]
    schema: type
    distribution: str
    version: str

    def create(self, params: Any) -> Any:
        """The plugin's object for validated `params`, checked against its protocol and given
        the defaults of the optional members it leaves out (`extension_points.conform`)."""
        return conform(self.kind, self.factory(params), self.name, self.distribution)


class PluginRegistry:
    """Every installed option, by extension point and name."""

    def __init__(self, manager: pluggy.PluginManager, origins: dict[int, tuple[str, str]]):
        self.manager = manager
        self._options: dict[str, dict[str, PluginInfo]] = {kind: {} for kind in POINTS}
        for kind, point in POINTS.items():
            for impl in getattr(manager.hook, point.hook).get_hookimpls():
                distribution, version = origins.get(id(impl.plugin), ("unknown", "unknown"))
                impl.function(register=self._registrar(kind, distribution, version))

    def _registrar(self, kind: str, distribution: str, version: str) -> hookspecs.Register:
        def register(name: str, factory: Callable[[Any], Any], schema: type) -> None:
            label = POINTS[kind].label
            if not dataclasses.is_dataclass(schema):
                raise UserError(
                    f"The {label} plugin '{name}' from distribution '{distribution}' registered "
                    f"a schema that is not a dataclass ({schema!r}); fix or uninstall that "
                    "distribution."
                )
            if name in self._options[kind]:
                other = self._options[kind][name].distribution
                raise UserError(
                    f"Two installed distributions register a {label} plugin named '{name}': "
                    f"'{other}' and '{distribution}'. Uninstall one of them."
                )
            self._options[kind][name] = PluginInfo(
                kind, name, factory, schema, distribution, version
            )

        return register

    def names(self, kind: str) -> list[str]:
        return sorted(self._options[kind])

    def get(self, kind: str, name: str) -> PluginInfo:
        try:
            return self._options[kind][name]
        except KeyError:
            raise UserError(
                f"no {POINTS[kind].label} plugin '{name}'; installed: {self.names(kind)}. "
                "Install the distribution that provides it or pick an installed one."
            ) from None

    def all(self) -> list[PluginInfo]:
        return [info for options in self._options.values() for info in options.values()]


def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """Third-party plugin entry points, in a stable order."""
    return sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def build_plugin_manager() -> tuple[pluggy.PluginManager, dict[int, tuple[str, str]]]:
    """A fresh manager with the built-ins and every installed entry point registered."""
    manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
    manager.add_hookspecs(hookspecs)
    origins: dict[int, tuple[str, str]] = {}
    own_version = _distribution_version(DISTRIBUTION)
    for module_name in BUILTIN_PLUGINS:
        module = importlib.import_module(module_name)
        manager.register(module, name=module_name)
        origins[id(module)] = (DISTRIBUTION, own_version)
    for entry_point in plugin_entry_points():
        distribution = entry_point.dist.name if entry_point.dist else entry_point.value
        try:
            plugin = entry_point.load()
        except Exception as error:  # any import failure of third-party code
            raise UserError(
                f"The plugin '{entry_point.name}' of distribution '{distribution}' failed to "
                f"import ({type(error).__name__}: {error}). Reinstall or uninstall "
                f"'{distribution}'."
            ) from None
        if manager.is_registered(plugin):
            continue
        manager.register(plugin, name=f"{distribution}:{entry_point.name}")
        version = entry_point.dist.version if entry_point.dist else "unknown"
        origins[id(plugin)] = (distribution, version)
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        raise UserError(
            f"A plugin implements a hook that ident_framework does not define: {error}. "
            f"Known hooks: {[point.hook for point in POINTS.values()]}."
        ) from None
    return manager, origins


@cache
def get_registry() -> PluginRegistry:
    """The process-wide registry, built on first use."""
    return PluginRegistry(*build_plugin_manager())
