"""Model selection that generalises across kinds of motion (`identify/tuning/`): folds by kind
of motion per joint, the one-standard-error rule, the stability of the choice across folds,
and that folds over cells stay exact QR merges."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.identify.linear_problem import joint_row_spaces
from ident_framework.identify.tuning.block_factors import FoldRows, OwnColumns, fold_factors
from ident_framework.identify.tuning.cross_validation import cross_validate
from ident_framework.identify.tuning.folds import (
    KIND_NAMES,
    FoldPlan,
    joint_speed,
    motion_kinds,
    plan_folds,
)
from ident_framework.identify.tuning.rules import choose, complexity, stability
from ident_framework.identify.tuning.search import Candidate
from ident_framework.identify.tuning.selection import select_options
from ident_framework.model.regressor import regressor_builder
from ident_framework.model.robot import load_robot
from ident_framework.reports.tuning_report import tuning_lines, write_tuning_table
from ident_framework.testing.known_truth import exact_ur5e_recording
from ident_framework.testing.known_truth import planted_friction_recording as _recording
from ident_framework.testing.known_truth import tuning_config as _config
from ident_framework.triangular import stacked_r

KINDS = ("rest", "creep", "slow", "fast", "reversal")
REST, CREEP, SLOW, FAST, TURN = (KIND_NAMES.index(k) for k in KINDS)


# -- kinds of motion ---------------------------------------------------------------------------


def _piecewise_velocity(t: np.ndarray) -> np.ndarray:
    """Joint 1: rest, creep, slow, fast, a quick turn-round (fast + to fast - within 0.2 s),
    then a hold of 2 s between + and - (not a turn-round: a hold). Joint 2: fast throughout."""
    v = np.zeros_like(t)
    v[(t >= 1) & (t < 2)] = 0.03
    v[(t >= 2) & (t < 3)] = 0.1
    v[(t >= 3) & (t < 4)] = 0.5
    turn = (t >= 4) & (t < 4.2)
    v[turn] = 0.5 - 5.0 * (t[turn] - 4.0)  # 0.5 -> -0.5 in 0.2 s
    v[(t >= 4.2) & (t < 5)] = -0.5
    v[(t >= 5) & (t < 6)] = 0.5
    v[(t >= 8) & (t < 9)] = -0.5  # 6..8 s at rest between + and -: a hold
    return np.column_stack([v, np.full_like(t, 1.0)])


def test_kinds_are_per_joint_speed_bands_and_quick_turn_rounds():
    t = np.arange(0.0, 9.0, 0.002)
    v = _piecewise_velocity(t)
    kinds = motion_kinds(t, v, (0.01, 0.05, 0.2), 0.5)
    at = lambda s: kinds[np.searchsorted(t, s), 0]  # noqa: E731
    assert at(0.5) == REST and at(1.5) == CREEP and at(2.5) == SLOW and at(3.5) == FAST
    turning = (t > 4.095) & (t < 4.105)  # |v| < 0.05 in the turn-round
    assert np.all(kinds[turning, 0] == TURN)
    assert at(4.05) == FAST  # |v| = 0.25 in the turn-round: beyond the band, fast
    assert at(7.0) == REST  # the 2-s hold is not a reversal
    assert np.all(kinds[:, 1] == FAST)  # the other joint's rows keep their own kind
    # the kinds' velocity: a central difference of q over +-h, not the measured velocity
    q = np.cumsum(v, axis=0) * 0.002
    speed = joint_speed(t, q, 0.02)
    assert speed[np.searchsorted(t, 3.5), 0] == pytest.approx(0.5, rel=1e-6)


def test_cells_cross_time_blocks_with_each_joints_kind_and_folds_cover_them():
    t = np.arange(0.0, 9.0, 0.002)
    v = _piecewise_velocity(t)
    q = np.cumsum(v, axis=0) * 0.002
    data = Dataset(t, q, v, np.zeros_like(q), ("a", "b"))
    plan = plan_folds([data], 3, 0.1, ("time", "kind"))
    assert plan.kind == "time blocks" and plan.n_cells == 3 * len(KIND_NAMES)
    cells = plan.cells(0, t, 2)
    blocks = plan.labels(0, t)
    assert np.all(cells[blocks < 0] == -1)  # a guarded sample: every joint's row out
    kept = blocks >= 0
    np.testing.assert_array_equal(
        cells[kept] // len(KIND_NAMES), np.repeat(blocks[kept, None], 2, 1)
    )
    np.testing.assert_array_equal(cells[kept, 1] % len(KIND_NAMES), FAST)
    sample = np.searchsorted(t, 1.5)  # joint 1 creeps, joint 2 is fast: different cells
    assert cells[sample, 0] % len(KIND_NAMES) == CREEP
    layout = plan.layout()
    assert layout.names == ("block 1", "block 2", "block 3", "rest", "creep", "slow", "reversal")
    assert layout.partition == (0, 0, 0, 1, 1, 1, 1)
    for p in (0, 1):  # within a partition every cell is held out at most once
        held = [
            c
            for cells_, q_ in zip(layout.cells, layout.partition, strict=True)
            if q_ == p
            for c in cells_
        ]
        assert len(held) == len(set(held))
    fast_cells = {b * len(KIND_NAMES) + FAST for b in range(3)}
    assert not fast_cells & {c for cs in layout.cells[3:] for c in cs}  # fast: never held out
    only_kinds = plan_folds([data], 3, 0.1, ("kind",))
    assert only_kinds.n_cells == len(KIND_NAMES)
    assert only_kinds.layout().names == ("rest", "creep", "slow", "reversal")
    assert np.all(only_kinds.cells(0, t, 2) >= 0)  # no blocks, no guards


def test_several_recordings_stay_one_fold_each_beside_the_kinds():
    t = np.arange(0.0, 5.0, 0.01)
    q = np.column_stack([np.sin(t)])
    records = [Dataset(t + 10 * i, q, q, q, ("a",)) for i in range(3)]
    plan = plan_folds(records, 3, 0.1, ("time", "kind"))
    assert plan.kind == "recordings"
    assert plan.layout().names[:3] == ("recording 1", "recording 2", "recording 3")
    cells = plan.cells(2, records[2].timestamp, 1)
    assert np.all(cells // len(KIND_NAMES) == 2)


# -- exact merges --------------------------------------------------------------------------------


def test_a_folds_training_factor_is_the_qr_of_its_rows_and_cv_equals_refitting():
    """Per-joint cells (the kind of each joint's row) and two partitions: each fold's training
    factor (the QR of the other cells' factors) has the Gram matrix of the explicit rows, and
    the CV figure equals a fresh least-squares fit per fold, the partitions' mean squares
    averaged."""
    builder, data, recorded = exact_ur5e_recording(5, 3)
    t, q, dq, ddq, filtered = data.timestamp, data.q, data.dq, data.ddq, data.tau
    plan = FoldPlan(
        "time blocks", 3, (0.0,), (12.0,), (None,), 0.1,
        kind_times=(t,), kinds=(motion_kinds(t, dq, (0.05, 0.2, 0.5), 0.5),),
    )  # fmt: skip
    cells = plan.cells(0, t, 6)
    names = ("fv", "fc", "Ia", "offset")

    def own_values(d: Dataset, rows: np.ndarray, joints=None) -> np.ndarray:
        return np.stack(
            [d.dq[rows], np.sign(d.dq[rows]), d.ddq[rows], np.ones_like(d.dq[rows])], -1
        )

    own = OwnColumns(names, own_values)
    layout = plan.layout()
    factors = fold_factors(
        builder, [FoldRows(data, recorded, cells)], plan.n_cells, own,
        joint_row_spaces(builder), None, layout,
    )  # fmt: skip
    columns = np.array(
        list(range(60)) + [factors.own_column(j, c) for j in range(6) for c in ("fv", "fc", "Ia")]
    )
    rigid = builder.rigid_body(q, dq, ddq)
    own_full = own_values(data, np.arange(len(t)))
    full = np.zeros((len(t), 6, 60 + 6 * 4))
    full[:, :, :60] = rigid
    for j in range(6):
        full[:, j, 60 + 4 * j : 60 + 4 * (j + 1)] = own_full[:, j]
    x = np.concatenate([full[:, :, columns], filtered[:, :, None], recorded[:, :, None]], -1)
    held_out_kinds = 0
    for k, held in enumerate(layout.cells):
        train_rows = (cells >= 0) & ~np.isin(cells, held)
        held_out_kinds += layout.partition[k] * int(np.isin(cells, held).sum())
        direct = x[train_rows]  # (rows, columns): joint j's rows where its cell is not held
        merged = stacked_r([factors.merged[c] for c in range(plan.n_cells) if c not in held])
        merged = merged[:, [*columns, factors.tau_filtered, factors.tau_recorded]]
        np.testing.assert_allclose(merged.T @ merged, direct.T @ direct, rtol=1e-9, atol=1e-7)
    assert held_out_kinds > 100  # the kind folds hold rows out (some joints creep)
    figures = cross_validate(factors, columns, np.zeros(len(columns)), [(0.0, 0.0)], 1e-8)[0]
    sse, rows = np.zeros(len(layout.cells)), np.zeros(len(layout.cells))
    for k, held in enumerate(layout.cells):
        test, train = np.isin(cells, held), (cells >= 0) & ~np.isin(cells, held)
        fit = np.linalg.lstsq(x[train][:, :-2], x[train][:, -2], rcond=1e-8)[0]
        sse[k] = np.sum((x[test][:, :-2] @ fit - x[test][:, -1]) ** 2)
        rows[k] = test.sum()
    part = np.asarray(layout.partition)
    mse = np.mean([sse[part == p].sum() / rows[part == p].sum() for p in (0, 1)])
    assert figures.rmse == pytest.approx(np.sqrt(mse), rel=1e-7)
    valid = rows > 0
    np.testing.assert_allclose(
        figures.fold_rmse[valid], np.sqrt(sse[valid] / rows[valid]), rtol=1e-7
    )
    assert figures.se == pytest.approx(
        np.std(figures.fold_rmse[valid], ddof=1) / np.sqrt(valid.sum()), rel=1e-12
    )


# -- the one-standard-error rule and stability ---------------------------------------------------


def _candidate(**changes) -> Candidate:
    base = dict(
        lowpass_hz=20.0, measured_velocity=True, armature=False, torque_offset=False,
        dead_band=0.0, tanh_width=(0.0, 0.0),
    )  # fmt: skip
    return Candidate(**{**base, **changes})


def test_one_se_picks_the_simpler_within_one_se_and_the_better_outside():
    simple, rich = _candidate(), _candidate(armature=True, dead_band=0.01)
    configured = (20.0, True)
    keys = [complexity(c, configured) for c in (rich, simple)]
    assert keys[1] < keys[0]
    rmse, se = np.array([1.00, 1.04]), np.array([0.05, 0.05])
    assert choose(rmse, se, keys, "one_se") == (1, 0)  # 1.04 <= 1.00 + 0.05: the simpler
    assert choose(rmse, se, keys, "min") == (0, 0)
    rmse = np.array([1.00, 1.06])  # outside one SE: the better
    assert choose(rmse, se, keys, "one_se") == (0, 0)
    # the SE is the best's: a wide SE of the worse candidate does not pull it in
    assert choose(rmse, np.array([0.05, 0.5]), keys, "one_se") == (0, 0)
    # the order of simplicity, one option at a time
    assert complexity(_candidate(), configured) < complexity(
        _candidate(torque_offset=True), configured
    )
    assert complexity(_candidate(), configured) < complexity(
        _candidate(tanh_width=(0.0, 0.01)), configured
    )
    assert complexity(_candidate(), configured) < complexity(_candidate(dead_band=0.01), configured)
    assert complexity(_candidate(ridge=1e-2), configured) < complexity(
        _candidate(ridge=1e-4), configured
    )
    assert complexity(_candidate(), configured) < complexity(_candidate(lowpass_hz=5.0), configured)
    # paired: the SE of each candidate's per-fold difference to the best. Folds of different
    # kinds spread both candidates' RMSE alike (plain SE 0.5) but their difference little
    folds = np.array([[1.0, 2.0, 3.0], [1.1, 2.1, 3.1]])
    rmse = folds.mean(axis=1)
    se = np.std(folds, axis=1, ddof=1) / np.sqrt(3)
    assert choose(rmse, se, keys, "one_se", folds) == (1, 0)
    assert choose(rmse, se, keys, "one_se_paired", folds) == (0, 0)  # always 0.1 worse
    noisy = np.array([[1.0, 2.0, 3.0], [1.4, 1.9, 2.9]])  # worse in one fold, better in two
    assert choose(noisy.mean(axis=1), se, keys, "one_se_paired", noisy) == (1, 0)
    with pytest.raises(ValueError, match="rule must be one of"):
        choose(rmse, se, keys, "median")


def test_stability_counts_the_folds_each_candidate_wins_and_the_picks_rank():
    folds = np.array([[1.0, 2.0, 3.0, np.nan], [1.1, 1.9, 2.5, np.nan], [0.9, 2.2, 3.5, np.nan]])
    wins, ranks = stability(folds, picked=1)
    assert wins == (0, 2, 1)  # the empty fold (NaN) is left out
    assert ranks == (3, 1, 1)


def test_selection_reports_its_stability_and_one_se_is_never_worse_than_one_se_away():
    robot = load_robot("ur10e")
    grid = ("tuning.cutoffs_hz=[20.0]", "tuning.velocity_sources=[measured]")
    figures = {}
    for rule in ("min", "one_se"):
        config = _config(*grid, "tuning.partitions=[time,kind]", f"tuning.rule={rule}")
        builder = regressor_builder(config, robot)
        theta = builder.standard_parameters(robot.inertial_parameters())
        data = _recording(builder, theta, np.full(6, 0.02), seed=2)
        tuned, _ = select_options(config, robot, builder, [data])
        figures[rule] = tuned.selection
    chosen, best = figures["one_se"], figures["min"]
    assert chosen.rule == "one_se" and len(chosen.fold_rmse) == len(chosen.fold_names) == 9
    assert chosen.fold_names[5:] == ["rest", "creep", "slow", "reversal"]
    simpler = [s for s in chosen.stability if not s["picked_is_best"]]
    assert simpler  # the rule did move some stage to a simpler option
    for s in chosen.stability:
        assert s["picked_cv_rmse"] <= s["best_cv_rmse"] + s["se"] + 1e-12
        assert (
            0 <= s["picked_fold_wins"] <= s["folds"]
            and len(s["picked_rank_per_fold"]) == s["folds"]
        )
    assert all(s["picked_is_best"] for s in best.stability)
    # the table: each candidate's SE and folds won; the summary: the stability per stage
    rows = [r for r in chosen.table if "fold_wins" in r]
    assert rows and all(r["cv_se"] >= 0 for r in chosen.table)
    lines = tuning_lines(chosen)
    assert "(rule one_se)" in lines[1] and lines[2].startswith("stability")
    assert "(simpler, within 1 SE)" in lines[2]
    section = chosen.to_dict()
    assert list(section["fold_rmse"]) == chosen.fold_names and section["stability"]
    assert all(v is None or np.isfinite(v) for v in section["fold_rmse"].values())
    assert json.loads(json.dumps(section, allow_nan=False)) == section  # no NaN in metrics
    import csv
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        write_tuning_table(Path(folder), chosen)
        table = list(csv.DictReader(open(Path(folder) / "tuning.csv", encoding="utf-8")))
    assert {"cv_se", "fold_wins"} <= set(table[0])
    assert any(r["fold_wins"].endswith("/9") or r["fold_wins"].endswith("/8") for r in table)
