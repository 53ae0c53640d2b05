"""Torque prediction metrics as the run-directory contract defines them."""

from __future__ import annotations

import numpy as np


def torque_metrics(tau_measured: np.ndarray, tau_predicted: np.ndarray) -> dict[str, object]:
    """RMSE (Nm) over all samples and joints, and R² = 1 − Σ_j Σ_k e² / Σ_j Σ_k (τ − mean_j τ)²
    with each joint about its own mean; per-joint values beside the pooled ones."""
    error = np.asarray(tau_measured) - np.asarray(tau_predicted)
    centred = tau_measured - tau_measured.mean(axis=0)
    sse_joint = np.sum(error**2, axis=0)
    sst_joint = np.sum(centred**2, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2_joint = np.where(sst_joint > 0, 1.0 - sse_joint / sst_joint, np.nan)
    return {
        "rmse": float(np.sqrt(np.mean(error**2))),
        "r2": float(1.0 - sse_joint.sum() / sst_joint.sum()) if sst_joint.sum() > 0 else None,
        "rmse_per_joint": [float(v) for v in np.sqrt(np.mean(error**2, axis=0))],
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
