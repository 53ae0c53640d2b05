"""Residual learner through the command line: on a different validation motion the fused
model is no worse than 2 % when the physical model is exact, and the saved model reloaded by
mode=predict reproduces the run's own predictions exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.model.robot import load_robot
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.testing.cli import run_cli
from ident_framework.trajectories.fourier import FourierGenerator, FourierParams
from ident_framework.trajectories.point_to_point import PointToPointGenerator, PointToPointParams

pytestmark = pytest.mark.slow

SMALL_NET = ("residual=bpnn", "residual.epochs=60", "residual.progress=false")


@pytest.fixture(scope="module")
def exact_physics_logs(tmp_path_factory) -> tuple[Path, Path]:
    """Logs of a simulated UR10e whose dynamics the physical model describes (rigid body,
    Coulomb-viscous friction, rotor inertia): identification (Fourier) and validation
    (point-to-point with slow segments)."""
    folder = tmp_path_factory.mktemp("exact")
    robot = load_robot("ur10e")
    source = MujocoSource(MujocoSourceParams(seed=5))
    fourier = FourierGenerator(FourierParams(n_candidates=40, n_refine=0, progress=False))
    ident = source.acquire(robot, fourier.generate(robot, None, seed=5), "identification")
    motion = PointToPointGenerator(PointToPointParams(duration_s=20.0)).generate(robot, None, 6)
    write_csv_log(ident, folder / "ident.csv")
    write_csv_log(source.acquire(robot, motion, "validation"), folder / "val.csv")
    return folder / "ident.csv", folder / "val.csv"


def test_fusion_does_no_harm_and_reloads_exactly(exact_physics_logs, tmp_path: Path):
    ident, val = exact_physics_logs
    run = tmp_path / "run"
    result = run_cli(
        "robot=ur10e", "source=csv", f"source.path={ident}", "validation=csv",
        f"validation.path={val}", *SMALL_NET, f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    physical = metrics["validation"]["physical"]["rmse"]
    fusion = metrics["validation"]["fusion"]["rmse"]
    assert fusion <= 1.02 * physical  # the physical model is exact: the learner must not hurt
    assert len(metrics["validation"]["fusion_gain"]["rmse_reduction_percent"]) == 6
    assert (run / "residual" / "bpnn_weights.pt").is_file()
    assert "RMSE fusion" in result.stdout

    out = tmp_path / "predicted"
    predicted = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={val}",
        f"hydra.run.dir={out}", cwd=tmp_path,
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    original = np.loadtxt(run / "predictions_validation.csv", delimiter=",", skiprows=1)
    again = np.loadtxt(out / "predictions_val.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(again, original)
    saved = json.loads((out / "metrics_val.json").read_text())
    assert saved["fusion"]["rmse"] == pytest.approx(fusion, rel=1e-12)


def test_predict_mode_errors(exact_physics_logs, tmp_path: Path):
    _, val = exact_physics_logs
    missing = run_cli("mode=predict", f"run={tmp_path / 'nope'}", "source=csv",
                      f"source.path={val}", f"hydra.run.dir={tmp_path / 'o1'}")  # fmt: skip
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert not (tmp_path / "o1").exists()
    empty = tmp_path / "empty_run"
    empty.mkdir()
    no_model = run_cli("mode=predict", f"run={empty}", "source=csv", f"source.path={val}",
                       f"hydra.run.dir={tmp_path / 'o2'}")  # fmt: skip
    assert no_model.returncode == 2 and "config.yaml" in no_model.stderr
    no_run = run_cli("mode=predict", "source=csv", f"source.path={val}")
    assert no_run.returncode == 2 and "run=DIR" in no_run.stderr


def test_wrong_device_is_a_user_error(tmp_path: Path):
    result = run_cli("residual=bpnn", "residual.device=cuda", f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "residual.device" in result.stderr and "Traceback" not in result.stderr


def test_fusion_corrects_an_unmodelled_effect_on_a_different_motion(tmp_path: Path):
    """The simulated robot has position-dependent friction the physical model lacks, three
    times the default size (`source.unmodelled_scale=3`); the validation motion is a different
    (random Fourier) motion inside the identification's workspace. The fused model beats the
    physical one on it: measured 2.4751 -> 2.3941 Nm (-3.3 %), joints 1, 2, 3, 5 and 6 better.

    Why this case (experiments/README.md, residual_robustness): the excitation is the best of
    the Monte-Carlo candidates, without the CMA-ES refinement (`trajectory.n_refine=0`). The
    refinement turns the last bits of OpenBLAS's CPU-specific kernels into a different
    excitation: with the default search and the default effect size this test measured
    1.4694 -> 1.4487 Nm here (AVX-512 kernels) and 1.4733 -> 1.9899 Nm with
    OPENBLAS_CORETYPE=Haswell (the figures issue 11 reported from a fresh venv). Without
    refinement the data are identical under the SkylakeX, Haswell and Sandybridge kernels, and
    the per-joint gains agree within 0.2 % points under those, with torch 2.13.0 and 2.14.1 and
    with ATen's generic CPU kernels (ATEN_CPU_CAPABILITY=default). Across data seeds 0-5 x
    learner seeds 0-2 the gain is not robust at the default effect size (fused worse on 16 of 18
    without refinement, 5 of 23 with it) nor, with refinement, at three times the size (2 of 18;
    5 of 18 with the Haswell kernels); three times the size without refinement, fused was
    better on all 18 (-0.6 to -9.3 %) under two kernels. Issue 14 rebuilds the learner with
    held-out acceptance. All of it was measured with joint limits only
    (`trajectory.workspace=null`, as here): the default workspace (floor, base column) would
    make it another excitation and another validation motion."""
    run = tmp_path / "run"
    box = "[[-1,1],[-1,1],[-1,1],[-1,1],[-1,1],[-1,1]]"
    result = run_cli(
        "source.unmodelled=position", "source.unmodelled_scale=3", "residual=bpnn",
        "residual.progress=false", "validation=mujoco_fourier",
        f"trajectory.position_limits={box}", "trajectory.workspace=null", "trajectory.n_refine=0",
        "trajectory.progress=false", "plots=false", f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    validation = json.loads((run / "metrics.json").read_text())["validation"]
    physical, fusion = validation["physical"]["rmse"], validation["fusion"]["rmse"]
    gains = validation["fusion_gain"]["rmse_reduction_percent"]
    print(f"validation RMSE physical {physical:.4f} Nm, fused {fusion:.4f} Nm; gains {gains}")
    assert fusion < physical
    assert sum(gain > 1.0 for gain in gains) >= 3  # percent; a kept untrained network is ~0
