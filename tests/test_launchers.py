"""Sweeps on Hydra's launchers, for real: joblib with 2 worker processes, submitit's local
executor (real subprocesses), Ray on a local instance (skipped without the `ray` extra). Each
job is independent, the comparison table is written whichever launcher ran the jobs, and a
failed job is a row of it instead of losing the others."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.model.robot import load_robot
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.testing.cli import run_cli
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    """A 20 s simulated UR10e recording (one random excitation) in the CSV contract."""
    path = tmp_path_factory.mktemp("launchers") / "ident.csv"
    robot = load_robot("ur10e")
    motion = FourierGenerator(FourierParams(n_candidates=1, n_refine=0, progress=False)).generate(
        robot, None, 5
    )
    write_csv_log(MujocoSource(MujocoSourceParams(seed=5)).acquire(robot, motion), path)
    return path


def _sweep(
    tmp_path: Path, log: Path, launcher: list[str], frictions: str, paths: str = "missing,log"
) -> tuple:
    """The sweep over `paths` (in that order: "missing" a file that does not exist, "log"
    the recording) x `frictions`."""
    sweep = tmp_path / "sweep"
    missing = tmp_path / "missing.csv"
    files = ",".join(str(missing if p == "missing" else log) for p in paths.split(","))
    result = run_cli(
        "-m", *launcher, "robot=ur10e", "source=csv", f"source.path={files}",
        "validation=split", f"friction={frictions}", "plots=false", f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
    )  # fmt: skip
    with open(sweep / "comparison.csv") as handle:
        rows = {row["run"]: row for row in csv.DictReader(handle)}
    return result, sweep, rows


def _check_rows(result, rows: dict, n_jobs: int, missing: Path, failed: int | None = None) -> None:
    """The jobs that read the missing file (`failed` of them, default half): failed rows with
    the error; the others have results. The sweep exits 2 (user errors) and says how many
    failed."""
    failed = n_jobs // 2 if failed is None else failed
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"{failed} of {n_jobs} jobs of the sweep failed" in result.stderr
    assert sorted(rows, key=int) == [str(i) for i in range(n_jobs)]
    for row in rows.values():
        if f"source.path={missing}" in row["overrides"]:
            assert row["status"].startswith("failed (exit 2): The CSV file"), row
            assert str(missing) in row["status"] and str(missing) in row["overrides"]
        else:
            assert row["status"] == "ok", row
            fit = float(row["validation_r2"])
            assert fit > 0.95 if row["friction"] == "coulomb_viscous" else np.isfinite(fit)


def _metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_joblib_two_workers_run_jobs_in_parallel_and_report_a_failed_job(log, tmp_path):
    # jobs 0, 1 (each worker's first, side by side) and 4, 5 have results, 2 and 3 fail: ~0.7 s
    # jobs after a failed one did not overlap when one worker was still on its first (seen in CI)
    result, sweep, rows = _sweep(
        tmp_path, log, ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
        "none,coulomb_viscous", paths="log,missing,log",
    )  # fmt: skip
    assert "Joblib.Parallel(n_jobs=2" in result.stdout + result.stderr
    _check_rows(result, rows, 6, tmp_path / "missing.csv", failed=2)
    # jobs 0 and 1 ran at the same time, in two processes: their intervals overlap
    spans = [
        ((sweep / n / ".hydra" / "config.yaml").stat().st_mtime,
         (sweep / n / "metrics.json").stat().st_mtime)
        for n in ("0", "1")
    ]  # fmt: skip
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], spans
    # independent jobs: a worker that ran another job first gives what a run on its own gives
    alone = tmp_path / "alone"
    single = run_cli(
        "robot=ur10e", "source=csv", f"source.path={log}", "validation=split",
        "friction=coulomb_viscous", "plots=false", f"hydra.run.dir={alone}", cwd=tmp_path,
    )  # fmt: skip
    assert single.returncode == 0, single.stderr[-3000:]
    in_sweep, on_its_own = _metrics(sweep / "5"), _metrics(alone)
    for split in ("train", "validation"):
        np.testing.assert_allclose(
            in_sweep[split]["physical"]["rmse_per_joint"],
            on_its_own[split]["physical"]["rmse_per_joint"],
            rtol=1e-12,
        )
    table = (sweep / "comparison.md").read_text()
    assert (
        table.count("| failed (exit 2)") == 2 and (sweep / "comparison_rmse_per_joint.png").exists()
    )


def test_submitit_local_executor(log, tmp_path):
    result, sweep, rows = _sweep(
        tmp_path, log, ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10"],
        "coulomb_viscous",
    )  # fmt: skip
    _check_rows(result, rows, 2, tmp_path / "missing.csv")
    assert list((sweep / ".submitit").glob("*/*_log.out"))  # submitit's own job folders


@pytest.mark.skipif(
    importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None
    or importlib.util.find_spec("ray") is None,
    reason="the ray extra (hydra-ray-launcher) is not installed",
)
def test_ray_local_instance(log, tmp_path):
    result, _, rows = _sweep(
        tmp_path, log, ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
        "coulomb_viscous",
    )  # fmt: skip
    assert "Ray Launcher is launching 2 jobs" in result.stdout + result.stderr
    _check_rows(result, rows, 2, tmp_path / "missing.csv")


def test_a_launcher_that_gives_up_still_leaves_the_table(log, tmp_path):
    """joblib's per-job timeout: the launcher aborts the sweep (Hydra exits 1); the table has
    the jobs that finished and a row for each one that did not."""
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "hydra.launcher.timeout=0.5",
        "robot=ur10e", "source=csv", f"source.path={log}", "validation=split",
        "friction=coulomb_viscous,lugre", "plots=false", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 1
    with open(sweep / "comparison.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["run"] for row in rows] == ["0", "1"]
    assert all(row["status"].startswith("failed: no result") for row in rows), rows


def test_shipped_slurm_preset_composes(tmp_path):
    result = run_cli("hydra/launcher=ident_slurm", "--cfg", "hydra", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SlurmLauncher" in result.stdout and "timeout_min: 240" in result.stdout
