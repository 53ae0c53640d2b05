"""tuning=cv: folds, cross-validation from merged QR factors, the regularised solve, the smooth
Coulomb sign, and a selection that must find a planted friction shape."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.linear_problem import joint_row_spaces
from ident_framework.identify.tuning.block_factors import FoldRows, OwnColumns, fold_factors
from ident_framework.identify.tuning.cross_validation import cross_validate
from ident_framework.identify.tuning.folds import FoldPlan, motion_period, plan_folds
from ident_framework.identify.tuning.selection import apply_chosen, select_options
from ident_framework.model.regressor import regressor_builder
from ident_framework.model.robot import load_robot
from ident_framework.testing.known_truth import (
    exact_ur5e_recording,
    planted_friction_recording,
    planted_ur10e,
    sines,
    tuning_config,
)
from ident_framework.triangular import spectral_solve

_config = tuning_config


# -- folds --------------------------------------------------------------------------------


def test_time_blocks_are_contiguous_with_guards():
    t = np.linspace(0.0, 20.0, 2001)
    plan = FoldPlan("time blocks", 5, (0.0,), (20.0,), (None,), 0.1)
    labels = plan.labels(0, t)
    kept = labels[labels >= 0]
    assert np.all(np.diff(kept) >= 0)  # in time order: 0,0,...,1,1,...,4
    assert set(kept) == set(range(5))
    assert labels[0] == 0 and labels[-1] == 4  # the recording's own ends are kept
    for boundary in (4.0, 8.0, 12.0, 16.0):  # guard bands around the inner boundaries
        near = np.abs(t - boundary) < 0.1 - 1e-9
        assert np.all(labels[near] == -1)


def test_a_repeating_motion_is_cut_in_its_phase():
    t = np.arange(0.0, 30.0, 0.01)
    q = np.column_stack([np.sin(2 * np.pi * t / 10), np.cos(2 * np.pi * 3 * t / 10)])
    period = motion_period(t, q)
    assert period == pytest.approx(10.0, abs=0.05)
    data = Dataset(t, q, q, q, ("a", "b"))
    plan = plan_folds([data], 5, 0.05)
    assert plan.kind == "periodic blocks"
    labels = plan.labels(0, t)
    # the same phase of every period is in the same fold: a held-out block is not repeated
    same_phase = labels[(t > 1.0) & (t < 1.5)], labels[(t > 11.0) & (t < 11.5)]
    assert np.all(same_phase[0] == 0) and np.all(same_phase[1] == 0)
    rng = np.random.default_rng(0)
    assert motion_period(t, rng.normal(size=(len(t), 2)).cumsum(axis=0)) is None


def test_several_recordings_are_one_fold_each_when_there_are_enough():
    t = np.linspace(0, 5, 501)
    q = np.zeros((501, 1))
    records = [Dataset(t + 10 * i, q, q, q, ("a",)) for i in range(3)]
    plan = plan_folds(records, 3, 0.1)
    assert plan.kind == "recordings" and plan.n_folds == 3
    assert np.all(plan.labels(2, records[2].timestamp) == 2)
    # fewer recordings than folds: fold k is the k-th block of every recording
    plan = plan_folds(records[:2], 5, 0.1)
    assert plan.kind == "time blocks" and plan.n_folds == 5
    for i in (0, 1):
        labels = plan.labels(i, records[i].timestamp)
        kept = labels[labels >= 0]
        assert set(kept) == set(range(5)) and np.all(np.diff(kept) >= 0)
    assert "of each of 2 recordings" in plan.describe()


# -- cross-validation from merged factors equals refitting each fold --------------------


def test_cross_validation_from_merged_factors_equals_refitting():
    builder, data, recorded = exact_ur5e_recording(4, 1)
    t, q, dq, ddq, filtered = data.timestamp, data.q, data.dq, data.ddq, data.tau
    labels = np.minimum((t / 3.0).astype(int), 3)
    labels[::7] = -1  # rows in no fold are left out of both sides
    names = ("fv", "fc", "Ia", "offset")

    def own_values(d: Dataset, rows: np.ndarray, joints=None) -> np.ndarray:
        return np.stack(
            [d.dq[rows], np.sign(d.dq[rows]), d.ddq[rows], np.ones_like(d.dq[rows])], -1
        )

    own = OwnColumns(names, own_values)
    spaces = joint_row_spaces(builder)
    factors = fold_factors(builder, [FoldRows(data, recorded, labels)], 4, own, spaces)
    columns = np.array(
        list(range(60)) + [factors.own_column(j, c) for j in range(6) for c in ("fv", "fc", "Ia")]
    )
    nominal = np.zeros(len(columns))
    held = cross_validate(factors, columns, nominal, [(0.0, 0.0), (1e-3, 0.0)], 1e-8, True)

    # by hand: the explicit regressor of those columns, a fresh least-squares fit per fold
    rigid = builder.rigid_body(q, dq, ddq)
    own_full = own_values(data, np.arange(len(t)))
    full = np.zeros((len(t), 6, 60 + 6 * 4))
    full[:, :, :60] = rigid
    for j in range(6):
        full[:, j, 60 + 4 * j : 60 + 4 * (j + 1)] = own_full[:, j]
    x = full[:, :, columns]
    sse, sse_joint = 0.0, np.zeros(6)
    for k in range(4):
        train, test = labels >= 0, labels == k
        train &= labels != k
        fit = np.linalg.lstsq(
            x[train].reshape(-1, len(columns)), filtered[train].ravel(), rcond=1e-8
        )[0]
        residual = x[test] @ fit - recorded[test]
        sse += np.sum(residual**2)
        sse_joint += np.sum(residual**2, axis=0)
    samples = np.sum(labels >= 0)
    assert held[0].rmse == pytest.approx(np.sqrt(sse / (samples * 6)), rel=1e-7)
    np.testing.assert_allclose(held[0].rmse_per_joint, np.sqrt(sse_joint / samples), rtol=1e-7)
    assert held[1].rmse != pytest.approx(held[0].rmse, rel=1e-9)  # the ridge did something


# -- regularised solve ----------------------------------------------------------------------


def test_ridge_and_truncated_svd_closed_forms():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 5)) @ np.diag([10, 5, 1, 0.1, 0.001])
    b = rng.normal(size=40)
    prior = rng.normal(size=5)
    r_w, rhs = np.linalg.qr(a)[1], np.linalg.qr(a)[0].T @ b
    s_max = np.linalg.svd(a, compute_uv=False)[0]
    lam = 0.01 * s_max
    ridge = spectral_solve(r_w, rhs, prior, ridge=0.01)[0]
    expected = prior + np.linalg.solve(a.T @ a + lam**2 * np.eye(5), a.T @ (b - a @ prior))
    np.testing.assert_allclose(ridge, expected, rtol=1e-9)
    plain = spectral_solve(r_w, rhs)[0]
    np.testing.assert_allclose(plain, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-8)
    truncated, _, rank = spectral_solve(r_w, rhs, prior, truncate=1e-3)
    assert rank == 4
    _, _, vt = np.linalg.svd(a)
    assert vt[4] @ truncated == pytest.approx(vt[4] @ prior, abs=1e-9)  # dropped: at the prior


# -- smooth Coulomb sign ----------------------------------------------------------------------


def test_tanh_width_per_joint():
    model = CoulombViscousFriction(CoulombViscousParams(dead_band=0.01, tanh_width=[0.0, 0.02]))
    dq = np.array([[0.005, 0.005], [-0.5, -0.5]])
    basis = model.basis(dq)
    assert basis[0, 0, 1] == 0.0  # joint 1: dead-band sign
    assert basis[0, 1, 1] == pytest.approx(np.tanh(0.25))
    assert basis[1, 0, 1] == -1.0 and basis[1, 1, 1] == pytest.approx(np.tanh(-25))
    with pytest.raises(ValueError, match="2 values for 3 joints"):
        model.basis(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="tanh_width must be >= 0"):
        CoulombViscousParams(tanh_width=[-1.0])


# -- the selection ----------------------------------------------------------------------------


_recording = planted_friction_recording


def test_selection_finds_a_planted_friction_shape_per_joint():
    config = _config("tuning.cutoffs_hz=[20.0]", "tuning.velocity_sources=[measured]")
    robot, builder, theta, widths = planted_ur10e(config)
    data = _recording(builder, theta, widths, seed=7)
    tuned, tuned_builder = select_options(config, robot, builder, [data])
    chosen = tuned.selection.chosen["friction.tanh_width"]
    assert chosen is not None
    for j in (1, 4):  # the smooth joints get a wide tanh
        assert 0.01 <= chosen[j] <= 0.1, chosen
    for j in (0, 2, 3, 5):  # the sharp ones a sign (width 0) or a narrow tanh
        assert chosen[j] <= 0.003, chosen
    assert tuned.selection.cv_rmse < tuned.selection.configured_cv_rmse
    assert tuned_builder.friction.tanh_width.tolist() == chosen
    assert tuned.plugins["friction"].params.tanh_width == chosen
    assert tuned.preprocessing.lowpass_hz == 20.0
    rows = tuned.selection.table
    assert sum(row["chosen"] for row in rows) == 1 and rows[0]["stage"] == "start"


def test_no_selection_without_tuning_or_for_a_source_not_listed():
    config = _config("tuning=none")
    robot = load_robot("ur10e")
    builder = regressor_builder(config, robot)
    t, q, dq, ddq = sines(2.0, 200.0, seed=1)
    data = Dataset(t, q, dq, q, robot.joint_names)
    assert select_options(config, robot, builder, [data]) == (config, builder)
    config = _config(source=("source=mujoco",))  # a simulation: not in tuning.sources
    assert select_options(config, robot, builder, [data]) == (config, builder)
    exact = Dataset(t, q, dq, q, robot.joint_names, ddq=ddq)
    config = _config("tuning.sources=[mujoco]", source=("source=mujoco",))
    tuned = select_options(config, robot, builder, [exact])[0]  # exact data: no preprocessing
    assert tuned.selection is not None
    assert not any(key.startswith("preprocessing.") for key in tuned.selection.chosen)


def test_chosen_values_apply_to_the_config():
    config = _config()
    chosen = {"preprocessing.lowpass_hz": 10.0, "regressor.torque_offset": True,
              "friction.tanh_width": [0.01] * 6, "estimator.weight": 100.0}  # fmt: skip
    tuned = apply_chosen(config, chosen)
    assert tuned.preprocessing.lowpass_hz == 10.0 and tuned.regressor.torque_offset
    assert tuned.plugins["friction"].params.tanh_width == [0.01] * 6
    assert tuned.plugins["estimator"].params.weight == 100.0
    assert config.preprocessing.lowpass_hz == 20.0  # the original is left alone


def test_several_recordings_are_selected_on_with_one_fold_each():
    """The hook for several identification recordings: each is preprocessed alone and is
    one fold (whole recordings held out) when there are at least tuning.folds of them."""
    config = _config(
        "tuning.cutoffs_hz=[20.0]", "tuning.velocity_sources=[measured]", "tuning.folds=3",
        "tuning.partitions=[time,kind]", "tuning.stribeck_velocities=[]",  # tanh widths alone
        # at the filtered velocity: filtered like the torque (parallel), a dead-band sign is
        # within the CV's noise of tanh(dq / 0.02) on joints 3 and 4 (measured)
        "preprocessing.friction_columns=filtered_velocity",
    )  # fmt: skip
    robot = load_robot("ur10e")
    builder = regressor_builder(config, robot)
    theta = builder.standard_parameters(robot.inertial_parameters())
    widths = np.full(6, 0.02)
    recordings = [_recording(builder, theta, widths, seed=s) for s in (2, 3, 5)]
    tuned, _ = select_options(config, robot, builder, recordings)
    assert tuned.selection.folds.startswith("3 folds: one per recording; and 4 folds by kind")
    assert tuned.selection.cv_rmse < tuned.selection.configured_cv_rmse
    widths = tuned.selection.chosen["friction.tanh_width"]
    assert all(0.01 <= w <= 0.03 for w in widths), widths


def test_samples_the_data_checks_distrust_are_in_no_fold():
    """A stretch of torque clipped at its extreme (a saturated sensor) is left out of the
    cross-validation as it is left out of estimation: the CV figure is the clean one's."""
    grid = ("tuning.cutoffs_hz=[20.0]", "tuning.velocity_sources=[measured]")
    robot = load_robot("ur10e")
    config = _config(*grid)
    builder = regressor_builder(config, robot)
    theta = builder.standard_parameters(robot.inertial_parameters())
    clean = _recording(builder, theta, np.full(6, 0.01), seed=4)
    tau = clean.tau.copy()
    tau[3000:4500, 1] = tau[:, 1].max()  # 3 s of shoulder lift flat at its peak
    clipped = dataclasses.replace(clean, tau=tau)
    figures = {}
    for name, data, checks in (
        ("clean", clean, "checks.enabled=true"),
        ("checked", clipped, "checks.enabled=true"),
        ("unchecked", clipped, "checks.enabled=false"),
    ):
        tuned, _ = select_options(_config(*grid, checks), robot, builder, [data])
        figures[name] = tuned.selection.cv_rmse
    assert figures["checked"] < 1.1 * figures["clean"]
    assert figures["unchecked"] > 2 * figures["clean"]


def test_lagged_differences_by_fft_equal_the_direct_sums():
    from ident_framework.identify.tuning.folds import _lagged_rms_differences

    rng = np.random.default_rng(4)
    signal = np.cumsum(rng.standard_normal((700, 3)), axis=0)
    signal -= signal.mean(axis=0)
    lags = np.arange(2, 351)
    direct = [np.sqrt(np.mean(np.sum((signal[k:] - signal[:-k]) ** 2, axis=1))) for k in lags]
    np.testing.assert_allclose(_lagged_rms_differences(signal, lags), direct, rtol=1e-10)


def test_cell_runs_are_the_stable_sort_of_the_labels():
    from ident_framework.identify.tuning.block_factors import _cell_runs

    rng = np.random.default_rng(5)
    for cell in (
        np.repeat([-1, 0, 0, 2, 3], [4, 7, 1, 9, 3]),  # in order: slices
        rng.integers(-1, 4, 50),  # out of order: index arrays
        np.zeros(6, dtype=int),
    ):
        order = np.argsort(cell, kind="stable")
        runs = _cell_runs(cell)
        assert [c for c, _ in runs] == sorted(set(cell.tolist()))
        rows = np.concatenate([np.arange(len(cell))[mine] for _, mine in runs])
        np.testing.assert_array_equal(rows, order)
        for c, mine in runs:
            assert (cell[mine] == c).all()
