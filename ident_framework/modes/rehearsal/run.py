"""mode=rehearse: the whole identification chain on the robot model with planted changes.

`python -m ident_framework mode=rehearse [robot=... options]` plants the `rehearsal:` changes
in the robot model (`planting.py`), simulates it with the MuJoCo source, identifies it
(`run_pipeline`) and checks the planted values are recovered (`checks.py`). Outputs: the run
directory plus rehearsal.json, rehearsal.md and rehearsal_robot.xml. A pass is recorded for the
robot (`rtde/rehearsal_gate.py`); a failed check exits with code 3.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ident_framework.config.run_config import RunConfig, SelectedPlugin
from ident_framework.errors import RehearsalFailed
from ident_framework.identify.result import IdentificationResult
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model.robot import load_robot
from ident_framework.modes.pipeline import run_pipeline
from ident_framework.modes.rehearsal.checks import Check, recovery_checks
from ident_framework.modes.rehearsal.planting import RehearsalRobot, plant_changes
from ident_framework.plain_data import to_plain
from ident_framework.reports import run_files
from ident_framework.reports.run_report import print_summary, staged_outputs, write_run_directory
from ident_framework.reports.tables import format_cell, markdown_table
from ident_framework.rtde.rehearsal_gate import (
    record_passed_rehearsal,
    registry_directory,
    robot_fingerprint,
)
from ident_framework.simulation.perturbed_robot import SimulatedTruth

# a rehearsal's twin is of the planted robot: never named twin.xml
TWIN_PREFIX = run_files.REHEARSAL_TWIN_PREFIX


@dataclass
class RehearsalOutcome:
    """The identification of the planted robot, the planted robot and the checks."""

    result: IdentificationResult
    rehearsal: RehearsalRobot
    checks: list[Check]
    report: dict[str, Any]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]


def _simulating(selected: SelectedPlugin, real_robot: tuple[Any, SimulatedTruth]) -> SelectedPlugin:
    """The same MuJoCo source (same parameters), simulating `real_robot` as the real robot."""
    factory = partial(selected.info.factory, real_robot=real_robot)
    return SelectedPlugin(dataclasses.replace(selected.info, factory=factory), selected.params)


def rehearsal_config(config: RunConfig, rehearsal: RehearsalRobot) -> RunConfig:
    """The run's config with its data sources simulating the planted robot."""
    real_robot = (rehearsal.robot, rehearsal.truth)
    plugins = {**config.plugins, "source": _simulating(config.plugins["source"], real_robot)}
    validation = config.validation
    if validation.source is not None:
        validation = dataclasses.replace(
            validation, source=_simulating(validation.source, real_robot)
        )
    return dataclasses.replace(config, plugins=plugins, validation=validation)


def gate_directory(config: RunConfig) -> Path:
    directory = config.rehearsal.registry_dir
    return registry_directory(resolve_launch_path(directory) if directory else None)


def run_rehearsal(config: RunConfig, progress: bool = True) -> RehearsalOutcome:
    """Plant, simulate, identify, check. Nothing is written."""
    robot = load_robot(config.robot.model, config.robot.path, config.robot.acceleration_limits)
    rehearsal = plant_changes(robot, config.rehearsal)
    result = run_pipeline(rehearsal_config(config, rehearsal), progress)
    checks, details = recovery_checks(result, rehearsal, config.rehearsal)
    report = rehearsal_report(config, result, rehearsal, checks, details)
    return RehearsalOutcome(result, rehearsal, checks, report)


def rehearsal_report(
    config: RunConfig,
    result: IdentificationResult,
    rehearsal: RehearsalRobot,
    checks: list[Check],
    details: dict[str, Any],
) -> dict[str, Any]:
    """The content of rehearsal.json."""
    robot = result.model.robot
    fingerprint = robot_fingerprint(robot)
    directory = gate_directory(config)
    model, truth = rehearsal.model_truth, rehearsal.truth
    return to_plain(
        {
            "passed": all(check.passed for check in checks),
            "failed_checks": [check.name for check in checks if not check.passed],
            "robot": {
                "name": robot.name,
                "model": config.robot.model,
                "path": config.robot.path,
                "joint_names": list(robot.joint_names),
                "fingerprint": fingerprint,
            },
            "plugins": {group: selected.info.name for group, selected in config.plugins.items()},
            "seed": config.seed,
            "planted": {
                "changes": [
                    {
                        "name": change.name,
                        "description": change.description,
                        "unit": change.unit,
                        "model": change.model_value,
                        "planted": change.planted_value,
                    }
                    for change in rehearsal.changes
                ],
                "joints": {
                    key: {"model": getattr(model, key), "planted": getattr(truth, key)}
                    for key in ("viscous", "coulomb", "armature")
                },
                "payload": truth.payload,
                "origin": truth.origin,
            },
            "settings": dataclasses.asdict(config.rehearsal),
            "checks": [check.to_dict() for check in checks],
            "details": details,
            "gate": {"directory": str(directory), "file": str(directory / f"{fingerprint}.json")},
        }
    )


def run_rehearsal_job(config: RunConfig, cfg: DictConfig, run_dir: Path) -> float:
    """One `mode=rehearse` job: outputs written, the gate recorded on pass, RehearsalFailed
    when a check failed; the validation RMSE (Nm)."""
    with staged_outputs(run_dir) as staging:
        outcome = run_rehearsal(config)
        write_run_directory(staging, outcome.result, cfg, TWIN_PREFIX)
        (staging / run_files.REHEARSAL_JSON).write_text(json.dumps(outcome.report, indent=2))
        (staging / run_files.REHEARSAL_MARKDOWN).write_text(markdown_report(outcome.report))
        (staging / run_files.REHEARSAL_ROBOT).write_text(outcome.rehearsal.robot.mjcf)
    print_summary(outcome.result, run_dir, TWIN_PREFIX)
    print("\n".join(summary_lines(outcome.checks)))
    if outcome.result.twin.model is not None:
        name = run_files.twin_files(TWIN_PREFIX)[0]
        print(f"{name}: the written-back model of the planted robot, not of any real one")
    if not outcome.passed:
        names = ", ".join(check.name for check in outcome.failed)
        raise RehearsalFailed(
            f"{len(outcome.failed)} of {len(outcome.checks)} checks failed: {names}. No "
            f"rehearsal was recorded; see {run_dir / run_files.REHEARSAL_MARKDOWN}."
        )
    robot = outcome.result.model.robot
    path = record_passed_rehearsal(robot, outcome.report, gate_directory(config))
    print(f"rehearsal PASSED ({len(outcome.checks)} checks); recorded {path}")
    return float(outcome.result.metrics["validation"]["physical"]["rmse"])


BASE_PREFIX = "base_parameter_"  # the one-by-one base parameter checks
CHECK_COLUMNS = (
    "check", "quantity", "unit", "model", "planted", "identified", "error", "tolerance", "result",
)  # fmt: skip
BASE_COLUMNS = (
    "name", "model", "planted", "identified", "relative std %", "relative error %", "checked",
)  # fmt: skip
BASE_KEYS = ("model", "planted", "identified", "relative_std_percent", "relative_error_percent")


def _number(value: Any) -> str:
    return format_cell(value, ".6g", missing="n/a")


def _limit(check: Check) -> str:
    unit = " %" if check.error_unit.startswith("%") else ""
    return f"{'≤' if check.limit == 'max' else '≥'} {check.tolerance:g}{unit}"


def _check_row(check: dict[str, Any]) -> list[str]:
    """One check of rehearsal.json as a row of the checks table."""
    unit = " %" if check["error_unit"].startswith("%") else ""
    error = format_cell(check["error"], ".4g", "n/a") + ("" if check["error"] is None else unit)
    limit = "≤" if check["limit"] == "max" else "≥"
    result = "pass" if check["passed"] else "**FAIL**"
    note = f" ({check['note']})" if check["note"] and not check["passed"] else ""
    return [
        check["name"],
        check["quantity"],
        check["unit"],
        *(_number(check[key]) for key in ("model", "planted", "identified")),
        error,
        f"{limit} {check['tolerance']:g}{unit}",
        f"{result}{note}",
    ]


def markdown_report(report: dict[str, Any]) -> str:
    """rehearsal.md: verdict, planted changes, every check, every base parameter."""
    robot = report["robot"]
    verdict = "PASSED" if report["passed"] else "FAILED"
    lines = [
        f"# Rehearsal {verdict}: {robot['name']}",
        "",
        f"- robot: `{robot['model']}`"
        + (f" (`{robot['path']}`)" if robot["path"] else "")
        + f", fingerprint `{robot['fingerprint'][:16]}`",
        "- plugins: " + ", ".join(f"{k}={v}" for k, v in report["plugins"].items()),
        f"- planted: {report['planted']['origin']}",
    ]
    if report["failed_checks"]:
        lines.append("- failed checks: " + ", ".join(report["failed_checks"]))
    lines += ["", "## Checks", ""]
    lines += markdown_table(CHECK_COLUMNS, [_check_row(check) for check in report["checks"]])
    base = report["details"]["base_parameters"]
    lines += [
        "",
        f"## Base parameters ({base['method']}; {base['n_checked']} of {base['n_base']} checked: "
        f"relative std below {base['max_relative_std_percent']:g} %)",
        "",
    ]
    rows = [
        [
            p["name"],
            *(_number(p[key]) for key in BASE_KEYS),
            "yes" if p["checked"] else "",
        ]
        for p in base["parameters"]
    ]
    lines += markdown_table(BASE_COLUMNS, rows)
    for note in report["details"]["notes"]:
        lines.append(f"\n- {note}")
    return "\n".join(lines) + "\n"


def check_line(check: Check) -> str:
    """One check as a line of the printed summary."""
    verdict = "pass" if check.passed else "FAIL"
    if check.limit == "min":
        return f"  {verdict}  {check.name:<24} {_number(check.identified)} {_limit(check)}"
    unit = " %" if check.error_unit.startswith("%") and check.error is not None else ""
    return (
        f"  {verdict}  {check.name:<24} {_number(check.model)} -> {_number(check.planted)} "
        f"{check.unit}, identified {_number(check.identified)}: error "
        f"{_number(check.error)}{unit} {_limit(check)}"
    )


def summary_lines(checks: list[Check]) -> list[str]:
    """Every check except the base parameters one by one (those as their worst case)."""
    lines = ["rehearsal checks (model -> planted, identified: error, tolerance):"]
    base = [c for c in checks if c.name.startswith(BASE_PREFIX)]
    lines += [check_line(c) for c in checks if not (c.name.startswith(BASE_PREFIX) and c.passed)]
    if base:
        worst = max(base, key=lambda c: c.error if c.error is not None else float("inf"))
        lines.append(
            f"  {len(base)} well-determined base parameters: worst {worst.name} "
            f"{_number(worst.error)} % {_limit(worst)}"
        )
    return lines
