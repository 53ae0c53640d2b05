"""Fleet mode: identify every robot of a fleet from its logs in one command, through the
configured Hydra launcher, then write the fleet report (`reports/fleet.py`).

    python -m ident_framework.fleet LOGS... [--manifest FILE] [--pattern REGEX] [--out DIR]
        [--k 3] [--min-spread 0.1] [fleet.strict=true] [-- OVERRIDES...]

LOGS: folders (their .csv, .mcap, .db3, .bag) or files. Robot and date come from a manifest
(CSV: path, robot[, model, date]) or the file stem (`--pattern`, groups `robot` and `date`;
default `<robot>_<YYYY-MM-DD>`, else the stem is the robot). OVERRIDES go to every job; all
logs use the same options (`tuning=none` unless overridden). One sweep per model and format,
one job per log, validated on its held-out tail; a log that fails is listed with the reason.
Exit codes: 0 report written; 2 a user error (no logs, bad manifest, no log identified) or,
with `fleet.strict=true`, any log left out; 1 a crash.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from ident_framework.errors import UserError
from ident_framework.reports import run_files
from ident_framework.reports.fleet import LeftOut, RobotRun, write_fleet_report

LOG_SOURCES = {".csv": "csv", ".mcap": "rosbag", ".db3": "rosbag", ".bag": "rosbag"}
DEFAULT_PATTERN = r"^(?P<robot>.+?)_(?P<date>\d{4}-\d{2}-\d{2})$"
# the same model options for every robot (tuning=cv would choose per log); overrides still win
FLEET_DEFAULTS = ("tuning=none",)


@dataclass(frozen=True)
class FleetLog:
    path: Path
    robot: str
    date: str
    model: str | None


def find_logs(items: list[str], manifest: str | None, pattern: str) -> list[FleetLog]:
    """The fleet's logs with their robot, date and model."""
    if manifest:
        return _from_manifest(Path(manifest))
    paths: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            paths += sorted(p for p in item.iterdir() if p.suffix in LOG_SOURCES)
        elif item.exists():
            paths.append(item)
        else:
            raise UserError(f"fleet: {item} does not exist; give folders or log files.")
    if not paths:
        raise UserError(f"fleet: no logs (.csv, .mcap, .db3, .bag) in {items}.")
    regex = re.compile(pattern)
    logs = []
    for path in paths:
        match = regex.match(path.stem)
        robot = match.group("robot") if match else path.stem
        date = (match.groupdict().get("date") or "") if match else ""
        logs.append(FleetLog(path.resolve(), robot, date, None))
    return logs


def _from_manifest(manifest: Path) -> list[FleetLog]:
    if not manifest.is_file():
        raise UserError(f"fleet: the manifest {manifest} does not exist.")
    with open(manifest, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"path", "robot"} <= set(rows[0]):
        raise UserError(
            f"fleet: the manifest {manifest} needs a header with columns path, robot (and "
            "optionally model, date), one row per log."
        )
    logs = []
    for number, row in enumerate(rows, start=2):
        path = (manifest.parent / row["path"]).resolve()
        if not path.exists():
            raise UserError(f"fleet: {manifest} line {number}: {path} does not exist.")
        logs.append(FleetLog(path, row["robot"], row.get("date") or "", row.get("model") or None))
    return logs


def _log_path(overrides: list[str]) -> Path | None:
    """The log a sweep job identified: its `source.path=` override."""
    for override in overrides:
        if override.startswith("source.path="):
            return Path(override.split("=", 1)[1].strip("'\""))
    return None


def run_sweeps(
    logs: list[FleetLog], overrides: list[str], out: Path
) -> tuple[dict[Path, Path], dict[Path, str]]:
    """One `-m` sweep per (model, format); returns (log path -> its job's run directory,
    log path -> why it was left out)."""
    groups: dict[tuple[str | None, str], list[FleetLog]] = {}
    for log in logs:
        groups.setdefault((log.model, LOG_SOURCES.get(log.path.suffix, "rosbag")), []).append(log)
    done: dict[Path, Path] = {}
    reasons: dict[Path, str] = {}
    for (model, source), members in groups.items():
        sweep = out / "runs" / f"{model or 'robot'}_{source}"
        paths = ",".join(f"'{log.path}'" for log in members)
        command = [sys.executable, "-m", "ident_framework", "-m", f"source={source}",
                   f"source.path={paths}", "validation=split", *FLEET_DEFAULTS, *overrides,
                   *([f"robot={model}"] if model else []), f"hydra.sweep.dir={sweep}"]  # fmt: skip
        result = subprocess.run(command, text=True, capture_output=True)
        for job in sorted(sweep.iterdir()) if sweep.is_dir() else []:
            overrides_file = job / run_files.HYDRA_FOLDER / run_files.HYDRA_OVERRIDES
            if (job / run_files.METRICS).exists() and overrides_file.exists():
                done[_log_path(yaml.safe_load(overrides_file.read_text()))] = job
            elif (job / run_files.FAILED_JOB).exists():
                failure = json.loads((job / run_files.FAILED_JOB).read_text())
                reasons[_log_path(failure["overrides"])] = failure["error"]
        tail = " ".join(result.stderr.strip().splitlines()[-3:]) or f"exit {result.returncode}"
        for log in members:
            if log.path not in done:
                reasons.setdefault(log.path, f"no result from the sweep in {sweep}: {tail}")
    return done, reasons


def _strict(argv: list[str]) -> tuple[list[str], bool]:
    """(argv without `fleet.strict=...`, its value; False when not given)."""
    values = [a.split("=", 1)[1].lower() for a in argv if a.startswith("fleet.strict=")]
    if any(v not in ("true", "false") for v in values):
        raise UserError(f"fleet.strict must be true or false, got {values}.")
    return [a for a in argv if not a.startswith("fleet.strict=")], values[-1:] == ["true"]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    try:
        argv, strict = _strict(argv)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    overrides = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m ident_framework.fleet")
    parser.add_argument("logs", nargs="*", help="folders or log files")
    parser.add_argument("--manifest", help="CSV: path, robot[, model, date]")
    parser.add_argument("--pattern", default=DEFAULT_PATTERN, help="file stem regex")
    parser.add_argument("--out", default="fleet", help="output folder (default ./fleet)")
    parser.add_argument("--k", type=float, default=3.0, help="flag above median + k sigma")
    parser.add_argument("--min-spread", type=float, default=0.1, help="sigma >= this x median")
    args = parser.parse_args(argv)
    try:
        logs = find_logs(args.logs, args.manifest, args.pattern)
        out = Path(args.out).resolve()
        out.mkdir(parents=True, exist_ok=True)
        done, reasons = run_sweeps(logs, overrides, out)
        runs = [RobotRun.read(log.robot, log.date, done[log.path]) for log in logs
                if log.path in done]  # fmt: skip
        left_out = [LeftOut(log.robot, log.date, log.path, reasons[log.path]) for log in logs
                    if log.path not in done]  # fmt: skip
        if not runs:
            why = "; ".join(f"{item.path}: {item.reason}" for item in left_out)
            raise UserError(f"fleet: no log was identified ({why}). The sweeps: {out / 'runs'}.")
        rows = write_fleet_report(out, runs, args.k, args.min_spread, left_out)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    flagged = [f"{r['robot']} {r['joint']}" for r in rows if r["outlier"] or r["trend"]]
    print(
        f"fleet report of {len(runs)} of {len(logs)} logs: {out / 'fleet.md'}; "
        f"flagged: {flagged or 'none'}"
    )
    for item in left_out:
        print(f"{'error' if strict else 'warning'}: left out {item.path}: {item.reason}",
              file=sys.stderr)  # fmt: skip
    if left_out and strict:
        print(f"error: {len(left_out)} of {len(logs)} logs could not be identified "
              "(fleet.strict=true)", file=sys.stderr)  # fmt: skip
        sys.exit(2)


if __name__ == "__main__":
    main()
