"""How far the `bpnn` residual learner's corrections are trusted: the held-out folds
(`folds_for`) and the per-joint acceptance (`judge`) when it is fitted, the per-sample trust
factor when it predicts.

Trust s in [0, 1] per sample and joint: s = s_ens · s_dist, with s_ens = μ² / (μ² + κσ²)
(`disagreement_factor`; μ, σ the members' mean and spread in Nm) and s_dist = 1 up to
`trust_radius`, 0 from `refuse_radius` (`distance_factor`; standardised input space); 0 outside
the range guard. `classify`: corrected s ≥ 0.9, shrunk 0 < s < 0.9, refused s = 0.

Rationale: docs/design.md#residual-learner-bpnn
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fold:
    """One fold: `fit` (n, N) bool, the samples each joint's networks train on (with their
    early-stopping part); `held_out` (n, N) bool, the samples they are judged on."""

    fit: np.ndarray
    held_out: np.ndarray
    kind: str  # "recording <r>" or "region"


def region_fold(standardised: np.ndarray, holdout_fraction: float, seed: int) -> Fold:
    """Hold out, per joint, the k-means cluster of `standardised` (n, N, f) features farthest
    from their mean (k = round(1 / holdout_fraction), at least 2)."""
    n, n_samples, _ = standardised.shape
    k = max(2, int(round(1.0 / holdout_fraction)))
    held = np.zeros((n, n_samples), dtype=bool)
    step = max(1, n_samples // 5000)  # cluster centres from a subsample, labels for all
    from scipy.cluster.vq import kmeans2  # imported here: 0.05-0.1 s that no other run needs

    for j in range(n):
        x = standardised[j]
        centres, _ = kmeans2(x[::step], k, seed=np.random.default_rng(seed + j), minit="++")
        labels = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
        counts = np.bincount(labels, minlength=k)
        distance = np.linalg.norm(centres - x.mean(axis=0), axis=1)
        distance[counts == 0] = -np.inf
        held[j] = labels == int(np.argmax(distance))
    return Fold(~held, held, "region")


def folds_for(
    recording: np.ndarray, standardised: np.ndarray, holdout_fraction: float, seed: int
) -> list[Fold]:
    """Leave one recording out (`recording` (N,): the ids) when there are several, else the
    region fold and the time tail: the last `holdout_fraction` of the samples (every joint)."""
    n, n_samples, _ = standardised.shape
    if (ids := np.unique(recording)).size > 1:
        held = [np.broadcast_to(recording == r, (n, n_samples)).copy() for r in ids]
        return [Fold(~h, h, f"recording {int(r)}") for h, r in zip(held, ids, strict=True)]
    tail = np.zeros((n, n_samples), dtype=bool)
    tail[:, int(round(n_samples * (1.0 - holdout_fraction))) :] = True
    return [region_fold(standardised, holdout_fraction, seed), Fold(~tail, tail, "time tail")]


EARLY_STOPPING_BLOCKS = 50  # contiguous time blocks of a joint's fit samples


def early_stopping_part(fit: np.ndarray, fraction: float) -> np.ndarray:
    """(n, N) bool: per joint, the early-stopping part of its `fit` samples (the rest trains):
    the fit samples in time order cut into `EARLY_STOPPING_BLOCKS` contiguous blocks, of which
    `fraction` spread evenly over the recording(s) (for 0.2: every fifth block; not the time
    tail, which on a Fourier excitation is the ramp to rest, unlike the rest)."""
    rank = np.cumsum(fit, axis=1) - 1  # 0-based position among the joint's fit samples
    total = np.maximum(fit.sum(axis=1, keepdims=True), 1)
    block = (rank * EARLY_STOPPING_BLOCKS) // total
    chosen = np.floor((block + 1) * fraction + 1e-9) - np.floor(block * fraction + 1e-9) >= 1
    return fit & chosen


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
    one_recording = not all(f.kind.startswith("recording") for f in folds)
    return {
        "held_out": ONE_RECORDING if one_recording else "leave one recording out",
        "margin_percent": 100.0 * margin,
        "accepted": [bool(a) for a in accepted],
        "held_out_samples": [int(c) for c in count],
        "held_out_rmse_physical": [float(v) for v in held_plain],
        "held_out_rmse_corrected": [float(v) for v in held_fused],
        "held_out_reduction_percent": _reduction(held_plain, held_fused),
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


ONE_RECORDING = (
    "one recording: the input-space region farthest from the data's centre, and the time tail"
)
MAX_SUPPORT = 4000  # training samples kept per joint (and fold) for the distance
CORRECTED_AT = 0.9  # s at or above: "corrected"; below (and > 0): "shrunk"


def support_rows(mask: np.ndarray, size: int) -> np.ndarray:
    """(n, size) indices of `size` evenly spaced True samples of each row of `mask` (n, N)."""
    rows = []
    for row in mask:
        index = np.flatnonzero(row)
        rows.append(index[np.linspace(0, index.size - 1, size).round().astype(int)])
    return np.stack(rows)


def nearest_distance(support: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(n, N) distance of each standardised sample x (n, N, f) to joint j's nearest support
    sample (support (n, S, f), float32 as saved)."""
    from scipy.spatial import cKDTree  # ~0.1 s: only the bpnn learner needs it

    out = np.empty(x.shape[:2])
    for j in range(x.shape[0]):
        tree = cKDTree(np.asarray(support[j], dtype=np.float64))
        out[j] = tree.query(x[j], k=1)[0]
    return out


def distance_factor(distance: np.ndarray, trust: float, refuse: float) -> np.ndarray:
    """1 up to `trust`, linear to 0 at `refuse` (standardised units)."""
    return np.clip((refuse - distance) / (refuse - trust), 0.0, 1.0)


def disagreement_factor(mean: np.ndarray, std: np.ndarray, weight: float) -> np.ndarray:
    """μ² / (μ² + κ σ²); 1 where both are 0 (nothing to shrink)."""
    denominator = mean**2 + weight * std**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, mean**2 / denominator, 1.0)


def classify(factor: np.ndarray) -> dict[str, object]:
    """Fractions of sample-joints corrected / shrunk / refused, pooled and per joint, from the
    factors (n, N) actually applied."""
    corrected, refused = factor >= CORRECTED_AT, factor <= 0.0
    shrunk = ~corrected & ~refused
    n, n_samples = factor.shape

    def per_joint(values: np.ndarray) -> list[float]:
        return [float(v) for v in values.mean(axis=1)] if n_samples else [0.0] * n

    figures: dict[str, object] = {"corrected_at_factor": CORRECTED_AT}
    for name, mask in (("corrected", corrected), ("shrunk", shrunk), ("refused", refused)):
        figures[f"{name}_fraction"] = float(mask.mean()) if n_samples else 0.0
        figures[f"{name}_per_joint"] = per_joint(mask)
    figures["mean_factor_per_joint"] = per_joint(factor)
    return figures
