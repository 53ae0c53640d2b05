"""Data checks made by hand before trusting a recording: `check_recording(ds, limits, params)`
-> (trusted (N,) bool, report).

- torque clipping: a joint's torque flat at its extreme (max or min) for at least
  `clip_min_samples` consecutive samples: not trusted;
- stale samples: a row identical to the one before while the robot moves (some |dq| >=
  `stale_min_speed_rad_s`), or a repeated timestamp: not trusted;
- idle joints: position range below `idle_range_rad` or speed below `idle_speed_rad_s`
  (reported);
- timestamp gaps: steps over `gap_steps` median steps (reported).

Untrusted samples, widened by `margin_s` (s) on each side, are dropped after preprocessing
(`trusted_at`); the counts go to metrics.json `data.checks` and the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ident_framework.data.dataset import Dataset, recording_rows
from ident_framework.params import Params, param

TIME_RESOLUTION_S = 1e-6  # s: timestamps closer than this to margin_s are within it
MAX_LISTED = 10  # runs and gaps listed one by one in the report (the counts cover all)


@dataclass
class CheckParams(Params):
    """Thresholds of `check_recording` (config section `checks`; see the module doc).
    clip_tolerance_nm: |tau - extreme| (Nm) still "at" the extreme."""

    enabled: bool = True
    clip_min_samples: int = param(10, ge=2)
    clip_tolerance_nm: float = param(1e-9, ge=0, unit="Nm")
    stale_min_speed_rad_s: float = param(0.01, ge=0, unit="rad/s")
    idle_range_rad: float = param(0.01, ge=0, unit="rad")
    idle_speed_rad_s: float = param(0.01, ge=0, unit="rad/s")
    gap_steps: float = param(10.0, gt=1, note="median steps")
    margin_s: float = param(0.02, ge=0, unit="s")


def check_recording(
    ds: Dataset, limits: Any = None, params: CheckParams | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """(trusted (N,) bool, report) of one raw recording. `limits`: the robot's `JointLimits`
    (effort in Nm), to say whether a clipped torque sits at the limit."""
    params = params or CheckParams()
    t = np.asarray(ds.timestamp, dtype=float)
    names = list(ds.joint_names)
    clipped, clip_runs = _clipping(ds, params.clip_min_samples, params.clip_tolerance_nm, limits)
    stale, repeated_time = _stale(ds, params.stale_min_speed_rad_s)
    untrusted = clipped.any(axis=1) | stale
    excluded = _widen(untrusted, t, params.margin_s)
    idle = _idle_joints(ds, params.idle_range_rad, params.idle_speed_rad_s)
    gaps = _gaps(t, params.gap_steps)
    report: dict[str, Any] = {
        "n_samples": int(len(t)),
        "excluded_samples": int(excluded.sum()),
        "untrusted_samples": int(untrusted.sum()),
        "margin_s": params.margin_s,
        "torque_clipping": {
            "samples": int(clipped.any(axis=1).sum()),
            "samples_per_joint": {
                n: int(c) for n, c in zip(names, clipped.sum(axis=0), strict=True)
            },
            "runs": clip_runs[:MAX_LISTED],
            "n_runs": len(clip_runs),
        },
        "stale_samples": int(stale.sum()),
        "repeated_timestamps": int(repeated_time),
        "gaps": {
            "count": len(gaps),
            "longest_s": max((g["length_s"] for g in gaps), default=0.0),
            "listed": gaps[:MAX_LISTED],
        },  # fmt: skip
        "idle_joints": idle,
    }
    report["warnings"] = _warnings(report, ds)
    return ~excluded, report


def _clipping(
    ds: Dataset, min_run: int, tolerance: float, limits: Any
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """(N, n) bool: samples in a run of >= min_run at the joint's extreme; and the runs."""
    tau = np.asarray(ds.tau, dtype=float)
    flags = np.zeros(tau.shape, dtype=bool)
    runs: list[dict[str, Any]] = []
    effort = None if limits is None else np.asarray(limits.effort, dtype=float)
    for j in range(tau.shape[1]):
        column = tau[:, j]
        for extreme in (column.max(initial=-np.inf), column.min(initial=np.inf)):
            at = np.abs(column - extreme) <= tolerance + 1e-12 * abs(extreme)
            for start, stop in _runs(at, min_run):
                flags[start:stop, j] = True
                at_limit = effort is not None and abs(extreme) >= 0.98 * effort[j]
                runs.append({
                    "joint": ds.joint_names[j], "value_nm": float(extreme),
                    "start_s": float(ds.timestamp[start]), "end_s": float(ds.timestamp[stop - 1]),
                    "samples": int(stop - start), "at_effort_limit": bool(at_limit),
                })  # fmt: skip
    return flags, runs


def _runs(flags: np.ndarray, min_run: int) -> list[tuple[int, int]]:
    """[start, stop) of the runs of True at least `min_run` long."""
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = stops - starts >= min_run
    return list(zip(starts[keep].tolist(), stops[keep].tolist(), strict=True))


def _stale(ds: Dataset, min_speed: float) -> tuple[np.ndarray, int]:
    """(N,) bool: stale rows; and the number of repeated timestamps."""
    n = ds.n_samples
    stale = np.zeros(n, dtype=bool)
    if n < 2:
        return stale, 0
    q, dq, tau = (np.asarray(a, dtype=float) for a in (ds.q, ds.dq, ds.tau))
    # rows whose q repeats the previous one; only those are compared further (few or none)
    same = np.flatnonzero(np.all(q[1:] == q[:-1], axis=1)) + 1
    same = same[
        np.all(dq[same] == dq[same - 1], axis=1) & np.all(tau[same] == tau[same - 1], axis=1)
    ]
    moving = same[np.max(np.abs(dq[same]), axis=1) >= min_speed]
    repeated_time = np.diff(np.asarray(ds.timestamp, dtype=float)) == 0
    stale[1:] = repeated_time
    stale[moving] = True
    return stale, int(repeated_time.sum())


def _idle_joints(ds: Dataset, min_range: float, min_speed: float) -> list[dict[str, Any]]:
    q_range = np.ptp(ds.q, axis=0) if ds.n_samples else np.zeros(ds.n_joints)
    speed = np.max(np.abs(ds.dq), axis=0) if ds.n_samples else np.zeros(ds.n_joints)
    return [
        {
            "joint": ds.joint_names[j],
            "range_rad": float(q_range[j]),
            "peak_speed_rad_s": float(speed[j]),
        }  # fmt: skip
        for j in range(ds.n_joints)
        if q_range[j] < min_range or speed[j] < min_speed
    ]


def _gaps(t: np.ndarray, gap_steps: float) -> list[dict[str, Any]]:
    if len(t) < 3:
        return []
    steps = np.diff(t)
    median = float(np.median(steps))
    where = np.flatnonzero(steps > gap_steps * median)
    return [
        {
            "after_row": int(i),
            "t_s": float(t[i]),
            "length_s": float(steps[i]),
            "median_steps": float(steps[i] / median),
        }  # fmt: skip
        for i in where
    ]


def _widen(flags: np.ndarray, t: np.ndarray, margin_s: float) -> np.ndarray:
    """`flags` and every sample within margin_s (s) of a flagged one."""
    if not flags.any() or margin_s <= 0:
        return flags.copy()
    flagged_t = t[flags]
    reach = margin_s + TIME_RESOLUTION_S  # timestamps written with rounding still count
    lo = np.searchsorted(flagged_t, t - reach, side="left")
    hi = np.searchsorted(flagged_t, t + reach, side="right")
    return hi > lo


def check_recordings(
    recorded: Dataset, limits: Any, params: CheckParams
) -> list[tuple[np.ndarray, dict[str, Any]]] | None:
    """`check_recording` of each recording stacked in `recorded`, in order; None when the
    checks are disabled."""
    if not params.enabled:
        return None
    names = recorded.recording_paths
    out = []
    for index, rows in recording_rows(recorded.recording_index):
        part = recorded.select(rows)
        if len(names) > 1:
            part = replace(part, metadata={**part.metadata, "path": names[index]})
        out.append(check_recording(part, limits, params))
    return out


def drop_untrusted(
    recorded: Dataset,
    processed: Dataset,
    limits: Any,
    params: CheckParams,
    checked: list[tuple[np.ndarray, dict[str, Any]]] | None = None,
) -> Dataset:
    """`processed` (the preprocessed `recorded`) without the rows the checks of `recorded` do
    not trust; the report in `metadata["checks"]`, with `excluded_rows` of `rows_in` (with
    several recordings, each checked on its own: the totals and `recordings`). `checked`:
    `check_recordings` of `recorded`, when already run. Unchanged when the checks are off."""
    if not params.enabled:
        return processed
    checked = checked or check_recordings(recorded, limits, params)
    assert checked is not None
    names = recorded.recording_paths
    processed_index = processed.recording_index
    keep = np.ones(processed.n_samples, dtype=bool)
    reports = []
    parts = recording_rows(recorded.recording_index)
    for (index, rows), (trusted, found) in zip(parts, checked, strict=True):
        part = recorded.select(rows)
        mine = processed_index == index
        keep[mine] = trusted_at(part, trusted, processed.timestamp[mine])
        report = {**found, "rows_in": int(mine.sum()), "excluded_rows": int((~keep[mine]).sum())}
        reports.append({"path": names[index], **report} if len(names) > 1 else report)
    report = reports[0] if len(reports) == 1 else combined_report(reports)
    kept = processed if keep.all() else processed.select(keep)
    return replace(kept, metadata={**kept.metadata, "checks": report})


def combined_report(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of several recordings' check reports, the reports in `recordings`; a joint is
    idle only when idle in every recording."""

    def total(key: str) -> int:
        return sum(int(r[key]) for r in reports)

    clips = [r["torque_clipping"] for r in reports]
    joints = clips[0]["samples_per_joint"]
    idle_in = [{idle["joint"] for idle in r["idle_joints"]} for r in reports]
    idle_everywhere = [
        idle for idle in reports[0]["idle_joints"] if all(idle["joint"] in s for s in idle_in)
    ]
    return {
        **{key: total(key) for key in ("n_samples", "excluded_samples", "untrusted_samples")},
        "margin_s": reports[0]["margin_s"],
        "torque_clipping": {
            "samples": sum(c["samples"] for c in clips),
            "samples_per_joint": {j: sum(c["samples_per_joint"][j] for c in clips) for j in joints},
            "runs": [run for c in clips for run in c["runs"]][:MAX_LISTED],
            "n_runs": sum(c["n_runs"] for c in clips),
        },
        **{key: total(key) for key in ("stale_samples", "repeated_timestamps")},
        "gaps": {
            "count": sum(r["gaps"]["count"] for r in reports),
            "longest_s": max(r["gaps"]["longest_s"] for r in reports),
            "listed": [gap for r in reports for gap in r["gaps"]["listed"]][:MAX_LISTED],
        },
        "idle_joints": idle_everywhere,
        "warnings": [text for r in reports for text in r["warnings"]],
        **{key: total(key) for key in ("rows_in", "excluded_rows")},
        "recordings": reports,
    }


def trusted_at(recorded: Dataset, trusted: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(M,) bool over `times` (s; the preprocessed data's rows, at recorded or resampled
    times): trusted when the recorded samples at or on either side of that time are."""
    t = np.asarray(recorded.timestamp, dtype=float)
    at = np.asarray(times, dtype=float)
    before = np.clip(np.searchsorted(t, at, side="right") - 1, 0, len(t) - 1)
    after = np.clip(np.searchsorted(t, at, side="left"), 0, len(t) - 1)
    return trusted[before] & trusted[after]


def _warnings(report: dict[str, Any], ds: Dataset) -> list[str]:
    origin = ds.metadata.get("path") or ds.metadata.get("source") or "the recording"
    out = []
    clip = report["torque_clipping"]
    if clip["samples"]:
        joints = [n for n, c in clip["samples_per_joint"].items() if c]
        out.append(
            f"{origin}: torque flat at its extreme (clipped or saturated) on {', '.join(joints)} "
            f"for {clip['samples']} samples in {clip['n_runs']} run(s): excluded"
        )
    if report["stale_samples"]:
        out.append(
            f"{origin}: {report['stale_samples']} stale sample(s) (a row repeated while moving, "
            f"or a repeated timestamp): excluded"
        )
    for joint in report["idle_joints"]:
        out.append(
            f"{origin}: joint {joint['joint']} never leaves its rest (range "
            f"{joint['range_rad']:.3g} rad, peak speed {joint['peak_speed_rad_s']:.3g} rad/s): "
            "its friction, rotor inertia and the inertial parameters only it excites cannot be "
            "identified from this recording"
        )
    gaps = report["gaps"]
    if gaps["count"]:
        out.append(
            f"{origin}: {gaps['count']} timestamp gap(s), the longest {gaps['longest_s']:.3g} s"
        )
    return out
