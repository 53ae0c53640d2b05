"""Messages for config mistakes, as `check_command_line` (the check before any job) gives them:
a misspelt key names its section's valid keys and the closest one (no advice to add it with
+), a required value left unset names the option that needs it with an example command, and a
bad value names its key in plain words.

The message Hydra itself gave before is quoted in each test's comment."""

from __future__ import annotations

import pytest

from ident_framework.config.preflight import check_command_line
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.errors import UserError
from ident_framework.testing.cli import error_message, run_cli


def message_of(*overrides: str) -> str:
    register_plugin_search_path()
    with pytest.raises(UserError) as error:
        check_command_line(list(overrides))
    text = str(error.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        # before: "Could not override 'preprocessing.lowpas_hz'. To append to your config use
        # +preprocessing.lowpas_hz=10"
        (
            ["preprocessing.lowpas_hz=10"],
            [
                "Unknown config key 'preprocessing.lowpas_hz'",
                "Did you mean 'preprocessing.lowpass_hz'?",
                "the preprocessing settings",
                "filter_order, friction_columns, lowpass_hz",
            ],
        ),
        (["regressor.armatur=false"], ["Did you mean 'regressor.armature'?", "torque_offset"]),
        (["base_parameters.metod=qr"], ["Did you mean 'base_parameters.method'?"]),
        (["loop.iteration=3"], ["Did you mean 'loop.iterations'?", "design, iterations"]),
        (["rehearsal.payload_mas_kg=3"], ["Did you mean 'rehearsal.payload_mass_kg'?"]),
        (["robot.pth=arm.urdf"], ["Did you mean 'robot.path'?", "acceleration_limits"]),
        (["source.sed=3"], ["Did you mean 'source.seed'?", "the data source plugin 'mujoco'"]),
        (["trajectory.n_harmonic=3"], ["Did you mean 'trajectory.n_harmonics'?", "n_refine"]),
        # a plugin group: the keys of the selected plugin's schema
        (
            ["estimator=consistent", "estimator.regularizaton=3"],
            [
                "Did you mean 'estimator.regularization'?",
                "the estimator plugin 'consistent'",
                "psd_margin",
            ],
        ),
        # ... and, when the selected option has no such key, which option has it
        (
            ["estimator.forgeting=0.99"],
            [
                "the estimator plugin 'geometric'",
                "'estimator.forgetting' is a key of estimator=rls",
            ],
        ),
        (["validation=split", "validation.fractio=0.2"], ["Did you mean 'validation.fraction'?"]),
        # a misspelt section, and a section's key given at the top level
        (["preprocesing.lowpass_hz=3"], ["'preprocesing'", "Did you mean 'preprocessing'?"]),
        (["lowpass_hz=3"], ["'lowpass_hz'", "Did you mean 'preprocessing.lowpass_hz'?"]),
        # several at once
        (
            ["preprocessing.lowpas_hz=10", "loop.iteration=2"],
            ["'preprocessing.lowpas_hz'", "'loop.iteration'", "'loop.iterations'"],
        ),
    ],
)
def test_misspelt_key_names_valid_keys_and_closest_match(overrides, fragments):
    message = message_of(*overrides)
    for fragment in fragments:
        assert fragment in message, message
    assert "+" not in message.replace("+,", ""), message  # no advice to add the key


def test_misspelt_key_with_plus_is_caught_against_the_schema():
    # `+` adds any key to the YAML; the section's schema still refuses an unknown one
    message = message_of("+preprocessing.lowpas_hz=10")
    assert "Unknown config key 'preprocessing.lowpas_hz'" in message
    assert "Did you mean 'preprocessing.lowpass_hz'?" in message


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        # an open mapping: entries are added with +, as README does
        (
            ["source.true_friction.plugin=coulomb_viscous",
             "source.true_friction.parameters.fc=3"],
            ["source.true_friction.parameters is an open mapping",
             "+source.true_friction.parameters.fc=3"],
        ),
        # a schema key the option's YAML does not list
        (
            ["validation=mujoco_fourier", "validation.trajectory.n_candidates=3"],
            ["'validation.trajectory.n_candidates' is a key of the trajectory plugin 'fourier'",
             "+validation.trajectory.n_candidates=3"],
        ),
    ],
)  # fmt: skip
def test_plus_is_advised_only_where_a_key_is_legitimately_added(overrides, fragments):
    message = message_of(*overrides)
    for fragment in fragments:
        assert fragment in message, message


def test_plus_keeps_working_where_it_is_legitimate():
    register_plugin_search_path()
    (config,) = check_command_line(
        ["source.true_friction.plugin=coulomb_viscous", "+source.true_friction.parameters.fc=3"]
    )
    assert config.plugins["source"].params.true_friction_spec.given == {"fc": 3.0}
    (config,) = check_command_line(
        ["validation=mujoco_fourier", "+validation.trajectory.n_candidates=3"]
    )
    assert config.validation.trajectory.params.n_candidates == 3


def test_a_key_below_a_plain_value():
    message = message_of("seed.x=3")
    assert "seed holds the value 0, not keys of its own" in message
    assert "seed=VALUE" in message


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        # before: "The robot model file <cwd>/??? (robot.path) does not exist."
        (["robot=urdf"], ["robot=urdf needs robot.path (the robot's model file)",
                          "`python -m ident_framework robot=urdf robot.path=arm.urdf`"]),
        (["robot=mjcf"], ["robot=mjcf needs robot.path", "robot.path=arm.xml"]),
        # before: "The CSV file '<cwd>/???' (source.path) does not exist. ..."
        (["source=csv", "validation=split"],
         ["source=csv needs source.path (the log to identify from)",
          "source=csv source.path=log.csv"]),
        (["source=csv", "source.path=log.csv", "validation=csv"],
         ["validation=csv needs validation.path", "validation=csv validation.path=val.csv"]),
        # before: "Bad value in config 'source' of the data source plugin 'rtde': host is
        # required: give source.host=<the robot's IP address>."
        (["source=rtde", "validation=split"],
         ["source=rtde needs source.host (the robot's IP address)",
          "source=rtde source.host=192.168.1.10"]),
        # all of them in one message
        (["robot=urdf", "source=csv", "validation=csv"],
         ["robot.path", "source.path", "validation.path",
          "robot=urdf robot.path=arm.urdf source=csv source.path=log.csv validation=csv "
          "validation.path=val.csv"]),
    ],
)  # fmt: skip
def test_missing_required_value_names_the_option_and_an_example(overrides, fragments):
    message = message_of(*overrides)
    for fragment in fragments:
        assert fragment in message, message
    assert "???" not in message and "does not exist" not in message


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # before: "Bad value in config 'preprocessing' of the preprocessing: lowpass_hz must be
        # a positive cut-off in Hz, got -5.0."
        (["preprocessing.lowpass_hz=-5"],
         "preprocessing.lowpass_hz must be > 0 Hz (a cut-off frequency), got -5.0."),
        (["preprocessing.lowpass_hz=fast"],
         "preprocessing.lowpass_hz must be a number, got 'fast'."),
        (["preprocessing.trim_s=[1]"], "preprocessing.trim_s must be a number or null, got [1]."),
        (["loop.iterations=0"], "loop.iterations must be >= 1, got 0."),
        (["validation=split", "validation.fraction=2"],
         "validation.fraction must be in [0.05, 0.9], got 2.0."),
        (["friction.dead_band=-1"],
         "friction.dead_band must be >= 0 rad/s, got -1.0 "
         "(the friction plugin 'coulomb_viscous')."),
        (["estimator=rls", "estimator.forgetting=2"],
         "estimator.forgetting must be in (0, 1], got 2.0 (the estimator plugin 'rls')."),
        (["residual=bpnn", "residual.device=gpu"],
         "residual.device must be 'cpu', 'cuda', 'cuda:<index>' or 'mps', got 'gpu'"),
        (["source=csv", "source.path=x.csv", "source.torque_column=torque"],
         "source.torque_column must be one of"),
        # a nested section (the workspace) and an item of a list of sections: the full path
        # (before: "clearance_m must be >= 0 m, got -1.0 (WorkspaceParams).")
        (["trajectory.workspace.clearance_m=-1"],
         "trajectory.workspace.clearance_m must be >= 0 m, got -1.0 "
         "(the trajectory plugin 'fourier')."),
        (["trajectory.workspace.floor_z_m=abc"],
         "trajectory.workspace.floor_z_m must be a number or null, got 'abc'"),
        (["trajectory.workspace.base_column.radius_m=0"],
         "trajectory.workspace.base_column.radius_m must be > 0 m, got 0.0"),
        (["trajectory.workspace.boxes=[{min_m:[0,0,0],max_m:[1,1,1]},{min_m:[0,0,0],max_m:[1,1]}]"],
         "trajectory.workspace.boxes[1].max_m must be a list of 3 numbers in m ([x, y, z]), "
         "got [1.0, 1.0]"),
        (["trajectory.workspace.boxes=[{min:[0,0,0],max_m:[1,1,1]}]"],
         "Unknown config key 'trajectory.workspace.boxes[0].min' for the trajectory plugin "
         "'fourier'. Did you mean 'trajectory.workspace.boxes[0].min_m'?"),
    ],
)  # fmt: skip
def test_bad_value_names_the_key_in_plain_words(overrides, expected):
    message = message_of(*overrides)
    assert expected in message, message
    assert "Bad value in config" not in message and "of the preprocessing" not in message


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # before: "Cannot set source.workspace.floor_z_m=0.2: source.workspace.floor_z_m exists
        # but does not take this value."
        (["source=rtde", "source.host=192.0.2.1", "source.workspace.floor_z_m=0.2"],
         "source.workspace follows trajectory.workspace (${oc.select:trajectory.workspace,null} "
         "in its config file), one setting for both: give trajectory.workspace.floor_z_m=0.2 "
         "instead."),
        (["validation.trajectory.workspace.clearance_m=0.05"],
         "give trajectory.workspace.clearance_m=0.05 instead."),
    ],
)  # fmt: skip
def test_a_key_of_a_section_that_follows_another(overrides, expected):
    message = message_of(*overrides)
    assert expected in message, message


def test_command_line_gives_the_message_with_exit_code_2(tmp_path):
    result = run_cli("preprocessing.lowpas_hz=10", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    message = error_message(result.stderr)
    assert message.startswith("error: Unknown config key 'preprocessing.lowpas_hz'")
    assert "Did you mean 'preprocessing.lowpass_hz'?" in message and "+" not in message
    assert not (tmp_path / "run").exists()
