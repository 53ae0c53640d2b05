"""How much of the `bpnn` ensemble's correction a sample gets: the factor s in [0, 1] that
scales the ensemble mean toward zero where the learner does not know.

- Disagreement: the members' mean μ and standard deviation σ (Nm) give
  s_ens = μ² / (μ² + κ σ²), κ = `disagreement_weight` — the factor that minimises the expected
  squared error of s·μ when the true residual is μ ± σ (Wiener shrinkage): a correction the
  members agree on is kept, one they disagree about goes to zero.
- Distance to the training data, in the standardised input space the networks use (not per
  axis): d = Euclidean distance to the nearest training sample (k-d tree of up to
  `MAX_SUPPORT` training samples); s_dist = 1 up to `trust_radius`, falling linearly to 0 at
  `refuse_radius` (both in training standard deviations).
- The range guard (`range_margin`, per feature) refuses outright (s = 0).

s = s_ens · s_dist (0 where refused). A sample-joint is *corrected* when s ≥ 0.9, *shrunk* when
0 < s < 0.9, *refused* when s = 0 (refused also: every sample of a joint that failed the
held-out acceptance).
"""

from __future__ import annotations

import numpy as np

MAX_SUPPORT = 4000  # training samples kept per joint (and fold) for the distance
CORRECTED_AT = 0.9  # s at or above: "corrected"; below (and > 0): "shrunk"


def support_rows(mask: np.ndarray, size: int) -> np.ndarray:
    """(n, size) indices of `size` evenly spaced True samples of each row of `mask` (n, N)."""
    rows = []
    for row in mask:
        index = np.flatnonzero(row)
        rows.append(index[np.linspace(0, index.size - 1, size).round().astype(int)])
    return np.stack(rows)


def support_size(mask: np.ndarray) -> int:
    """Support samples per joint: MAX_SUPPORT, or the fewest training samples of a joint."""
    return int(min(MAX_SUPPORT, mask.sum(axis=1).min()))


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
    corrected = factor >= CORRECTED_AT
    refused = factor <= 0.0
    shrunk = ~corrected & ~refused
    n_samples = factor.shape[1]

    def share(mask: np.ndarray) -> tuple[float, list[float]]:
        if not n_samples:
            return 0.0, [0.0] * factor.shape[0]
        return float(mask.mean()), [float(v) for v in mask.mean(axis=1)]

    figures: dict[str, object] = {"corrected_at_factor": CORRECTED_AT}
    for name, mask in (("corrected", corrected), ("shrunk", shrunk), ("refused", refused)):
        pooled, per_joint = share(mask)
        figures[f"{name}_fraction"] = pooled
        figures[f"{name}_per_joint"] = per_joint
    figures["mean_factor_per_joint"] = (
        [float(v) for v in factor.mean(axis=1)] if n_samples else [0.0] * factor.shape[0]
    )
    return figures
