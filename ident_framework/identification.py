"""From a preprocessed dataset to the least-squares problem in base parameters, in chunks.

One pass over the data accumulates, per joint, the triangular factor of [Y_j | tau_j] in the
standard parameters (memory independent of the number of samples). The base parameters come
from the SVD of the stacked factor; the per-joint factors are then projected onto them, so
the estimators never need the regressor in memory. Estimators that work sample by sample get
a re-stream of base-regressor chunks.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from tqdm.auto import tqdm

from .base_parameters import BaseParameters, TriangularAccumulator, condition_number
from .dataset import Dataset
from .interfaces import LinearProblem
from .regressor import RegressorBuilder


def chunk_slices(n_samples: int, chunk_size: int) -> Iterator[slice]:
    for start in range(0, n_samples, chunk_size):
        yield slice(start, min(start + chunk_size, n_samples))


def _stack_factors(factors: list[np.ndarray]) -> np.ndarray:
    return np.linalg.qr(np.vstack(factors), mode="r")


def build_problem(
    builder: RegressorBuilder,
    data: Dataset,
    chunk_size: int,
    tolerance: float,
    progress: bool = True,
) -> tuple[LinearProblem, BaseParameters, float]:
    """(least-squares problem in base parameters, base parameters, cond of W·V_r)."""
    if data.ddq is None:
        raise ValueError("accelerations missing: preprocess the dataset first")
    n, p = data.n_joints, builder.n_parameters
    accumulators = [TriangularAccumulator(p + 1) for _ in range(n)]
    slices = list(chunk_slices(data.n_samples, chunk_size))
    for rows in tqdm(slices, desc="regressor", unit="chunk", disable=not progress, leave=False):
        y = builder.compute(data.q[rows], data.dq[rows], data.ddq[rows])
        for j, accumulator in enumerate(accumulators):
            accumulator.add(np.column_stack([y[:, j, :], data.tau[rows, j]]))
    joint_factors = [a.factor for a in accumulators]
    total = _stack_factors(joint_factors)
    base = BaseParameters.from_r_factor(total[:p, :p], builder.parameter_names, tolerance)
    cond = condition_number(total[:p, :p], base.projection)

    projection = np.zeros((p + 1, base.rank + 1))
    projection[:p, : base.rank] = base.projection
    projection[p, base.rank] = 1.0
    base_factors = [np.linalg.qr(f @ projection, mode="r") for f in joint_factors]

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for rows in chunk_slices(data.n_samples, chunk_size):
            y = builder.compute(data.q[rows], data.dq[rows], data.ddq[rows])
            yield y @ base.projection, data.tau[rows]

    problem = LinearProblem(base_factors, data.n_samples, base.names, chunks)
    return problem, base, cond


def predict_torque(
    builder: RegressorBuilder, data: Dataset, theta: np.ndarray, chunk_size: int
) -> np.ndarray:
    """(N, n) model torque Y(q, dq, ddq) @ theta in Nm, theta in standard parameters."""
    out = np.empty_like(data.tau)
    for rows in chunk_slices(data.n_samples, chunk_size):
        out[rows] = builder.compute(data.q[rows], data.dq[rows], data.ddq[rows]) @ theta
    return out
