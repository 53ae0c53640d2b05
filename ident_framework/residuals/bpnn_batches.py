"""Batches of the `bpnn` residual learner's networks: every network (joint, fold, member;
joint-major, K = n·F·M) gets its own samples, gathered into one (K, L, ...) array padded to
one length L by repeating them (a padding weight of 0 marks the repeats where it matters)."""

from __future__ import annotations

import numpy as np


def sample_index(masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per joint and fold the samples of `masks[fold][joint]` ((n, N) bool each), padded to one
    length L by repeating them: index (n, F, L) and weight (n, F, L) (1 a sample, 0 padding)."""
    n = masks[0].shape[0]
    length = max(1, max(int(m.sum(axis=1).max()) for m in masks))
    index = np.zeros((n, len(masks), length), dtype=np.int64)
    weight = np.zeros((n, len(masks), length), dtype=np.float32)
    for f, mask in enumerate(masks):
        for j in range(n):
            rows = np.flatnonzero(mask[j])
            if rows.size:
                weight[j, f, : rows.size] = 1.0
                index[j, f] = np.resize(rows, length)
    return index, weight


def per_network(values: np.ndarray, members: int) -> np.ndarray:
    """(n, F, L, ...) per joint and fold -> (K, L, ...) per network (members repeated)."""
    repeated = np.repeat(values[:, :, None], members, axis=2)
    return np.ascontiguousarray(repeated.reshape(-1, *values.shape[2:]))


def gather(
    x: np.ndarray, y: np.ndarray, masks: list[np.ndarray], members: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per network its samples: x (K, L, f) of `x` (n, N, f), y (K, L, 1) of `y` (n, N),
    w (K, L, 1) their weights (0: padding)."""
    index, weight = sample_index(masks)
    joint = np.arange(x.shape[0])[:, None, None]
    return (
        per_network(x[joint, index], members),
        per_network(y[joint, index][..., None], members),
        per_network(weight[..., None], members),
    )


def gather_flags(flags: list[np.ndarray], masks: list[np.ndarray], members: int) -> np.ndarray:
    """(K, L, 1) of per-fold flags ((n, N) bool each) at each network's samples of `masks`,
    ordered as `gather` orders them."""
    index, _ = sample_index(masks)
    joint = np.arange(flags[0].shape[0])[:, None]
    picked = np.stack([flag[joint, index[:, f]] for f, flag in enumerate(flags)], axis=1)
    return per_network(picked[..., None], members)
