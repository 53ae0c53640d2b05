"""The plugin at the command line: its option is listed and selectable, and what goes wrong
with a plugin package fails with the messages ident_framework's design promises (exit code 2,
one paragraph, no traceback, nothing written).

Broken plugin packages are made here as installed distributions (a `*.dist-info` folder with
an `ident_framework` entry point, on PYTHONPATH), exactly as pip would leave them.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ident_framework.testing import cli
from ident_framework.testing.cli import error_message, fake_distribution

FAKE_MODULE = '''
from dataclasses import dataclass

import numpy as np
from ident_framework.hookspecs import hookimpl


@dataclass
class HalfParams:
    v_s: float = 0.1


class HalfFriction:
    """Declares a nonlinear parameter but implements none of what the engine calls."""

    parameter_names = ("fc",)
    nonlinear_names = ("v_s",)

    def __init__(self, params):
        self.params = params

    def basis(self, dq):
        return np.sign(dq)[..., None]


@hookimpl
def register_friction_models(register):
    register("half", HalfFriction, HalfParams)
'''


run_cli = partial(cli.run_cli, timeout=300)


def assert_user_error(result, *fragments: str) -> str:
    assert result.returncode == 2, result.stderr + result.stdout
    message = error_message(result.stderr)
    assert "Traceback" not in message and message.startswith("error: ")
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_option_listed_and_composed(tmp_path: Path):
    listing = run_cli("--help", cwd=tmp_path)
    line = next(x for x in listing.stdout.splitlines() if x.startswith("friction:"))
    assert "lugre" in line.split(":", 1)[1].replace(" ", "").split(",")
    composed = run_cli("--cfg", "job", "friction=lugre", "friction.v_s=0.08", cwd=tmp_path)
    assert composed.returncode == 0, composed.stderr
    assert "plugin: lugre" in composed.stdout and "v_s: 0.08" in composed.stdout


def test_bad_config_value_names_key_and_plugin(tmp_path: Path):
    run = tmp_path / "run"
    result = run_cli("friction=lugre", "friction.z_ss=0.5", f"hydra.run.dir={run}", cwd=tmp_path)
    assert_user_error(
        result,
        "friction.z_ss (0.5) must lie within friction.z_ss_bounds",
        "(the friction plugin 'lugre' from ident-lugre)",
    )
    result = run_cli("friction=lugre", "friction.v_s=fast", f"hydra.run.dir={run}", cwd=tmp_path)
    assert_user_error(result, "friction.v_s must be a number, got 'fast'")
    # a misspelt key: the plugin's keys (from its schema) and the closest, no advice to add it
    result = run_cli("friction=lugre", "friction.v_ss=0.1", f"hydra.run.dir={run}", cwd=tmp_path)
    message = assert_user_error(
        result,
        "Unknown config key 'friction.v_ss'",
        "Did you mean 'friction.v_s'?",
        "the friction plugin 'lugre' from ident-lugre",
        "fs_ratio_bounds",
    )
    assert "+friction" not in message
    # the same plugin as the simulated robot's true friction: its parameter names are checked
    result = run_cli(
        "source.true_friction.plugin=lugre", "+source.true_friction.parameters.sigma2=1.0",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert_user_error(result, "source.true_friction.parameters.sigma2", "'sigma0'")
    assert not run.exists()


def test_yaml_without_implementation_lists_the_installed_ones(tmp_path: Path):
    site = fake_distribution(
        tmp_path / "site", "ident-ghost", "ident_ghost",
        {"ident_ghost/__init__.py": "", "ident_ghost/conf/__init__.py": "",
         "ident_ghost/conf/friction/ghost.yaml": "plugin: ghost\nv_s: 0.1\n"},
    )  # fmt: skip
    result = run_cli("friction=ghost", cwd=tmp_path, pythonpath=site)
    message = assert_user_error(result, "no friction plugin 'ghost'; installed: [")
    installed = message.split("installed: [", 1)[1].split("]", 1)[0]
    assert {"'coulomb_viscous'", "'lugre'", "'none'"} <= {n.strip() for n in installed.split(",")}


def test_missing_implementation_names_the_distribution(tmp_path: Path):
    site = fake_distribution(
        tmp_path / "site", "ident-half", "ident_half",
        {"ident_half/__init__.py": FAKE_MODULE, "ident_half/conf/__init__.py": "",
         "ident_half/conf/friction/half.yaml": "plugin: half\nv_s: 0.1\n"},
    )  # fmt: skip
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "friction=lugre,half", f"hydra.sweep.dir={sweep}", cwd=tmp_path, pythonpath=site
    )
    assert_user_error(result, "'half' from distribution 'ident-half'", "basis_along")
    assert not sweep.exists()  # refused before the first job of the sweep


def test_plugin_failing_to_import_names_its_distribution(tmp_path: Path):
    site = fake_distribution(
        tmp_path / "site",
        "ident-broken-friction",
        "ident_broken",
        {"ident_broken/__init__.py": "import a_module_that_does_not_exist\n"},
    )
    result = run_cli("friction=lugre", cwd=tmp_path, pythonpath=site)
    assert_user_error(result, "distribution 'ident-broken-friction' failed to import")


def test_glob_sweeps_include_the_plugin():
    """`-m friction=glob(*)` expands to every installed friction option, this one too."""
    from ident_framework.config.preflight import check_command_line
    from ident_framework.config.search_path import register_plugin_search_path

    register_plugin_search_path()
    configs = check_command_line(["-m", "friction=glob(*)"])
    names = [config.plugins["friction"].info.name for config in configs]
    assert {"coulomb_viscous", "none", "lugre"} <= set(names)
