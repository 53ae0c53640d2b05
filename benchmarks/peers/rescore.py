"""Rebuild a finished benchmark run from its results.json (runs and predictions kept beside it),
to score and tabulate it again without running the tools."""

from __future__ import annotations

import json
from pathlib import Path

from .cases import CaseResult
from .measure import RunStats
from .runs import ToolRun
from .scoring import Columns


def load_cases(out: Path) -> tuple[list[CaseResult], dict]:
    """(cases, header) of the run in `out`."""
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cases = []
    for case in saved["cases"]:
        result = CaseResult(
            case["case"], case["size"], Path(case["validation"]), 0, notes=case["notes"],
            columns=Columns(**case.get("columns", {})), roofline=case.get("roofline", {}),
        )  # fmt: skip
        for run in case["runs"]:
            stats = RunStats.from_dict(run["stats"]) if run["stats"] else None
            prediction = Path(run["prediction"]) if run["prediction"] else None
            result.runs.append(ToolRun(
                case["case"], run["size"], run["tool"], run["label"], run["ident"],
                prediction, stats, run["status"], run["reported"],
            ))  # fmt: skip
            score = run.get("score")
            if score:
                result.n_joints = len(score["rmse_per_joint"])
        cases.append(result)
    return cases, saved["header"]
