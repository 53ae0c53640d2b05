"""Per-joint acceptance of the `bpnn` residual learner on held-out motion (`bpnn_folds.py`):
a joint is corrected only when its fold networks' corrections, as they would be applied
(ensemble mean × trust factor), lower the RMSE on the samples they never saw by at least
`margin` (fraction). Also reported, for comparison with figures measured on training data:
the same reduction on the samples the fold networks trained on."""

from __future__ import annotations

from typing import Any

import numpy as np

from ident_framework.residuals.bpnn_folds import Fold


def _pooled(target: np.ndarray, corrections: list[np.ndarray], masks: list[np.ndarray]):
    """Per joint: samples, RMSE of the residual (physical model alone) and of residual −
    correction (corrected), pooled over the folds' `masks` (n, N)."""
    count = sum(m.sum(axis=1) for m in masks)
    plain = sum(np.where(m, target**2, 0.0).sum(axis=1) for m in masks)
    fused = sum(
        np.where(m, (target - c) ** 2, 0.0).sum(axis=1)
        for m, c in zip(masks, corrections, strict=True)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return count, np.sqrt(plain / count), np.sqrt(fused / count)


def _reduction(plain: np.ndarray, fused: np.ndarray) -> list[float | None]:
    """100 (1 − fused / plain) per joint; None without samples or without error."""
    return [
        100.0 * (1.0 - f / p) if np.isfinite(p) and p > 0 else None
        for p, f in zip(plain, fused, strict=True)
    ]


def _reason(accepted: bool, count: int, reduction: float | None, margin: float, enabled: bool):
    if not enabled:
        return "accepted without a held-out check (residual.acceptance=false)"
    if count == 0 or reduction is None:
        return "refused: no held-out samples to judge it on"
    if accepted:
        return f"accepted: held-out RMSE {reduction:.1f} % lower (margin {100 * margin:.1f} %)"
    if abs(reduction) < 1e-6:
        return (
            "refused: no correction applied on held-out samples (all shrunk to zero: they are "
            "unlike the training data)"
        )
    if reduction < 0:
        return f"refused: the correction made held-out RMSE {-reduction:.1f} % worse"
    return (
        f"refused: held-out RMSE only {reduction:.1f} % lower, below the margin "
        f"{100 * margin:.1f} %"
    )


def judge(
    target: np.ndarray,
    corrections: list[np.ndarray],
    folds: list[Fold],
    margin: float,
    enabled: bool = True,
) -> dict[str, Any]:
    """metrics.json `residual`: per joint the held-out and the training-part RMSE (Nm) without
    and with correction, the reductions (%), accepted or not and why. `target` (n, N) residual,
    `corrections` per fold (n, N) Nm as that fold's networks would apply them."""
    count, held_plain, held_fused = _pooled(target, corrections, [f.held_out for f in folds])
    _, fit_plain, fit_fused = _pooled(target, corrections, [f.fit for f in folds])
    held_reduction = _reduction(held_plain, held_fused)
    accepted = [
        (not enabled) or (r is not None and c > 0 and r >= 100.0 * margin)
        for r, c in zip(held_reduction, count, strict=True)
    ]
    kinds = sorted({"recording" if f.kind.startswith("recording") else f.kind for f in folds})
    return {
        "held_out": (
            "leave one recording out"
            if kinds == ["recording"]
            else "region of the input space farthest from the data's centre (one recording)"
        ),
        "margin_percent": 100.0 * margin,
        "accepted": [bool(a) for a in accepted],
        "held_out_samples": [int(c) for c in count],
        "held_out_rmse_physical": [float(v) for v in held_plain],
        "held_out_rmse_corrected": [float(v) for v in held_fused],
        "held_out_reduction_percent": held_reduction,
        "training_rmse_physical": [float(v) for v in fit_plain],
        "training_rmse_corrected": [float(v) for v in fit_fused],
        "training_reduction_percent": _reduction(fit_plain, fit_fused),
        "reason": [
            _reason(a, int(c), r, margin, enabled)
            for a, c, r in zip(accepted, count, held_reduction, strict=True)
        ],
    }
