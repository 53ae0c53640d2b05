"""Excitation quality: the condition number of the base regressor of a candidate motion.

cond(W V_r): the unscaled 2-norm condition number of the stacked base regressor of the given
samples, V_r the structural base-parameter projection found once from random states
(`base_parameters.py`); the augmented objective stacks earlier recordings with the candidate.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ident_framework.data.dataset import Dataset
from ident_framework.hookspecs import ConditionObjective
from ident_framework.model.base_parameters import BaseParameters, TriangularAccumulator
from ident_framework.model.regressor import RegressorBuilder

_BLOCK_ROWS = 48  # rows per block of the batched products (small: one BLAS thread each)
_GRAM_SAFE_COND = 1e4  # below it the Gram matrix gives cond to ~1e-6 relative; above: SVD


def structural_base_parameters(
    builder: RegressorBuilder, seed: int = 0, n_random: int = 1000, chunk: int = 250
) -> BaseParameters:
    """Base parameters of the regressor structure, from `n_random` random joint states:
    positions uniform within the position limits (rad), velocities and accelerations uniform
    within ± their limits (rad/s, rad/s²)."""
    limits = builder.robot.limits
    rng = np.random.default_rng(seed)
    n = builder.robot.n_joints
    low, high = limits.position[:, 0], limits.position[:, 1]
    accumulator = TriangularAccumulator(builder.n_parameters)
    for start in range(0, n_random, chunk):
        m = min(chunk, n_random - start)
        q = rng.uniform(low, high, size=(m, n))
        dq = rng.uniform(-1.0, 1.0, size=(m, n)) * limits.velocity
        ddq = rng.uniform(-1.0, 1.0, size=(m, n)) * limits.acceleration
        accumulator.add(builder.compute(q, dq, ddq).reshape(m * n, -1))
    return BaseParameters.from_r_factor(accumulator.factor, builder.parameter_names)


def _project(rows: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """(B, _BLOCK_ROWS, r) blocks of rows @ projection, zero-padded at the end."""
    n_rows, n_columns = rows.shape
    n_blocks = -(-n_rows // _BLOCK_ROWS)
    padded = np.zeros((n_blocks * _BLOCK_ROWS, n_columns))
    padded[:n_rows] = rows
    return padded.reshape(n_blocks, _BLOCK_ROWS, n_columns) @ projection


def base_regressor_condition(blocks: np.ndarray) -> float:
    """2-norm condition number of a stacked base regressor given as (rows, r) or as row blocks
    (B, m, r); inf when rank-deficient.

    Uses the eigenvalues of the (r, r) Gram matrix when that is accurate, an SVD otherwise."""
    blocks = blocks if blocks.ndim == 3 else blocks[None]
    n_columns = blocks.shape[-1]
    if blocks.shape[0] * blocks.shape[1] < n_columns:
        return float("inf")
    gram = (blocks.transpose(0, 2, 1) @ blocks).sum(axis=0)
    eigen = np.linalg.eigvalsh(gram)
    if eigen[0] > 0.0 and eigen[-1] < _GRAM_SAFE_COND**2 * eigen[0]:
        return float(np.sqrt(eigen[-1] / eigen[0]))
    singular = np.linalg.svd(blocks.reshape(-1, n_columns), compute_uv=False)
    return float(singular[0] / singular[-1]) if singular[-1] > 0.0 else float("inf")


def make_condition_objective(
    builder: RegressorBuilder, seed: int = 0, n_random: int = 1000
) -> ConditionObjective:
    """Callable `objective(q, dq, ddq) -> cond(W V_r)` for samples of shape (N, n) in rad,
    rad/s, rad/s²; V_r is the structural base projection found once from `n_random` random
    states (seeded by `seed`). The callable carries it as attribute `base_parameters`."""
    base = structural_base_parameters(builder, seed=seed, n_random=n_random)
    projection = np.ascontiguousarray(base.basis)

    def objective(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> float:
        regressor = builder.compute(q, dq, ddq)
        return base_regressor_condition(
            _project(regressor.reshape(-1, regressor.shape[-1]), projection)
        )

    objective.base_parameters = base  # type: ignore[attr-defined]
    return objective


def make_augmented_condition_objective(
    builder: RegressorBuilder,
    previous: Dataset,
    expected_samples: float,
    seed: int = 0,
    chunk_size: int = 2000,
) -> ConditionObjective:
    """Callable `objective(q, dq, ddq) -> cond([W_prev; w W_new] V_r)` of the `previous`
    (preprocessed) recordings stacked with a candidate motion's samples (N, n) in rad, rad/s,
    rad/s², weighted by w = sqrt(expected_samples / m) for its m samples; V_r as in
    `make_condition_objective`."""
    base = structural_base_parameters(builder, seed=seed)
    projection = np.ascontiguousarray(base.basis)
    accumulator = TriangularAccumulator(projection.shape[1])
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, previous.n_samples, chunk_size):
            rows = slice(start, start + chunk_size)
            regressor = builder.compute(previous.q[rows], previous.dq[rows], previous.ddq[rows])
            accumulator.add(regressor.reshape(-1, regressor.shape[-1]) @ projection)
    previous_blocks = _project(accumulator.factor, np.eye(projection.shape[1]))

    def objective(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> float:
        regressor = builder.compute(q, dq, ddq)
        weight = np.sqrt(expected_samples / len(q))
        new = _project(regressor.reshape(-1, regressor.shape[-1]), weight * projection)
        return base_regressor_condition(np.concatenate([previous_blocks, new]))

    objective.base_parameters = base  # type: ignore[attr-defined]
    return objective
