"""Config errors at the command line: exit code 2, one paragraph, nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ident_framework.testing.cli import error_message, run_cli


def listed_options(text: str, prefix: str) -> set[str]:
    """The options of the `--help` line such as `friction: a, b, c` (the first one)."""
    line = next(line for line in text.splitlines() if line.startswith(prefix))
    return {option.strip() for option in line.split(":", 1)[1].split(",")}


def assert_user_error(result, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    message = error_message(result.stderr)
    assert message.startswith("error: ")
    assert "\n" not in message, message  # one paragraph
    for fragment in fragments:
        assert fragment in message, message


def test_help_lists_groups_and_installed_options():
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    # the built-ins; installed plugin distributions (e.g. ident-lugre) add more
    assert listed_options(result.stdout, "friction:") >= {"coulomb_viscous", "none"}
    assert "source: csv, mujoco" in result.stdout
    assert "validation: csv, mujoco, mujoco_fourier, rosbag, split" in result.stdout


def test_help_fits_a_screen_lists_the_modes_and_points_to_the_config():
    """--help: the modes, the groups and their options, and how to see every key, within 60
    lines (the whole config is `--cfg job`, not a help dump)."""
    text = run_cli("--help").stdout
    assert len(text.splitlines()) <= 60, text
    for mode in ("identify", "predict", "rehearse", "online", "factor", "combine"):
        assert f"\n  {mode} " in text, mode
    assert "--cfg job" in text
    assert "lowpass_hz" not in text  # no config dump


def test_cfg_job_prints_composed_config(tmp_path: Path):
    result = run_cli("--cfg", "job", "friction=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "plugin: none" in result.stdout
    assert "plugin: mujoco" in result.stdout
    assert not any(tmp_path.iterdir())  # printing a config writes nothing


@pytest.mark.parametrize(
    "source", [["source=rtde", "source.host=192.0.2.1"], ["source=csv", "source.path=log.csv"], []]
)
def test_cfg_job_resolve_works_for_every_source(tmp_path: Path, source: list[str]):
    """`--cfg job --resolve` resolves every interpolation, including the validation source's
    fallbacks to source.* that the chosen source does not have (a list fallback once failed)."""
    result = run_cli("--cfg", "job", "--resolve", *source, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "payload_position_m:\n  - 0.0\n  - 0.0\n  - 0.05" in result.stdout


def test_unknown_option_lists_installed_ones(tmp_path: Path):
    result = run_cli("friction=stribek", f"hydra.run.dir={tmp_path / 'run'}")
    assert_user_error(result, "unknown friction option 'stribek'", "installed: [")
    installed = result.stderr.split("installed: [", 1)[1].split("]", 1)[0]
    assert {"'coulomb_viscous'", "'none'"} <= {name.strip() for name in installed.split(",")}
    assert not (tmp_path / "run").exists()


def test_bad_plugin_value_names_the_key(tmp_path: Path):
    result = run_cli("friction.dead_band=-0.5", f"hydra.run.dir={tmp_path / 'run'}")
    assert_user_error(result, "friction.dead_band must be >= 0 rad/s, got -0.5")
    assert not (tmp_path / "run").exists()


def test_wrong_type_names_the_key(tmp_path: Path):
    result = run_cli("friction.dead_band=fast", f"hydra.run.dir={tmp_path / 'run'}")
    assert_user_error(result, "friction.dead_band must be a number, got 'fast'")


def test_unknown_key_is_refused(tmp_path: Path):
    result = run_cli("friction.deadband=0.1", f"hydra.run.dir={tmp_path / 'run'}")
    assert_user_error(result, "'friction.deadband'", "Did you mean 'friction.dead_band'?")
    assert "+friction" not in result.stderr


def test_sweep_with_one_bad_job_fails_before_any_job_runs(tmp_path: Path):
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "friction.dead_band=0.01,-1", f"hydra.sweep.dir={sweep}")
    assert_user_error(result, "dead_band must be >= 0")
    assert not sweep.exists()


def test_missing_robot_file_is_a_user_error(tmp_path: Path):
    result = run_cli(
        "robot=urdf", f"robot.path={tmp_path / 'nope.urdf'}", "source=csv",
        f"source.path={tmp_path / 'x.csv'}", "validation=split",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert_user_error(result, "nope.urdf")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("given", "expected"), [(None, "disable False"), ("egl", "egl False")])
def test_command_line_leaves_mujocos_opengl_backend_unloaded(given: str | None, expected: str):
    """The command renders nothing: it sets MUJOCO_GL=disable unless the user set it, so MuJoCo
    does not load glfw (~0.1 s); a value the user gave is kept (egl is not glfw either)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    if given is not None:
        env["MUJOCO_GL"] = given
    code = (
        "import os, sys, ident_framework.__main__, mujoco\n"
        "print(os.environ['MUJOCO_GL'], 'glfw' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("given", "expected"), [(None, "True"), ("65536", "False")])
def test_command_line_keeps_freed_memory_unless_the_user_tuned_malloc(given, expected):
    """glibc keeps freed blocks below 32 MB for reuse (`command_environment.py`); a malloc
    threshold the user set in the environment is left to glibc."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if given is not None:
        env["MALLOC_MMAP_THRESHOLD_"] = given
    code = "import ident_framework.command_environment as c\nprint(c.keep_freed_memory())\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_collector_paused_only_while_the_command_starts():
    """`python -m ident_framework` pauses the garbage collector on import and resumes it before
    the job (`command_environment.py`); imported as a library the collector is left alone."""
    import subprocess

    code = (
        "import gc, runpy, sys\n"
        "import ident_framework.command_environment as c\n"
        "print(c._PAUSED, gc.isenabled())\n"
        "del sys.modules['ident_framework.command_environment']\n"
        "sys.argv = ['ident_framework', '--info', 'defaults']\n"
        "import ident_framework.__main__ as m\n"  # the package module: imported, not run
        "print(gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]
    run = (
        "import gc, runpy, sys\n"
        "import ident_framework.config.preflight as p\n"
        "seen = []\n"
        "original = p.prepare_command_line\n"
        "def spy(*a, **k):\n"
        "    seen.append(gc.isenabled())\n"
        "    return original(*a, **k)\n"
        "p.prepare_command_line = spy\n"
        "sys.argv = ['ident_framework', '--info', 'defaults']\n"
        "try:\n"
        "    runpy._run_module_as_main('ident_framework')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen, gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[False] True True"


def test_libyaml_loader_reads_every_config_file_as_omegaconf_does():
    """`use_libyaml_loader`: the packaged config files load to the same values (types
    included) as with OmegaConf's own loader; a duplicate key is still refused."""
    import io

    import yaml

    from ident_framework.config.preflight import _libyaml_loader, _omegaconf_yaml_loader

    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml")
    root = Path(__file__).resolve().parents[1] / "conf"
    files = sorted(root.rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        expected = yaml.load(io.StringIO(text), Loader=_omegaconf_yaml_loader())
        loaded = yaml.load(io.StringIO(text), Loader=_libyaml_loader())
        assert repr(loaded) == repr(expected), path
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key a"):
        yaml.load(io.StringIO("a: 1\na: 2\n"), Loader=_libyaml_loader())


def test_help_text_is_the_same_with_one_shared_repository():
    """`shared_group_listing` (one config repository for Hydra's --help listing) prints what
    Hydra prints without it."""
    import contextlib
    import io

    from hydra.core.singleton import Singleton

    import ident_framework.__main__ as command
    from ident_framework.config import preflight

    def help_text(shared: bool) -> str:
        out = io.StringIO()
        listing = preflight.shared_group_listing() if shared else contextlib.nullcontext()
        argv = sys.argv
        sys.argv = ["ident_framework", "--help"]
        try:
            with contextlib.redirect_stdout(out), listing, pytest.raises(SystemExit):
                command.run_job()
        finally:
            sys.argv = argv
        return out.getvalue()

    state = Singleton.get_state()  # Hydra's run leaves its config set: later tests need it unset
    try:
        assert help_text(shared=True) == help_text(shared=False)
    finally:
        Singleton.set_state(state)
