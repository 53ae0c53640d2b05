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


# -- speed bands, the better-of ratio, failure rows, FIGAROH's cross-validation, Panda -----------
def test_speed_bands_match_a_hand_computed_case():
    # 3 rows x 2 joints; each sample in the band of its own joint's |dq|
    tau = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    prediction = np.array([[1.5, 2.0], [2.0, 4.0], [5.0, 3.0]])
    dq = np.array([[0.005, -0.03], [-0.1, 0.2], [0.3, -0.009]])
    scored = np.array([True, True, True])
    bands = {b["band"]: b for b in scoring.speed_bands(tau, prediction, dq, scored)}
    # rest: (0,0) e=-0.5, (2,1) e=3 | creep: (0,1) e=0 | slow: (1,0) e=1 | fast: (1,1), (2,0) e=0
    assert bands["rest"]["n"] == 2 and bands["rest"]["share"] == pytest.approx(2 / 6)
    assert bands["rest"]["rmse"] == pytest.approx(np.sqrt((0.25 + 9) / 2))
    assert (bands["creep"]["n"], bands["creep"]["rmse"]) == (1, 0.0)
    assert (bands["slow"]["n"], bands["slow"]["rmse"]) == (1, pytest.approx(1.0))
    assert bands["fast"]["n"] == 2 and bands["fast"]["rmse"] == 0.0  # 0.2 is 'fast'
    assert sum(b["share"] for b in bands.values()) == pytest.approx(1.0)
    # an unscored row leaves every band, an empty band is NaN, not 0
    bands = scoring.speed_bands(tau, prediction, dq, np.array([False, True, False]))
    assert [b["n"] for b in bands] == [0, 0, 1, 1] and math.isnan(bands[0]["rmse"])


def _validation_csv(path: Path, t, tau, dq) -> Path:
    n = tau.shape[1]
    recording = conversions.JointRecording(
        np.asarray(t, float), np.zeros_like(tau), np.asarray(dq, float), np.asarray(tau, float),
        tuple(f"j{j}" for j in range(n)),
    )  # fmt: skip
    return project_io.write_recording(recording, path)


def _prediction_csv(path: Path, t, tau) -> Path:
    columns = ",".join(f"tau_pred_{j}" for j in range(tau.shape[1]))
    rows = "".join(
        f"{ti:.9g}," + ",".join(f"{v:.9g}" for v in r) + "\n" for ti, r in zip(t, tau, strict=True)
    )
    path.write_text(f"timestamp,{columns}\n{rows}")
    return path


def _run(label: str, prediction: Path | None, status: str = "ok", tool: str | None = None):
    from peers.runs import ToolRun

    tool = tool or ("ours" if label.startswith("ours") else "figaroh")
    return ToolRun("c", 4, tool, label, "x", prediction=prediction, status=status)


def test_ratio_against_the_better_of_figaroh_fixed_and_tuned(tmp_path: Path):
    from peers.cases import CaseResult
    from peers.report import ratio_table, score_case

    t = np.arange(4) * 0.01
    tau = np.array([[1.0], [2.0], [3.0], [4.0]])
    val = _validation_csv(tmp_path / "val.csv", t, tau, np.full((4, 1), 0.5))
    ours = _prediction_csv(tmp_path / "ours.csv", t, tau + 0.1)  # RMSE 0.1
    fixed = _prediction_csv(tmp_path / "fixed.csv", t, tau + 0.4)  # RMSE 0.4
    tuned = _prediction_csv(tmp_path / "tuned.csv", t[1:], tau[1:] - 0.2)  # 0.2, row 0 missing
    case = CaseResult("c", 4, val, 1)
    case.runs = [_run("ours", ours), _run("figaroh", fixed), _run("figaroh tuned", tuned)]
    (row,) = ratio_table([(case, score_case(case))])
    assert row["RMSE ratio (those rows)"] == "0.250"  # ours / fixed, all 4 rows
    assert row["better FIGAROH"] == "tuned"
    assert row["RMSE ratio vs better FIGAROH"] == "0.500"  # 0.1 / 0.2 on the 3 rows of all three
    # tuned worse than fixed: the ratio is against fixed
    worse = _prediction_csv(tmp_path / "worse.csv", t, tau + 0.8)
    case.runs[2] = _run("figaroh tuned", worse)
    (row,) = ratio_table([(case, score_case(case))])
    assert (row["better FIGAROH"], row["RMSE ratio vs better FIGAROH"]) == ("fixed", "0.250")
    # tuned failed: the better of what ran
    case.runs[2] = _run("figaroh tuned", None, "failed (exit 1): boom")
    (row,) = ratio_table([(case, score_case(case))])
    assert (row["better FIGAROH"], row["RMSE ratio vs better FIGAROH"]) == ("fixed", "0.250")


def test_a_failing_tool_gives_a_failure_row_not_a_crash(tmp_path: Path):
    from peers.cases import CaseResult
    from peers.report import write_results
    from peers.runs import Settings, run_ours

    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    settings = Settings(out=out, data=tmp_path, figaroh_python=None, log=lambda m: None)
    failing = [sys.executable, "-c", "import sys; print('error: no column time'); sys.exit(2)"]
    run = run_ours(settings, "c", 4, "ours", "x", ["a=1"], failing)
    assert run.status == "failed (exit 2): no column time" and run.prediction is None
    missing = run_ours(settings, "c", 4, "ours[gone]", "x", [], [str(tmp_path / "no_such")])
    assert missing.status.startswith("failed: could not start")
    t = np.arange(4) * 0.01
    tau = np.arange(4.0).reshape(4, 1)
    val = _validation_csv(tmp_path / "val.csv", t, tau, np.zeros((4, 1)))
    case = CaseResult("c", 4, val, 1)
    case.runs = [run, missing, _run("figaroh", _prediction_csv(tmp_path / "p.csv", t, tau))]
    text = write_results(out, [case], {})
    assert "failed (exit 2): no column time" in text and "could not start" in text
    saved = json.loads((out / "results.json").read_text())["cases"][0]["runs"]
    assert saved[0]["score"] is None and saved[2]["score"]["rmse"] == 0.0
    ratios = (out / "ratios.csv").read_text().splitlines()
    assert len(ratios) == 3 and all(",–," in line for line in ratios[1:])


def test_figaroh_cv_folds_grid_and_staged_search():
    from peers import figaroh_tuning as tuning

    folds = tuning.make_folds([100], 5, 3)
    held = np.array([h for h, _ in folds])
    assert held.sum(axis=0).tolist() == [1] * 100  # every row held out exactly once
    h2, train2 = folds[2]
    assert np.flatnonzero(h2).tolist() == list(range(40, 60))
    assert not train2[37:63].any() and train2[36] and train2[63]  # the guard of 3 samples
    two = tuning.make_folds([60, 40], 5, 2)  # several recordings: one fold each
    assert len(two) == 2 and np.flatnonzero(two[1][0]).tolist() == list(range(60, 100))
    assert not two[1][1][58:].any() and two[1][1][:58].all()
    # 1 kHz, measured velocity: 8 time constants of 10 Hz order 4 = 0.333 s, + 2 (median 5)
    assert tuning.settling_samples(10.0, 1000.0, 4, False) == 335
    fixed = tuning.Setting(10.0, False, 0)
    cutoffs, trims, largest = tuning.grid(fixed, 100.0, 4, False, 2000)
    assert cutoffs == [2.5, 5.0, 10.0, 20.0, 40.0]  # below Nyquist (50 Hz)
    assert trims(2.5) == [0, 136] and trims(10.0) == [0, 36, 72]  # 2 x 136 > 10 % of 2000
    assert largest == 138  # 2 x 69 at 5 Hz
    calls = []

    def evaluate(setting):  # a made-up CV surface: best at 20 Hz, offset on, trim 0
        calls.append(setting)
        cv = abs(setting.cutoff_hz - 20) + (0 if setting.offset else 1) + setting.trim / 100
        return cv, [cv], 10

    chosen, ranked = tuning.search(evaluate, fixed, cutoffs, trims, log=lambda m: None)
    assert chosen == tuning.Setting(20.0, True, 0) and ranked[0].setting == chosen
    assert len(calls) == len(set(calls)) == 1 + 2 * 5 + 2  # fixed, stage 1, two more trims
    assert fixed in [c.setting for c in ranked]


KUKA_SLICE = 1500


@pytest.mark.slow
@pytest.mark.skipif(not KUKA.is_dir(), reason="shared KUKA LWR4 data absent")
def test_figaroh_tuned_chooses_on_identification_data_only(tmp_path: Path):
    """FIGAROH's CV (figaroh_csv.py --tune) against two validation files, the real one and one
    whose torque is noise: the same candidates, CV RMSEs and choice (it never reads --val);
    the final prediction is of each file."""
    python = _figaroh_python()
    if python is None:
        pytest.skip("no FIGAROH 1.0.2 venv (bench_peers.py creates one; or IDENT_FIGAROH_PYTHON)")
    one = conversions.kuka_recording(KUKA / "measurements_1.npz").rows(0, KUKA_SLICE)
    ident = project_io.write_recording(one, tmp_path / "m1.csv")
    three = conversions.kuka_recording(KUKA / "measurements_3.npz").rows(0, KUKA_SLICE)
    real = project_io.write_recording(three, tmp_path / "m3.csv")
    noise = np.random.default_rng(0).normal(size=three.tau.shape) * 50
    fake = project_io.write_recording(dataclasses.replace(three, tau=noise), tmp_path / "f.csv")
    urdf = conversions.strip_geometry(KUKA / "kuka_lwr4.urdf", tmp_path / "kuka.urdf")
    driver = REPO / "benchmarks" / "peers" / "figaroh_csv.py"
    results = {}
    for name, val in (("real", real), ("fake", fake)):
        out = tmp_path / name
        stats = measure.run_measured(
            [str(python), str(driver), "--ident", str(ident), "--val", str(val), "--urdf",
             str(urdf), "--out", str(out), "--tune", "--folds", "3"],
            tmp_path / f"{name}.log", memory_cap_gb=8,
        )  # fmt: skip
        assert stats.returncode == 0, (tmp_path / f"{name}.log").read_text()[-2000:]
        results[name] = json.loads((out / "result.json").read_text())
    real_cv, fake_cv = results["real"]["tuning"], results["fake"]["tuning"]
    timeless = [{**c, "seconds": 0} for c in real_cv["candidates"]]
    assert timeless == [{**c, "seconds": 0} for c in fake_cv["candidates"]]
    assert real_cv["chosen"] == fake_cv["chosen"] == results["real"]["setting"]
    assert len(real_cv["candidates"]) >= 11 and real_cv["folds"] == 3
    assert real_cv["cv_rmse"] <= real_cv["fixed_cv_rmse"]
    real_rmse = results["real"]["figaroh_validation_rmse"]
    assert real_rmse < 0.5 * results["fake"]["figaroh_validation_rmse"]  # each file predicted


PANDA = DATASETS / "panda_gaz2019"


def test_panda_case_skips_without_its_data(tmp_path: Path):
    from peers import cases
    from peers.runs import Settings

    logged = []
    settings = Settings(out=tmp_path, data=tmp_path, figaroh_python=None, log=logged.append)
    assert cases.panda(settings, tmp_path / "no_datasets") == []
    assert "skipped" in logged[0]


@pytest.mark.slow
@pytest.mark.skipif(not PANDA.is_dir(), reason="shared Panda data absent")
def test_panda_case_wiring(tmp_path: Path):
    """Ours on the Panda files with the column mapping (a user's command line), FIGAROH fixed
    and tuned (skipped here), scored against the file's own tau_j at its own time column."""
    import bench_peers
    from peers import cases
    from peers.report import write_results
    from peers.runs import Settings

    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    settings = Settings(out=out, data=tmp_path / "data", figaroh_python=None,
                        figaroh_missing="--no-figaroh", log=lambda m: None)  # fmt: skip
    (case,) = cases.panda(settings, DATASETS)
    assert "panda" in bench_peers.CASES
    assert (case.n_joints, case.validation.name) == (7, "val_traj1_middle.csv")
    assert case.size == 6732 + 6536
    assert [r.label for r in case.runs] == ["ours", "figaroh", "figaroh tuned"]
    ours = case.runs[0]
    command = ours.stats.command
    mapping = "{time: time, q: q_, dq: dq_, tau: tau_}"
    assert f"source.columns={mapping}" in command and f"validation.columns={mapping}" in command
    assert f"source.path=[{PANDA / 'ident_traj1_part1.csv'},{PANDA / 'ident_traj1_part3.csv'}]" in (
        command
    )
    assert ours.status == "ok", ours.status
    assert all(r.status.startswith("skipped") for r in case.runs[1:])
    assert not list((tmp_path / "data").rglob("*.csv"))  # the GPL data are not copied
    write_results(out, [case], {})
    saved = json.loads((out / "results.json").read_text())["cases"][0]
    assert saved["columns"] == {"time": "time", "dq": "dq_", "tau": "tau_"}
    # the rows our filters serve: a 5 Hz cut-off (the tuning's choice here) trims 0.68 s at
    # each end of the 6.1 s file
    assert saved["runs"][0]["score"]["n_scored"] > 0.7 * 6145


# -- the busy machine and the roofline (--busy; UR10e cases) ------------------------------------
def _timed_run(label: str, prediction: Path, wall: float, memory: float, size: int = 40_000):
    from peers.runs import ToolRun

    stats = measure.RunStats([], 0, wall, memory, memory, memory, memory, memory, None, False,
                             False, "")  # fmt: skip
    tool = "ours" if label.startswith("ours") else "figaroh"
    return ToolRun("ur10e", size, tool, label, "x", prediction=prediction, stats=stats)


def _busy_case(tmp_path: Path):
    """A UR10e-like case of 40,000 identification samples (4 validation rows) with idle and
    busy runs of both tools and the kernel's rate under both loads."""
    from peers.cases import CaseResult

    t = np.arange(4) * 0.01
    tau = np.array([[1.0], [2.0], [3.0], [4.0]])
    val = _validation_csv(tmp_path / "val.csv", t, tau, np.full((4, 1), 0.5))
    ours = _prediction_csv(tmp_path / "ours.csv", t, tau + 0.1)  # RMSE 0.1
    peer = _prediction_csv(tmp_path / "fig.csv", t, tau + 0.4)  # RMSE 0.4
    kernel = {"seconds": 0.04, "engine": "C", "threads": 2, "chunk": 10_000, "passes": 7}
    case = CaseResult("ur10e", 40_000, val, 1, roofline={
        "idle": {**kernel, "samples": 40_000, "samples_per_s": 1.0e6},
        "busy": {**kernel, "samples": 40_000, "samples_per_s": 5.0e5},
    })  # fmt: skip
    case.runs = [
        _timed_run("ours", ours, 2.0, 200.0), _timed_run("figaroh", peer, 4.0, 400.0),
        _timed_run("ours (busy)", ours, 4.0, 210.0), _timed_run("figaroh (busy)", peer, 5.0, 420.0),
    ]  # fmt: skip
    return case


def test_busy_rows_are_compared_with_each_other_and_with_the_idle_predictions(tmp_path: Path):
    from peers.report import ratio_table, score_case, timing_table

    case = _busy_case(tmp_path)
    idle, busy = ratio_table([(case, score_case(case))])
    assert (idle["pair"], busy["pair"]) == ("ours / figaroh", "ours (busy) / figaroh (busy)")
    assert (idle["wall ratio"], idle["peak memory ratio"]) == ("0.500", "0.500")
    assert (busy["wall ratio"], busy["peak memory ratio"]) == ("0.800", "0.500")
    assert busy["RMSE ratio (those rows)"] == idle["RMSE ratio (those rows)"] == "0.250"
    rows = timing_table([(case, score_case(case))])
    assert [(r["load"], r["wall ratio"], r["ours samples/s"]) for r in rows] == [
        ("idle", "0.500", "2.0e4"), ("busy", "0.800", "1.0e4"),
    ]  # fmt: skip
    assert rows[0]["predictions vs idle"] == "–"
    assert rows[1]["predictions vs idle"] == "ours identical, FIGAROH identical"
    assert rows[1]["ours RMSE"] == rows[0]["ours RMSE"] == "0.1000"
    # a busy prediction that is not the idle one is shown as such
    t, tau = np.arange(4) * 0.01, np.array([[1.0], [2.0], [3.0], [4.0]])
    case.runs[2].prediction = _prediction_csv(tmp_path / "other.csv", t, tau + 0.2)
    rows = timing_table([(case, score_case(case))])
    assert rows[1]["predictions vs idle"].startswith("ours differs (RMSE by 1.00e-01)")


def test_roofline_line_and_its_round_trip_through_results_json(tmp_path: Path):
    from peers.report import roofline_lines, sci, score_case, write_results
    from peers.rescore import load_cases

    assert (sci(1.23e6), sci(31_000.0), sci(0.5)) == ("1.2e6", "3.1e4", "5.0e-1")
    case = _busy_case(tmp_path)
    idle, busy = roofline_lines([(case, score_case(case))])
    assert "idle: roofline: kernel 1.0e6 samples/s (C, 2 threads" in idle
    assert idle.endswith("whole command 2.0e4 samples/s (2 % of the kernel)")  # 40,000 / 2 s
    assert busy.endswith(
        "kernel 5.0e5 samples/s (C, 2 threads, calls of 10000 samples, best of "
        "7 passes: 0.04 s), whole command 1.0e4 samples/s (2 % of the kernel)"
    )
    out = tmp_path / "out"
    out.mkdir()
    text = write_results(out, [case], {})
    assert "ours (busy) / figaroh (busy)" in text and idle in text and busy in text
    (again,), _ = load_cases(out)
    assert again.roofline == case.roofline
    assert write_results(out, [again], {}) == text


def test_busy_core_spins_one_process_and_ends_it():
    import time

    from peers.load import busy_core

    with busy_core(warm_up_s=0.2) as spinner:
        assert os.path.exists(f"/proc/{spinner.pid}")
        time.sleep(0.5)
    assert not os.path.exists(f"/proc/{spinner.pid}")  # killed and reaped
    assert 0.6 < spinner.seconds < 5 and spinner.cpu_s > 0  # a share: the host may be busy
    assert 0 < spinner.share <= 1.05 and "% of one core" in spinner.note()


def test_kernel_rate_times_the_regressor_on_the_recordings_samples(tmp_path: Path):
    from ident_framework.model.robot import load_robot
    from ident_framework.testing.known_truth import multisine

    names = load_robot("ur10e").joint_names
    t = np.arange(5000) / 500.0
    q, dq, _ = multisine(t, len(names), 0)
    recording = conversions.JointRecording(t, q, dq, np.zeros_like(q), names)
    csv = project_io.write_recording(recording, tmp_path / "ur10e.csv")
    rate = project_io.kernel_rate(csv, chunk=2000, repeats=2, min_total_s=0.0)
    assert (rate["samples"], rate["chunk"], rate["passes"]) == (5000, 2000, 2)
    assert rate["samples_per_s"] == pytest.approx(5000 / rate["seconds"])
    assert rate["engine"] in ("C", "numba") and rate["threads"] >= 1


def test_ur10e_case_runs_the_busy_pair_beside_the_spinner(tmp_path: Path, monkeypatch):
    """The order of a size's work (nothing run: the tools, the kernel and the spinner faked):
    idle pair, kernel idle, spinner on, kernel busy, busy pair, spinner off, FIGAROH tuned."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    from peers import cases
    from peers.load import Spinner
    from peers.runs import Settings, ToolRun

    events = []
    paths = {"ident": {10_000: tmp_path / "i.csv"}, "validation": tmp_path / "v.csv",
             "urdf": tmp_path / "u.urdf"}  # fmt: skip
    io = SimpleNamespace(
        simulate_ur10e=lambda folder, sizes, log: paths,
        project_command=lambda: ["ours"],
        kernel_rate=lambda csv: events.append("kernel") or {"samples_per_s": 1.0},
    )

    @contextmanager
    def spinner():
        events.append("spin")
        yield Spinner(seconds=1.0, cpu_s=0.9, load_before=(1.0,), load_after=(1.0,))
        events.append("stop")

    def fake(tool):
        def run(settings, case, size, label, ident, *args):  # args: ..., poll (if given)
            poll = args[2] if len(args) > 2 else True
            events.append(label if poll else f"{label} (timed)")
            stats = measure.RunStats([], 0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, None, False, False, "")
            return ToolRun(case, size, tool, label, ident, stats=stats)

        return run

    monkeypatch.setattr(cases, "_project_io", lambda: io)
    monkeypatch.setattr(cases, "busy_core", spinner)
    monkeypatch.setattr(cases, "run_ours", fake("ours"))
    monkeypatch.setattr(cases, "run_figaroh", fake("figaroh"))
    settings = Settings(out=tmp_path, data=tmp_path, figaroh_python=None, busy=True,
                        log=lambda m: None)  # fmt: skip
    (result,) = cases.ur10e(settings, [10_000])
    assert events == ["ours", "figaroh", "kernel", "spin", "kernel", "ours (busy)",
                      "figaroh (busy)", "stop", "figaroh tuned"]  # fmt: skip
    labels = [r.label for r in result.runs]
    assert labels == ["ours", "figaroh", "ours (busy)", "figaroh (busy)", "figaroh tuned"]
    assert set(result.roofline) == {"idle", "busy"}
    assert any("90 % of one core" in note for note in result.notes)
    events.clear()
    settings.repeat = 2  # two timed runs of each, alternating, then one polled pair
    (result,) = cases.ur10e(settings, [10_000])
    busy = ["ours (busy) (timed)", "figaroh (busy) (timed)"] * 2 + ["ours (busy)", "figaroh (busy)"]
    assert events[events.index("spin") + 2 : events.index("stop")] == busy
    assert sum("(busy), 2 alternating runs" in note for note in result.notes) == 1
    settings.busy = False
    events.clear()
    (result,) = cases.ur10e(settings, [10_000])
    assert "spin" not in events and list(result.roofline) == ["idle"]
