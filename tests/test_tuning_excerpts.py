"""tuning=cv on a long recording: the cross-validation reads windows, not the whole recording
(`identify/tuning/excerpts.py`), with the same filtered values at those rows."""

from __future__ import annotations

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import PreprocessingParams, preprocess
from ident_framework.identify.linear_problem import parallel_friction_basis
from ident_framework.identify.tuning import column_spaces
from ident_framework.identify.tuning.excerpts import WINDOWS_PER_FOLD, halo_s, plan_excerpts
from ident_framework.identify.tuning.folds import plan_folds
from ident_framework.identify.tuning.selection import select_options
from ident_framework.parallel_work import usable_cores
from ident_framework.testing.known_truth import (
    planted_friction_recording,
    planted_ur10e,
    sines,
    tuning_config,
)


def _long(duration: float, seed: int = 1, rate: float = 500.0) -> Dataset:
    t, q, dq, _ = sines(duration, rate, seed=seed)
    tau = 3.0 * np.sin(q) + 0.5 * dq
    return Dataset(t, q, dq, tau, tuple(f"j{i}" for i in range(6)))


def _periodic(duration: float, period: float, rate: float = 500.0) -> Dataset:
    t = np.arange(0.0, duration, 1.0 / rate)
    phase = 2 * np.pi * t / period
    q = np.column_stack([np.sin((k + 1) * phase + k) for k in range(6)])
    dq = np.column_stack([(k + 1) * 2 * np.pi / period * np.cos((k + 1) * phase + k)
                          for k in range(6)])  # fmt: skip
    return Dataset(t, q, dq, q + dq, tuple(f"j{i}" for i in range(6)))


def test_a_recording_a_few_times_the_cap_is_read_whole():
    data = _long(60.0)  # 30,000 samples: windows with their halos would read most of it
    plan = plan_folds([data], 5, 0.1)
    halo = halo_s(PreprocessingParams(lowpass_hz=5.0, use_measured_velocity=False))
    assert plan_excerpts([data], plan, 20000, halo) is None
    assert plan_excerpts([data], plan, None, 1.0) is None


def test_windows_cover_every_time_block_and_read_a_fraction():
    data = _long(400.0)  # 200,000 samples
    plan = plan_folds([data], 5, 0.1)
    assert plan.kind == "time blocks"
    params = PreprocessingParams(lowpass_hz=5.0, use_measured_velocity=False)
    halo = halo_s(params)
    assert halo == pytest.approx(24 / (2 * np.pi * 5.0 * np.sin(np.pi / 8)) + 0.03)
    excerpts = plan_excerpts([data], plan, 20000, halo)
    assert excerpts is not None and len(excerpts) == 5 * WINDOWS_PER_FOLD
    own = [e.own(data.timestamp) for e in excerpts]
    assert sum(int(m.sum()) for m in own) == pytest.approx(20000, rel=0.01)
    assert not np.any(np.sum(own, axis=0) > 1)  # disjoint
    folds = [set(plan.labels(0, data.timestamp[m]).tolist()) - {-1} for m in own]
    expected = [{k // WINDOWS_PER_FOLD} for k in range(len(excerpts))]
    assert folds == expected  # WINDOWS_PER_FOLD windows in each time block, in order
    windows = [e.data(data, halo) for e in excerpts]
    assert sum(w.n_samples for w in windows) < 0.4 * data.n_samples
    for e, w in zip(excerpts, windows, strict=True):  # a halo of recording on both sides
        assert e.start_s - w.timestamp[0] == pytest.approx(halo, abs=0.003)
        assert w.timestamp[-1] - e.end_s == pytest.approx(halo, abs=0.003)


def test_windows_of_a_repeating_motion_spread_over_its_phase_and_periods():
    data = _periodic(400.0, 20.0)  # twenty periods
    plan = plan_folds([data], 5, 0.1)
    assert plan.kind == "periodic blocks"
    excerpts = plan_excerpts([data], plan, 20000, 2.0)
    count = 5 * WINDOWS_PER_FOLD
    assert excerpts is not None and len(excerpts) == count
    centres = np.array([(e.start_s + e.end_s) / 2 for e in excerpts])
    phases = (centres % plan.periods[0]) / plan.periods[0]
    np.testing.assert_allclose(phases, (np.arange(count) + 0.5) / count, atol=0.01)
    periods = (centres // plan.periods[0]).astype(int)
    assert len(set(periods)) == count and min(periods) <= 1 and max(periods) >= 17  # spread
    labels = np.concatenate([plan.labels(0, data.timestamp[e.own(data.timestamp)])
                             for e in excerpts])  # fmt: skip
    assert set(labels.tolist()) - {-1} == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("velocity", [True, False])
def test_a_window_filters_as_the_whole_recording(velocity):
    """The window's own rows, preprocessed with its halo, carry the values the whole
    recording's preprocessing gives them (q, dq, ddq, the low-passed torque and a parallel
    friction column), also across a gap and with the sample step of the whole."""
    data = _long(400.0, seed=3)
    keep = np.ones(data.n_samples, dtype=bool)
    keep[41000:41040] = False  # a gap of 80 ms inside the fifth window's halo
    data = data.select(keep)
    plan = plan_folds([data], 5, 0.1)
    params = PreprocessingParams(lowpass_hz=5.0, use_measured_velocity=velocity)
    excerpts = plan_excerpts([data], plan, 20000, halo_s(params))
    whole = preprocess(data, params)
    for excerpt in excerpts:
        part = preprocess(excerpt.data(data, halo_s(params)), params, step_of=excerpt.step_of)
        mine = excerpt.own(part.timestamp)
        at = np.searchsorted(whole.timestamp, part.timestamp[mine])
        np.testing.assert_array_equal(whole.timestamp[at], part.timestamp[mine])
        for name in ("q", "dq", "ddq", "tau"):
            a, b = getattr(part, name)[mine], getattr(whole, name)[at]
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * np.max(np.abs(b)), err_msg=name)

        def shape(t, dq, ddq):
            return np.tanh(dq / 0.01)[:, :, None]

        ours = parallel_friction_basis(part, shape, False, np.flatnonzero(mine))
        reference = parallel_friction_basis(whole, shape, False, at)
        np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-9)


def test_the_tuning_reads_the_same_samples_of_a_recording_twice_as_long(monkeypatch):
    """The cost of the selection does not grow with the recording: the samples it
    preprocesses are the same for 200 s and 400 s of recording (and it says it read windows);
    the planted friction shape is still found."""
    config = tuning_config(
        "tuning.cutoffs_hz=[20.0]", "tuning.velocity_sources=[measured]",
        "tuning.max_samples=20000", "tuning.stribeck_velocities=[]",
    )  # fmt: skip
    robot, builder, theta, widths = planted_ur10e(config)
    read: list[int] = []
    original = column_spaces.preprocess

    def counting(ds, *args, **kwargs):
        read.append(ds.n_samples)
        return original(ds, *args, **kwargs)

    monkeypatch.setattr(column_spaces, "preprocess", counting)
    totals, selections = [], []
    for duration in (216.0, 432.0):
        data = planted_friction_recording(builder, theta, widths, seed=7, duration=duration)
        read.clear()
        tuned, _ = select_options(config, robot, builder, [data])
        totals.append(sum(read))
        selections.append(tuned.selection)
    assert totals[0] == totals[1]
    assert totals[1] < 0.1 * 432 * 500 * 11  # a fraction of the recording per candidate
    for selection in selections:
        assert selection.windows == 5 * WINDOWS_PER_FOLD
        assert selection.samples_used == pytest.approx(20000, rel=0.05)
        chosen = selection.chosen["friction.tanh_width"]
        assert all(0.01 <= chosen[j] <= 0.1 for j in (1, 4)), chosen
        assert all(chosen[j] <= 0.003 for j in (0, 2, 3, 5)), chosen


@pytest.mark.skipif(usable_cores() < 2, reason="needs two usable cores")
def test_the_search_on_forked_workers_is_the_search_in_one_process(monkeypatch):
    """`ColumnSpaces.parallel`: the spaces' joint groups, the spaces built side by side and
    the candidates scored on the forked workers (spaces told them after the fork) give the
    same table, bit for bit, as everything in this process (a configured cut-off that
    loses: the column search again on another preprocessing's space)."""
    config = tuning_config(
        "preprocessing.lowpass_hz=3.0", "tuning.cutoffs_hz=[10.0,20.0]",
        "tuning.velocity_sources=[measured,differentiated]",
        "tuning.max_samples=6000", "tuning.stribeck_velocities=[]",
    )  # fmt: skip
    robot, builder, theta, widths = planted_ur10e(config)
    data = planted_friction_recording(builder, theta, widths, seed=7, duration=60.0)
    tables = []
    for workers in ("1", ""):
        monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", workers)
        tuned, _ = select_options(config, robot, builder, [data])
        tables.append((tuned.selection.chosen, tuned.selection.table))
    assert tables[0] == tables[1]
    assert tables[0][0]["preprocessing.lowpass_hz"] != 3.0
