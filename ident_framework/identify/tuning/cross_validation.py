"""Held-out error of one candidate (a column set and regularisers) from the folds' factors.

For fold k the training factor of the candidate's columns S is the QR of the stacked slices
R_f[:, S + tau_filtered] of the other folds (exact: QR factors of row blocks merge), the base
parameters are those of all folds together (structural: the same for every fold), the
estimate is the spectral solve of `identify/regularization.py` (least squares, ridge toward
the nominal parameters, truncated SVD), and the held-out sum of squares is
|R_k[:, S + tau_recorded] [theta; -1]|² against the torque as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.identify.blas_threads import one_blas_thread
from ident_framework.identify.geometric_prior import PriorLayout, fit_geometric
from ident_framework.identify.regularization import spectral_solve
from ident_framework.identify.tuning.block_factors import FoldFactors
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.triangular import solve_upper, stacked_r

Regulariser = tuple[float, float]  # (ridge, truncate) as shares of the largest singular value
PLAIN: Regulariser = (0.0, 0.0)


@dataclass(frozen=True)
class HeldOut:
    """CV figures of one candidate and regulariser: pooled RMSE (Nm) over every held-out
    sample and joint, per-joint RMSE (None unless asked for), rank of the base regressor."""

    rmse: float
    rmse_per_joint: np.ndarray | None
    rank: int


def cross_validate(
    factors: FoldFactors,
    columns: np.ndarray,
    nominal: np.ndarray,
    regularisers: list[Regulariser],
    tolerance: float,
    per_joint: bool = False,
) -> list[HeldOut]:
    """CV figures of the columns `columns` (indices into the factors' layout) with each
    regulariser; `nominal` (len(columns),) the prior values of those columns."""
    n_folds = len(factors.merged)
    test_columns = np.append(columns, factors.tau_recorded)
    sse = np.zeros(len(regularisers))
    sse_joint = np.zeros((len(regularisers), factors.n_joints))
    with one_blas_thread():
        total = stacked_r([m[:, columns] for m in factors.merged])
        base = BaseParameters.from_r_factor(total, [str(c) for c in columns], tolerance)
        basis, r = base.basis, base.rank
        prior = basis.T @ nominal
        # each fold's factor in the base parameters: [R_f[:, S] B | tau_filtered]
        projected = [
            np.column_stack([m[:, columns] @ basis, m[:, factors.tau_filtered]])
            for m in factors.merged
        ]
        for k in range(n_folds):
            if factors.counts[k] == 0:
                continue
            train = stacked_r([projected[f] for f in range(n_folds) if f != k])
            r_w, rhs = train[:r, :r], train[:r, r]
            held = factors.merged[k][:, test_columns]
            for i, (ridge, truncate) in enumerate(regularisers):
                if ridge == 0.0 and truncate == 0.0:
                    beta = solve_upper(r_w, rhs)
                else:
                    beta = spectral_solve(r_w, rhs, prior, ridge, truncate)[0]
                theta = np.append(basis @ beta, -1.0)
                sse[i] += float(np.sum((held @ theta) ** 2))
                if per_joint:
                    for j, joint_factor in enumerate(factors.per_joint[k]):
                        residual = joint_factor[:, test_columns] @ theta
                        sse_joint[i, j] += float(np.sum(residual**2))
    samples = int(factors.counts.sum())
    out = []
    for i in range(len(regularisers)):
        joints = np.sqrt(sse_joint[i] / samples) if per_joint else None
        out.append(
            HeldOut(float(np.sqrt(sse[i] / (samples * factors.n_joints))), joints, base.rank)
        )
    return out


def cross_validate_geometric(
    factors: FoldFactors,
    columns: np.ndarray,
    nominal: np.ndarray,
    signed: np.ndarray,
    weights: list[float],
    tolerance: float,
    per_joint: bool = False,
) -> list[HeldOut]:
    """CV figures of the columns `columns` (the first 10 n the links' inertial parameters)
    estimated by the log-det prior toward `nominal` (`identify/geometric_prior.py`) with each
    of `weights`; `signed` (len(columns),) marks the parameters kept > 0. Each fold's data
    term is χ² in units of its own least-squares residual variance; the weights are solved
    from the largest down, each from the last one's estimate."""
    n_folds = len(factors.merged)
    fit_columns = np.append(columns, factors.tau_filtered)
    test_columns = np.append(columns, factors.tau_recorded)
    order = np.argsort(weights)[::-1]
    sse = np.zeros(len(weights))
    sse_joint = np.zeros((len(weights), factors.n_joints))
    layout = PriorLayout(factors.n_joints, np.asarray(nominal, dtype=float), signed)
    theta = None
    with one_blas_thread():
        total = stacked_r([m[:, columns] for m in factors.merged])
        base = BaseParameters.from_r_factor(total, [str(c) for c in columns], tolerance)
        basis, rank = base.basis, base.rank
        projected = [
            np.column_stack([m[:, columns] @ basis, m[:, factors.tau_filtered]])
            for m in factors.merged
        ]
        for k in range(n_folds):
            if factors.counts[k] == 0:
                continue
            others = [f for f in range(n_folds) if f != k]
            rows = int(sum(factors.counts[f] for f in others)) * factors.n_joints
            rss = float(stacked_r([projected[f] for f in others])[rank, rank] ** 2)
            sigma2 = max(rss / max(rows - rank, 1), 1e-300)
            train = stacked_r([factors.merged[f][:, fit_columns] for f in others])
            held = factors.merged[k][:, test_columns]
            for i in order:  # from the last estimate: the fold before's or a larger weight's
                fit = fit_geometric(train, sigma2, layout, float(weights[i]), theta)
                theta = fit.theta
                augmented = np.append(theta, -1.0)
                sse[i] += float(np.sum((held @ augmented) ** 2))
                if per_joint:
                    for j, joint_factor in enumerate(factors.per_joint[k]):
                        residual = joint_factor[:, test_columns] @ augmented
                        sse_joint[i, j] += float(np.sum(residual**2))
    samples = int(factors.counts.sum())
    out = []
    for i in range(len(weights)):
        joints = np.sqrt(sse_joint[i] / samples) if per_joint else None
        out.append(HeldOut(float(np.sqrt(sse[i] / (samples * factors.n_joints))), joints, rank))
    return out
