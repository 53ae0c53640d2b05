"""Data checks (`data/checks.py`): planted defects are found, counted and excluded; clean
simulated data and the real KUKA LWR4+ and Stäubli TX40 logs pass without a false alarm."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import pytest

from ident_framework.data.checks import CheckParams, check_recording, drop_untrusted, trusted_at
from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.preprocessing import PreprocessingParams, preprocess
from ident_framework.testing.cli import REPO, SHARED
from ident_framework.testing.known_truth import multisine

JOINTS = tuple(f"j{j}" for j in range(6))
RATE = 500.0


def recording(n: int = 5000, seed: int = 0, jitter: float = 0.0) -> Dataset:
    """A smooth 6-joint motion at 500 Hz with 0.05 Nm torque noise (no defect)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / RATE + jitter * rng.uniform(-0.5, 0.5, n) / RATE
    q, dq, ddq = multisine(t, 6, seed)
    tau = 20 * np.sin(q) + 5 * dq + 2 * ddq + rng.normal(0, 0.05, q.shape)
    return Dataset(t, q, dq, tau, JOINTS, metadata={"path": "log.csv"})


def test_clean_recording_passes():
    trusted, report = check_recording(recording())
    assert trusted.all()
    assert report["excluded_samples"] == 0 and report["warnings"] == []
    assert report["gaps"]["count"] == 0 and report["idle_joints"] == []


def test_clipped_torque_is_excluded_and_named():
    data = recording()
    tau = data.tau.copy()
    ceiling = tau[:, 2].max() + 0.5
    planted = np.zeros(data.n_samples, bool)
    planted[1000:1060] = planted[3000:3025] = True
    tau[planted, 2] = ceiling  # a sensor clipped joint j2 at its top twice (60 and 25 samples)
    trusted, report = check_recording(replace(data, tau=tau))
    clip = report["torque_clipping"]
    assert clip["samples_per_joint"] == {j: 85 if j == "j2" else 0 for j in JOINTS}
    assert [(r["joint"], r["samples"], r["value_nm"]) for r in clip["runs"]] == [
        ("j2", 60, ceiling),
        ("j2", 25, ceiling),
    ]
    assert clip["runs"][0]["start_s"] == data.timestamp[1000]
    # widened by margin_s = 0.02 s = 10 samples on each side, nothing more
    assert report["untrusted_samples"] == 85
    distance = np.abs(np.arange(data.n_samples)[:, None] - np.flatnonzero(planted)[None]).min(1)
    np.testing.assert_array_equal(~trusted, distance <= 10)
    assert report["excluded_samples"] == 85 + 4 * 10
    assert any("j2" in w and "clipped" in w for w in report["warnings"])
    # runs shorter than clip_min_samples are not clipping
    report = check_recording(replace(data, tau=tau), None, CheckParams(clip_min_samples=26))[1]
    assert report["torque_clipping"]["samples"] == 60


def test_clipping_at_the_effort_limit_is_marked():
    data = recording()
    tau = np.clip(data.tau, -15.0, 15.0)
    limits = type("Limits", (), {"effort": np.full(6, 15.0)})()
    report = check_recording(replace(data, tau=tau), limits)[1]
    assert report["torque_clipping"]["runs"]
    assert all(run["at_effort_limit"] for run in report["torque_clipping"]["runs"])


def test_stale_rows_while_moving_are_excluded_but_identical_rows_at_rest_are_not():
    data = recording()
    q, dq, tau = data.q.copy(), data.dq.copy(), data.tau.copy()
    for array in (q, dq, tau):
        array[1001:1031] = array[1000]  # 30 repeats of packet 1000 with fresh timestamps
    moving = np.abs(dq[1000]).max()
    assert moving > 0.05
    trusted, report = check_recording(
        replace(data, q=q, dq=dq, tau=tau), None, CheckParams(margin_s=0)
    )
    assert report["stale_samples"] == 30 and report["excluded_samples"] == 30
    assert not trusted[1001:1031].any() and trusted[1000] and trusted[1031]

    dq[1000:1031] = 0.0  # the same repeats while the robot stands still: physical, kept
    report = check_recording(replace(data, q=q, dq=dq, tau=tau))[1]
    assert report["stale_samples"] == 0


def test_repeated_timestamps_are_stale():
    data = recording()
    t = data.timestamp.copy()
    t[300] = t[299]
    report = check_recording(replace(data, timestamp=t), None, CheckParams(margin_s=0))[1]
    assert report["repeated_timestamps"] == 1 and report["stale_samples"] == 1


def test_a_joint_that_never_moves_is_named_and_kept():
    data = recording()
    q, dq = data.q.copy(), data.dq.copy()
    q[:, 4] = 0.3 + np.random.default_rng(1).normal(0, 1e-5, data.n_samples)
    dq[:, 4] = np.random.default_rng(2).normal(0, 1e-4, data.n_samples)
    trusted, report = check_recording(replace(data, q=q, dq=dq))
    assert [joint["joint"] for joint in report["idle_joints"]] == ["j4"]
    assert trusted.all()
    (warning,) = report["warnings"]
    assert "j4 never leaves its rest" in warning and "cannot be identified" in warning
    params = CheckParams(idle_range_rad=1e-6, idle_speed_rad_s=1e-6)
    assert check_recording(replace(data, q=q, dq=dq), None, params)[1]["idle_joints"] == []


def test_timestamp_gaps_are_reported():
    data = recording()
    t = data.timestamp.copy()
    t[2500:] += 0.5  # half a second lost
    report = check_recording(replace(data, timestamp=t))[1]
    gaps = report["gaps"]
    assert gaps["count"] == 1 and gaps["listed"][0]["after_row"] == 2499
    assert gaps["longest_s"] == pytest.approx(0.502)
    assert report["excluded_samples"] == 0


@pytest.mark.parametrize("jitter", [0.0, 0.3])
def test_preprocessed_rows_lose_only_the_untrusted_times(jitter):
    """On the recorded rows (no resampling) or on a resampled grid (jitter): a preprocessed
    row is dropped when a recorded sample at or beside its time is untrusted."""
    data = recording(jitter=jitter)
    tau = data.tau.copy()
    tau[2000:2040, 1] = tau[:, 1].max() + 1.0  # a flat run at the extreme
    raw = replace(data, tau=tau)
    processed = preprocess(raw, PreprocessingParams())
    assert processed.metadata["preprocessing"]["resampled"] == (jitter > 0)
    params = CheckParams()
    kept = drop_untrusted(raw, processed, None, params)
    report = kept.metadata["checks"]
    bad_t = raw.timestamp[~check_recording(raw, None, params)[0]]
    assert kept.n_samples == processed.n_samples - report["excluded_rows"] > 0
    assert report["excluded_rows"] > 0 and report["rows_in"] == processed.n_samples
    assert not np.any((kept.timestamp >= bad_t.min()) & (kept.timestamp <= bad_t.max()))
    dropped = np.setdiff1d(processed.timestamp, kept.timestamp)
    step = np.diff(raw.timestamp).max()  # a dropped row lies within one recorded step of one
    assert dropped.min() >= bad_t.min() - step and dropped.max() <= bad_t.max() + step
    assert kept.parallel_filter.n_samples == kept.n_samples
    # the filters ran over every sample: the kept rows equal the unmasked preprocessing's
    index = np.searchsorted(processed.timestamp, kept.timestamp)
    np.testing.assert_array_equal(kept.q, processed.q[index])


def test_disabled_checks_change_nothing():
    data = recording()
    processed = preprocess(data, PreprocessingParams())
    assert drop_untrusted(data, processed, None, CheckParams(enabled=False)) is processed
    mapped = trusted_at(data, np.ones(data.n_samples, bool), processed.timestamp)
    assert mapped.all() and mapped.shape == (processed.n_samples,)


@pytest.mark.parametrize(
    "bad",
    [
        {"clip_min_samples": 1},
        {"margin_s": -1.0},
        {"gap_steps": 1.0},
        {"idle_range_rad": float("nan")},
    ],
)
def test_thresholds_are_validated(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        CheckParams(**bad)


DATASETS = SHARED / "datasets"


@pytest.mark.skipif(not (DATASETS / "kuka_lwr4").is_dir(), reason="shared datasets absent")
@pytest.mark.parametrize("case", ["kuka_1", "kuka_2", "kuka_3", "tx40"])
def test_real_logs_pass_without_false_alarms(case):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from peers import conversions

    if case == "tx40":
        if not (DATASETS / "staubli_tx40").is_dir():
            pytest.skip("shared TX40 data absent")
        q_motor, i_motor = conversions.read_tx40_motor_side(DATASETS / "staubli_tx40")
        log = conversions.tx40_joint_side(q_motor, i_motor, 0)
    else:
        log = conversions.kuka_recording(DATASETS / "kuka_lwr4" / f"measurements_{case[-1]}.npz")
    data = Dataset(log.t, log.q, log.dq, log.tau, tuple(log.joint_names))
    trusted, report = check_recording(data)
    assert trusted.all() and report["warnings"] == [], report["warnings"]
    assert report["stale_samples"] == 0 and report["torque_clipping"]["samples"] == 0


def test_each_recording_of_a_stack_is_checked_on_its_own():
    """Clipping is judged against each recording's own extremes: a torque clipped below the
    peak of another recording in the stack is still found, in the right recording."""
    first = recording(seed=1)
    first = replace(first, tau=3 * first.tau, metadata={"path": "a.csv"})
    second = recording(seed=2)
    tau = second.tau.copy()
    ceiling = tau[:, 2].max() + 0.5
    assert ceiling < first.tau[:, 2].max()  # the stack's own extreme is elsewhere
    tau[2000:2060, 2] = ceiling
    second = replace(second, tau=tau, metadata={"path": "b.csv"})
    stack = concatenate([first, second])
    kept = drop_untrusted(stack, preprocess(stack), None, CheckParams())
    report = kept.metadata["checks"]
    assert [r["path"] for r in report["recordings"]] == ["a.csv", "b.csv"]
    assert [r["torque_clipping"]["samples"] for r in report["recordings"]] == [0, 60]
    assert report["torque_clipping"]["samples"] == 60
    assert report["rows_in"] == sum(r["rows_in"] for r in report["recordings"])
    assert report["excluded_rows"] == report["recordings"][1]["excluded_rows"] > 60
    assert kept.n_samples == report["rows_in"] - report["excluded_rows"]
    assert any("b.csv" in w and "clipped" in w for w in report["warnings"])
