"""Metrics step: torque prediction metrics as the run-directory contract defines them, and the
identifiability and data sections of metrics.json."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ident_framework.data.dataset import Dataset
    from ident_framework.hookspecs import Estimator
    from ident_framework.identify.result import TorquePredictions
    from ident_framework.model.base_parameters import BaseParameters


def torque_metrics(tau_measured: np.ndarray, tau_predicted: np.ndarray) -> dict[str, object]:
    """RMSE (Nm) over all samples and joints, and R² = 1 − Σ_j Σ_k e² / Σ_j Σ_k (τ − mean_j τ)²
    with each joint about its own mean; per-joint values beside the pooled ones."""
    squared = np.asarray(tau_measured) - np.asarray(tau_predicted)
    squared **= 2  # in place: one (N, n) array
    centred = tau_measured - tau_measured.mean(axis=0)
    sse_joint = np.sum(squared, axis=0)
    centred **= 2
    sst_joint = np.sum(centred, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2_joint = np.where(sst_joint > 0, 1.0 - sse_joint / sst_joint, np.nan)
    return {
        "rmse": float(np.sqrt(np.mean(squared))),
        "r2": float(1.0 - sse_joint.sum() / sst_joint.sum()) if sst_joint.sum() > 0 else None,
        "rmse_per_joint": [float(v) for v in np.sqrt(np.mean(squared, axis=0))],
        "r2_per_joint": [None if np.isnan(v) else float(v) for v in r2_joint],
    }


def fusion_gain(physical: dict[str, object], fusion: dict[str, object]) -> dict[str, list]:
    """Per joint, what the residual learner adds (as the source study's Table 5-12): RMSE
    reduction % = 100 (1 − RMSE_fusion / RMSE_physical), R² gain % = 100 (R²_f − R²_p) / R²_p."""
    reduction, gain = [], []
    for rp, rf, qp, qf in zip(
        physical["rmse_per_joint"], fusion["rmse_per_joint"],
        physical["r2_per_joint"], fusion["r2_per_joint"], strict=True,
    ):  # fmt: skip
        reduction.append(100.0 * (1.0 - rf / rp) if rp else None)
        gain.append(100.0 * (qf - qp) / qp if qp not in (None, 0.0) and qf is not None else None)
    return {"rmse_reduction_percent": reduction, "r2_gain_percent": gain}


SLOW_SPEED_MIN = 0.005  # rad/s: below this a joint counts as at rest, not as moving slowly
SLOW_SPEED_FRACTION = 0.1  # of each joint's velocity limit: the upper end of "slow"


def slow_rows(dq: np.ndarray, velocity_limits: np.ndarray) -> np.ndarray:
    """(N, n) True where joint j moves slowly: SLOW_SPEED_MIN <= |dq_j| <= SLOW_SPEED_FRACTION
    x its velocity limit (rad/s)."""
    speed = np.abs(np.asarray(dq))
    slow = speed >= SLOW_SPEED_MIN
    slow &= speed <= slow_speed_limits(velocity_limits)
    return slow


def slow_speed_limits(velocity_limits: np.ndarray) -> np.ndarray:
    """(n,) the upper end of "slow" per joint (rad/s)."""
    return SLOW_SPEED_FRACTION * np.asarray(velocity_limits, dtype=float)


def slow_motion_metrics(
    tau_measured: np.ndarray,
    tau_predicted: np.ndarray,
    dq: np.ndarray,
    velocity_limits: np.ndarray,
) -> dict[str, object]:
    """Torque RMSE (Nm) per joint over the samples where that joint moves slowly (`slow_rows`),
    where friction models differ most. `rmse` pools those samples of all joints; null where a
    joint has none."""
    slow = slow_rows(dq, velocity_limits)
    squared = np.asarray(tau_measured) - np.asarray(tau_predicted)
    squared **= 2  # in place: one (N, n) array, zero where the joint is not slow
    squared[~slow] = 0.0
    return slow_metrics_of(squared.sum(axis=0), slow.sum(axis=0), velocity_limits)


def slow_metrics_of(
    squared: np.ndarray, counts: np.ndarray, velocity_limits: np.ndarray
) -> dict[str, object]:
    """`slow_motion_metrics` from each joint's sum of squared errors (Nm²) over its slow
    samples and their counts."""
    return {
        "speed_range_rad_s": [
            [SLOW_SPEED_MIN, float(u)] for u in slow_speed_limits(velocity_limits)
        ],
        "samples_per_joint": [int(c) for c in counts],
        "rmse_per_joint": [
            float(np.sqrt(e / c)) if c else None for e, c in zip(squared, counts, strict=True)
        ],
        "rmse": float(np.sqrt(squared.sum() / counts.sum())) if counts.sum() else None,
    }


def uncertainty_summary(
    names: list[str], values: np.ndarray, std: np.ndarray | None, bound_percent: float
) -> dict[str, Any]:
    """Relative standard deviations (%) and the base parameters above `bound_percent` (the
    summary warns about those; nothing is logged here, so the warning appears once)."""
    if std is None:
        return {"relative_std_percent": None, "poorly_identified": None}
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(values != 0, 100.0 * np.asarray(std) / np.abs(values), np.inf)
    poor = [name for name, r in zip(names, relative, strict=True) if r > bound_percent]
    return {
        "relative_std_percent": relative.tolist(),
        "poorly_identified": poor,
        "relative_std_bound_percent": bound_percent,
    }


def estimator_metrics(estimator: Estimator) -> dict[str, Any]:
    """metrics.json `estimator`: what the fit cost and did, when the estimator reports it
    (`fit_report_`, e.g. the geometric prior's weight and training fit against LS)."""
    report = getattr(estimator, "fit_report_", None)
    return {"estimator": report} if report else {}


def identifiability_metrics(
    base: BaseParameters, cond: float, estimator: Estimator, warn_relative_std_percent: float
) -> dict[str, Any]:
    """metrics.json `identifiability`: standard and base parameter counts, cond of the base
    regressor, the base-parameter method and the relative standard deviations."""
    return {
        "n_standard": base.n_standard,
        "n_base": base.rank,
        "cond": cond,
        "base_method": base.method,
        **uncertainty_summary(
            base.names,
            np.asarray(estimator.coef_),
            estimator.coef_std_,
            warn_relative_std_percent,
        ),
    }


def fit_metrics(
    data: Dataset,
    prediction: TorquePredictions,
    velocity_limits: np.ndarray,
    out_of_range: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """metrics.json `train` / `validation`: the physical model's fit against the torque as
    recorded (`Dataset.measured_torque`; pooled, per joint, where joints move slowly) and, with
    a residual learner, the fusion's fit, gain and range guard (`out_of_range`); per recording
    (`recordings`); and the same against the low-passed torque (`against_filtered_torque`)."""
    measured = data.measured_torque

    def fit_of(tau: np.ndarray) -> dict[str, Any]:
        fit = torque_metrics(measured, tau)
        fit["slow"] = slow_motion_metrics(measured, tau, data.dq, velocity_limits)
        return fit

    physical = fit_of(prediction.physical)
    metrics: dict[str, Any] = {"physical": physical, "samples": data.n_samples}
    if prediction.fusion is not None:
        fusion = metrics["fusion"] = fit_of(prediction.fusion)
        metrics["fusion_gain"] = fusion_gain(physical, fusion)
        fusion.update(out_of_range or {})
    metrics["recordings"] = recording_metrics(data, prediction, physical, metrics.get("fusion"))
    if data.recorded is not None and data.measured_torque is not data.tau:
        note = "against the low-passed torque estimation fitted, not the torque as recorded"
        filtered = metrics["against_filtered_torque"] = {"note": note}
        for kind, tau in (("physical", prediction.physical), ("fusion", prediction.fusion)):
            if tau is not None:
                fit = torque_metrics(data.tau, tau)
                filtered[kind] = {"rmse": fit["rmse"], "r2": fit["r2"]}
    return metrics


def recording_metrics(
    data: Dataset,
    prediction: TorquePredictions,
    physical: dict[str, Any] | None = None,
    fusion: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Per recording of `data` (in order): its name, samples and the fit of the physical
    model (and the fusion) against its torque as recorded. `physical`, `fusion`: the whole
    data's `torque_metrics`, reused for a single recording."""
    index, names, measured = data.recording_index, data.recording_paths, data.measured_torque
    recordings = np.unique(index)
    reuse = len(recordings) == 1 and physical is not None
    reuse = reuse and (fusion is not None) == (prediction.fusion is not None)
    keys = ("rmse", "r2", "rmse_per_joint", "r2_per_joint")
    out = []
    for k in recordings:
        rows = index == k
        entry: dict[str, Any] = {"path": names[k] if k < len(names) else None}
        entry["samples"] = int(rows.sum())
        for kind, tau, whole in (
            ("physical", prediction.physical, physical),
            ("fusion", prediction.fusion, fusion),
        ):
            if tau is not None and reuse:  # a single recording's are the whole data's
                entry[kind] = {key: whole[key] for key in keys}
            elif tau is not None:
                entry[kind] = torque_metrics(measured[rows], tau[rows])
        out.append(entry)
    return out


def preprocessing_counts(data: Dataset) -> dict[str, Any]:
    """What preprocessing kept of `data`'s recordings, in all and per recording: samples
    recorded and kept, edge samples dropped, gaps, short pieces between gaps dropped (count,
    samples, s)."""
    report = data.metadata.get("preprocessing") or {}
    if not report.get("applied"):
        return {"recorded_samples": data.n_samples, "edge_samples_dropped": 0}
    keys = ("n_samples_in", "n_samples_out", "edge_samples_dropped", "gaps",
            "short_segments_dropped", "short_segment_samples_dropped",
            "short_segment_s_dropped")  # fmt: skip
    per_recording = [
        {"path": r.get("path"), **{key: r[key] for key in keys if key != "gaps"},
         "gaps": len(r["gaps"]), "resampled": r["resampled"]}
        for r in report.get("recordings", [])
    ]  # fmt: skip
    same = ("gaps", *keys[4:], "max_step_jitter", "resampled")
    return {
        "recorded_samples": report["n_samples_in"],
        "edge_samples_dropped": report["edge_samples_dropped"],
        "edge_trim_s": report["trim_s"],
        **{key: report[key] for key in same},
        "recordings": per_recording,
    }


def data_metrics(train: Dataset, validation: Dataset) -> dict[str, Any]:
    """metrics.json `data`: samples and durations (s) of both datasets, the data checks of
    each recording (`data/checks.py`), and the acquisition figures of live sources (rtde)."""
    metrics: dict[str, Any] = {
        "train_samples": train.n_samples,
        "validation_samples": validation.n_samples,
        "train_duration_s": train.duration,
        "validation_duration_s": validation.duration,
        "train_preprocessing": preprocessing_counts(train),
        "validation_preprocessing": preprocessing_counts(validation),
    }
    checks = {
        name: data.metadata["checks"]
        for name, data in (("train", train), ("validation", validation))
        if "checks" in data.metadata
    }
    if checks:
        metrics["checks"] = checks
    acquisition = train.metadata.get("acquisition")
    if acquisition is not None:
        metrics["train_acquisition"] = acquisition
    held_out = validation.metadata.get("acquisition")
    if held_out is not None and held_out is not acquisition:  # not the tail of the same one
        metrics["validation_acquisition"] = held_out
    return metrics
