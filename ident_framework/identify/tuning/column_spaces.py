"""The column spaces the selection scores candidates in: per preprocessing candidate (and
acceleration lead) of the identification recordings, the fold factors of every candidate
column (`block_factors.py`), built side by side on forked workers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from ident_framework.config.run_config import RunConfig
from ident_framework.data.checks import check_recording, trusted_at
from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.filters import preload as preload_cubic_spline
from ident_framework.data.preprocessing import preprocess, resamples_any
from ident_framework.identify.linear_problem import (
    joint_row_spaces,
    parallel_friction_basis,
    recording_friction,
)
from ident_framework.identify.tuning.block_factors import (
    JOINT_GROUPS,
    FoldFactors,
    FoldRows,
    OwnColumns,
    fold_factors,
    group_factors,
    joint_groups,
    merge_groups,
)
from ident_framework.identify.tuning.excerpts import Excerpt, halo_s, plan_excerpts
from ident_framework.identify.tuning.folds import FoldPlan
from ident_framework.identify.tuning.search import (
    Candidate,
    ColumnSpace,
    ScoreMap,
    candidate_figures,
    load_name,
    stribeck_name,
    temperature_name,
)
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.parallel_work import PoolMap, Told, forked_imap, forked_pool


def load_columns(config: RunConfig) -> tuple[bool, bool]:
    """(the fold factors hold the load-dependent columns: friction.load_dependent on or auto,
    the term is a candidate: auto)."""
    mode = getattr(config.plugins["friction"].params, "load_dependent", None)
    return mode in ("auto", "on"), mode == "auto"


class ColumnSpaces:
    """The column space (fold factors) of each preprocessing candidate: all at once on forked
    workers (`build`), or one when first asked for (`get`)."""

    def __init__(self, config, robot, builder, recordings, plan, friction, start, checked) -> None:
        self.config, self.robot, self.builder = config, robot, builder
        self.recordings, self.plan = recordings, plan
        # coulomb_viscous, its temperature columns in the factors, the term a candidate
        self.coulomb, thermal, self.toggle = friction
        # the load-dependent columns in the factors, the term a candidate
        self.load, self.load_toggle = load_columns(config) if self.coulomb else (False, False)
        self.thermal, self.start = thermal, start
        self.owns: dict[tuple[tuple[float, ...], Candidate | None], OwnColumns] = {}
        self.row_spaces = joint_row_spaces(builder)
        self.spaces: dict[
            tuple[tuple[float, bool], tuple[float, ...], Candidate | None], ColumnSpace
        ] = {}
        # the samples the data checks do not trust are in no fold (`data/checks.py`)
        checks = config.checks
        if checks.enabled and checked is None:
            checked = [check_recording(r, robot.limits, checks) for r in recordings]
        self.trusted = [c[0] for c in checked] if checks.enabled else [None] * len(recordings)
        # a long recording is read as windows (`excerpts.py`), else whole
        slowest = replace(
            config.preprocessing,
            lowpass_hz=min([config.preprocessing.lowpass_hz, *config.tuning.cutoffs_hz]),
            use_measured_velocity=False,
        )
        self.excerpts = plan_excerpts(recordings, plan, config.tuning.max_samples, halo_s(slowest))
        self.pool: PoolMap | None = None  # the search's forked workers (`parallel`)
        self.told: set[tuple[Any, ...]] = set()  # the spaces the pool's workers were told
        self.prepared: dict[tuple[float, bool], list[FoldRows]] = {}  # `parallel`'s `first`

    @contextmanager
    def parallel(self, first: tuple[float, bool] | None = None) -> Iterator[None]:
        """Forked workers kept for a whole search (`selection._search`): a whole space's
        joint groups (`get`), the spaces built side by side (`build`) and the candidates
        scored side by side (`scores`) all go to them. One fork: a fresh process's memory is
        first touched (and this one's copied on write) once, not at every stage. `first`:
        the preprocessing (cut-off Hz, measured velocity) of the first space, its rows
        preprocessed here before the fork (the workers inherit them; a fresh worker's own
        pass would first touch its memory, slower than this process's). Serial where
        `forked_pool` is."""
        if any(resamples_any(r, self.config.preprocessing) for r in self.recordings):
            preload_cubic_spline()  # here once, not in every worker (jittery logs)
        if first is not None:
            self.prepared[first] = self._rows(first)
        with forked_pool(self._task, batch=JOINT_GROUPS) as pool:
            self.pool = pool if pool.parallel else None
            try:
                yield
            finally:
                self.pool, self.told = None, set()
                self.prepared.clear()

    def _task(self, item: Any) -> Any:
        """A task of `parallel`'s workers (or of this process): ("group", key, joints) the
        factors of a space's joint group; ("space", key) a space's parts; ("score", key,
        shapes, candidate, tolerance) a candidate's CV figures. Told (key, merged, counts):
        the space of `key` as built by the process that tells it."""
        if isinstance(item, Told):
            key, merged, counts = item.message
            self.spaces[key] = self._space((merged, [], counts), key[1], key[2])
            for shapes in (False, True):  # the folds' training factors, while the teller's
                _ = self.spaces[key].judged_by(shapes).factors.training
            return None
        kind, key, *rest = item
        if kind == "group":
            return group_factors(
                self.builder,
                self._rows(key[0]),
                self.plan.n_cells,
                self.own(key[1], key[2]),
                self.row_spaces,
                self._max_samples,
                rest[0],
            )
        if kind == "space":
            return self._factors(key)
        shapes, candidate, tolerance = rest
        return candidate_figures(self.spaces[key].judged_by(shapes), candidate, tolerance)

    def scores(
        self, preprocessing: tuple[float, bool], lead: tuple[float, ...], tolerance: float
    ) -> ScoreMap | None:
        """The candidates of the whole space of `preprocessing` and `lead` (built) scored
        side by side on `parallel`'s workers (None: no workers)."""
        pool, key = self.pool, (preprocessing, lead, None)
        if pool is None:
            return None
        if key not in self.told:  # the workers get this process's factors: the same figures
            factors = self.spaces[key].factors
            pool.tell((key, factors.merged, factors.counts))
            self.told.add(key)
        return lambda items, chunk: pool([("score", key, *item, tolerance) for item in items])

    @property
    def _max_samples(self) -> int | None:
        """`fold_factors`' max_samples (None: the windows hold that many)."""
        return self.config.tuning.max_samples if self.excerpts is None else None

    @property
    def costly_columns(self) -> bool:
        """Every candidate friction column costs a filter pass over the whole recording
        (parallel friction columns): build spaces that score one candidate alone."""
        return self.coulomb and bool(self.builder.parallel_friction)

    def own(self, lead: tuple[float, ...], only: Candidate | None = None) -> OwnColumns:
        """The joints' own candidate columns with the Coulomb shapes' acceleration `lead`
        (`only`: just the friction columns that candidate uses)."""
        key = (lead, only)
        if key not in self.owns:
            grids = self.config.tuning if only is None else _NO_GRIDS
            self.owns[key] = _own_columns(
                self.config,
                self.builder,
                (self.coulomb, self.thermal),
                self.start if only is None else only,
                grids,
                self.load,
                lead,
                only is not None,
            )
        return self.owns[key]

    def build(
        self,
        candidates: list[tuple[float, bool]],
        leads: list[tuple[float, ...]],
        only: Candidate | None = None,
    ) -> Iterator[ColumnSpace]:
        """The space of each preprocessing candidate with each acceleration lead (none built
        yet), in order as each is built on forked workers. `only`: spaces that hold that
        candidate's columns only."""
        keys = [(c, lead, only) for c in candidates for lead in leads]
        if any(resamples_any(r, self.config.preprocessing) for r in self.recordings):
            preload_cubic_spline()  # here once, not in every worker (jittery logs)
        for key in keys:
            self.own(key[1], only)  # before the fork: the workers inherit it
        if self.pool is not None:
            arriving: Iterator[Any] = self._built_on_pool(keys, self.pool)
        else:
            arriving = forked_imap(self._factors, keys)
        for key, parts in zip(keys, arriving, strict=True):
            self.spaces[key] = self._space(parts, key[1], only)
            yield self.spaces[key]

    def _built_on_pool(
        self,
        keys: list[tuple[tuple[float, bool], tuple[float, ...], Candidate | None]],
        pool: PoolMap,
    ) -> Iterator[tuple[list[np.ndarray], list[list[np.ndarray]], np.ndarray]]:
        """`_factors` of each of `keys`, in order, on `pool`'s workers: a space a task, but
        the last spaces that would leave a process idle (the count of spaces not a multiple of
        the processes'; a lone space, `get`) a joint group a task, so that every process
        builds until the end (a group costs a little more than half a space)."""
        whole = len(keys) - len(keys) % pool.processes
        items: list[tuple[Any, ...]] = [("space", key) for key in keys[:whole]]
        groups: list[list[tuple[int, ...]]] = []  # per split space, its joint groups
        for key in keys[whole:]:
            groups.append(joint_groups(self.row_spaces, self.own(key[1], key[2])))
            items += [("group", key, joints) for joints in groups[-1]]
        results = iter(pool(items))
        for _ in keys[:whole]:
            yield next(results)
        for space_groups in groups:
            parts = [next(results) for _ in space_groups]
            yield merge_groups(parts, self.robot.n_joints, self.plan.n_cells)
        for _ in results:  # to the end of the batch: the workers' end-of-batch replies
            pass

    def get(self, preprocessing: tuple[float, bool], lead: tuple[float, ...]) -> ColumnSpace:
        """The whole space (every candidate column) of one preprocessing and lead."""
        key = (preprocessing, lead, None)
        if key not in self.spaces:
            if self.pool is not None:  # a joint group on each process
                (parts,) = self._built_on_pool([key], self.pool)
            else:
                parts = self._factors(key)
            self.spaces[key] = self._space(parts, lead)
        return self.spaces[key]

    def _factors(
        self, key: tuple[tuple[float, bool], tuple[float, ...], Candidate | None]
    ) -> tuple[list[np.ndarray], list[list[np.ndarray]], np.ndarray]:
        """(merged, per_joint, counts) of the fold factors of one preprocessing and
        acceleration lead (arrays only: what a worker sends back)."""
        factors = fold_factors(
            self.builder,
            self._rows(key[0]),
            self.plan.n_cells,
            self.own(key[1], key[2]),
            self.row_spaces,
            self._max_samples,
        )
        return factors.merged, factors.per_joint, factors.counts

    def _rows(self, preprocessing: tuple[float, bool]) -> list[FoldRows]:
        """The identification rows preprocessed with `preprocessing` (cut-off Hz, measured
        velocity), with their cells (`prepared` ones as they are)."""
        if preprocessing in self.prepared:
            return self.prepared[preprocessing]
        params = replace(
            self.config.preprocessing,
            lowpass_hz=preprocessing[0],
            use_measured_velocity=preprocessing[1],
        )
        if self.excerpts is None:
            rows = [
                _fold_rows(r, params, self.plan, i, trusted)
                for i, (r, trusted) in enumerate(zip(self.recordings, self.trusted, strict=True))
            ]
        else:
            windows = [
                _excerpt_rows(e, params, self.plan, self.recordings[e.recording],
                              self.trusted[e.recording])
                for e in self.excerpts
            ]  # fmt: skip
            rows = [_stacked(windows)]  # one pass of each stage over all windows
        if self.costly_columns:  # before `fold_factors` forks its workers
            for r in rows:
                if r.data.parallel_filter is not None:
                    r.data.parallel_filter.prepare()
        return rows

    def _space(
        self,
        parts: tuple[list[np.ndarray], list[list[np.ndarray]], np.ndarray],
        lead: tuple[float, ...],
        only: Candidate | None = None,
    ) -> ColumnSpace:
        own, settings, n = self.own(lead, only), self.config.tuning, self.robot.n_joints
        shapes = None  # the factors with the folds of the shape stages (None: the same folds)
        if self.coulomb and set(settings.shape_partitions) != set(settings.partitions):
            shapes = FoldFactors(*parts, n, own, self.plan.layout(tuple(settings.shape_partitions)))
        return ColumnSpace(
            FoldFactors(*parts, n, own, self.plan.layout(tuple(settings.partitions))),
            self.robot.inertial_parameters(),
            self.robot.armature(),
            self.coulomb,
            tuple(self.builder.friction.parameter_names),
            self.toggle,
            self.load_toggle,
            shapes,
        )


def _fold_rows(
    recording: Dataset, params: Any, plan: FoldPlan, index: int, trusted: np.ndarray | None
) -> FoldRows:
    """A recording preprocessed with `params`, the recorded torque at its rows, the cell of
    each joint's row (`FoldPlan.cells`; -1 where the data checks do not trust the raw rows)."""
    data = preprocess(recording, params)
    labels = plan.cells(index, data.timestamp, recording.q.shape[1])
    if trusted is not None and not trusted.all():
        labels[~trusted_at(recording, trusted, data.timestamp)] = -1
    return FoldRows(data, data.recorded.tau, labels)


def _excerpt_rows(
    excerpt: Excerpt,
    params: Any,
    plan: FoldPlan,
    recording: Dataset,
    trusted: np.ndarray | None,
) -> FoldRows:
    """A window preprocessed with its halo (`excerpts.py`): its own rows in their cells, the
    halo's in none (-1), as `_fold_rows`."""
    window = excerpt.data(recording, halo_s(params))
    data = preprocess(window, params, step_of=excerpt.step_of)
    labels = plan.cells(excerpt.recording, data.timestamp, recording.q.shape[1])
    labels[~excerpt.own(data.timestamp)] = -1
    if trusted is not None and not trusted.all():
        labels[~trusted_at(recording, trusted, data.timestamp)] = -1
    return FoldRows(data, data.recorded.tau, labels)


def _stacked(parts: list[FoldRows]) -> FoldRows:
    """The rows of several preprocessed windows as one (each still filtered on its own)."""
    return FoldRows(
        concatenate([p.data for p in parts]),
        np.concatenate([p.tau_recorded for p in parts]),
        np.concatenate([p.labels for p in parts]),
    )


# no grid: a candidate's own Coulomb shapes only (`ColumnSpaces.own(lead, only)`)
_NO_GRIDS = SimpleNamespace(
    dead_bands=(), tanh_widths=(), saturation_widths=(), stribeck_velocities=()
)


def _coulomb_models(
    selected: Any, start: Candidate, settings: Any, lead: tuple[float, ...]
) -> tuple[list[str], list[Any], list[float]]:
    """The candidate Coulomb shapes of `coulomb_viscous` (their column names and models, the
    Stribeck shapes last) and the Stribeck velocities (rad/s) among them, with the
    acceleration `lead`."""
    dead_bands = sorted({start.dead_band, *settings.dead_bands})
    widths = sorted({*(w for w in start.tanh_width if w > 0), *settings.tanh_widths})
    saturated = sorted({*(w for w in start.saturation_width if w > 0), *settings.saturation_widths})
    velocities = sorted(
        {*(v for v in start.stribeck_velocity if v > 0), *settings.stribeck_velocities}
    )
    plain = {
        "tanh_width": None,
        "saturation_width": None,
        "stribeck_velocity": None,
        "acceleration_lead": list(lead) if any(w > 0 for w in lead) else None,
    }
    shapes = [(f"fc[dead band {d:g}]", {**plain, "dead_band": d}) for d in dead_bands]
    shapes += [(f"fc[tanh {w:g}]", {**plain, "tanh_width": w}) for w in widths]
    shapes += [(f"fc[sat {w:g}]", {**plain, "saturation_width": w}) for w in saturated]
    shapes += [(f"fc[stribeck {v:g}]", {**plain, "stribeck_velocity": v}) for v in velocities]
    models = [selected.info.create(replace(selected.params, **p)) for _, p in shapes]
    return [name for name, _ in shapes], models, velocities


def _velocity_column(
    t: np.ndarray | None, dq: np.ndarray, ddq: np.ndarray | None, joints: Any = None
) -> np.ndarray:
    """(M, n, 1) the viscous column dq (rad/s)."""
    return dq[:, :, None]


class _LastBasis:
    """Friction basis columns of the candidate models, the last basis kept (a Stribeck shape's
    fc and fs: one evaluation). `separable`: the joints asked for can be computed alone."""

    def __init__(self, separable: bool) -> None:
        self.separable = separable
        self.key: tuple[Any, ...] | None = None
        self.basis: np.ndarray | None = None  # (M, joints computed, k)
        self.joints: np.ndarray | None = None  # the joints computed (None: all)

    def column(self, model: Any, index: int) -> Callable[..., np.ndarray]:
        """(t, dq, ddq[, joints]) -> (M, n, 1): column `index` of the friction `model`'s
        basis (with `joints`, a mask (n,): those joints' values; the others' are not
        computed and left undefined: parallel filtering reads only the joints asked for)."""

        def values(
            t: np.ndarray | None,
            dq: np.ndarray,
            ddq: np.ndarray | None,
            joints: np.ndarray | None = None,
        ) -> np.ndarray:
            alone = joints is not None and self.separable and not joints.all()
            key = (model, dq, ddq, joints.tobytes() if alone else None)
            last = self.key
            if (
                last is None
                or any(a is not b for a, b in zip(key[:3], last[:3], strict=True))
                or key[3] != last[3]
            ):
                self.key, self.joints = key, joints if alone else None
                if alone:
                    sub = None if ddq is None else ddq[:, joints]
                    self.basis = model.basis(dq[:, joints], sub)
                else:
                    self.basis = model.basis(dq, ddq)
            if self.joints is None:  # a copy of its own: filtered in place, not copied again
                return np.array(self.basis[:, :, index : (index + 1) or None])
            out = np.empty((len(dq), dq.shape[1], 1))
            out[:, self.joints, 0] = self.basis[:, :, index]
            return out

        return values


def _joints_with(candidate: Candidate, column: str, n: int) -> np.ndarray:
    """(n,) True for the joints whose Coulomb (or Stribeck static) column `candidate` makes
    `column`."""
    return np.array(
        [
            candidate.shape(j) == column
            or bool(candidate.stribeck_velocity)
            and candidate.stribeck_velocity[j] > 0
            and stribeck_name(candidate.stribeck_velocity[j]) == column
            for j in range(n)
        ]
    )


def _coulomb_friction_values(
    config: RunConfig,
    builder: RegressorBuilder,
    thermal: bool,
    start: Candidate,
    settings: Any,
    load: bool,
    lead: tuple[float, ...],
    own_shape_only: bool,
) -> tuple[tuple[str, ...], Callable[..., None]]:
    """(the own column names, friction_values(data, rows, wanted, out): the friction columns
    written into `out` (len(rows), n, len(names)), all but its last two (rotor inertia and
    offset)) of `coulomb_viscous`'s candidate shapes (`_own_columns`)."""
    selected = config.plugins["friction"]
    shapes, models, velocities = _coulomb_models(selected, start, settings, lead)
    names = ("fv", *shapes, "Ia", "offset")
    if thermal:
        names = (*names[:-2], *(temperature_name(name) for name in names[:-2]), "Ia", "offset")
    if load:
        names = (*names[:-2], *(load_name(name) for name in shapes), "Ia", "offset")
    names = (*names[:-2], *(stribeck_name(v) for v in velocities), "Ia", "offset")
    reference = np.asarray(selected.params.reference_temperature, dtype=float)

    # (M, n, 1) each: dq, each shape's Coulomb column, each Stribeck shape's static column;
    # computed in another order: each Stribeck shape's two columns one after the other
    # (one evaluation of its basis), `order` the columns' places in that order
    plain = len(models) - len(velocities)
    bases = _LastBasis(separable=not any(w > 0 for w in lead))  # a lead: per joint
    parts = [_velocity_column, *(bases.column(m, 1) for m in models[:plain])]
    order = list(range(1 + plain))
    for k, model in enumerate(models[plain:]):
        parts += [bases.column(model, 1), bases.column(model, -1)]
        order += [1 + plain + k, 1 + len(models) + k]
    order = np.argsort(order)
    joints = None  # the joints each part is computed for (None: every joint)
    if own_shape_only:
        n = builder.robot.n_joints
        wanted = [None, *(_joints_with(start, shape, n) for shape in shapes)]
        wanted += [_joints_with(start, stribeck_name(v), n) for v in velocities]
        joints = [wanted[i] for i in np.argsort(order)]

    own = 1 + len(models)  # the viscous and Coulomb (sliding) columns
    # where each column of `parts` lands among the own columns (`names` order): the viscous
    # and Coulomb ones first, then (after their temperature and load partners) the Stribeck
    # static ones
    landing = np.argsort(order)
    landing[landing >= own] += (own if thermal else 0) + (own - 1 if load else 0)

    def friction_values(
        data: Dataset, rows: np.ndarray, wanted: np.ndarray | None, out: np.ndarray
    ) -> None:
        if builder.parallel_friction and data.parallel_filter is not None:
            leading = any(w > 0 for w in lead)
            masks = joints or [None] * len(parts)
            if wanted is not None:
                masks = [wanted if m is None else m & wanted for m in masks]
            # a column no joint asked for stays zero: not evaluated at all (each part is one
            # column per joint); the others written in place (`rows` increase: `fold_factors`)
            used = [k for k, m in enumerate(masks) if m is None or m.any()]
            if used:
                parallel_friction_basis(
                    data, [parts[k] for k in used], leading, rows, [masks[k] for k in used],
                    (out, landing[used]),
                )  # fmt: skip
        else:
            dq, ddq = data.dq[rows], data.ddq[rows]
            out[:, :, landing] = np.concatenate([part(None, dq, ddq) for part in parts], axis=-1)
        if thermal:
            out[:, :, own : 2 * own] = (
                out[:, :, :own] * (data.temperature[rows] - reference)[:, :, None]
            )
        if load:  # per Nm of load: `fold_factors` multiplies them by |tau_load|
            first = 2 * own if thermal else own
            out[:, :, first : first + own - 1] = out[:, :, 1:own]

    return names, friction_values


def _own_columns(
    config: RunConfig,
    builder: RegressorBuilder,
    friction: tuple[bool, bool],
    start: Candidate,
    settings: Any,
    load: bool = False,
    lead: tuple[float, ...] = (),
    own_shape_only: bool = False,
) -> OwnColumns:
    """Every joint's own candidate columns: friction shapes (with `friction[1]` their
    temperature columns, with `load` their load columns), rotor inertia, offset; and the
    coupled motors' shared columns. `lead`: the shapes' acceleration lead, s per joint.
    `own_shape_only`: a column only for the joints whose shape in `start` uses it."""
    coulomb, thermal = friction
    if coulomb:
        names, friction_values = _coulomb_friction_values(
            config, builder, thermal, start, settings, load, lead, own_shape_only
        )
    else:
        names = (*builder.friction.parameter_names, "Ia", "offset")

        def friction_values(
            data: Dataset, rows: np.ndarray, wanted: np.ndarray | None, out: np.ndarray
        ) -> None:
            whole = recording_friction(builder, data)
            if whole is not None:
                out[:, :, :-2] = whole[rows]
            else:
                out[:, :, :-2] = builder.friction_basis(None, data.dq[rows], data.ddq[rows])

    def values(data: Dataset, rows: np.ndarray, wanted: np.ndarray | None = None) -> np.ndarray:
        """(len(rows), n, len(names)); `wanted` (n,) the joints needed (None: all; the
        others' parallel friction columns are then zero, not filtered). Stored joint by
        joint (a transposed view): a joint not wanted leaves its zero pages untouched
        (memory first touched is costly)."""
        n = data.dq.shape[1]
        out = np.zeros((n, len(rows), len(names))).transpose(1, 0, 2)
        friction_values(data, rows, wanted, out)  # the friction columns: all but the last two
        joints = slice(None) if wanted is None else np.flatnonzero(wanted)
        out[:, joints, -2] = data.ddq[rows][:, joints]
        out[:, joints, -1] = 1.0
        return out

    loaded = tuple(i for i, name in enumerate(names) if name.endswith(load_name("")))
    active = _candidate_columns(names, start, builder.robot.n_joints) if own_shape_only else None
    if not builder.couplings:
        return OwnColumns(tuple(names), values, load=loaded, active=active)

    def coupled(data: Dataset, rows: np.ndarray) -> np.ndarray:
        return builder.coupled_terms(data.dq[rows], data.ddq[rows])

    shared = tuple(builder.parameter_names[-builder.n_coupled :])
    return OwnColumns(tuple(names), values, shared, coupled, loaded, active)


def _candidate_columns(
    names: tuple[str, ...], candidate: Candidate, n: int
) -> tuple[tuple[int, ...], ...]:
    """Per joint, the indices of `names` that `candidate` (coulomb_viscous) may use on that
    joint's rows: the viscous column, its Coulomb shape (and Stribeck static) column, their
    temperature and load partners, rotor inertia and offset."""
    out = []
    for j in range(n):
        own = {"fv", candidate.shape(j), "Ia", "offset"}
        if candidate.stribeck_velocity and candidate.stribeck_velocity[j] > 0:
            own.add(stribeck_name(candidate.stribeck_velocity[j]))
        own |= {temperature_name(c) for c in own} | {load_name(c) for c in own}
        out.append(tuple(i for i, name in enumerate(names) if name in own))
    return tuple(out)
