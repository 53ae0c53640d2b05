"""Smooth multi-sine joint motions with exact derivatives, for known-truth tests and
benchmarks (data whose accelerations are known, so no differentiation error enters)."""

from __future__ import annotations

import numpy as np


def multisine(
    t: np.ndarray,
    n_joints: int,
    seed: int,
    phase_seed: int | None = None,
    freq_hz: tuple[float, float] = (0.05, 0.4),
    amp_rad: tuple[float, float] = (0.2, 0.8),
    n_sines: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (rad), dq (rad/s), ddq (rad/s²), each (len(t), n_joints), at times t (s): per joint
    the sum of `n_sines` sines with frequencies and amplitudes drawn uniformly from `seed`
    (then the phases, unless `phase_seed` draws them separately: the same kind of motion
    over the same states, but a different path)."""
    rng = np.random.default_rng(seed)
    freq = rng.uniform(*freq_hz, (n_sines, n_joints))
    amp = rng.uniform(*amp_rad, (n_sines, n_joints))
    phase_rng = rng if phase_seed is None else np.random.default_rng(phase_seed)
    phase = phase_rng.uniform(0.0, 2.0 * np.pi, (n_sines, n_joints))
    w = 2.0 * np.pi * freq
    arg = w[None] * np.asarray(t, dtype=float)[:, None, None] + phase[None]
    q = np.sum(amp * np.sin(arg), axis=1)
    dq = np.sum(amp * w * np.cos(arg), axis=1)
    ddq = -np.sum(amp * w**2 * np.sin(arg), axis=1)
    return q, dq, ddq
