"""Held-out error of one candidate (a column set and regularisers) from the folds' factors.

For fold k the training factor of the candidate's columns S is the QR of the slice
`T_k[:, S + tau_filtered]` of `FoldFactors.training`; the base parameters are those of all folds;
the held-out sum of squares (Nm²) is `|R_k[:, S + tau_recorded] [theta; -1]|²`. The CV error
(Nm) is the root of the mean of the partitions' mean squares.

Rationale: docs/design.md#tuning-by-cross-validation
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ident_framework.identify.geometric_prior import PriorLayout, fit_weights
from ident_framework.identify.tuning.block_factors import FoldFactors
from ident_framework.model.base_parameters import BaseParameters
from ident_framework.triangular import one_blas_thread, solve_upper, spectral_solve, stacked_r

Regulariser = tuple[float, float]  # (ridge, truncate) as shares of the largest singular value
PLAIN: Regulariser = (0.0, 0.0)


@dataclass(frozen=True)
class HeldOut:
    """CV figures of one candidate and regulariser: RMSE (Nm), per-joint RMSE (None unless
    asked for), rank of the base regressor, each fold's RMSE (Nm; NaN: an empty fold)."""

    rmse: float
    rmse_per_joint: np.ndarray | None
    rank: int
    fold_rmse: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def se(self) -> float:
        """Standard error (Nm) of the CV error: the spread of the folds' RMSE / sqrt(folds)."""
        values = self.fold_rmse[np.isfinite(self.fold_rmse)]
        return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


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

    def fold_thetas(k: int, base: BaseParameters, projected: np.ndarray, n_train: int):
        r, prior = base.rank, base.basis.T @ nominal
        train = stacked_r([projected])
        r_w, rhs = train[:r, :r], train[:r, r]
        for i, (ridge, truncate) in enumerate(regularisers):
            if ridge == 0.0 and truncate == 0.0:
                beta = _least_squares(r_w, rhs, prior)
            else:
                beta = spectral_solve(r_w, rhs, prior, ridge, truncate)[0]
            yield i, np.append(base.basis @ beta, -1.0)

    return _cross_validate(factors, columns, tolerance, len(regularisers), per_joint, fold_thetas)


def _cross_validate(
    factors: FoldFactors,
    columns: np.ndarray,
    tolerance: float,
    n_options: int,
    per_joint: bool,
    fold_thetas: Callable[..., Iterator[tuple[int, np.ndarray | None]]],
) -> list[HeldOut]:
    """HeldOut per option; `fold_thetas(k, base, projected, n_train)` gives fold k's option
    index and [theta; -1] (None: no candidate there) from its projected training factor."""
    layout = factors.folds
    test_columns = np.append(columns, factors.tau_recorded)
    sse = np.zeros((n_options, len(layout.cells)))
    sse_joint = np.zeros((n_options, len(layout.cells), factors.n_joints))
    rows = np.array([factors.counts[list(cells)].sum(axis=0) for cells in layout.cells])
    with one_blas_thread():
        base = base_of(factors, columns, tolerance)
        for k, held_cells in enumerate(layout.cells):
            if rows[k].sum() == 0:
                continue
            projected = _project(factors.training[k], factors, columns, base.basis)
            n_train = int(factors.counts.sum() - rows[k].sum())  # every other cell trains
            held = [factors.merged[c][:, test_columns] for c in held_cells]
            for i, augmented in fold_thetas(k, base, projected, n_train):
                if augmented is None:  # a degenerate fold: this option is no candidate
                    sse[i, k] = np.inf
                    continue
                sse[i, k] = _held_out_sse(held, augmented)
                if per_joint:
                    sse_joint[i, k] = _held_out_sse_per_joint(
                        factors, held_cells, test_columns, augmented
                    )
    return _figures(layout, rows, sse, sse_joint if per_joint else None, base.rank)


def base_of(factors: FoldFactors, columns: np.ndarray, tolerance: float) -> BaseParameters:
    """The base parameters of the columns over all folds, from the factor of every row."""
    total = stacked_r([factors.whole[:, columns]])
    return BaseParameters.from_r_factor(total, [str(c) for c in columns], tolerance)


def _project(
    factor: np.ndarray, factors: FoldFactors, columns: np.ndarray, basis: np.ndarray
) -> np.ndarray:
    """A row group's factor in the base parameters: [R[:, S] B | tau_filtered]."""
    return np.column_stack([factor[:, columns] @ basis, factor[:, factors.tau_filtered]])


def _held_out_sse(held: list[np.ndarray], augmented: np.ndarray) -> float:
    """Sum of squares (Nm²) of the held-out cells' factors `held` at [theta; -1]."""
    return sum(float(np.sum((h @ augmented) ** 2)) for h in held)


def _held_out_sse_per_joint(
    factors: FoldFactors, cells: tuple[int, ...], test_columns: np.ndarray, augmented: np.ndarray
) -> np.ndarray:
    """(n,) the same per joint, from the cells' per-joint factors."""
    out = np.zeros(factors.n_joints)
    for c in cells:
        for j, joint_factor in enumerate(factors.per_joint[c]):
            out[j] += float(np.sum((joint_factor[:, test_columns] @ augmented) ** 2))
    return out


def _least_squares(r_w: np.ndarray, rhs: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """The least-squares solve of a fold; where its rows leave a base direction unexcited, the
    prior (pseudo-inverse)."""
    try:
        return solve_upper(r_w, rhs)
    except np.linalg.LinAlgError:
        return spectral_solve(r_w, rhs, prior)[0]


def _figures(
    layout, rows: np.ndarray, sse: np.ndarray, sse_joint: np.ndarray | None, rank: int
) -> list[HeldOut]:
    """HeldOut per option from the folds' sums of squares `sse` (options, folds) (and per
    joint, (options, folds, n)) and held-out rows `rows` (folds, n)."""
    partition = np.asarray(layout.partition)
    parts = range(layout.n_partitions)
    count = rows.sum(axis=1)
    out = []
    for i in range(len(sse)):
        mse = np.mean(
            [sse[i, partition == p].sum() / max(count[partition == p].sum(), 1) for p in parts]
        )
        joints = None
        if sse_joint is not None:
            joints = np.sqrt(
                np.mean(
                    [
                        sse_joint[i, partition == p].sum(axis=0)
                        / np.maximum(rows[partition == p].sum(axis=0), 1)
                        for p in parts
                    ],
                    axis=0,
                )
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            folds = np.where(count > 0, np.sqrt(sse[i] / np.maximum(count, 1)), np.nan)
        out.append(HeldOut(float(np.sqrt(mse)), joints, rank, folds))
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
    """`cross_validate` with the log-det prior toward `nominal` (`geometric_prior.py`) for each
    of `weights` (solved from the largest down); `signed` marks the parameters kept > 0. Each
    fold's χ² is in units of its training rows' least-squares residual variance."""
    fit_columns = np.append(columns, factors.tau_filtered)
    order = np.argsort(weights)[::-1]
    prior = PriorLayout(factors.n_joints, np.asarray(nominal, dtype=float), signed)
    start = None

    def fold_thetas(k: int, base: BaseParameters, projected: np.ndarray, n_train: int):
        nonlocal start
        rank = base.rank
        rss = float(stacked_r([projected])[rank, rank] ** 2)
        sigma2 = max(rss / max(n_train - rank, 1), 1e-300)
        train = stacked_r([factors.training[k][:, fit_columns]])
        fits = fit_weights(train, sigma2, prior, [weights[i] for i in order], start)
        start = None if fits[-1] is None else fits[-1].theta  # the next fold's start
        for i, fit in zip(order, fits, strict=True):
            yield i, None if fit is None else np.append(fit.theta, -1.0)

    return _cross_validate(factors, columns, tolerance, len(weights), per_joint, fold_thetas)
