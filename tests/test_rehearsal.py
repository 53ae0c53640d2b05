"""mode=rehearse: planted changes on the robot model must be recovered, or the run fails (exit 3)
and no rehearsal is recorded; the gate a real-robot source calls before moving an arm."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.config.preflight import check_command_line
from ident_framework.config.run_config import RehearsalSettings
from ident_framework.errors import UserError
from ident_framework.identify.truth import true_standard_parameters
from ident_framework.model.robot import load_robot
from ident_framework.modes.rehearsal.checks import recovery_checks
from ident_framework.modes.rehearsal.planting import model_plus, plant_changes
from ident_framework.modes.rehearsal.run import run_rehearsal
from ident_framework.rtde.rehearsal_gate import (
    record_passed_rehearsal,
    require_passed_rehearsal,
    robot_fingerprint,
)
from ident_framework.testing.cli import run_cli

FAST = ("trajectory.n_candidates=40", "trajectory.n_refine=0")
REPORT_FIELDS = {"name", "quantity", "planted", "identified", "error", "tolerance", "passed"}


def _rehearse(tmp_path: Path, *overrides: str, registry: Path | None = None):
    run = tmp_path / "run"
    registry = registry or tmp_path / "registry"
    result = run_cli(
        "mode=rehearse", *FAST, f"hydra.run.dir={run}", f"rehearsal.registry_dir={registry}",
        *overrides, cwd=tmp_path,
    )  # fmt: skip
    report = json.loads((run / "rehearsal.json").read_text()) if run.exists() else None
    return result, report, registry


def _checks(report: dict) -> dict[str, dict]:
    return {check["name"]: check for check in report["checks"]}


# ---------------------------------------------------------------- planting (known truth)
def test_planted_robot_is_the_model_plus_each_change():
    robot = load_robot("ur12e")
    settings = RehearsalSettings(payload_mass_kg=2.0, scaled_links=[3, 5], link_scale=1.2)
    planted = plant_changes(robot, settings)
    model, truth = planted.model_truth, planted.truth
    masses = truth.inertial[::10] - model.inertial[::10]
    expected = np.zeros(6)
    expected[[2, 4]] = 0.2 * model.inertial[::10][[2, 4]]
    expected[5] = 2.0
    np.testing.assert_allclose(masses, expected, atol=1e-12)
    # first moment of the payload at 5 cm along z of the last link: 2 kg x 0.05 m
    assert truth.inertial[53] - model.inertial[53] == pytest.approx(0.1, abs=1e-12)
    np.testing.assert_allclose(truth.viscous, [2.0, 2.0, 1.25, 0.5, 0.5, 0.5])  # 0.5 x UR-like
    np.testing.assert_allclose(truth.coulomb, [3.5, 3.5, 2.0, 0.75, 0.75, 0.6])
    np.testing.assert_allclose(truth.armature, [0.2, 0.2, 0.075, 0.02, 0.02, 0.02])
    # the MJCF of the planted robot (what MuJoCo simulates) holds exactly the sum of the changes
    total = model_plus(model, planted.changes)
    np.testing.assert_allclose(truth.inertial, total.inertial, rtol=1e-12, atol=1e-12)
    assert [c.name for c in planted.changes] == [
        "link_scale", "payload", "viscous", "coulomb", "armature",
    ]  # fmt: skip


def test_a_rehearsal_that_plants_nothing_is_refused():
    with pytest.raises(ValueError, match="plants no change"):
        RehearsalSettings(payload_mass_kg=0.0, link_scale=1.0, joint_dynamics_added=0.0)
    with pytest.raises(UserError, match="scaled_links"):
        plant_changes(load_robot("ur12e"), RehearsalSettings(scaled_links=[7]))


# ----------------------------------------------------------------------------- the gate
def test_gate_refuses_an_unrehearsed_robot_and_passes_after_a_record(tmp_path: Path):
    robot = load_robot("ur12e")
    with pytest.raises(UserError, match="mode=rehearse robot=ur12e") as refused:
        require_passed_rehearsal(robot, tmp_path)
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError):
        record_passed_rehearsal(robot, {"passed": False}, tmp_path)
    assert not any(tmp_path.iterdir())
    path = record_passed_rehearsal(robot, {"passed": True, "checks": []}, tmp_path)
    assert path == tmp_path / f"{robot_fingerprint(robot)}.json"
    assert require_passed_rehearsal(load_robot("ur12e"), tmp_path)["passed"] is True
    # another arm, other limits or another model file are other robots
    with pytest.raises(UserError):
        require_passed_rehearsal(load_robot("ur10e"), tmp_path)
    with pytest.raises(UserError):
        require_passed_rehearsal(load_robot("ur12e", acceleration_limits=[5.0] * 6), tmp_path)
    changed = robot.with_dynamics(damping=np.full(6, 1.0))
    assert robot_fingerprint(changed) != robot_fingerprint(robot)
    path.write_text("{not json")
    with pytest.raises(UserError, match="cannot be read"):
        require_passed_rehearsal(robot, tmp_path)


def test_rehearsal_needs_the_simulator(tmp_path: Path):
    result = run_cli(
        "mode=rehearse", "source=csv", f"source.path={tmp_path / 'log.csv'}",
        f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "source=mujoco" in result.stderr and "Traceback" not in result.stderr
    result = run_cli(
        "mode=rehearse",
        "rehearsal.payload_mass_kg=-1",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "payload_mass_kg" in result.stderr
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------- the checks, in process
@pytest.fixture(scope="module")
def outcome():
    (config,) = check_command_line(["mode=rehearse", *FAST])
    return run_rehearsal(config, progress=False)


@pytest.mark.slow
def test_checks_detect_changes_not_only_match_the_truth(outcome):
    """The same checks on two made-up identifications: one that returned the planted truth
    exactly (every change recovered in full), one that returned the unplanted model (the
    changes went unnoticed, although its base parameters are those of a valid robot)."""
    assert outcome.passed, [c.name for c in outcome.failed]
    result, planted, settings = outcome.result, outcome.rehearsal, outcome.result.config.rehearsal
    exact = dataclasses.replace(
        result, model=dataclasses.replace(result.model, theta=result.diagnostics.truth_theta)
    )
    checks, details = recovery_checks(exact, planted, settings)
    for name, amplitude in details["changes"]["amplitudes"].items():
        assert amplitude == pytest.approx(1.0, abs=1e-6), name
    assert {c.name: c.error for c in checks}["base_parameters_norm"] < 1e-9
    unplanted = true_standard_parameters(result.model.builder, planted.model_truth.to_dict())
    unnoticed = dataclasses.replace(
        result, model=dataclasses.replace(result.model, theta=unplanted)
    )
    checks, details = recovery_checks(unnoticed, planted, settings)
    failed = {c.name for c in checks if not c.passed}
    assert {f"planted_{c.name}" for c in planted.changes} <= failed
    assert "planted_change_torque" in failed and "fv_1" in failed
    for amplitude in details["changes"]["amplitudes"].values():
        assert amplitude == pytest.approx(0.0, abs=1e-6)


# ------------------------------------------------------------------ the command line, end to end
@pytest.mark.slow
def test_rehearsal_passes_recovers_the_planted_values_and_records_the_gate(tmp_path: Path):
    result, report, registry = _rehearse(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert report["passed"] and not report["failed_checks"]
    checks = _checks(report)
    assert all(REPORT_FIELDS <= set(check) for check in checks.values())
    payload = checks["planted_payload"]
    assert payload["planted"] == 2.0 and payload["identified"] == pytest.approx(2.0, rel=0.05)
    assert checks["planted_link_scale"]["identified"] == pytest.approx(1.1, rel=0.02)
    for j in range(1, 7):
        fv, fc = checks[f"fv_{j}"], checks[f"fc_{j}"]
        assert fv["model"] == 0.0 and fv["identified"] == pytest.approx(fv["planted"], rel=0.1)
        assert fc["identified"] == pytest.approx(fc["planted"], rel=0.1)
    assert checks["validation_r2"]["identified"] >= 0.99
    assert sum(name.startswith("base_parameter_") for name in checks) >= 10
    run = tmp_path / "run"
    assert "Rehearsal PASSED" in (run / "rehearsal.md").read_text()
    assert (run / "rehearsal_robot.xml").is_file() and (run / "metrics.json").is_file()
    # the gate: recorded for exactly this robot model, found from another process
    record = require_passed_rehearsal(load_robot("ur12e"), registry)
    assert record["report"]["robot"]["fingerprint"] == report["robot"]["fingerprint"]
    assert [p.name for p in registry.iterdir()] == [f"{report['robot']['fingerprint']}.json"]


@pytest.mark.slow
def test_impossible_tolerance_fails_with_exit_3_and_records_nothing(tmp_path: Path):
    result, report, registry = _rehearse(tmp_path, "rehearsal.payload_relative_error_percent=1e-6")
    assert result.returncode == 3, result.stderr[-3000:]
    assert "rehearsal FAILED" in result.stderr and "planted_payload" in result.stderr
    assert report["failed_checks"] == ["planted_payload"]
    assert "**FAIL**" in (tmp_path / "run" / "rehearsal.md").read_text()
    assert not registry.exists()
    with pytest.raises(UserError):
        require_passed_rehearsal(load_robot("ur12e"), registry)


@pytest.mark.slow
def test_planted_friction_the_model_cannot_represent_fails(tmp_path: Path):
    result, report, registry = _rehearse(tmp_path, "friction=none")
    assert result.returncode == 3, result.stderr[-3000:]
    failed = set(report["failed_checks"])
    assert {"planted_viscous", "planted_coulomb", "fv_1", "fc_6"} <= failed
    assert "planted_viscous" in result.stderr
    assert _checks(report)["fv_1"]["identified"] is None
    assert not registry.exists()


@pytest.mark.slow
def test_rehearsal_on_the_twin_of_an_earlier_run(tmp_path: Path):
    """The twin.xml an identification wrote (the simulated UR12e: perturbed links, payload,
    friction, rotor inertia, all in the twin) is rehearsed as the robot; the gate is then open
    for that model file only, and the rehearsal's own write-back is not named twin.xml."""
    earlier = tmp_path / "earlier"
    result = run_cli(
        "estimator=consistent", *FAST, f"hydra.run.dir={earlier}", "plots=false", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    twin = earlier / "twin.xml"
    result, report, registry = _rehearse(
        tmp_path, "robot=mjcf", f"robot.path={twin}", "estimator=consistent"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    checks = _checks(report)
    fv = checks["fv_1"]  # the twin's identified friction (about UR-like 4) plus the planted 2
    assert fv["model"] == pytest.approx(4.0, rel=0.05)
    assert fv["planted"] == pytest.approx(fv["model"] + 2.0)
    assert fv["identified"] == pytest.approx(fv["planted"], rel=0.1)
    run = tmp_path / "run"
    assert (run / "rehearsal_twin.xml").is_file() and not (run / "twin.xml").exists()
    assert require_passed_rehearsal(load_robot("mjcf", str(twin)), registry)["passed"]
    with pytest.raises(UserError):
        require_passed_rehearsal(load_robot("ur12e"), registry)
