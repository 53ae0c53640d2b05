"""Filtering and differentiation against analytic signals, on uniform and jittery time grids.

q_j(t) = 0.5 sin(2 pi 0.2 t + a_j) + 0.2 sin(2 pi 1.1 t + b_j), with exact dq, ddq. Measured
errors (max over samples and joints, relative to max |ddq|, default parameters): 500 Hz
uniform 5e-7 (ddq, filtered measured dq) and 2e-5 (dq from q); jittery 100 Hz (2-16 ms steps)
2e-6 and 2e-5. TOL = 1e-4 sits between these and the mistakes the tests show it catches:
a forward difference paired with the earlier sample (half a sample off, 6e-3 at 500 Hz),
untrimmed filter edges (0.1), jitter ignored (0.7).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import PreprocessingParams, preprocess
from ident_framework.errors import UserError

TOL = 1e-4  # max |ddq error| / max |ddq|
AMPLITUDE = np.array([0.5, 0.2])  # rad
FREQUENCY = np.array([0.2, 1.1])  # Hz
PHASE = np.array([[0.0, 0.3], [0.5, 1.0], [1.0, 2.0]])  # rad, one row per joint
DURATION = 12.0  # s


def analytic(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (rad), dq (rad/s), ddq (rad/s^2) at times t (s), shape (len(t), 3)."""
    omega = 2 * np.pi * FREQUENCY
    arg = omega * t[:, None, None] + PHASE[None]
    q = (AMPLITUDE * np.sin(arg)).sum(-1)
    dq = (AMPLITUDE * omega * np.cos(arg)).sum(-1)
    ddq = (-AMPLITUDE * omega**2 * np.sin(arg)).sum(-1)
    return q, dq, ddq


def torque(t: np.ndarray) -> np.ndarray:
    q, dq, ddq = analytic(t)
    return 2.0 * ddq + 0.5 * dq + np.sin(q)  # Nm


def uniform_500hz() -> np.ndarray:
    return np.arange(0.0, DURATION, 0.002)


def jittery_100hz(seed: int = 1) -> np.ndarray:
    steps = np.random.default_rng(seed).uniform(0.002, 0.016, int(DURATION / 0.002))
    t = 3.0 + np.cumsum(steps)  # not starting at 0
    return t[t < 3.0 + DURATION]


def dataset(t: np.ndarray, noise: float = 0.0, seed: int = 0) -> Dataset:
    q, dq, _ = analytic(t)
    tau = torque(t) + noise * np.random.default_rng(seed).standard_normal(q.shape)
    return Dataset(t, q, dq, tau, ("a", "b", "c"), q_target=q.copy(), dq_target=dq.copy())


def relative_errors(out: Dataset) -> tuple[float, float]:
    """max |dq error| / max |dq|, max |ddq error| / max |ddq| at the output timestamps."""
    _, dq, ddq = analytic(out.timestamp)
    e_dq = np.abs(out.dq - dq).max() / np.abs(dq).max()
    e_ddq = np.abs(out.ddq - ddq).max() / np.abs(ddq).max()
    return float(e_dq), float(e_ddq)


GRIDS = {"uniform_500hz": uniform_500hz, "jittery_100hz": jittery_100hz}


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("measured_velocity", [True, False])
def test_derivatives_match_analytic(grid, measured_velocity):
    ds = dataset(GRIDS[grid]())
    out = preprocess(ds, PreprocessingParams(use_measured_velocity=measured_velocity))
    e_dq, e_ddq = relative_errors(out)
    assert e_dq < TOL / 10
    assert e_ddq < TOL
    q, _, _ = analytic(out.timestamp)
    np.testing.assert_allclose(out.q, q, atol=1e-6)
    np.testing.assert_allclose(out.tau, torque(out.timestamp), atol=1e-4 * np.abs(out.tau).max())


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("measured_velocity", [True, False])
def test_no_error_spike_at_the_ends(grid, measured_velocity):
    params = PreprocessingParams(use_measured_velocity=measured_velocity)
    out = preprocess(dataset(GRIDS[grid]()), params)
    _, _, ddq = analytic(out.timestamp)
    error = np.abs(out.ddq - ddq).max(axis=1) / np.abs(ddq).max()
    edge = max(5, len(error) // 50)
    assert max(error[:edge].max(), error[-edge:].max()) < TOL
    # the trimming is what removes them: without it the ends are far off
    raw = preprocess(dataset(GRIDS[grid]()), replace(params, trim_s=0.0))
    assert relative_errors(raw)[1] > 10 * TOL
    assert raw.n_samples > out.n_samples


def test_tolerance_catches_a_half_sample_shift():
    """A forward difference (dq[k+1] - dq[k]) / h is the derivative at t_k + h/2; pairing it
    with sample k is the classic half-sample error. The tolerance must see it."""
    t = uniform_500hz()
    _, dq, ddq = analytic(t)
    forward = np.diff(dq, axis=0) / np.diff(t)[:, None]
    assert np.abs(forward - ddq[:-1]).max() / np.abs(ddq).max() > 10 * TOL
    _, _, ddq_mid = analytic(t[:-1] + 0.001)
    assert np.abs(forward - ddq_mid).max() / np.abs(ddq).max() < TOL  # right pairing is fine


def test_jitter_must_not_be_treated_as_uniform():
    ds = dataset(jittery_100hz())
    wrong = preprocess(ds, PreprocessingParams(resample="never"))
    assert relative_errors(wrong)[1] > 0.1
    out = preprocess(ds)  # "auto" detects the jitter and resamples
    report = out.metadata["preprocessing"]
    assert report["resampled"] and report["max_step_jitter"] > 0.5
    # filtered on a uniform grid, then back at the recorded timestamps: every recorded row
    # but the few at the ends the filters cannot serve, timestamp and torque as recorded
    kept = np.isin(ds.timestamp, out.timestamp)
    assert out.n_samples == kept.sum() == ds.n_samples - report["edge_samples_dropped"]
    first, last = np.flatnonzero(kept)[[0, -1]]
    assert kept[first : last + 1].all()  # only the ends are dropped
    edge = report["trim_samples"] * report["median_step_s"]  # s at each end of the grid
    t = ds.timestamp
    assert t[first - 1] < t[0] + edge <= t[first] and t[last] <= t[-1] - edge < t[last + 1] + edge
    np.testing.assert_array_equal(out.recorded.timestamp, ds.timestamp[kept])
    np.testing.assert_array_equal(out.recorded.tau, ds.tau[kept])
    np.testing.assert_array_equal(out.measured_torque, ds.tau[kept])


def test_uniform_data_is_not_resampled_and_rows_stay_aligned():
    ds = dataset(uniform_500hz())
    out = preprocess(ds)
    report = out.metadata["preprocessing"]
    assert not report["resampled"]
    k = report["trim_samples"]
    assert k > 0 and out.n_samples == ds.n_samples - 2 * k
    np.testing.assert_array_equal(out.timestamp, ds.timestamp[k:-k])
    np.testing.assert_array_equal(out.q_target, ds.q_target[k:-k])
    np.testing.assert_array_equal(out.dq_target, ds.dq_target[k:-k])


def test_targets_follow_the_resampled_grid():
    out = preprocess(dataset(jittery_100hz()))
    q, dq, _ = analytic(out.timestamp)
    np.testing.assert_allclose(out.q_target, q, atol=1e-5)
    np.testing.assert_allclose(out.dq_target, dq, atol=1e-4)


def test_noise_on_torque_is_reduced():
    t = uniform_500hz()
    ds = dataset(t, noise=0.05)
    out = preprocess(ds)
    raw_rms = np.sqrt(np.mean((ds.tau - torque(t)) ** 2))
    filtered_rms = np.sqrt(np.mean((out.tau - torque(out.timestamp)) ** 2))
    assert raw_rms == pytest.approx(0.05, rel=0.05)
    assert filtered_rms < 0.4 * raw_rms  # 20 Hz of a 250 Hz band: about 0.27 expected


def test_input_is_untouched():
    ds = dataset(jittery_100hz())
    copies = {name: getattr(ds, name).copy() for name in ("timestamp", "q", "dq", "tau")}
    out = preprocess(ds)
    for name, value in copies.items():
        np.testing.assert_array_equal(getattr(ds, name), value)
    assert "preprocessing" not in ds.metadata and out is not ds


def test_exact_accelerations_mean_no_preprocessing():
    t = uniform_500hz()
    q, dq, ddq = analytic(t)
    ds = Dataset(t, q, dq, torque(t), ("a", "b", "c"), ddq=ddq)
    out = preprocess(ds)
    assert out.n_samples == ds.n_samples and out.ddq is ds.ddq and out.q is ds.q
    assert out.metadata["preprocessing"]["applied"] is False


@pytest.mark.parametrize(("grid", "cutoff"), [("uniform_500hz", 300.0), ("jittery_100hz", 60.0)])
def test_cutoff_above_nyquist_is_refused(grid, cutoff):
    with pytest.raises(UserError, match=r"preprocessing\.lowpass_hz") as error:
        preprocess(dataset(GRIDS[grid]()), PreprocessingParams(lowpass_hz=cutoff))
    assert "Nyquist" in str(error.value)


def test_too_short_after_trimming_is_refused():
    ds = dataset(uniform_500hz()).select(slice(0, 150))  # 0.3 s
    with pytest.raises(UserError, match=r"too short.*preprocessing\.trim_s"):
        preprocess(ds, min_samples=50)


def test_a_gap_is_a_segment_boundary():
    """0.5 s of lost packets: each side is filtered on its own (no filter runs across the gap),
    a piece too short to filter is dropped and counted."""
    t = uniform_500hz()
    t[3000:] += 0.5
    ds = dataset(t)
    out = preprocess(ds)
    report = out.metadata["preprocessing"]
    k = report["trim_samples"]
    assert report["gaps"] == 1 and report["recordings"][0]["segments"] == 2
    expected = np.concatenate([t[k : 3000 - k], t[3000 + k : -k]])
    np.testing.assert_array_equal(out.timestamp, expected)
    assert report["edge_samples_dropped"] == 4 * k
    _, _, ddq = analytic(out.timestamp)
    assert np.abs(out.ddq - ddq).max() / np.abs(ddq).max() < TOL  # both sides of the gap
    # across the gap (treated as one piece, resampled) the ends of each side would be wrong
    t_short = t.copy()
    t_short[-60:] += 1.0  # a last piece of 60 samples: too short, dropped and counted
    out = preprocess(dataset(t_short))
    report = out.metadata["preprocessing"]
    assert report["short_segments_dropped"] == 1 and report["short_segment_samples_dropped"] == 60
    assert out.timestamp[-1] < t_short[-61]


def test_gaps_and_non_finite_values_are_refused():
    t = uniform_500hz()
    t[3000] = t[2999]
    with pytest.raises(UserError, match="do not increase strictly at sample index 3000"):
        preprocess(dataset(t))
    ds = dataset(uniform_500hz())
    ds.dq[100, 2] = np.nan
    with pytest.raises(UserError, match="non-finite dq at sample index 100, joint 'c'"):
        preprocess(ds)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lowpass_hz": 0.0},
        {"lowpass_hz": -5.0},
        {"filter_order": 0},
        {"filter_order": 2.5},
        {"savgol_window_s": 0.0},
        {"savgol_polyorder": 0},
        {"trim_s": -1.0},
        {"resample": "sometimes"},
    ],
)
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        PreprocessingParams(**kwargs)


def test_window_is_odd_and_long_enough_at_low_rates():
    out = preprocess(dataset(jittery_100hz()))
    report = out.metadata["preprocessing"]
    assert report["savgol_window_samples"] % 2 == 1
    assert report["savgol_window_samples"] >= PreprocessingParams().savgol_polyorder + 2


def test_resamples_any_tells_a_jittery_log_before_preprocessing():
    """What the tuning asks before forking its workers (they inherit the spline's import):
    the same decision as the preprocessing makes, piece by piece."""
    from ident_framework.data.preprocessing import resamples_any

    uniform = dataset(uniform_500hz())
    steps = np.random.default_rng(3).uniform(0.008, 0.012, 1200)  # a ~100 Hz log
    jittery = dataset(np.cumsum(steps))
    params = PreprocessingParams(lowpass_hz=10.0)
    assert not resamples_any(uniform, params)
    assert resamples_any(jittery, params)
    assert preprocess(jittery, params).metadata["preprocessing"]["resampled"]
    assert not resamples_any(jittery, replace(params, resample="never"))
    assert resamples_any(uniform, replace(params, resample="always"))
    exact = replace(jittery, ddq=np.zeros_like(jittery.q))
    assert not resamples_any(exact, params)


@pytest.mark.parametrize("measured_velocity", [True, False])
def test_the_unfiltered_velocity_is_computed_only_when_parallel_filtering_asks(
    monkeypatch, measured_velocity
):
    """Only parallel filtering of friction columns uses the unfiltered velocity; the tuning
    preprocesses a recording ten times and never asks for it, so differentiating the
    recorded q for it waits until `FilterSegment.dq` is read (then it is what it was)."""
    import ident_framework.data.preprocessing as preprocessing

    calls = []
    real = preprocessing.savgol_derivative

    def counted(x, *args, **kwargs):
        calls.append(x.shape)
        return real(x, *args, **kwargs)

    monkeypatch.setattr(preprocessing, "savgol_derivative", counted)
    data = dataset(uniform_500hz())
    out = preprocess(data, PreprocessingParams(use_measured_velocity=measured_velocity))
    assert len(calls) == (1 if measured_velocity else 2)  # ddq; and dq from q
    segment = out.parallel_filter.segments[0]
    unfiltered = segment.dq
    assert len(calls) == (1 if measured_velocity else 3)
    report = out.metadata["preprocessing"]
    step, window = report["median_step_s"], report["savgol_window_samples"]
    expected = data.dq if measured_velocity else real(data.q, window, 3, 1, step)
    np.testing.assert_array_equal(unfiltered, expected)
    assert unfiltered.flags.c_contiguous and segment.dq is unfiltered  # computed once


def test_parallel_filtering_batches_across_functions_and_skips_unwanted_joints(
    monkeypatch, filtered_batches
):
    """Columns of several functions (on a grid: each function's runs of wanted columns in
    place) give the same columns whatever is asked; a joint left out of a function's `keep`
    mask is zero and never filtered; each column equals its own zero-phase filter at the kept
    rows."""
    import ident_framework.data.parallel_filter as parallel_filter
    from ident_framework.data.filters import zero_phase_filter

    out = preprocess(dataset(uniform_500hz()), PreprocessingParams(lowpass_hz=10.0))
    pf = out.parallel_filter
    segment = pf.segments[0]
    parts = [
        lambda t, dq: dq[:, :, None],
        lambda t, dq: np.stack([np.tanh(dq / 0.01), np.sign(dq)], axis=-1),
        lambda t, dq: np.exp(-((dq / 0.05) ** 2))[:, :, None],
    ]
    whole = pf.apply(parts)
    assert whole.shape == (out.n_samples, 3, 4)
    for k, expected in enumerate(
        [
            segment.dq,
            np.tanh(segment.dq / 0.01),
            np.sign(segment.dq),
            np.exp(-((segment.dq / 0.05) ** 2)),
        ]
    ):
        direct = zero_phase_filter(segment.sos, expected)[segment.rows]
        np.testing.assert_allclose(whole[..., k], direct, atol=1e-12)
    filtered_batches.clear()  # from here on
    monkeypatch.setattr(parallel_filter, "CHANNELS_AT_ONCE", 4)
    keep = [None, np.array([False, True, False]), np.array([True, False, True])]
    masked = pf.apply(parts, keep=keep)
    assert filtered_batches == [3, 2, 1, 1]  # 3 + 2 + 2 wanted columns, in runs of adjacent ones
    np.testing.assert_allclose(masked[:, :, 0], whole[:, :, 0], atol=1e-12)
    np.testing.assert_allclose(masked[:, 1, 1:3], whole[:, 1, 1:3], atol=1e-12)
    np.testing.assert_allclose(masked[:, [0, 2], 3], whole[:, [0, 2], 3], atol=1e-12)
    assert not masked[:, [0, 2], 1:3].any() and not masked[:, 1, 3].any()
