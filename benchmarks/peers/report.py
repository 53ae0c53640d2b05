"""Score every run with the one scorer and write the tables (stdout, markdown, CSV, JSON)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import scoring
from .cases import BUSY, TUNED, CaseResult
from .runs import ToolRun


@dataclass
class Row:
    """One run, scored on the rows it predicted (`own`) and on the rows the case's default runs
    (labels "ours", "figaroh") all predicted (`common`: variants do not change that set)."""

    run: ToolRun
    own: scoring.Score | None = None
    common: scoring.Score | None = None
    tau: np.ndarray | None = None  # the recorded torque (N, n)
    prediction: np.ndarray | None = None  # on the recorded rows, NaN where none (N, n)
    alignment: str = ""
    off_grid: int = 0
    dq: np.ndarray | None = None  # the recorded joint velocity (N, n), for the speed bands

    @property
    def predicted(self) -> np.ndarray | None:
        if self.prediction is None:
            return None
        return np.all(np.isfinite(self.prediction), axis=1)

    def score_on(self, rows: np.ndarray) -> scoring.Score:
        scored = self.predicted & rows
        return scoring.score_rows(
            self.tau, self.prediction, scored, self.alignment, self.off_grid, self.dq
        )


def score_case(case: CaseResult) -> list[Row]:
    recorded = scoring.read_recorded(case.validation, case.n_joints, case.columns)
    rows = []
    for run in case.runs:
        if run.prediction is None:
            rows.append(Row(run))
            continue
        predicted = scoring.read_predictions(run.prediction, case.n_joints)
        on_recorded, alignment, off_grid = scoring.predicted_on_recorded(recorded, predicted)
        row = Row(run, None, None, recorded.tau, on_recorded, alignment, off_grid, recorded.dq)
        row.own = row.score_on(np.ones(len(recorded.t), bool))
        rows.append(row)
    common = np.ones(len(recorded.t), bool)
    for row in rows:
        if row.prediction is not None and row.run.label in ("ours", "figaroh"):
            common &= row.predicted
    for row in rows:
        if row.prediction is not None:
            row.common = row.score_on(common)
    return rows


def _f(value, digits=4) -> str:
    """Fixed-point text of a number (`digits` decimals), "–" for none or NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}f}"


def _ratio(a, b) -> str:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return "–"
    return f"{a / b:.3f}"


def bands_text(score: scoring.Score | None) -> str:
    """'RMSE (share %)' per |dq| band, rest / creep / slow / fast."""
    if score is None or not score.speed_bands:
        return "–"
    return " / ".join(
        f"{_f(band['rmse'], 3)} ({100 * band['share']:.0f}%)" for band in score.speed_bands
    )


def setting_text(run: ToolRun) -> str:
    """FIGAROH's setting (and, tuned, its CV RMSE over the identification data's folds)."""
    setting = run.reported.get("setting") or {}
    tuning = run.reported.get("tuning") or {}
    if not setting:
        return "–"
    if not tuning:
        return setting.get("label", "–")
    cv, fixed = _f(tuning.get("cv_rmse")), _f(tuning.get("fixed_cv_rmse"))
    return f"{setting.get('label')} (CV {cv}; fixed setting's CV {fixed})"


def accuracy_table(cases: list[tuple[CaseResult, list[Row]]]) -> list[dict[str, str]]:
    table = []
    for case, rows in cases:
        for row in rows:
            run, own, common = row.run, row.own, row.common
            stats = run.stats
            table.append({
                "case": case.case,
                "n ident": str(run.size),
                "tool": run.label,
                "identification data": run.ident,
                "scored / recorded rows": (
                    f"{own.n_scored} / {own.n_recorded} ({own.alignment})" if own else "–"
                ),
                "RMSE Nm": _f(own.rmse if own else None),
                "R²": _f(own.r2 if own else None),
                "RMSE common rows": _f(common.rmse if common else None),
                "R² common rows": _f(common.r2 if common else None),
                "RMSE per joint Nm": (
                    " ".join(f"{v:.3f}" for v in own.rmse_per_joint) if own else "–"
                ),
                "RMSE by speed band: rest / creep / slow / fast (share)": bands_text(own),
                "FIGAROH setting (CV RMSE Nm)": setting_text(run),
                "wall s": _f(stats.wall_s, 2) if stats else "–",
                "peak MB": _f(stats.peak_memory_mb, 0) if stats else "–",
                "tree RSS sum MB": _f(stats.max_tree_rss_mb, 0) if stats else "–",
                "self-reported RMSE": _f(
                    run.reported.get("validation_rmse", run.reported.get("figaroh_validation_rmse"))
                ),
                "status": run.status,
            })  # fmt: skip
    return table


def better_peer(row: Row, fixed: Row | None, tuned: Row | None) -> tuple[str, str]:
    """(ours / the better of FIGAROH fixed and tuned, which) on the rows all of the three that
    ran predicted; the better one is the one of lower RMSE on those rows."""
    peers = {name: p for name, p in (("fixed", fixed), ("tuned", tuned))
             if p is not None and p.run.status == "ok"}  # fmt: skip
    if row.run.status != "ok" or not peers:
        return "–", "–"
    rows = row.predicted.copy()
    for peer in peers.values():
        rows &= peer.predicted
    rmse = {name: peer.score_on(rows).rmse for name, peer in peers.items()}
    which = min(rmse, key=rmse.get)
    return _ratio(row.score_on(rows).rmse, rmse[which]), which


def peer_label(run: ToolRun) -> str:
    """The FIGAROH run a project run is compared with: "figaroh (busy)" for "ours (busy)"
    (both beside the same spinning process), else "figaroh"."""
    return f"figaroh{BUSY}" if run.label.endswith(BUSY) else "figaroh"


def ratio_table(cases: list[tuple[CaseResult, list[Row]]]) -> list[dict[str, str]]:
    """ours / FIGAROH for each project run and the default FIGAROH run of the same size and
    load; and ours / the better of FIGAROH fixed and FIGAROH tuned (accuracy only: a busy row
    is compared with the tuned run of the idle machine, the predictions do not depend on
    the load)."""
    table = []
    for case, rows in cases:
        peers = {(r.run.size, r.run.label): r for r in rows if r.run.tool == "figaroh"}
        tuned = {r.run.size: r for r in rows if r.run.label == TUNED}
        for row in rows:
            label = peer_label(row.run)
            peer = peers.get((row.run.size, label))
            if row.run.tool != "ours" or peer is None:
                continue
            both = row.run.status == "ok" and peer.run.status == "ok"
            ours_stats = row.run.stats if both else None
            peer_stats = peer.run.stats if both else None
            pair = row.predicted & peer.predicted if both else None
            mine = row.score_on(pair) if both else None
            theirs = peer.score_on(pair) if both else None
            better, which = better_peer(row, peer, tuned.get(row.run.size))
            table.append({
                "case": case.case,
                "n ident": str(row.run.size),
                "pair": f"{row.run.label} / {label}",
                "rows both predicted": str(mine.n_scored) if mine else "–",
                "RMSE ratio (those rows)": _ratio(
                    mine.rmse if mine else None, theirs.rmse if theirs else None
                ),
                "RMSE ratio vs better FIGAROH": better,
                "better FIGAROH": which,
                "R² ours vs FIGAROH": f"{_f(mine.r2)} vs {_f(theirs.r2)}" if mine else "–",
                "per-joint RMSE ratio": (
                    " ".join(_ratio(a, b) for a, b in zip(
                        mine.rmse_per_joint, theirs.rmse_per_joint, strict=True))
                    if mine else "–"
                ),
                "wall ratio": _ratio(
                    ours_stats.wall_s if ours_stats else None,
                    peer_stats.wall_s if peer_stats else None,
                ),
                "peak memory ratio": _ratio(
                    ours_stats.peak_memory_mb if ours_stats else None,
                    peer_stats.peak_memory_mb if peer_stats else None,
                ),
                "tree RSS sum ratio": _ratio(
                    ours_stats.peak_rss_mb if ours_stats else None,
                    peer_stats.peak_rss_mb if peer_stats else None,
                ),
                "ours status": row.run.status if row.run.status == "ok" else "not ok",
                "FIGAROH status": peer.run.status,
            })  # fmt: skip
    return table


def same_prediction(row: Row | None, idle: Row | None) -> str:
    """Whether `row`'s prediction is identical (bit for bit, NaN where none) to the idle
    run's, else by how much their RMSEs differ."""
    if row is None or idle is None or row.prediction is None or idle.prediction is None:
        return "–"
    if np.array_equal(row.prediction, idle.prediction, equal_nan=True):
        return "identical"
    difference = abs(row.own.rmse - idle.own.rmse) if row.own and idle.own else float("nan")
    return f"differs (RMSE by {difference:.2e})"


def _stat(row: Row | None, key: str):
    ok = row is not None and row.run.stats and row.run.status == "ok"
    return getattr(row.run.stats, key) if ok else None


def _rate(size: int, seconds) -> str:
    """Samples per second, e.g. "3.1e4"; "–" without a time."""
    return "–" if not seconds else sci(size / seconds)


def sci(value: float) -> str:
    """`value` as "1.2e6" (two significant digits)."""
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


LOADS = (("idle", ""), ("busy", BUSY))  # (load, label suffix of its runs)


def timing_table(cases: list[tuple[CaseResult, list[Row]]]) -> list[dict[str, str]]:
    """The UR10e rows by identification size and load (idle; busy: beside one spinning
    process): the whole command's wall time, samples/s and peak memory; for the busy rows,
    whether both predictions are identical to the idle runs'."""
    table = []
    for case, rows in cases:
        if case.case != "ur10e":
            continue
        by_label = {r.run.label: r for r in rows}
        for load, suffix in LOADS:
            ours, peer = by_label.get(f"ours{suffix}"), by_label.get(f"figaroh{suffix}")
            if ours is None or peer is None:
                continue
            same = "–"
            if suffix:
                ours_same = same_prediction(ours, by_label.get("ours"))
                peer_same = same_prediction(peer, by_label.get("figaroh"))
                same = f"ours {ours_same}, FIGAROH {peer_same}"
            table.append({
                "n ident": str(case.size),
                "load": load,
                "ours wall s": _f(_stat(ours, "wall_s"), 2),
                "FIGAROH wall s": _f(_stat(peer, "wall_s"), 2),
                "wall ratio": _ratio(_stat(ours, "wall_s"), _stat(peer, "wall_s")),
                "ours samples/s": _rate(case.size, _stat(ours, "wall_s")),
                "ours peak MB": _f(_stat(ours, "peak_memory_mb"), 0),
                "FIGAROH peak MB": _f(_stat(peer, "peak_memory_mb"), 0),
                "memory ratio": _ratio(
                    _stat(ours, "peak_memory_mb"), _stat(peer, "peak_memory_mb")
                ),
                "ours / FIGAROH tree RSS sum MB": (
                    f"{_f(_stat(ours, 'peak_rss_mb'), 0)} / {_f(_stat(peer, 'peak_rss_mb'), 0)}"
                ),
                "ours RMSE": _f(ours.own.rmse if ours.own else None),
                "FIGAROH RMSE": _f(peer.own.rmse if peer.own else None),
                "predictions vs idle": same,
                "FIGAROH status": peer.run.status,
            })  # fmt: skip
    return table


def roofline_lines(cases: list[tuple[CaseResult, list[Row]]]) -> list[str]:
    """Per UR10e size and load: the regressor kernel's samples/s alone against the whole
    command's (identification samples / its wall time), and the share of the kernel's."""
    lines = []
    for case, rows in cases:
        by_label = {r.run.label: r for r in rows}
        for load, suffix in LOADS:
            kernel = case.roofline.get(load)
            if not kernel:
                continue
            wall = _stat(by_label.get(f"ours{suffix}"), "wall_s")
            rate = kernel["samples_per_s"]
            whole = (
                f"whole command {_rate(case.size, wall)} samples/s "
                f"({100 * case.size / wall / rate:.2g} % of the kernel)"
                if wall else "whole command –"
            )  # fmt: skip
            lines.append(
                f"- {case.case} {case.size} samples, {load}: roofline: kernel {sci(rate)} "
                f"samples/s ({kernel['engine']}, {kernel['threads']} threads, calls of "
                f"{kernel['chunk']} samples, best of {kernel['passes']} passes: "
                f"{kernel['seconds']:.3g} s), {whole}"
            )
    return lines


# issue 13's targets for the project's defaults: (case, measure, bound); ratios ours / FIGAROH
TARGETS = (
    ("ur10e", "RMSE ratio (those rows)", 0.85),
    ("tx40", "RMSE ratio (those rows)", 0.95),
    ("kuka", "RMSE ratio (those rows)", 0.95),
    ("ur10e@100000", "wall ratio", 0.2),
    ("ur10e@100000", "peak memory ratio", 0.3),
)


def targets_table(ratios: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each target of issue 13 against the default pair (ours / figaroh) of its case."""
    table = []
    for where, measure, bound in TARGETS:
        case, _, size = where.partition("@")
        for row in ratios:
            if row["case"] != case or row["pair"] != "ours / figaroh":
                continue
            if size and row["n ident"] != size:
                continue
            value = row[measure]
            met = "–" if value == "–" else ("yes" if float(value) <= bound else "no")
            table.append({
                "case": case, "n ident": row["n ident"], "measure": measure,
                "target": f"<= {bound}", "measured": value, "met": met,
            })  # fmt: skip
    return table


def markdown(table: list[dict[str, str]]) -> str:
    if not table:
        return "(none)\n"
    head = list(table[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row[k].replace("|", "\\|") for k in head) + " |" for row in table]
    return "\n".join(lines) + "\n"


def write_csv(path: Path, table: list[dict[str, str]]) -> None:
    if not table:
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)


def details(cases: list[tuple[CaseResult, list[Row]]]) -> list[dict]:
    out = []
    for case, rows in cases:
        out.append({
            "case": case.case,
            "size": case.size,
            "validation": str(case.validation),
            "columns": dataclasses.asdict(case.columns),
            "notes": case.notes,
            "roofline": case.roofline,
            "runs": [{
                "tool": row.run.tool, "label": row.run.label, "size": row.run.size,
                "ident": row.run.ident, "status": row.run.status,
                "prediction": str(row.run.prediction) if row.run.prediction else None,
                "score": row.own.to_dict() if row.own else None,
                "score_common_rows": row.common.to_dict() if row.common else None,
                "stats": row.run.stats.to_dict() if row.run.stats else None,
                "reported": row.run.reported,
            } for row in rows],
        })  # fmt: skip
    return out


def write_results(out: Path, cases: list[CaseResult], header: dict) -> str:
    """Score; write results.md, accuracy.csv, ratios.csv, timing.csv, results.json; the text."""
    scored = [(case, score_case(case)) for case in cases]
    accuracy, ratios, timing = accuracy_table(scored), ratio_table(scored), timing_table(scored)
    notes = [f"- {case.case}: {note}" for case, _ in scored for note in case.notes]
    text = "\n".join([
        "# Peer benchmark: ident_framework vs FIGAROH 1.0.2",
        "",
        *(f"- {key}: {value}" for key, value in header.items()),
        "",
        "Every prediction is scored by one scorer against the torque as recorded in the "
        "validation file, at its own timestamps (`exact`: the prediction carries the recorded "
        "timestamp; `interpolated`: the tool predicted on a grid of its own, interpolated "
        "linearly onto the recorded timestamps). R²: each joint about its own mean. "
        "'common rows': the rows every default run of the case (ours, "
        "figaroh) predicted; a ratio compares a pair on the rows both predicted. "
        "'figaroh': FIGAROH with its fixed setting (the UR driver's 10 Hz Butterworth, no torque "
        "offset, no edge trim; TX40: its example's 100 Hz, offsets, border 20); 'figaroh tuned': "
        "its cut-off, offset on/off and edge trim chosen by time-blocked cross-validation on the "
        "identification data alone (setting and CV RMSE in the table), then fitted on all of "
        "it. 'RMSE ratio (those rows)': ours / FIGAROH fixed; 'RMSE ratio vs better FIGAROH': "
        "ours / whichever of FIGAROH fixed and tuned has the lower RMSE on the rows all three "
        "predicted. |dq| bands (rad/s, the joint's own recorded speed): rest < 0.01, creep "
        "0.01-0.05, slow 0.05-0.2, fast >= 0.2; RMSE Nm (share of the scored samples). "
        "'(busy)' (UR10e, --busy): the same runs beside one process spinning on a core "
        "(a user's laptop with a browser open); 'ours (busy) / figaroh (busy)' compares "
        "them; their predictions should be identical to the idle runs' (timing table).",
        "",
        "## Accuracy, time and memory",
        "",
        markdown(accuracy),
        "## Ratios ours / FIGAROH",
        "",
        markdown(ratios),
        "## Issue 13's targets for the defaults (ours / FIGAROH)",
        "",
        markdown(targets_table(ratios)),
        "## Timing rows (simulated UR10e, whole command: start, read, identify, predict, write)",
        "",
        markdown(timing),
        "## Roofline (UR10e: the regressor kernel alone against the whole command)",
        "",
        "`RegressorBuilder.rigid_body` (the compiled batch kernel) timed in the benchmark's "
        "process on the same identification samples as the command, against the whole "
        "command's identification samples / wall time (median run).",
        "",
        *(roofline_lines(scored) or ["(none)"]),
        "",
        "## Notes",
        "",
        *notes,
        "",
    ])  # fmt: skip
    (out / "results.md").write_text(text, encoding="utf-8")
    write_csv(out / "accuracy.csv", accuracy)
    write_csv(out / "ratios.csv", ratios)
    write_csv(out / "timing.csv", timing)
    (out / "results.json").write_text(
        json.dumps({"header": header, "cases": details(scored)}, indent=1), encoding="utf-8"
    )
    return text
