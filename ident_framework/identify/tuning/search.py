"""The candidates the selection tries, in stages, and the table of their CV RMSE.

Coordinate search, each stage keeping the best candidate so far: greedily on the configured
preprocessing (`search_columns`) rotor inertia and offset columns, the Coulomb dead band, each
joint's friction shape (`sweeps` passes), the temperature and load-dependent terms, then the
regularisation (`ls` only); then every preprocessing candidate with those options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ident_framework.identify.tuning.block_factors import FoldFactors
from ident_framework.identify.tuning.cross_validation import (
    HeldOut,
    Regulariser,
    cross_validate,
    cross_validate_geometric,
)
from ident_framework.identify.tuning.rules import Decision, decide
from ident_framework.parallel_work import forked_pool

SHAPE_DEAD_BAND = 0.0  # a joint's tanh width 0: the dead-band sign
SHAPE_FIELDS = {"tanh": "tanh_width", "sat": "saturation_width", "stribeck": "stribeck_velocity"}


def temperature_name(column: str) -> str:
    """The name of a friction column's temperature partner (the column times T - T_ref)."""
    return f"{column}*dT"


def stribeck_name(velocity: float) -> str:
    """The name of the static-friction column of the Stribeck shape of velocity `velocity`
    rad/s (`coulomb_viscous`: its sliding column is `fc[stribeck v]`)."""
    return f"fs[stribeck {velocity:g}]"


def load_name(column: str) -> str:
    """The name of a Coulomb column's load partner (the column times |tau_load|)."""
    return f"{column}*|tau|"


@dataclass(frozen=True)
class Candidate:
    """One combination of options. Per joint, its Coulomb shape: stribeck_velocity (n,) rad/s
    > 0, the Stribeck shape; else saturation_width (n,) rad/s > 0, the saturated sign; else
    tanh_width (n,) rad/s > 0, tanh; else the dead-band sign (an empty stribeck_velocity or
    saturation_width: none of that shape)."""

    lowpass_hz: float
    measured_velocity: bool
    armature: bool
    torque_offset: bool
    dead_band: float
    tanh_width: tuple[float, ...]
    ridge: float = 0.0
    truncate: float = 0.0
    temperature: bool = False  # the friction's temperature term (coulomb_viscous)
    weight: float = 0.0  # the log-det prior's weight (estimator=geometric)
    load: bool = False  # the friction's load-dependent term (coulomb_viscous)
    saturation_width: tuple[float, ...] = ()
    acceleration_lead: tuple[float, ...] = ()  # s per joint (coulomb_viscous); empty: none
    stribeck_velocity: tuple[float, ...] = ()  # v_s rad/s per joint (0: another shape)

    def shape(self, joint: int) -> str:
        """The name of joint `joint`'s Coulomb column (`coulomb_viscous`)."""
        if self.stribeck_velocity and self.stribeck_velocity[joint] > 0:
            return f"fc[stribeck {self.stribeck_velocity[joint]:g}]"
        if self.saturation_width and self.saturation_width[joint] > 0:
            return f"fc[sat {self.saturation_width[joint]:g}]"
        if self.tanh_width[joint] > 0:
            return f"fc[tanh {self.tanh_width[joint]:g}]"
        return f"fc[dead band {self.dead_band:g}]"

    def with_shape(self, joint: int, family: str, width: float) -> Candidate:
        """This candidate with joint `joint`'s shape `family` (tanh, sat, stribeck or dead
        band) of width (or Stribeck velocity) `width` rad/s."""
        changes = {}
        for name, key in SHAPE_FIELDS.items():
            values = list(getattr(self, key) or (SHAPE_DEAD_BAND,) * len(self.tanh_width))
            values[joint] = width if family == name else 0.0
            changes[key] = tuple(values) if name == "tanh" else unless_zero(tuple(values))
        return replace(self, **changes)

    def row(self) -> dict[str, Any]:
        return {
            "lowpass_hz": self.lowpass_hz,
            "velocity": "measured" if self.measured_velocity else "differentiated",
            "armature": self.armature,
            "torque_offset": self.torque_offset,
            "dead_band": self.dead_band,
            "tanh_width": " ".join(f"{w:g}" for w in self.tanh_width),
            "saturation_width": " ".join(f"{w:g}" for w in self.saturation_width),
            "acceleration_lead": " ".join(f"{w:g}" for w in self.acceleration_lead),
            "stribeck_velocity": " ".join(f"{v:g}" for v in self.stribeck_velocity),
            "ridge": self.ridge,
            "truncate": self.truncate,
            "temperature": "on" if self.temperature else "off",
            "weight": self.weight,
            "load_dependent": "on" if self.load else "off",
        }


@dataclass
class ColumnSpace:
    """Maps a candidate to column indices of the fold factors and their nominal values.
    `coulomb`: the friction model is coulomb_viscous (its shapes are candidates); else the
    friction plugin's own columns `friction_names` are always used."""

    factors: FoldFactors
    inertial_nominal: np.ndarray  # (10 n,)
    armature_nominal: np.ndarray  # (n,) kg·m²
    coulomb: bool
    friction_names: tuple[str, ...] = ()
    temperature: bool = False  # the temperature term is a candidate (on or off)
    load: bool = False  # the load-dependent term is a candidate (on or off)
    # the same factors with the folds that judge the Coulomb shapes and the acceleration lead
    # (`tuning.shape_partitions`; None: `factors` themselves)
    shape_factors: FoldFactors | None = None

    def judged_by(self, shapes: bool) -> ColumnSpace:
        """This space with the folds of the shape stages (`shapes`) or of the others."""
        if not shapes or self.shape_factors is None:
            return self
        return replace(self, factors=self.shape_factors, shape_factors=None)

    def columns(self, candidate: Candidate) -> tuple[np.ndarray, np.ndarray]:
        f = self.factors
        columns = list(range(f.n_inertial))
        nominal = list(self.inertial_nominal)
        for j in range(f.n_joints):
            own = []
            if self.coulomb:
                shape = candidate.shape(j)
                own += [("fv", 0.0), (shape, 0.0)]
                if candidate.temperature:
                    own += [(temperature_name("fv"), 0.0), (temperature_name(shape), 0.0)]
                if candidate.load:
                    own.append((load_name(shape), 0.0))
                if candidate.stribeck_velocity and candidate.stribeck_velocity[j] > 0:
                    own.append((stribeck_name(candidate.stribeck_velocity[j]), 0.0))
            else:
                own += [(name, 0.0) for name in self.friction_names]
            if candidate.armature:
                own.append(("Ia", float(self.armature_nominal[j])))
            if candidate.torque_offset:
                own.append(("offset", 0.0))
            for name, value in own:
                columns.append(f.own_column(j, name))
                nominal.append(value)
        for i, name in enumerate(f.own.shared):  # a coupled motor's: always in the model
            if candidate.armature or not name.startswith("Ia_"):
                columns.append(f.shared_column(i))
                nominal.append(0.0)
        return np.array(columns), np.array(nominal)

    def signed(self, columns: np.ndarray) -> np.ndarray:
        """(len(columns),) True for the columns whose parameter is kept > 0 by a physically
        consistent estimator: friction (fv, fc, the Stribeck shape's fs; not the temperature
        coefficients) and rotor inertia."""
        f = self.factors
        own, width = f.own.names, len(f.own.names)
        names = [
            "" if c < f.n_inertial
            else own[(c - f.n_inertial) % width] if c < f.shared_column(0)
            else f.own.shared[c - f.shared_column(0)]
            for c in columns
        ]  # fmt: skip
        return np.array(
            [
                name.startswith(("fv", "fc", "fs", "Ia"))
                and not name.endswith(temperature_name(""))
                for name in names
            ],
            dtype=bool,
        )


@dataclass
class SearchLog:
    """Every candidate tried: its options, stage, CV RMSE, its standard error and per-fold
    RMSE; and each stage's choice (`rules.Decision`)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)

    def add(self, stage: str, candidate: Candidate, held: HeldOut) -> None:
        self.rows.append(
            {
                "stage": stage,
                **candidate.row(),
                "rank": held.rank,
                "cv_rmse": held.rmse,
                "cv_se": held.se,
                "fold_rmse": [float(v) for v in held.fold_rmse],
            }
        )

    def row_of(self, candidate: Candidate, rmse: float) -> int:
        """The index of the last row logged for `candidate` with CV RMSE `rmse`."""
        options = candidate.row()
        for i in range(len(self.rows) - 1, -1, -1):
            row = self.rows[i]
            if row["cv_rmse"] == rmse and all(row[k] == v for k, v in options.items()):
                return i
        raise KeyError(f"no row for {options}")


def _regulariser(candidate: Candidate) -> Regulariser:
    return (candidate.ridge, candidate.truncate)


def score_candidate(
    space: ColumnSpace, candidate: Candidate, tolerance: float, stage: str, log: SearchLog
) -> HeldOut:
    """CV figures of one candidate, logged under `stage` (`space`'s folds)."""
    held = candidate_figures(space, candidate, tolerance)
    log.add(stage, candidate, held)
    return held


def candidate_figures(
    space: ColumnSpace, candidate: Candidate, tolerance: float, per_joint: bool = False
) -> HeldOut:
    """CV figures of one candidate on `space`'s folds (not logged)."""
    columns, nominal = space.columns(candidate)
    if candidate.weight > 0.0:
        signed, weights = space.signed(columns), [candidate.weight]
        return cross_validate_geometric(
            space.factors, columns, nominal, signed, weights, tolerance, per_joint
        )[0]
    regulariser = [_regulariser(candidate)]
    return cross_validate(space.factors, columns, nominal, regulariser, tolerance, per_joint)[0]


# (items, chunk) -> figures of each item (judged by the shape folds, candidate), in order
ScoreMap = Callable[[Sequence[tuple[bool, Candidate]], int], Iterable[HeldOut]]


class _ColumnSearch:
    """One greedy search over the column options: the incumbent (`best`, its CV figures
    `held`) and whether the shape folds judge the current stage (`shapes`). A candidate met
    again on the same folds (e.g. a second shape sweep's, unchanged since the first) is
    logged again with the figures it got (`known`), not scored again: the same numbers."""

    def __init__(
        self,
        space: ColumnSpace,
        start: Candidate,
        grids: Any,
        tolerance: float,
        log: SearchLog,
        configured: tuple[float, bool],
        scores: ScoreMap,
    ) -> None:
        self.space, self.grids, self.tolerance, self.log = space, grids, tolerance, log
        self.configured, self.scores = configured, scores
        self.shapes = False
        self.known: dict[tuple[bool, Candidate], HeldOut] = {}  # (shape folds, candidate)
        self.best, self.held = start, self.score(start, "start")

    def score(self, candidate: Candidate, stage: str) -> HeldOut:
        key = (self.shapes, candidate)
        if key not in self.known:
            judge = self.space.judged_by(self.shapes)
            self.known[key] = candidate_figures(judge, candidate, self.tolerance)
        self.log.add(stage, candidate, self.known[key])
        return self.known[key]

    def judged_by(self, shapes: bool) -> None:
        """Judge the next stages by the shape folds (or the ordinary ones again); the
        incumbent is scored again on them (when they are other folds)."""
        if shapes != self.shapes and self.space.shape_factors is not None:
            self.shapes = shapes
            self.held = self.score(self.best, "shape folds" if shapes else "start")

    def pick(self, candidates: list[Candidate], figures: list[HeldOut], stage: str) -> None:
        options, held = [self.best, *candidates], [self.held, *figures]
        i = decide(self.log, stage, options, held, self.grids.rule, self.configured)
        if i > 0:
            self.best, self.held = candidates[i - 1], figures[i - 1]

    def consider(self, options: list[Candidate], stage: str) -> None:
        options = [o for o in dict.fromkeys(options) if o != self.best]
        if options:  # scored side by side (`search_columns`), logged in order
            items = [(self.shapes, o) for o in options if (self.shapes, o) not in self.known]
            if items:
                scored = self.scores(items, max(1, -(-len(items) // 4)))
                self.known.update(zip(items, scored, strict=True))
            figures = [self.known[self.shapes, o] for o in options]
            for option, held in zip(options, figures, strict=True):
                self.log.add(stage, option, held)
            self.pick(options, figures, stage)

    def regressor_columns(self) -> None:
        grids = self.grids
        self.consider(
            [
                replace(self.best, armature=a, torque_offset=o)
                for a in grids.armature_columns
                for o in grids.offset_columns
            ],
            "regressor columns",
        )

    def coulomb_shapes(self) -> None:
        """The dead band, then each joint's Coulomb shape (dead-band sign, tanh or
        saturated sign of a width, Stribeck shape of a velocity), judged by the shape folds."""
        grids, n = self.grids, self.space.factors.n_joints
        self.judged_by(True)
        self.consider(
            [
                replace(
                    self.best,
                    dead_band=d,
                    tanh_width=(SHAPE_DEAD_BAND,) * n,
                    saturation_width=(),
                )
                for d in grids.dead_bands
            ],
            "dead band",
        )
        shapes = [
            ("dead band", SHAPE_DEAD_BAND),
            *(("tanh", w) for w in grids.tanh_widths),
            *(("sat", w) for w in grids.saturation_widths),
            *(("stribeck", v) for v in grids.stribeck_velocities),
        ]
        for _ in range(grids.sweeps):
            before = self.best
            for j in range(n):
                self.consider(
                    [self.best.with_shape(j, family, w) for family, w in shapes],
                    f"friction shape joint {j + 1}",
                )
            if self.best == before:
                break
        self.judged_by(False)

    def regularisation(self) -> None:
        grids, best = self.grids, self.best
        options = [(r, 0.0) for r in grids.ridges] + [(0.0, t) for t in grids.truncations]
        options = [o for o in options if o != _regulariser(best)]
        columns, nominal = self.space.columns(best)
        held = cross_validate(self.space.factors, columns, nominal, options, self.tolerance)
        candidates = [replace(best, ridge=r, truncate=t) for r, t in options]
        for option, figures in zip(candidates, held, strict=True):
            self.log.add("regularisation", option, figures)
        if candidates:
            self.pick(candidates, held, "regularisation")


def search_columns(
    space: ColumnSpace,
    start: Candidate,
    grids: Any,
    tolerance: float,
    regularise: bool,
    log: SearchLog,
    configured: tuple[float, bool] | None = None,
    scores: ScoreMap | None = None,
) -> tuple[Candidate, HeldOut]:
    """(the best column options and regulariser for one preprocessing, its CV figures);
    `configured`: the configured preprocessing (default `start`'s); `scores`: a stage's
    candidates scored side by side on workers that hold `space` (default: workers forked
    here)."""
    configured = configured or (start.lowpass_hz, start.measured_velocity)

    def figures(item: tuple[bool, Candidate]) -> HeldOut:
        return candidate_figures(space.judged_by(item[0]), item[1], tolerance)

    for shapes in (False, True):  # the folds' training factors: once, before the fork
        _ = space.judged_by(shapes).factors.training
    # a stage's candidates are independent: scored on workers forked once for the search
    # (when the cores are free: serial while other forked work runs, `parallel_work.py`)
    with nullcontext(scores) if scores else forked_pool(figures, batch=2) as scores:
        search = _ColumnSearch(space, start, grids, tolerance, log, configured, scores)
        search.regressor_columns()
        if space.coulomb:
            search.coulomb_shapes()
        if space.temperature:
            search.consider(
                [replace(search.best, temperature=not search.best.temperature)],
                "temperature term",
            )
        if space.load:
            search.consider(
                [replace(search.best, load=not search.best.load)], "load-dependent friction"
            )
        if regularise:
            search.regularisation()
    return search.best, search.held


def choose_prior_weight(
    space: ColumnSpace,
    best: Candidate,
    weights: list[float],
    tolerance: float,
    log: SearchLog,
    rule: str,
    configured: tuple[float, bool],
) -> tuple[Candidate, HeldOut]:
    """The last stage for estimator=geometric: `best` with the prior weight picked by `rule`
    (a larger weight is simpler), and its CV figures with per-joint RMSE."""
    columns, nominal = space.columns(best)
    held = cross_validate_geometric(
        space.factors, columns, nominal, space.signed(columns), weights, tolerance, True
    )
    candidates = [replace(best, weight=float(w)) for w in weights]
    for candidate, figures in zip(candidates, held, strict=True):
        log.add("prior weight", candidate, figures)
    i = decide(log, "prior weight", candidates, held, rule, configured)
    return candidates[i], held[i]


def unless_zero(values: tuple[float, ...]) -> tuple[float, ...]:
    """`values`, or () when all are 0 (a candidate's empty per-joint tuple: none set)."""
    return values if any(v != 0.0 for v in values) else ()
