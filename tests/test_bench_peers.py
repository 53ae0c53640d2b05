"""The peer benchmark's instrument (benchmarks/bench_peers.py): its one scorer against a case
computed by hand, the data conversions (TX40 joint side against the dataset README's formulas,
KUKA npz -> CSV -> back), the measured subprocess and its memory cap; slow: FIGAROH's driver
(skipped without a FIGAROH 1.0.2 venv) and the benchmark end to end on the real KUKA data."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.testing.cli import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from peers import conversions, measure, project_io, scoring  # noqa: E402
from peers.cases import find_datasets  # noqa: E402
from peers.figaroh_env import DEFAULT_VENV, FIGAROH_VERSION, figaroh_version  # noqa: E402

DATASETS = find_datasets()


# -- scorer -------------------------------------------------------------------------------------
def _torques(t, tau) -> scoring.Torques:
    return scoring.Torques(np.asarray(t, float), np.asarray(tau, float))


def test_scorer_matches_a_hand_computed_case():
    recorded = _torques([0.0, 0.1, 0.2, 0.3], [[1, 0], [2, 0], [3, 2], [4, 2]])
    # no prediction for t = 0 (a filter end); errors 0, 0, -1 on joint 0 and -1, 0, 0 on joint 1
    predicted = _torques([0.1, 0.2, 0.3], [[2, 1], [3, 2], [5, 2]])
    score = scoring.score(recorded, predicted)
    # joint 0 about its own mean 3: SST 2; joint 1 about 4/3: SST 8/3; SSE 1 + 1
    assert score.rmse == pytest.approx(np.sqrt(2 / 6), rel=1e-12)
    assert score.r2 == pytest.approx(1 - 2 / (2 + 8 / 3), rel=1e-12)  # 4/7
    assert score.r2_per_joint == pytest.approx([0.5, 5 / 8], rel=1e-12)
    assert score.rmse_per_joint == pytest.approx([np.sqrt(1 / 3)] * 2, rel=1e-12)
    assert (score.n_recorded, score.n_scored, score.n_not_predicted) == (4, 3, 1)
    assert (score.alignment, score.n_predictions_off_grid) == ("exact", 0)


def test_scorer_counts_unpredicted_rows_and_interpolates_a_grid_of_its_own():
    recorded = _torques([0.0, 0.1, 0.2, 0.3], [[1, 0], [2, 0], [3, 2], [4, 2]])
    nan_row = _torques([0.0, 0.1, 0.2, 0.3], [[1, 0], [np.nan, 0], [3, 2], [4, 2]])
    assert scoring.score(recorded, nan_row).n_not_predicted == 1
    assert scoring.score(recorded, nan_row).rmse == 0.0

    # a tool that resampled: its grid is half a step off; linear truth -> exact interpolation
    def linear(t):
        return _torques(t, np.column_stack([1 + 10 * t, 10 * t]))

    score = scoring.score(linear(recorded.t), linear(np.array([0.05, 0.15, 0.25])))
    assert (score.alignment, score.n_scored, score.n_predictions_off_grid) == ("interpolated", 2, 3)
    assert score.rmse == pytest.approx(0.0, abs=1e-12)


def test_scorer_reads_the_files_both_tools_write(tmp_path: Path):
    recording = conversions.JointRecording(
        np.arange(5) * 0.002, np.zeros((5, 2)), np.zeros((5, 2)),
        np.arange(10.0).reshape(5, 2), ("a", "b"),
    )  # fmt: skip
    csv = project_io.write_recording(recording, tmp_path / "val.csv")
    (tmp_path / "pred.csv").write_text(
        "timestamp,tau_meas_0,tau_meas_1,tau_pred_0,tau_pred_1\n0.002,2,3,2.5,3\n0.004,4,5,4,5.5\n"
    )
    recorded = scoring.read_recorded(csv, 2)
    score = scoring.score(recorded, scoring.read_predictions(tmp_path / "pred.csv", 2))
    assert (score.n_scored, score.n_not_predicted) == (2, 3)
    assert score.rmse == pytest.approx(np.sqrt(0.5 / 4))


# -- conversions --------------------------------------------------------------------------------
def test_tx40_joint_side_follows_the_dataset_readme():
    rng = np.random.default_rng(0)
    qm, i = rng.normal(size=(50, 6)) * 30, rng.normal(size=(50, 6))
    rec = conversions.tx40_joint_side(qm, i, first_row=29250)
    expected_q = np.column_stack([
        qm[:, 0] / 32, qm[:, 1] / 32 - np.pi / 2, qm[:, 2] / 45 + np.pi / 2, qm[:, 3] / -48,
        qm[:, 4] / 45, qm[:, 5] / 32 - qm[:, 4] / 45,  # Nq[5,4] = 32: 32 q5 + 32 q6 = qm6
    ])  # fmt: skip
    expected_tau = np.column_stack([
        32 * i[:, 0], 32 * i[:, 1], 45 * i[:, 2], -48 * i[:, 3], 45 * i[:, 4] + 32 * i[:, 5],
        32 * i[:, 5],
    ])  # fmt: skip
    np.testing.assert_allclose(rec.q, expected_q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rec.tau, expected_tau, rtol=1e-12)
    np.testing.assert_allclose(rec.t, (29250 + np.arange(50)) * 0.0002)
    central = (expected_q[2:] - expected_q[:-2]) / (2 * 0.0002)
    np.testing.assert_allclose(rec.dq[1:-1], central, rtol=1e-9, atol=1e-6)


@pytest.mark.skipif(not (DATASETS / "staubli_tx40").is_dir(), reason="shared TX40 data absent")
def test_tx40_ratios_are_the_example_configs():
    config = yaml.safe_load((DATASETS / "staubli_tx40" / "TX40_config.yaml").read_text())
    ratios = config["identification"]["robot_params"][0]["reduction_ratio"]
    np.testing.assert_array_equal(conversions.TX40_RATIOS, ratios)


def _kuka_npz(path: Path, n: int = 40) -> Path:
    rng = np.random.default_rng(1)
    times = 1.46003486e9 + np.cumsum(0.005 + rng.uniform(-0.0015, 0.0015, n))
    np.savez(path, times=times, positions=rng.normal(size=(n, 7)),
             velocities=rng.normal(size=(n, 7)), torques=rng.normal(size=(n, 7)) * 20,
             target_positions=np.zeros((n, 7)))  # fmt: skip
    return path


def test_kuka_npz_to_csv_round_trip(tmp_path: Path):
    npz = _kuka_npz(tmp_path / "m.npz")
    recording = conversions.kuka_recording(npz)
    csv = project_io.write_recording(recording, tmp_path / "m.csv")
    back = project_io.read_recording(csv, conversions.KUKA_JOINTS)
    with np.load(npz) as raw:
        np.testing.assert_allclose(back.t, raw["times"] - raw["times"][0], rtol=0, atol=1e-9)
        for name, key in (("q", "positions"), ("dq", "velocities"), ("tau", "torques")):
            np.testing.assert_allclose(getattr(back, name), raw[key], rtol=1e-9, atol=1e-12)
    assert back.t[0] == 0.0 and back.joint_names == conversions.KUKA_JOINTS
    recorded = scoring.read_recorded(csv, 7)  # the scorer reads the same torque back
    np.testing.assert_array_equal(recorded.tau, back.tau)
    np.testing.assert_array_equal(recorded.t, back.t)


def test_strip_geometry_keeps_the_dynamics(tmp_path: Path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(
        '<robot name="a"><link name="l"><inertial><mass value="2"/></inertial>'
        '<visual><geometry><mesh filename="package://x/m.stl"/></geometry></visual>'
        '<collision><geometry><mesh filename="package://x/m.stl"/></geometry></collision>'
        "</link></robot>"
    )
    text = conversions.strip_geometry(urdf, tmp_path / "out.urdf").read_text()
    assert "mesh" not in text and '<mass value="2"' in text


# -- measured subprocess ------------------------------------------------------------------------
def test_measured_run_sees_peak_memory_and_stops_at_the_cap(tmp_path: Path):
    grab = "import numpy as np; a = np.ones({} // 8); print(a.sum())"
    ok = measure.run_measured(
        [sys.executable, "-c", grab.format(300 * 2**20)], tmp_path / "ok.log", memory_cap_gb=4
    )
    assert ok.returncode == 0 and not ok.memory_error
    assert 300 < ok.peak_rss_mb < 1500 and ok.wall_s > 0
    capped = measure.run_measured(
        [sys.executable, "-c", grab.format(3 * 2**30)], tmp_path / "cap.log", memory_cap_gb=1.5
    )
    assert capped.returncode != 0 and capped.memory_error
    assert capped.peak_rss_mb < 1.5 * 1024


def test_an_unpolled_run_measures_the_child_alone(tmp_path: Path):
    """poll=False (the timed runs of --repeat): no poller; the child's own peak RSS from
    wait4, the tree's figures unknown (nan), not zero."""
    grandchild = "import numpy as np, time; a = np.ones(300 * 2**20 // 8); time.sleep(0.5)"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}])"
    stats = measure.run_measured([sys.executable, "-c", child], tmp_path / "t.log", poll=False)
    assert stats.returncode == 0 and stats.wall_s > 0.5
    assert math.isnan(stats.max_tree_rss_mb) and math.isnan(stats.max_tree_pss_mb)
    # ru_maxrss of wait4 is the largest of the child and its waited-for descendants
    assert stats.peak_memory_mb == stats.max_process_rss_mb > 300


def test_measured_run_sums_the_process_tree(tmp_path: Path):
    # the child waits for a grandchild that holds ~300 MB for a second
    grandchild = "import numpy as np, time; a = np.ones(300 * 2**20 // 8); time.sleep(1.0)"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}])"
    stats = measure.run_measured([sys.executable, "-c", child], tmp_path / "tree.log")
    assert stats.returncode == 0
    assert stats.max_tree_rss_mb > 300 and stats.peak_rss_mb >= stats.max_tree_rss_mb
    assert stats.max_tree_pss_mb > 300 and stats.peak_memory_mb >= stats.max_tree_pss_mb


def test_measured_run_counts_pages_a_forked_worker_shares_once(tmp_path: Path):
    """A parent holding ~400 MB forks a worker that reads all of it (copy-on-write, shared):
    the sum of RSS counts the pages twice, the sum of PSS (the peak memory used) once."""
    code = (
        "import numpy as np, os, time\n"
        "a = np.ones(400 * 2**20 // 8)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    float(a.sum()); time.sleep(1.0); os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    stats = measure.run_measured([sys.executable, "-c", code], tmp_path / "fork.log")
    assert stats.returncode == 0
    assert stats.max_tree_rss_mb > 780  # parent + worker, each ~400 MB resident
    assert 400 < stats.max_tree_pss_mb < 600  # the shared pages once
    assert stats.peak_memory_mb < 600


# -- slow: FIGAROH's driver, the benchmark end to end ------------------------------------------
def _figaroh_python() -> Path | None:
    for python in (os.environ.get("IDENT_FIGAROH_PYTHON"), DEFAULT_VENV / "bin" / "python"):
        if python and figaroh_version(Path(python)) == FIGAROH_VERSION:
            return Path(python)
    return None


KUKA = DATASETS / "kuka_lwr4"


def test_repeated_runs_keep_the_median_and_every_wall(tmp_path: Path):
    """--repeat: the run of median wall time stands for the tool, all walls are kept; a
    failed repetition makes the tool's result a failure (no median of what failed)."""
    from peers.runs import ToolRun, median_run

    def run(wall: float, status: str = "ok") -> ToolRun:
        stats = measure.RunStats([], 0, wall, 1.0, 1.0, 1.0, 1.0, 1.0, None, False, False, "")
        return ToolRun("ur10e", 100, "ours", "ours", "x", stats=stats, status=status)

    chosen = median_run([run(3.4), run(2.9), run(3.1)])
    assert chosen.stats.wall_s == 3.1 and chosen.stats.walls_s == (3.4, 2.9, 3.1)
    assert median_run([run(3.0), run(5.0)]).stats.wall_s == 3.0  # the lower of two middles
    assert median_run([run(3.0), run(1.0, "failed (exit 1): boom")]).status.startswith("failed")
    again = measure.RunStats.from_dict(json.loads(json.dumps(chosen.stats.to_dict())))
    assert list(again.walls_s) == [3.4, 2.9, 3.1]
    # timed runs not polled; the memory figures come from the one polled run
    polled = run(9.9)
    polled.stats = dataclasses.replace(polled.stats, peak_memory_mb=406.0, max_tree_pss_mb=406.0)
    chosen = median_run([run(3.4), run(2.9), run(3.1)], polled)
    assert chosen.stats.wall_s == 3.1 and chosen.stats.walls_s == (3.4, 2.9, 3.1)
    assert chosen.stats.peak_memory_mb == 406.0 and chosen.stats.max_tree_pss_mb == 406.0
    assert median_run([run(3.0)], run(1.0, "failed (exit 1): boom")).status.startswith("failed")


@pytest.mark.slow
@pytest.mark.skipif(not KUKA.is_dir(), reason="shared KUKA LWR4 data absent")
def test_figaroh_driver_prediction_scores_as_figaroh_reports(tmp_path: Path):
    python = _figaroh_python()
    if python is None:
        pytest.skip("no FIGAROH 1.0.2 venv (bench_peers.py creates one; or IDENT_FIGAROH_PYTHON)")
    csv = {}
    for i in (1, 3):
        recording = conversions.kuka_recording(KUKA / f"measurements_{i}.npz")
        csv[i] = project_io.write_recording(recording, tmp_path / f"m{i}.csv")
    urdf = conversions.strip_geometry(KUKA / "kuka_lwr4.urdf", tmp_path / "kuka.urdf")
    driver = REPO / "benchmarks" / "peers" / "figaroh_csv.py"
    stats = measure.run_measured(
        [str(python), str(driver), "--ident", str(csv[1]), "--val", str(csv[3]),
         "--urdf", str(urdf), "--out", str(tmp_path / "fig")],
        tmp_path / "fig.log", memory_cap_gb=8,
    )  # fmt: skip
    assert stats.returncode == 0, (tmp_path / "fig.log").read_text()[-2000:]
    result = json.loads((tmp_path / "fig" / "result.json").read_text())
    score = scoring.score(
        scoring.read_recorded(csv[3], 7), scoring.read_predictions(tmp_path / "fig" / "PRED.csv", 7)
    )
    assert (score.alignment, score.n_not_predicted) == ("exact", 0)
    assert score.rmse == pytest.approx(result["figaroh_validation_rmse"], rel=1e-6)
    assert result["n_base_params"] > 40 and len(result["joints"]) == 7


@pytest.mark.slow
@pytest.mark.skipif(not KUKA.is_dir(), reason="shared KUKA LWR4 data absent")
def test_benchmark_end_to_end_on_kuka(tmp_path: Path):
    import bench_peers

    out = tmp_path / "out"
    argv = ["--cases", "kuka", "--out", str(out), "--data-dir", str(tmp_path / "data")]
    variant = ["--ours-variant", "untuned=tuning=none"]  # a diagnostic run beside each of ours
    assert bench_peers.main([*argv, "--no-figaroh", "--datasets", str(DATASETS), *variant]) == 0
    results = json.loads((out / "results.json").read_text())
    runs = {(r["label"], r["ident"]): r for r in results["cases"][0]["runs"]}
    for ident in ("measurement 1", "measurements 1+2"):
        untuned, tuned = runs[("ours[untuned]", ident)], runs[("ours", ident)]
        assert untuned["status"] == "ok"
        assert untuned["score"]["rmse"] != tuned["score"]["rmse"]
    ours = runs[("ours", "measurement 1")]
    assert ours["status"] == "ok" and np.isfinite(ours["score"]["rmse"])
    assert ours["score"]["n_scored"] > 0.9 * ours["score"]["n_recorded"]
    assert ours["stats"]["peak_rss_mb"] > 50 and ours["stats"]["wall_s"] > 0
    several = runs[("ours", "measurements 1+2")]
    assert several["status"] == "ok"  # source.path as a list
    assert np.isfinite(several["score"]["rmse"])  # which is better: see test_honest_metrics
    assert runs[("figaroh", "measurement 1")]["status"].startswith("skipped")
    table = (out / "results.md").read_text()
    assert "| kuka |" in table
    assert bench_peers.main(["--rescore", str(out)]) == 0  # the tables again, from the files
    assert (out / "results.md").read_text().split("## Accuracy")[1] == table.split("## Accuracy")[1]
