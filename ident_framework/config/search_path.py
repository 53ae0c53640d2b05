"""Adds each plugin package's `conf/` (`conf/<group>/<name>.yaml` options) to Hydra's search
path; registered in code, not by the `hydra_plugins` scan (broken by some editable installs).
"""

from __future__ import annotations

import importlib.util
from contextlib import suppress

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin

from ident_framework.config.registry import plugin_entry_points


def plugin_conf_packages() -> list[str]:
    """Importable `<top-level package>.conf` modules of installed plugin distributions."""
    packages: list[str] = []
    for entry_point in plugin_entry_points():
        top = entry_point.module.split(".")[0]
        candidate = f"{top}.conf"
        with suppress(ImportError, ValueError):
            if candidate not in packages and importlib.util.find_spec(candidate) is not None:
                packages.append(candidate)
    return packages


class PluginConfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for package in plugin_conf_packages():
            search_path.append(
                provider=f"ident_framework plugin {package}", path=f"pkg://{package}"
            )


_registered = False


def register_plugin_search_path() -> None:
    """Idempotent: make Hydra consult plugin packages' conf/ directories."""
    global _registered
    if not _registered:
        Plugins.instance().register(PluginConfSearchPath)
        _registered = True
