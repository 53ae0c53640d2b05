"""Held-out folds of the `bpnn` residual learner's acceptance: which identification samples
each fold's networks may train on and which they are judged on.

Several recordings: fold r holds recording r out and trains on the others (leave one recording
out), so the learner is judged on motions it never saw. One recording: its time blocks alone
are no test (a periodic excitation repeats the same states: the tail of a Fourier recording is
a copy of its first period), so one fold holds out a *region of the input space*: per joint,
the samples' standardised features are clustered (k-means, k = round(1 / holdout_fraction),
seeded) and the cluster whose centre lies farthest from the mean is held out — states at the
edge of what was recorded, which the networks must extrapolate to, as a motion over the full
workspace asks of them (spatial block cross-validation). A second fold holds out the last
`holdout_fraction` of the recording in time: on a periodic excitation a weak test, but on a
long real log a later part of the session (friction that drifts as the joints warm up). A
joint must pass every fold (`bpnn_acceptance.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fold:
    """One fold: `fit` (n, N) bool, the samples each joint's networks train on (with their
    early-stopping part); `held_out` (n, N) bool, the samples they are judged on."""

    fit: np.ndarray
    held_out: np.ndarray
    kind: str  # "recording <r>" or "region"


def recording_folds(recording: np.ndarray, n_joints: int) -> list[Fold]:
    """Leave one recording out: one fold per recording id in `recording` (N,)."""
    folds = []
    for r in np.unique(recording):
        held = np.broadcast_to(recording == r, (n_joints, recording.size)).copy()
        folds.append(Fold(~held, held, f"recording {int(r)}"))
    return folds


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


def time_fold(n_joints: int, n_samples: int, holdout_fraction: float) -> Fold:
    """Hold out the last `holdout_fraction` of the samples in time (every joint)."""
    held = np.zeros((n_joints, n_samples), dtype=bool)
    held[:, int(round(n_samples * (1.0 - holdout_fraction))) :] = True
    return Fold(~held, held, "time tail")


def folds_for(
    recording: np.ndarray, standardised: np.ndarray, holdout_fraction: float, seed: int
) -> list[Fold]:
    """Leave-one-recording-out folds when there are several recordings, else the region fold
    and the time-tail fold."""
    if np.unique(recording).size > 1:
        return recording_folds(recording, standardised.shape[0])
    n, n_samples, _ = standardised.shape
    return [
        region_fold(standardised, holdout_fraction, seed),
        time_fold(n, n_samples, holdout_fraction),
    ]


EARLY_STOPPING_BLOCKS = 50  # contiguous time blocks of a joint's fit samples


def early_stopping_part(fit: np.ndarray, fraction: float) -> np.ndarray:
    """(n, N) bool: per joint, the early-stopping part of its `fit` samples (the rest trains):
    the fit samples in time order cut into `EARLY_STOPPING_BLOCKS` contiguous blocks, of which
    `fraction` spread evenly over the recording(s) (for 0.2: every fifth block). Not the time
    tail: on a Fourier excitation that is the ramp to rest, slow samples unlike the rest, on
    which no epoch may look better than the untrained network (measured: a joint's network
    kept epoch 0 and learnt nothing)."""
    rank = np.cumsum(fit, axis=1) - 1  # 0-based position among the joint's fit samples
    total = np.maximum(fit.sum(axis=1, keepdims=True), 1)
    block = (rank * EARLY_STOPPING_BLOCKS) // total
    chosen = np.floor((block + 1) * fraction + 1e-9) - np.floor(block * fraction + 1e-9) >= 1
    return fit & chosen
