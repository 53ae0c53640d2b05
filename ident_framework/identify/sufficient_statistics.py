"""The sufficient statistics of the least-squares identification of one recording (or part),
their merge and their file (`statistics.npz`): the map and reduce of exact distributed
identification.

Per joint j, the triangular factor R_j of [Y_j | tau_j] in the standard parameters
((p+1, p+1): R_jᵀR_j = [Y_j | tau_j]ᵀ[Y_j | tau_j]), the number of samples and Σ tau_j, Σ tau_j²
(Nm, Nm²); the same factor over the rows where joint j moves slowly (`metrics.slow_rows`, the
torque as recorded) and their count, for metrics.json's `slow` fit. Stacking the factors of
several parts and factoring again gives the factor of all their rows, so every quadratic fit
and the training RMSE and R² are as from one pass.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.identify.linear_problem import (
    JointAccumulators,
    chunk_at,
    chunk_slices,
    recording_friction,
    stack_factors,
)
from ident_framework.identify.metrics import slow_metrics_of, slow_rows
from ident_framework.triangular import one_blas_thread

FORMAT = "ident_framework.sufficient_statistics/2"
# what must agree between parts for their statistics to describe one least-squares problem
RECORDED = ("recorded_factors", "recorded_tau_sum", "recorded_tau_square_sum")
SLOW = ("slow_factors", "slow_samples")
COMPATIBILITY_KEYS = ("robot", "joint_names", "parameter_names", "friction", "regressor",
                      "preprocessing")  # fmt: skip


@dataclass
class SufficientStatistics:
    """r_factors: (n, p+1, p+1) per-joint factors of [Y_j | tau_j] with the low-passed torque;
    n_samples; tau_sum, tau_square_sum: (n,) Σ tau (Nm) and Σ tau² (Nm²) per joint; info: what
    produced them (COMPATIBILITY_KEYS, and per part its source, index, rows and times);
    recorded_*: the same three of the torque as recorded (None: tau is as recorded);
    slow_factors (n, p+1, p+1), slow_samples (n,): per joint the factor of its slow rows
    against the torque as recorded, and their number (None: not collected)."""

    r_factors: np.ndarray
    n_samples: int
    tau_sum: np.ndarray
    tau_square_sum: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)
    recorded_factors: np.ndarray | None = None
    recorded_tau_sum: np.ndarray | None = None
    recorded_tau_square_sum: np.ndarray | None = None
    slow_factors: np.ndarray | None = None
    slow_samples: np.ndarray | None = None

    @property
    def joint_factors(self) -> list[np.ndarray]:
        return list(self.r_factors)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the statistics to `path` (.npz), atomically (a temporary name, then renamed)."""
        target = Path(os.fspath(path))
        partial = target.with_name(target.name + ".partial.npz")
        np.savez_compressed(
            partial,
            r_factors=self.r_factors,
            n_samples=np.asarray(self.n_samples),
            tau_sum=self.tau_sum,
            tau_square_sum=self.tau_square_sum,
            info=np.asarray(json.dumps({"format": FORMAT, **self.info})),
            **{n: getattr(self, n) for n in RECORDED + SLOW if getattr(self, n) is not None},
        )
        os.replace(partial, target)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SufficientStatistics:
        try:
            with np.load(os.fspath(path), allow_pickle=False) as saved:
                info = json.loads(str(saved["info"]))
                if info.pop("format", None) != FORMAT:
                    raise ValueError(f"not a {FORMAT} file")
                return cls(
                    saved["r_factors"].astype(float),
                    int(saved["n_samples"]),
                    saved["tau_sum"].astype(float),
                    saved["tau_square_sum"].astype(float),
                    info,
                    *(saved[name].astype(float) if name in saved else None for name in RECORDED),
                    *(saved[name] if name in saved else None for name in SLOW),
                )
        except (OSError, KeyError, ValueError) as error:
            raise UserError(
                f"{path} is not a statistics file of a factor job ({error}); give the folders "
                "or statistics.npz files that `mode=factor` wrote."
            ) from None

    def slow_fit(self, theta: np.ndarray, velocity_limits: np.ndarray) -> dict[str, Any] | None:
        """`metrics.slow_motion_metrics` of standard parameters `theta`, from the slow rows'
        factors; None without them."""
        if self.slow_factors is None or self.slow_samples is None:
            return None
        extended = np.append(np.asarray(theta, dtype=float), -1.0)
        squared = np.array([float(np.sum((r @ extended) ** 2)) for r in self.slow_factors])
        return slow_metrics_of(squared, self.slow_samples, velocity_limits)

    def fit(self, theta: np.ndarray, filtered: bool = False) -> dict[str, Any]:
        """The training fit of standard parameters `theta` against the torque as recorded
        (`filtered`: the low-passed one), as `metrics.torque_metrics` computes it from the
        samples: SSE_j = |R_j [theta; -1]|², SST_j = Σ tau² - (Σ tau)² / N."""
        recorded = not filtered and self.recorded_factors is not None
        factors = self.recorded_factors if recorded else self.r_factors
        tau_sum = self.recorded_tau_sum if recorded else self.tau_sum
        square_sum = self.recorded_tau_square_sum if recorded else self.tau_square_sum
        extended = np.append(np.asarray(theta, dtype=float), -1.0)
        sse = np.array([float(np.sum((r @ extended) ** 2)) for r in factors])
        sst = square_sum - tau_sum**2 / self.n_samples
        n_joints = len(sse)
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(sst > 0, 1.0 - sse / sst, np.nan)
        return {
            "rmse": float(np.sqrt(sse.sum() / (self.n_samples * n_joints))),
            "r2": float(1.0 - sse.sum() / sst.sum()) if sst.sum() > 0 else None,
            "rmse_per_joint": [float(v) for v in np.sqrt(sse / self.n_samples)],
            "r2_per_joint": [None if np.isnan(v) else float(v) for v in r2],
        }


def statistics_of(
    builder, data, chunk_size: int, info: dict[str, Any], velocity_limits: np.ndarray
) -> SufficientStatistics:
    """The statistics of a preprocessed dataset for `builder`'s regressor (linear friction
    models only), in one pass: each chunk's regressor rows are factored against the low-passed
    torque, the torque as recorded when it differs, and per joint that joint's slow rows
    (`velocity_limits`, rad/s) against the torque as recorded."""
    friction = recording_friction(builder, data)
    tau = np.asarray(data.tau, dtype=float)
    recorded = np.asarray(data.measured_torque, dtype=float)
    separate = not np.array_equal(recorded, data.tau)
    slow = slow_rows(data.dq, velocity_limits)
    filtered = JointAccumulators(builder)
    as_recorded = JointAccumulators(builder) if separate else None
    slow_part = JointAccumulators(builder)
    with one_blas_thread():  # small QR factorisations: BLAS threads only contend
        for rows in chunk_slices(data.n_samples, chunk_size):
            projected, own = filtered.rows_of(chunk_at(data, rows, friction))
            torque, measured, moving = tau[rows], recorded[rows], slow[rows]
            for j, block in enumerate(projected):
                filtered.accumulators[j].add_blocks(block, own[:, j], torque[:, j])
                if as_recorded is not None:
                    as_recorded.accumulators[j].add_blocks(block, own[:, j], measured[:, j])
                if moving[:, j].any():
                    at = moving[:, j]
                    slow_part.accumulators[j].add_blocks(block[at], own[at, j], measured[at, j])
    factors = np.stack(filtered.factors())
    extra: tuple[np.ndarray | None, ...] = (None, None, None)
    if as_recorded is not None:
        extra = (np.stack(as_recorded.factors()), recorded.sum(axis=0), np.sum(recorded**2, axis=0))
    return SufficientStatistics(
        factors, data.n_samples, tau.sum(axis=0), np.sum(tau**2, axis=0), info, *extra,
        np.stack(slow_part.factors()), slow.sum(axis=0),
    )  # fmt: skip


def merge(parts: list[SufficientStatistics], names: list[str]) -> SufficientStatistics:
    """The statistics of all rows of `parts`; UserError naming the file (`names`) when parts
    disagree on a COMPATIBILITY_KEYS entry, or a part is missing or given twice."""
    if not parts:
        raise UserError("No statistics to combine: give the factor jobs' outputs.")
    first = parts[0].info
    for part, name in zip(parts[1:], names[1:], strict=True):
        for key in COMPATIBILITY_KEYS:
            if part.info.get(key) != first.get(key):
                raise UserError(
                    f"{name} was factored with another {key} ({part.info.get(key)!r}) than "
                    f"{names[0]} ({first.get(key)!r}): the parts of one identification must "
                    "share robot, friction model, regressor and preprocessing settings."
                )
    _check_parts([p.info for p in parts], names)
    info = {key: first.get(key) for key in COMPATIBILITY_KEYS}
    info["parts"] = [p.info.get("part") for p in parts]

    def merged(factors: str, tau_sum: str, square_sum: str) -> tuple[np.ndarray, ...]:
        stacks = [getattr(p, factors) for p in parts]
        joints = [stack_factors([f[j] for f in stacks]) for j in range(stacks[0].shape[0])]
        sums = [np.sum([getattr(p, name) for p in parts], axis=0) for name in (tau_sum, square_sum)]
        return np.stack(joints), *sums

    factors, tau_sum, square_sum = merged("r_factors", "tau_sum", "tau_square_sum")
    recorded: tuple[np.ndarray | None, ...] = (None, None, None)
    if all(p.recorded_factors is not None for p in parts):
        recorded = merged(*RECORDED)
    slow: tuple[np.ndarray | None, ...] = (None, None)
    if all(p.slow_factors is not None for p in parts):
        n_joints = parts[0].slow_factors.shape[0]
        slow = (
            np.stack([stack_factors([p.slow_factors[j] for p in parts]) for j in range(n_joints)]),
            np.sum([p.slow_samples for p in parts], axis=0),
        )
    n_samples = sum(p.n_samples for p in parts)
    return SufficientStatistics(factors, n_samples, tau_sum, square_sum, info, *recorded, *slow)


def _check_parts(infos: list[dict[str, Any]], names: list[str]) -> None:
    """Every part of each recording once: no duplicate, none missing."""
    seen: dict[tuple[str, int], str] = {}
    counts: dict[str, int] = {}
    for info, name in zip(infos, names, strict=True):
        part = info.get("part") or {}
        key = (str(part.get("source")), int(part.get("index", 0)))
        if key in seen:
            raise UserError(
                f"{name} and {seen[key]} hold the same part {key[1]} of {key[0]}: give each "
                "factor job's statistics once."
            )
        seen[key] = name
        counts[key[0]] = int(part.get("count", 1))
    for source, count in counts.items():
        missing = sorted(set(range(count)) - {i for s, i in seen if s == source})
        if missing:
            raise UserError(
                f"Parts {missing} of {count} of {source} are missing from the statistics given: "
                "combine them all (a part left out would silently drop its samples)."
            )
