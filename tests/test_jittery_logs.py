"""Real logs' timestamps: ~1 kHz with jitter (0.7-15.5 ms steps, as the Franka Panda log of
../shared/datasets) and gaps, some cutting off pieces too short to filter (a single sample
after the first step, a fraction of a second between two gaps). Through preprocessing, the
tuning's fold builds, validation and mode=predict: short pieces dropped and counted, never a
traceback; a log with nothing usable left is a one-paragraph error naming the file (exit 2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import PreprocessingParams, preprocess, preprocessable
from ident_framework.errors import UserError
from ident_framework.identify.metrics import preprocessing_counts
from ident_framework.model.robot import load_robot
from ident_framework.reports.summary import data_lines
from ident_framework.testing.cli import run_cli
from ident_framework.testing.known_truth import multisine

SHORT_PIECE = 150  # samples between two gaps: 0.15 s, less than the filters' two edges


def jittery_times(seed: int, duration_s: float, gaps: tuple[tuple[int, float], ...]) -> np.ndarray:
    """Timestamps (s) of a ~1 kHz logger: steps 0.7-1.3 ms, 2 % of them 2-8.8 ms (a stalled
    logger, below the gap threshold of 10 median steps), and `gaps` (step index, length s)."""
    rng = np.random.default_rng(seed)
    n = int(duration_s / 1e-3)
    steps = rng.uniform(0.7e-3, 1.3e-3, n - 1)
    slow = rng.choice(n - 1, size=(n - 1) // 50, replace=False)
    steps[slow] = rng.uniform(2e-3, 8.8e-3, slow.size)
    for index, length in gaps:
        steps[index] = length
    return np.concatenate([[0.0], np.cumsum(steps)])


def ur10e_log(path: Path, seed: int, t: np.ndarray) -> Path:
    """A UR10e log in the CSV contract at timestamps `t`: multi-sine motion, rigid body +
    viscous and Coulomb friction + torque noise."""
    robot = load_robot("ur10e")
    q, dq, ddq = multisine(t, robot.n_joints, seed, amp_rad=(0.2, 0.5), freq_hz=(0.1, 0.5))
    tau = robot.inverse_dynamics(q, dq, ddq) + 3.0 * dq + 2.0 * np.tanh(dq / 0.01)
    tau += 0.05 * np.random.default_rng(seed).standard_normal(tau.shape)
    write_csv_log(Dataset(t, q, dq, tau, tuple(robot.joint_names)), path)
    return path


def _dataset(t: np.ndarray) -> Dataset:
    q, dq, _ = multisine(t, 3, 0, amp_rad=(0.2, 0.5), freq_hz=(0.1, 0.5))
    return Dataset(t, q, dq, np.sin(t)[:, None] + q, ("a", "b", "c"))


# the identification log: a gap after the first sample (a piece of one sample, as in the
# Panda log), a piece of SHORT_PIECE samples between two gaps, long pieces either side
TRAIN_GAPS = ((0, 15.5e-3), (5000, 12e-3), (5000 + SHORT_PIECE, 14e-3))
# the validation log: a short piece, and a gap before its last sample
VAL_GAPS = ((2000, 11e-3), (2000 + SHORT_PIECE, 20e-3), (5998, 15e-3))


def test_one_sample_pieces_and_short_pieces_are_dropped_and_counted():
    t = jittery_times(1, 10.0, TRAIN_GAPS)
    out = preprocess(_dataset(t))
    report = out.metadata["preprocessing"]
    assert report["gaps"] == 3 and report["resampled"]
    assert report["short_segments_dropped"] == 2
    assert report["short_segment_samples_dropped"] == 1 + SHORT_PIECE
    span = t[5000 + SHORT_PIECE] - t[5001]  # both pieces' spans (one: 0) plus a step each
    assert report["short_segment_s_dropped"] == pytest.approx(span + 2e-3, abs=1e-4)
    assert (
        out.timestamp[0] > t[1] and not np.isin(t[5001 : 5001 + SHORT_PIECE], out.timestamp).any()
    )
    assert np.isfinite(out.ddq).all()


def test_a_short_piece_is_dropped_whatever_its_own_rate():
    """Three samples 8 ms apart between two gaps: a cut-off of 80 Hz is above their own
    Nyquist frequency, but the piece is too short to filter anyway: dropped, not an error."""
    before = jittery_times(2, 3.0, ())
    mini = before[-1] + 15e-3 + 8e-3 * np.arange(3)
    after = mini[-1] + 15e-3 + jittery_times(3, 3.0, ())
    out = preprocess(_dataset(np.concatenate([before, mini, after])), PreprocessingParams(80.0))
    report = out.metadata["preprocessing"]
    assert report["short_segments_dropped"] == 1 and report["short_segment_samples_dropped"] == 3


def test_nothing_usable_left_names_the_file_and_why():
    t = jittery_times(3, 2.0, tuple((k, 0.02) for k in range(100, 2000, 101)))
    ds = _dataset(t)
    ds.metadata["path"] = "/logs/chopped.csv"
    assert not preprocessable(ds, PreprocessingParams())
    with pytest.raises(UserError) as error:
        preprocess(ds)
    text = str(error.value)
    assert "Nothing usable is left of the recording from '/logs/chopped.csv'" in text
    assert "19 timestamp gap(s)" in text and "too short to filter" in text


def test_preprocessable_tells_a_candidate_that_leaves_nothing():
    """A 1.8 s recording: 5 Hz with dq differentiated from q trims 1.0 s at each end."""
    ds = _dataset(jittery_times(4, 1.8, ()))
    assert preprocessable(ds, PreprocessingParams(lowpass_hz=5.0))
    assert not preprocessable(ds, PreprocessingParams(lowpass_hz=5.0, use_measured_velocity=False))


def test_the_summary_warns_when_jittery_steps_are_filtered_as_uniform():
    """preprocessing.resample=never on a jittery log: the summary says so."""
    t = jittery_times(5, 4.0, ())
    ds = _dataset(t)
    for mode, warned in (("never", True), ("auto", False)):
        out = preprocess(ds, PreprocessingParams(resample=mode))
        data = {"train_samples": out.n_samples, "train_preprocessing": preprocessing_counts(out)}
        (line,) = data_lines(data)
        assert ("filtered as uniform (preprocessing.resample=never)" in line) is warned


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("jittery")
    return {
        "train": ur10e_log(folder / "train.csv", 1, jittery_times(1, 12.0, TRAIN_GAPS)),
        # short enough that some tuning candidates (5 Hz, dq from q) leave nothing of it
        "short": ur10e_log(folder / "short.csv", 2, jittery_times(2, 1.8, ())),
        "val": ur10e_log(folder / "val.csv", 3, jittery_times(3, 6.0, VAL_GAPS)),
    }


SMALL_TUNING = ("tuning.folds=3", "tuning.cutoffs_hz=[5.0,20.0]", "tuning.tanh_widths=[0.01]",
                "tuning.ridges=[1.0e-04]", "tuning.truncations=[1.0e-03]",
                "tuning.sweeps=1")  # fmt: skip


@pytest.mark.slow
def test_a_jittery_gappy_log_runs_end_to_end(logs, tmp_path: Path):
    """Identification (tuning on), validation and mode=predict on jittery logs with gaps:
    exit 0, the short pieces counted in metrics.json and the summary."""
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path=[{logs['train']},{logs['short']}]",
        "validation=csv", f"validation.path={logs['val']}", "plots=false", *SMALL_TUNING,
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    metrics = json.loads((run / "metrics.json").read_text())
    train, val = metrics["data"]["train_preprocessing"], metrics["data"]["validation_preprocessing"]
    assert train["short_segments_dropped"] == 2
    assert train["short_segment_samples_dropped"] == 1 + SHORT_PIECE
    assert train["short_segment_s_dropped"] > 0.15
    assert [r["short_segments_dropped"] for r in train["recordings"]] == [2, 0]
    assert val["short_segments_dropped"] == 2
    assert val["short_segment_samples_dropped"] == SHORT_PIECE + 1
    assert "2 pieces too short to filter dropped (151 samples" in result.stdout
    assert metrics["validation"]["physical"]["r2"] > 0.99
    with (run / "predictions_validation.csv").open() as handle:
        rows = sum(1 for _ in csv.reader(handle)) - 1
    assert rows == metrics["data"]["validation_samples"]
    # the candidates that would leave nothing of the short recording were not tried
    with (run / "tuning.csv").open() as handle:
        tried = {(float(r["lowpass_hz"]), r["velocity"]) for r in csv.DictReader(handle)}
    assert (5.0, "measured") in tried and (20.0, "differentiated") in tried
    assert (5.0, "differentiated") not in tried

    predicted = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={logs['val']}",
        "plots=false", f"hydra.run.dir={tmp_path / 'predict'}", cwd=tmp_path,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert "2 pieces between timestamp gaps too short to filter dropped" in predicted.stdout


@pytest.mark.slow
def test_a_log_with_nothing_usable_left_exits_2(tmp_path: Path):
    chopped = ur10e_log(
        tmp_path / "chopped.csv",
        4,
        jittery_times(4, 3.0, tuple((k, 0.02) for k in range(100, 3000, 101))),
    )
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={chopped}", "validation=split", "plots=false",
        f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert f"Nothing usable is left of the recording from '{chopped}'" in result.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()
