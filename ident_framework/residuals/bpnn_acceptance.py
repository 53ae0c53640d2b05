"""Per-joint acceptance of the `bpnn` residual learner on held-out motion (`bpnn_folds.py`):
a joint is corrected only when, in every fold, its fold networks' corrections as they would be
applied (ensemble mean × trust factor) lower the RMSE on the samples they never saw by at
least `margin` (fraction). Also reported, for comparison with figures measured on training
data: the same reduction on the samples the fold networks trained on."""

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
        float(100.0 * (1.0 - f / p)) if np.isfinite(p) and p > 0 else None
        for p, f in zip(plain, fused, strict=True)
    ]


def _reason(
    accepted: bool,
    count: int,
    reduction: float | None,
    margin: float,
    enabled: bool,
    fold: str,
    untrained: bool = False,
):
    """Why a joint was accepted or refused; `reduction` (%) is its worst fold's, `fold` names
    that fold, `untrained`: every network of that fold kept its initial (zero) correction."""
    if not enabled:
        return "accepted without a held-out check (residual.acceptance=false)"
    if count == 0 or reduction is None:
        return "refused: no held-out samples to judge it on"
    if accepted:
        return (
            f"accepted: held-out RMSE at least {reduction:.1f} % lower in every fold (margin "
            f"{100 * margin:.1f} %)"
        )
    if abs(reduction) < 1e-6 and untrained:
        return (
            f"refused: the networks of {fold} never beat their initial zero correction on "
            "their early-stopping samples (best epoch 0), so they correct nothing there"
        )
    if abs(reduction) < 1e-6:
        return (
            f"refused: no correction applied on the samples held out by {fold} (all shrunk to "
            "zero: they are unlike the training data)"
        )
    if reduction < 0:
        return f"refused: the correction made the RMSE held out by {fold} {-reduction:.1f} % worse"
    return (
        f"refused: the RMSE held out by {fold} only {reduction:.1f} % lower, below the margin "
        f"{100 * margin:.1f} %"
    )


def judge(
    target: np.ndarray,
    corrections: list[np.ndarray],
    folds: list[Fold],
    margin: float,
    enabled: bool = True,
    untrained: np.ndarray | None = None,
) -> dict[str, Any]:
    """metrics.json `residual`: per joint the held-out and the training-part RMSE (Nm) without
    and with correction, the reductions (%), accepted or not and why. `target` (n, N) residual,
    `corrections` per fold (n, N) Nm as that fold's networks would apply them; `untrained`
    (n, folds): every network of that joint and fold kept its initial state (best epoch 0)."""
    count, held_plain, held_fused = _pooled(target, corrections, [f.held_out for f in folds])
    _, fit_plain, fit_fused = _pooled(target, corrections, [f.fit for f in folds])
    held_reduction = _reduction(held_plain, held_fused)
    per_fold = [  # (folds, n): each fold's held-out reduction (None: no samples there)
        _reduction(*_pooled(target, [c], [f.held_out])[1:])
        for f, c in zip(folds, corrections, strict=True)
    ]
    worst, worst_fold, worst_untrained = [], [], []
    for j in range(len(count)):
        judged = [(r[j], k) for k, r in enumerate(per_fold) if r[j] is not None]
        value, k = min(judged, key=lambda item: item[0]) if judged else (None, None)
        worst.append(value)
        worst_fold.append("" if k is None else folds[k].kind)
        worst_untrained.append(k is not None and untrained is not None and bool(untrained[j, k]))
    accepted = [
        (not enabled) or (w is not None and c > 0 and w >= 100.0 * margin)
        for w, c in zip(worst, count, strict=True)
    ]
    kinds = sorted({"recording" if f.kind.startswith("recording") else f.kind for f in folds})
    return {
        "held_out": (
            "leave one recording out"
            if kinds == ["recording"]
            else "one recording: the input-space region farthest from the data's centre, and the "
            "time tail"
        ),
        "margin_percent": 100.0 * margin,
        "accepted": [bool(a) for a in accepted],
        "held_out_samples": [int(c) for c in count],
        "held_out_rmse_physical": [float(v) for v in held_plain],
        "held_out_rmse_corrected": [float(v) for v in held_fused],
        "held_out_reduction_percent": held_reduction,
        "held_out_reduction_percent_per_fold": per_fold,
        "worst_fold_reduction_percent": worst,
        "worst_fold": worst_fold,
        "training_rmse_physical": [float(v) for v in fit_plain],
        "training_rmse_corrected": [float(v) for v in fit_fused],
        "training_reduction_percent": _reduction(fit_plain, fit_fused),
        "reason": [
            _reason(a, int(c), w, margin, enabled, kind, idle)
            for a, c, w, kind, idle in zip(
                accepted, count, worst, worst_fold, worst_untrained, strict=True
            )
        ],
    }
