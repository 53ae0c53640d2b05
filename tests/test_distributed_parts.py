"""Factor jobs read only their part of a CSV log (its byte range plus a halo) and preprocess it
with the whole recording's sample step, so each part's samples equal the single run's to
rounding; a list of files is factored one file per part. And the parameter std the fleet
report shows (the estimator's covariance mapped to each parameter) is the spread of the
estimates over noise draws."""

from __future__ import annotations

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.csv_columns import read_header
from ident_framework.data.csv_fast import line_starts, read_used_columns
from ident_framework.data.csv_log import read_csv_log, write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.data.preprocessing import preprocess
from ident_framework.errors import UserError
from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.identify.linear_problem import build_problem
from ident_framework.model.robot import load_robot
from ident_framework.modes.distributed import read_part
from ident_framework.reports.parameters import parameter_std
from ident_framework.testing.known_truth import exact_dataset, sines


def _recording(path, start_s: float, seconds: float = 12.0, rate: float = 500.0) -> Dataset:
    """A smooth 6-joint motion with noisy torque, timestamps from `start_s` s, as a CSV."""
    robot = load_robot("ur10e")
    t, q, dq, _ = sines(seconds, rate, 3)
    tau = np.sin(3 * q) + 0.1 * dq + np.random.default_rng(1).normal(0, 0.05, q.shape)
    data = Dataset(start_s + t, q, dq, tau, robot.joint_names)
    write_csv_log(data, path)
    return read_csv_log(path, robot.joint_names)


def _config(path, part: int, parts: int):
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=[
            "robot=ur10e", "source=csv", f"source.path={path}", "validation=split",
            "tuning=none", f"distributed.parts={parts}", f"distributed.part={part}",
        ])  # fmt: skip
    return validate_config(cfg, get_registry())


def test_row_ranges_read_alone_equal_the_whole_file(tmp_path):
    whole = _recording(tmp_path / "log.csv", 0.0, seconds=2.0)
    layout = read_header(str(tmp_path / "log.csv"), "source.")
    columns = list(range(len(layout.names)))
    everything = read_used_columns(layout, columns)
    for rows in ((0, 7), (5, 300), (900, whole.n_samples)):
        np.testing.assert_array_equal(
            read_used_columns(layout, columns, rows), everything[slice(*rows)]
        )
    assert line_starts(layout.path, [0, 1])[0] == 0
    # a blank line in the range: the byte range no longer maps to rows, the reader says so
    text = (tmp_path / "log.csv").read_text().splitlines(keepends=True)
    (tmp_path / "blank.csv").write_text("".join(text[:50] + ["\n"] + text[50:]))
    blank = read_header(str(tmp_path / "blank.csv"), "source.")
    assert read_used_columns(blank, columns, (40, 60)) is None
    robot = load_robot("ur10e")
    window = read_csv_log(tmp_path / "blank.csv", robot.joint_names, rows=(40, 60))
    np.testing.assert_array_equal(window.timestamp, whole.timestamp[40:60])  # the slow path


@pytest.mark.parametrize("start_s", [0.0, 3000.0])
def test_parts_preprocess_as_the_whole_recording(tmp_path, start_s):
    """A window's median step can differ from the whole recording's in the last digits (from
    t = 0 s here; by 3e-11 relative at t ~ 2000 s in the 10^6-sample benchmark, which moved ddq
    by 1e-10): the parts filter with the recording's step, so their samples equal the single
    run's to rounding."""
    path = tmp_path / "log.csv"
    recorded = _recording(path, start_s)
    config = _config(path, 0, 4)
    whole = preprocess(recorded, config.preprocessing)
    robot = load_robot("ur10e")
    source = config.plugins["source"].create()
    samples = 0
    for k in range(4):
        part, where = read_part(_config(path, k, 4), robot, source)
        assert where["rows_read"][1] - where["rows_read"][0] < recorded.n_samples / 2
        assert _step(part) == _step(whole)
        same = np.isin(whole.timestamp, part.timestamp)
        assert same.sum() == part.n_samples
        for name in ("q", "dq", "ddq", "tau"):
            ours, theirs = getattr(part, name), getattr(whole, name)[same]
            scale = np.abs(theirs).max()
            assert np.abs(ours - theirs).max() <= 1e-12 * scale, (k, name)
        samples += part.n_samples
    assert samples == whole.n_samples


def test_a_list_of_files_is_one_part_per_file(tmp_path):
    paths = [tmp_path / "a.csv", tmp_path / "b.csv"]
    recordings = [_recording(p, s, seconds=4.0) for p, s in zip(paths, (0.0, 10.0), strict=True)]
    listed = f"[{paths[0]},{paths[1]}]"
    robot = load_robot("ur10e")
    for k, recorded in enumerate(recordings):
        config = _config(listed, k, 2)
        part, where = read_part(config, robot, config.plugins["source"].create())
        alone = preprocess(recorded, config.preprocessing)
        np.testing.assert_array_equal(part.ddq, alone.ddq)
        assert where["file"] == str(paths[k]) and where["count"] == 2
    config = _config(listed, 0, 3)
    with pytest.raises(UserError, match="distributed.parts=2"):
        read_part(config, robot, config.plugins["source"].create())


def test_parameter_std_is_the_spread_over_noise_draws(true_setup):
    builder, theta = true_setup
    clean = exact_dataset(builder, theta, seed=4, duration=10.0)
    rng = np.random.default_rng(5)
    estimates, reported = [], []
    for _ in range(40):
        noisy = Dataset(clean.timestamp, clean.q, clean.dq,
                        clean.tau + rng.normal(0, 0.2, clean.tau.shape), clean.joint_names,
                        ddq=clean.ddq)  # fmt: skip
        problem, base, _ = build_problem(builder, noisy, 1000, 1e-8, progress=False)
        estimator = LeastSquares(LeastSquaresParams()).fit(problem)
        estimates.append(base.to_standard(estimator.coef_))
        reported.append(parameter_std(estimator, base))
    reported = np.array(reported)
    alone = ~np.isnan(reported[0])
    fc = [i for i, name in enumerate(builder.parameter_names) if name.startswith("fc_")]
    assert alone[fc].all()
    spread = np.std(np.array(estimates)[:, alone], axis=0, ddof=1)
    ratio = spread / reported[:, alone].mean(axis=0)
    assert np.all((ratio > 0.6) & (ratio < 1.5)), ratio  # 40 draws: ±25 % at 2 sigma


def test_a_source_read_whole_is_cut_with_the_same_step(tmp_path):
    """A source without row access (e.g. rosbag) is read whole, then cut: the same samples."""
    path = tmp_path / "log.csv"
    recorded = _recording(path, 0.0)

    class WholeOnly:
        def acquire(self, robot, trajectory, role):
            return recorded

    config = _config(path, 0, 3)
    whole = preprocess(recorded, config.preprocessing)
    robot = load_robot("ur10e")
    for k in range(3):
        part, where = read_part(_config(path, k, 3), robot, WholeOnly())
        assert where["rows_read"] == [0, recorded.n_samples]
        assert _step(part) == _step(whole)
        same = np.isin(whole.timestamp, part.timestamp)
        scale = np.abs(whole.ddq).max()
        assert np.abs(part.ddq - whole.ddq[same]).max() <= 1e-12 * scale


def _step(data: Dataset) -> float:
    """The sample step (s) preprocessing filtered `data` with."""
    return data.metadata["preprocessing"]["median_step_s"]
