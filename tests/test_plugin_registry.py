"""Plugin manager: built-ins from one list, duplicate names refused, clear lookups."""

from __future__ import annotations

import subprocess
import sys
import types
from dataclasses import dataclass

import pluggy
import pytest

from ident_framework import hookspecs
from ident_framework.config.plugin_config import validate_plugin_config
from ident_framework.config.registry import PluginRegistry, build_plugin_manager, get_registry
from ident_framework.errors import UserError


def test_builtins_are_registered_with_their_distribution():
    registry = get_registry()
    # the built-ins (installed plugin distributions such as ident-lugre add more)
    assert {"coulomb_viscous", "none"} <= set(registry.names("friction"))
    assert registry.names("friction") == sorted(registry.names("friction"))
    assert "ls" in registry.names("estimator")
    assert {"mujoco", "csv"} <= set(registry.names("data_source"))
    assert registry.get("friction", "none").distribution == "ident-framework"


def test_a_builtin_is_imported_when_its_option_is_looked_up():
    """Listing the installed options imports no built-in plugin module; looking one up
    imports its module alone (issue 28: a run imports what its options name); and the
    command's modules with every built-in import neither numba (the compiled kernels load on
    their first call) nor pandas."""
    code = (
        "import sys\n"
        "import ident_framework.__main__, ident_framework.modes.pipeline\n"
        "from ident_framework.config.registry import BUILTIN_PLUGINS, get_registry\n"
        "registry = get_registry()\n"
        "names = registry.names('estimator'), registry.installed()\n"
        "print(sorted(m for m in BUILTIN_PLUGINS if m in sys.modules))\n"
        "registry.get('estimator', 'ls')\n"
        "print(sorted(m for m in BUILTIN_PLUGINS if m in sys.modules))\n"
        "registry.all()\n"
        "print(sorted(m for m in ('numba', 'pandas') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "['ident_framework.estimators.ls']", "[]"], out.stdout


def test_unknown_plugin_message_lists_installed():
    installed = get_registry().names("friction")
    with pytest.raises(UserError, match=r"no friction plugin 'x'; installed: \[") as error:
        get_registry().get("friction", "x")
    assert f"installed: {installed}." in str(error.value)
    assert {"coulomb_viscous", "none"} <= set(installed)


def test_config_without_plugin_key_is_refused():
    with pytest.raises(UserError, match="names no implementation"):
        validate_plugin_config({"dead_band": 0.1}, "friction", "friction", get_registry())


def test_params_validated_against_schema():
    info, params = validate_plugin_config(
        {"plugin": "coulomb_viscous", "dead_band": 1}, "friction", "friction", get_registry()
    )
    assert info.name == "coulomb_viscous"
    assert params.dead_band == 1.0 and isinstance(params.dead_band, float)
    with pytest.raises(UserError, match="dead_band"):
        validate_plugin_config(
            {"plugin": "coulomb_viscous", "dead_band": [1]}, "friction", "friction", get_registry()
        )


def _duplicate_plugin() -> types.ModuleType:
    module = types.ModuleType("duplicate_friction")
    hookimpl = pluggy.HookimplMarker("ident_framework")

    @dataclass
    class Params:
        pass

    @hookimpl
    def register_friction_models(register):
        register("none", object, Params)

    module.register_friction_models = register_friction_models
    return module


def test_duplicate_names_are_refused():
    manager, origins = build_plugin_manager()
    plugin = _duplicate_plugin()
    manager.register(plugin)
    origins[id(plugin)] = ("some-other-dist", "1.0")
    with pytest.raises(UserError, match="'ident-framework' and 'some-other-dist'"):
        PluginRegistry(manager, origins)


def test_misspelt_hook_fails_at_start():
    manager = pluggy.PluginManager("ident_framework")
    manager.add_hookspecs(hookspecs)
    module = types.ModuleType("typo")
    hookimpl = pluggy.HookimplMarker("ident_framework")

    @hookimpl
    def register_friction_model(register):  # missing "s"
        pass

    module.register_friction_model = register_friction_model
    manager.register(module)
    with pytest.raises(pluggy.PluginValidationError):
        manager.check_pending()
