"""FIGAROH's own settings chosen by time-blocked cross-validation on the identification data
(run in FIGAROH's venv: numpy only besides the driver's FIGAROH objects).

What is chosen (`Setting`): the Butterworth cut-off (Hz), the torque offset per joint on / off,
and the edge trim (samples dropped at each end of the trajectory after FIGAROH's filters, as
FIGAROH's TX40 example drops its border). The validation file is never read here: the drivers
call this before they configure it.

Folds: one recording: `folds` contiguous blocks of its rows; several recordings (joined end to
end, as FIGAROH takes one trajectory): one fold per recording. The rows within `guard` samples
of a held-out block are in no fold's training rows. A fold fit is FIGAROH's own workflow: the
driver's BaseIdentification subclass filters the whole trajectory and builds its regressor
(initialize(), once per setting), and for each fold solve() fits on the training rows through
FIGAROH's valid-sample mask (`_sample_mask`, issue 55 of FIGAROH: filtering ran on the full
signal, masked samples are left out where the regressor rows are stacked, also after
decimation). The held-out rows of the filtered trajectory are then FIGAROH's validation data
(`_val_processed_data`): its `_compute_validation_metrics` builds their regressor and predicts
them with the fold's base parameters (`tau_identified_per_joint`), scored against the torque as
FIGAROH read it (no filter on torque). Every setting is scored on the same rows:
the held-out rows farther than the grid's largest trim from the trajectory's ends (a setting
that trims more would otherwise be scored on fewer, easier rows).

Search (the grid is too costly to run whole: one FIGAROH solve of a 5,000-sample KUKA log takes
2-4 s here): stage 1 every cut-off x offset on/off at the settling trim; stage 2 the chosen
cut-off and offset at the other trims; the fixed setting is always scored too. `full=True`
runs the whole grid.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

CUTOFFS_HZ = (2.5, 5.0, 10.0, 20.0, 40.0)
MEDIAN_WINDOW = 5  # FIGAROH's _apply_filters median filter (med_fil default)
MAX_TRIM_SHARE = 0.1  # a trim above this share of the rows at each end is not tried


@dataclass(frozen=True)
class Setting:
    cutoff_hz: float
    offset: bool
    trim: int  # samples dropped at each end after filtering

    def label(self) -> str:
        return f"{self.cutoff_hz:g} Hz, offset {'on' if self.offset else 'off'}, trim {self.trim}"


def settling_samples(cutoff_hz: float, fs: float, order: int, from_position: bool) -> int:
    """Samples after which the filters' edge error of ddq is below 1e-4 of max |ddq|, by the
    rule measured for the project's own zero-phase Butterworth (data/preprocessing.py): 12
    time constants of the slowest pole when ddq is two derivatives of the filtered q, 8 when
    one of the filtered recorded dq, plus half FIGAROH's median window."""
    time_constant = 1.0 / (2 * math.pi * cutoff_hz * math.sin(math.pi / (2 * order)))
    return math.ceil((12 if from_position else 8) * time_constant * fs) + MEDIAN_WINDOW // 2


def make_folds(lengths: list[int], n_folds: int, guard: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(held-out rows, training rows) boolean masks over the joined trajectory's rows."""
    n = int(sum(lengths))
    edges = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    if len(lengths) > 1:
        blocks = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    else:
        bounds = np.linspace(0, n, n_folds + 1).round().astype(int)
        blocks = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    folds = []
    for start, stop in blocks:
        held = np.zeros(n, bool)
        held[start:stop] = True
        train = np.ones(n, bool)
        train[max(0, start - guard) : min(n, stop + guard)] = False
        folds.append((held, train))
    return folds


@dataclass
class Candidate:
    setting: Setting
    cv_rmse: float
    fold_rmse: list[float]
    n_scored: int
    seconds: float

    def to_dict(self) -> dict:
        return {
            **asdict(self.setting), "label": self.setting.label(), "cv_rmse": self.cv_rmse,
            "fold_rmse": self.fold_rmse, "n_scored": self.n_scored, "seconds": self.seconds,
        }  # fmt: skip


def fold_errors(
    ident, setting: Setting, folds, scored: np.ndarray, solve: Callable[[object], None]
) -> tuple[float, list[float], int]:
    """CV RMSE of one initialised FIGAROH identification (`ident.initialize()` done with
    `setting`, no validation file): per fold, solve() on the training rows (FIGAROH's sample
    mask), its held-out metrics on the scored held-out rows of the filtered trajectory
    (given to FIGAROH as its validation data: it builds their regressor and predicts)."""
    n = len(scored)
    rows = np.arange(setting.trim, n - setting.trim)  # trajectory rows of FIGAROH's samples
    if ident.num_samples != len(rows):
        raise RuntimeError(f"FIGAROH kept {ident.num_samples} samples, expected {len(rows)}")
    processed = ident.processed_data
    sse, count, per_fold, n_joints = 0.0, 0, [], 1
    for held, train in folds:
        keep = (held & scored)[rows]
        if not keep.any():
            per_fold.append(float("nan"))
            continue
        ident._sample_mask = train[rows]  # FIGAROH's valid-sample mask (True: fitted)
        ident._val_processed_data = {
            key: None if value is None else np.asarray(value)[keep]
            for key, value in processed.items()
        }
        ident._val_num_samples, ident._val_sample_mask = int(keep.sum()), None
        ident._val_available = True
        solve(ident)
        metrics = ident.result["validation_metrics"]
        names = list(metrics["tau_identified_per_joint"])
        n_joints = len(names)
        predicted = np.column_stack([metrics["tau_identified_per_joint"][j] for j in names])
        measured = np.column_stack([metrics["tau_measured_per_joint"][j] for j in names])
        error = measured - predicted
        sse += float(np.sum(error**2))
        count += error.size
        per_fold.append(float(np.sqrt(np.mean(error**2))))
    ident._sample_mask = None
    return (math.sqrt(sse / count) if count else float("inf")), per_fold, count // n_joints


def search(
    evaluate: Callable[[Setting], tuple[float, list[float], int]],
    fixed: Setting,
    cutoffs: list[float],
    trims: Callable[[float], list[int]],
    full: bool = False,
    log=print,
) -> tuple[Setting, list[Candidate]]:
    """The setting of least CV RMSE. `trims(cutoff)`: [0, settling, 2 x settling] for that
    cut-off (those allowed); `evaluate(setting)` -> (CV RMSE, per fold, scored rows)."""
    done: dict[Setting, Candidate] = {}

    def score(setting: Setting) -> None:
        if setting in done:
            return
        start = time.perf_counter()
        cv, per_fold, n_scored = evaluate(setting)
        done[setting] = Candidate(setting, cv, per_fold, n_scored, time.perf_counter() - start)
        log(f"  cv {setting.label()}: {cv:.4f} Nm ({done[setting].seconds:.1f} s)")

    def middle(cutoff: float) -> int:
        options = trims(cutoff)
        return options[1] if len(options) > 1 else options[0]

    score(fixed)
    if full:
        for cutoff in cutoffs:
            for offset in (False, True):
                for trim in trims(cutoff):
                    score(Setting(cutoff, offset, trim))
    else:
        for cutoff in cutoffs:
            for offset in (False, True):
                score(Setting(cutoff, offset, middle(cutoff)))
        best = min(done.values(), key=lambda c: c.cv_rmse).setting
        for trim in trims(best.cutoff_hz):
            score(Setting(best.cutoff_hz, best.offset, trim))
    ranked = sorted(done.values(), key=lambda c: c.cv_rmse)
    return ranked[0].setting, ranked


def grid(
    fixed: Setting,
    fs: float,
    order: int,
    from_position: bool,
    n_rows: int,
    cutoffs: tuple[float, ...] = CUTOFFS_HZ,
) -> tuple[list[float], Callable[[float], list[int]], int]:
    """(cut-offs below Nyquist with the fixed one, trims(cut-off), the largest trim tried)."""
    chosen = sorted({c for c in (*cutoffs, fixed.cutoff_hz) if 0 < c < fs / 2})
    cap = int(MAX_TRIM_SHARE * n_rows)

    def trims(cutoff: float) -> list[int]:
        settle = settling_samples(cutoff, fs, order, from_position)
        return sorted({t for t in (0, settle, 2 * settle) if t <= cap})

    largest = max([fixed.trim, *(max(trims(c)) for c in chosen)])
    return chosen, trims, largest


def scored_rows(n_rows: int, largest_trim: int) -> np.ndarray:
    """Rows every setting predicts: farther than the largest trim from either end."""
    scored = np.zeros(n_rows, bool)
    scored[largest_trim : n_rows - largest_trim] = True
    return scored
