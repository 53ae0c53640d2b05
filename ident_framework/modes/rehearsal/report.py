"""The rehearsal's report: rehearsal.md (verdict, planted changes, every check, every base
parameter) from the content of rehearsal.json, and the lines the run prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ident_framework.modes.rehearsal.checks import Check
from ident_framework.reports import run_files
from ident_framework.reports.tables import format_cell, markdown_table

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


def write_rehearsal_outputs(staging: Path, report: dict[str, Any], planted_mjcf: str) -> None:
    """rehearsal.json, rehearsal.md, the planted robot's MJCF."""
    (staging / run_files.REHEARSAL_JSON).write_text(json.dumps(report, indent=2))
    (staging / run_files.REHEARSAL_MARKDOWN).write_text(markdown_report(report))
    (staging / run_files.REHEARSAL_ROBOT).write_text(planted_mjcf)


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
