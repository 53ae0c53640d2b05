"""Plugin manager: built-ins registered from one list (`hookspecs.py`), third parties from
entry points; built once per process (`get_registry()`: launchers pickle Hydra's singletons,
not a pluggy manager).

A built-in option is its module's name (`estimator=rls` is `ident_framework.estimators.rls`);
the module is imported and registered only when its option is first looked up (chosen, or its
schema needed). Third-party plugins are imported at start; `check_pending` runs then, and for
each built-in as it is registered.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pluggy

from ident_framework import hookspecs
from ident_framework.errors import UserError
from ident_framework.hookspecs import (
    BUILTIN_PLUGINS,
    DISTRIBUTION,
    ENTRY_POINT_GROUP,
    POINTS,
    conform,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "Installed",
    "PluginInfo",
    "PluginRegistry",
]


@dataclass(frozen=True)
class PluginInfo:
    """One registered option of one extension point."""

    kind: str
    name: str
    factory: Callable[[Any], Any]
    schema: type
    distribution: str
    version: str

    @property
    def owner(self) -> str:
        """How messages name it: "the friction plugin 'stribeck'" (" from <distribution>")."""
        origin = "" if self.distribution == DISTRIBUTION else f" from {self.distribution}"
        return f"the {POINTS[self.kind].label} plugin '{self.name}'{origin}"

    def create(self, params: Any) -> Any:
        """The plugin's object for validated `params`, checked against its protocol and given
        the defaults of the optional members it leaves out (`hookspecs.conform`)."""
        return conform(self.kind, self.factory(params), self.name, self.distribution)


@dataclass(frozen=True)
class Installed:
    """One installed option as `plugins.yaml` lists it (known without importing it)."""

    kind: str
    name: str
    distribution: str
    version: str


class PluginRegistry:
    """Every installed option, by extension point and name: the third parties' registered at
    construction, the built-ins' when first looked up (see the module doc)."""

    def __init__(self, manager: pluggy.PluginManager, origins: dict[int, tuple[str, str]]):
        self.manager = manager
        self._options: dict[str, dict[str, PluginInfo]] = {kind: {} for kind in POINTS}
        # built-in options whose module is not imported yet: kind -> name -> module
        self._unloaded = {kind: point.builtin_options() for kind, point in POINTS.items()}
        self._lock = threading.RLock()  # one import and registration of a built-in at a time
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
            if name in self._options[kind] or name in self._unloaded[kind]:
                known = self._options[kind].get(name)
                other = DISTRIBUTION if known is None else known.distribution
                raise UserError(
                    f"Two installed distributions register a {label} plugin named '{name}': "
                    f"'{other}' and '{distribution}'. Uninstall one of them."
                )
            self._options[kind][name] = PluginInfo(
                kind, name, factory, schema, distribution, version
            )

        return register

    def names(self, kind: str) -> list[str]:
        """Every installed option of `kind` (no module imported)."""
        with self._lock:
            return sorted({*self._options[kind], *self._unloaded[kind]})

    def get(self, kind: str, name: str) -> PluginInfo:
        """The option `name` of `kind`; a built-in's module is imported on its first lookup."""
        with self._lock:
            module = self._unloaded[kind].get(name)
            if module is not None:
                self._load_builtin(module)
                if name not in self._options[kind]:
                    raise RuntimeError(
                        f"The built-in module {module} does not register the "
                        f"{POINTS[kind].label} option '{name}' (its module's name)."
                    )
        try:
            return self._options[kind][name]
        except KeyError:
            raise UserError(
                f"no {POINTS[kind].label} plugin '{name}'; installed: {self.names(kind)}. "
                "Install the distribution that provides it or pick an installed one."
            ) from None

    def all(self) -> list[PluginInfo]:
        """Every installed option (every built-in imported), in the order of `_in_order`."""
        return [self.get(kind, name) for kind in POINTS for name in self._in_order(kind)]

    def installed(self) -> list[Installed]:
        """Every installed option as `all` lists it, without importing any module."""
        own = (DISTRIBUTION, _distribution_version(DISTRIBUTION))  # a built-in not imported
        with self._lock:
            return [
                Installed(kind, name, *own)
                if (info := self._options[kind].get(name)) is None
                else Installed(kind, name, info.distribution, info.version)
                for kind in POINTS
                for name in self._in_order(kind)
            ]

    def _in_order(self, kind: str) -> list[str]:
        """The options of `kind`: the built-ins in the list's order, then the others in their
        order of registration."""
        builtins = list(POINTS[kind].builtin_options())
        return builtins + [name for name in self._options[kind] if name not in builtins]

    def _load_builtin(self, module_name: str) -> None:
        """Import and register a built-in module; collect the options it registers."""
        __import__(module_name)  # not importlib.import_module: -X importtime then lists it
        module = sys.modules[module_name]
        for options in self._unloaded.values():  # its options now arrive through its hooks
            for name in [n for n, m in options.items() if m == module_name]:
                del options[name]
        if not self.manager.is_registered(module):
            self.manager.register(module, name=module_name)
            check_hooks(self.manager)
        version = _distribution_version(DISTRIBUTION)
        for kind, point in POINTS.items():
            for impl in getattr(self.manager.hook, point.hook).get_hookimpls():
                if impl.plugin is module:
                    impl.function(register=self._registrar(kind, DISTRIBUTION, version))


@cache
def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@cache
def plugin_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Third-party plugin entry points, in a stable order; read once per process (as the
    registry is built once): the registry and each of Hydra's search-path builds (two per
    run) ask for them, each scan of the installed distributions ~3 ms."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return tuple(sorted(found, key=lambda ep: ep.name))


def build_plugin_manager() -> tuple[pluggy.PluginManager, dict[int, tuple[str, str]]]:
    """A fresh manager with every installed entry point registered (the built-ins are
    registered by the registry as their options are looked up)."""
    manager = pluggy.PluginManager(ENTRY_POINT_GROUP)
    manager.add_hookspecs(hookspecs)
    origins: dict[int, tuple[str, str]] = {}
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
    check_hooks(manager)
    return manager, origins


def check_hooks(manager: pluggy.PluginManager) -> None:
    """`check_pending`: a registered plugin's misspelt hook fails now, as a UserError."""
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        raise UserError(
            f"A plugin implements a hook that ident_framework does not define: {error}. "
            f"Known hooks: {[point.hook for point in POINTS.values()]}."
        ) from None


@cache
def get_registry() -> PluginRegistry:
    """The process-wide registry, built on first use."""
    return PluginRegistry(*build_plugin_manager())
