"""How a stage of the search picks among its candidates, and how stable the pick is.

Rules: "min", the lowest CV RMSE (the incumbent, listed first, wins ties); "one_se", the
simplest candidate whose CV RMSE is within one standard error of the lowest (SE: the std of the
best candidate's per-fold RMSE over sqrt(folds)), then the lowest CV RMSE; "one_se_paired", the
same with each candidate's SE of its per-fold difference to the best.

"Simpler" (`complexity`): fewer columns, fewer joints with a smooth friction shape, no
Coulomb dead band, stronger regularisation, the configured preprocessing; in that order.
Stability: how many folds alone would pick the stage's pick, and its rank per fold.

Rationale: docs/design.md#tuning-by-cross-validation
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

RULES = ("min", "one_se", "one_se_paired")


def complexity(candidate: Any, configured: tuple[float, bool]) -> tuple[float, ...]:
    """The order of simplicity above of a `search.Candidate` (smaller: simpler);
    `configured`: the configured (cut-off Hz, measured velocity)."""
    columns = int(candidate.armature) + int(candidate.torque_offset) + int(candidate.temperature)
    columns += int(candidate.load) + sum(1 for v in candidate.stribeck_velocity if v > 0)
    tanh = sum(1 for w in (*candidate.tanh_width, *candidate.saturation_width) if w > 0)
    tanh += sum(1 for w in candidate.acceleration_lead if w > 0)
    dead_band = float(candidate.dead_band > 0)
    regularisation = -max(candidate.ridge, candidate.truncate, candidate.weight)
    preprocessing = float((candidate.lowpass_hz, candidate.measured_velocity) != configured)
    return (columns, tanh, dead_band, regularisation, preprocessing)


@dataclass(frozen=True)
class Decision:
    """One stage's choice: `rows` the log rows of its candidates (the incumbent first),
    `picked` the index (into rows) chosen, `best` the index of the lowest CV RMSE, `se` (Nm)
    the best's standard error, `fold_wins` per candidate the folds where it is the lowest,
    `picked_rank` per fold the pick's rank there (1: the fold's best)."""

    stage: str
    rows: tuple[int, ...]
    picked: int
    best: int
    se: float
    fold_wins: tuple[int, ...]
    picked_rank: tuple[int, ...]

    @property
    def folds(self) -> int:
        return len(self.picked_rank)


def choose(
    rmse: np.ndarray,
    se: np.ndarray,
    simplicity: list[tuple],
    rule: str,
    fold_rmse: np.ndarray | None = None,
) -> tuple[int, int]:
    """(picked, best) indices among candidates with CV RMSE `rmse` (m,), SE `se` (m,),
    `simplicity` keys (`complexity`) and per-fold RMSE `fold_rmse` (m, folds; one_se_paired
    only): `best` the lowest RMSE (first of ties), `picked` by `rule`."""
    rmse = np.asarray(rmse, dtype=float)
    best = int(np.argmin(rmse))
    if rule == "min":
        return best, best
    if rule == "one_se":
        margin = np.full(len(rmse), se[best])
    elif rule == "one_se_paired":
        margin = paired_se(np.asarray(fold_rmse, dtype=float), best)
    else:
        raise ValueError(f"rule must be one of {list(RULES)}, got {rule!r}")
    within = np.flatnonzero(rmse <= rmse[best] + margin)
    picked = min(within, key=lambda i: (simplicity[i], rmse[i], i))
    return int(picked), best


def difference_to_first(folds: np.ndarray) -> list[tuple[float, float]]:
    """Per candidate (row of `folds`, per-fold RMSE in Nm, NaN: empty), the mean of its
    per-fold difference to the first candidate's and the standard error of that mean."""
    finite = np.all(np.isfinite(folds), axis=0)
    difference, count = (folds - folds[0])[:, finite], int(finite.sum())
    return [
        (float(np.mean(d)), float(np.std(d, ddof=1) / np.sqrt(count)) if count > 1 else 0.0)
        for d in difference
    ]


def paired_se(fold_rmse: np.ndarray, best: int) -> np.ndarray:
    """(m,) Nm: per candidate, the standard error of its per-fold RMSE minus the best's
    (empty folds left out; 0 for the best itself and with fewer than two folds)."""
    figures = fold_rmse[:, np.all(np.isfinite(fold_rmse), axis=0)]
    if figures.shape[1] < 2:
        return np.zeros(len(fold_rmse))
    return np.std(figures - figures[best], axis=1, ddof=1) / np.sqrt(figures.shape[1])


def stability(fold_rmse: np.ndarray, picked: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(folds won per candidate, the pick's rank per fold) from `fold_rmse` (m, folds); empty
    folds (NaN) are left out."""
    figures = np.asarray(fold_rmse, dtype=float)
    valid = np.all(np.isfinite(figures), axis=0)
    figures = figures[:, valid]
    if figures.size == 0:
        return (0,) * len(fold_rmse), ()
    wins = np.bincount(np.argmin(figures, axis=0), minlength=len(figures))
    ranks = 1 + np.sum(figures < figures[picked], axis=0)
    return tuple(int(w) for w in wins), tuple(int(r) for r in ranks)


def decide(
    log: Any,
    stage: str,
    candidates: list[Any],
    figures: list[Any],
    rule: str,
    configured: tuple[float, bool],
) -> int:
    """The index picked among `candidates` (`search.Candidate`, the incumbent first) with
    their `HeldOut` figures; the `Decision` is recorded in `log`, folds won in each row."""
    rmse = np.array([f.rmse for f in figures])
    se = np.array([f.se for f in figures])
    folds = np.array([f.fold_rmse for f in figures])
    simplicity = [complexity(c, configured) for c in candidates]
    picked, best = choose(rmse, se, simplicity, rule, folds)
    wins, ranks = stability(folds, picked)
    rows = tuple(log.row_of(c, f.rmse) for c, f in zip(candidates, figures, strict=True))
    log.decisions.append(Decision(stage, rows, picked, best, float(se[best]), wins, ranks))
    for row, won in zip(rows, wins, strict=True):
        log.rows[row]["fold_wins"] = f"{won}/{len(ranks)}"
    return picked


def stability_summary(log: Any) -> list[dict[str, Any]]:
    """Per stage decided (in search order): the pick's and the best's CV RMSE (Nm), the best's
    SE, in how many folds the pick would have been that fold's best, and its rank per fold."""
    out = []
    for d in log.decisions:
        picked, best = log.rows[d.rows[d.picked]], log.rows[d.rows[d.best]]
        out.append(
            {
                "stage": d.stage,
                "candidates": len(d.rows),
                "picked_cv_rmse": picked["cv_rmse"],
                "best_cv_rmse": best["cv_rmse"],
                "se": d.se,
                "picked_is_best": d.picked == d.best,
                "picked_fold_wins": d.fold_wins[d.picked],
                "folds": d.folds,
                "picked_rank_per_fold": list(d.picked_rank),
            }
        )
    return out
