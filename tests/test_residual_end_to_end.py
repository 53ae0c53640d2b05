"""Residual learner through the command line: on a different validation motion the fused
model is no worse than 1 % when the physical model is (nearly) exact, the saved model reloaded
by mode=predict reproduces the run's own predictions exactly, and with an effect the physical
model lacks (Stribeck friction), trained on two excitations, it beats the physical model on a
point-to-point motion over the whole workspace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.data.csv_log import write_csv_log
from ident_framework.model.robot import load_robot
from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
from ident_framework.testing.cli import run_cli
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams
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
        f"validation.path={val}", *SMALL_NET, "tuning=none", f"hydra.run.dir={run}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    physical = metrics["validation"]["physical"]["rmse"]
    fusion = metrics["validation"]["fusion"]["rmse"]
    assert fusion <= 1.01 * physical  # the physical model is exact: the learner must not hurt
    assert len(metrics["validation"]["fusion_gain"]["rmse_reduction_percent"]) == 6
    report = metrics["residual"]
    assert len(report["accepted"]) == len(report["reason"]) == 6
    assert report["held_out"].startswith("one recording")
    shares = metrics["validation"]["fusion"]
    total = shares["corrected_fraction"] + shares["shrunk_fraction"] + shares["refused_fraction"]
    assert total == pytest.approx(1.0)
    assert "judged on held-out motion" in result.stdout
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


def test_fusion_corrects_stribeck_friction_on_a_motion_over_the_workspace(tmp_path: Path):
    """The simulated robot's true friction is Stribeck (static 2x Coulomb, v_s 0.1 rad/s), the
    physical model Coulomb-viscous. The learner trains on two different Fourier excitations
    (closed loop, two rounds) and is judged leave-one-recording-out; validation is the default
    point-to-point motion (slow and fast moves over the joint ranges and workspace). With the
    defaults (features [velocity, friction], 4 networks per joint): 3.4472 -> 2.2917 Nm
    (0.665 x) here; offline on the pipeline's residuals of seeds 1 and 2: 0.831 x and 0.833 x
    (experiments/README.md, residual_acceptance, also the other learner seeds: 7 of 9 runs
    <= 0.9 x). Before (velocity, acceleration, friction; one network per fold; early stopping
    on the time tail): 0.892 x for seed 0, 0.984 x for seed 2."""
    run = tmp_path / "run"
    result = run_cli(
        "residual=bpnn", "residual.progress=false", "loop.iterations=2",
        "source.true_friction.plugin=stribeck", "+source.true_friction.parameters.fs_ratio=2.0",
        "+source.true_friction.parameters.v_s=0.1", "trajectory.progress=false", "plots=false",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    validation = metrics["validation"]
    physical, fusion = validation["physical"]["rmse"], validation["fusion"]["rmse"]
    print(f"validation RMSE physical {physical:.4f} Nm, fused {fusion:.4f} Nm")
    print(metrics["residual"]["reason"])
    assert metrics["residual"]["held_out"] == "leave one recording out"
    assert fusion <= 0.9 * physical
    assert any(metrics["residual"]["accepted"])


def test_cogging_is_learnt_only_with_position_features(tmp_path: Path):
    """The simulated UR12e has a joint-side cogging ripple the physical model lacks,
    tau = 1 % of the effort limit x sin(2 q_j) per joint (`source.unmodelled=cogging`; 3.3 Nm on
    the shoulders, 0.54 Nm on the wrists), trained on two Fourier excitations (closed loop,
    leave one recording out), validated on the default point-to-point motion. The default
    features [velocity, friction] cannot see it: that candidate's held-out RMSE drops by less
    than the 2 % margin on every joint (as a run with the defaults refuses every joint, 1.000 x).
    `features: auto` takes the sin/cos set and helps on the validation motion: measured 0.927 x
    for this seed (0.925-0.937 x over learner seeds and features=[sin_position, cos_position,
    velocity, friction]); an oracle least-squares fit of the planted form on the training
    recordings reaches 0.877 x, networks on [sin_position, cos_position] alone 0.878-0.883 x.
    The issue's 0.9 x is NOT reached with auto (nor on data seeds 1, 2 with any feature set:
    experiments/README.md, residual_acceptance; with excitations that cover the joints' circles
    see the next test); this test holds the measured behaviour: a gain
    of at least 3 %, and the velocity-only set refused (187 s wall at load ~3)."""
    run = tmp_path / "run"
    result = run_cli(
        "residual=bpnn", "residual.features=auto", "residual.progress=false", "loop.iterations=2",
        "source.unmodelled=cogging", "trajectory.progress=false", "plots=false",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    validation, report = metrics["validation"], metrics["residual"]
    physical, fusion = validation["physical"]["rmse"], validation["fusion"]["rmse"]
    print(f"validation RMSE physical {physical:.4f} Nm, fused {fusion:.4f} Nm")
    print(report["features_per_joint"], report["reason"])
    assert report["held_out"] == "leave one recording out"
    assert report["feature_candidates"][0] == ["velocity", "friction"]
    velocity_only = [row[0] for row in report["candidate_worst_fold_reduction_percent"]]
    assert all(v is None or v < report["margin_percent"] for v in velocity_only), velocity_only
    assert any(report["accepted"])
    assert all(
        "sin_position" in features
        for features, accepted in zip(report["features_per_joint"], report["accepted"], strict=True)
        if accepted
    )
    assert fusion <= 0.97 * physical


def test_cogging_is_learnt_from_excitations_that_cover_the_joints_circles(tmp_path: Path):
    """The cogging case above with excitations recorded to be learnt from: the Fourier search
    adds the unvisited share of each joint's circle to log cond (`trajectory.coverage_weight=2`),
    so each 20 s excitation turns the pan, wrist joints and wrist 3 through the whole circle (the
    default search: 53-75 % of the pan circle; the validation motion crossed angles neither
    recording had visited on data seed 1), at an excitation cond of 43-54 (47 without). Networks
    on the angle alone (`residual.features=[sin_position, cos_position]`, as a user who wants a
    position-dependent effect learnt chooses), leave one recording out, default point-to-point
    validation over the workspace. Measured (experiments/README.md, residual_acceptance,
    coverage): 0.861 x for this seed (learner seeds 1, 2: 0.861, 0.858; data seed 1: 0.884-0.890;
    data seed 2: 0.870-0.949, pan refused with learner seed 0); the oracle least-squares fit of
    the planted form 0.885 x. Without the coverage term the same features gave 0.878-0.883 x
    here and 0.95-1.00 x on seeds 1, 2."""
    run = tmp_path / "run"
    result = run_cli(
        "residual=bpnn", "residual.features=[sin_position,cos_position]",
        "residual.progress=false", "loop.iterations=2", "source.unmodelled=cogging",
        "trajectory.coverage_weight=2", "trajectory.progress=false", "plots=false",
        f"hydra.run.dir={run}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rounds = yaml.safe_load((run / "loop_trajectories.yaml").read_text())
    coverage = np.array([r["angle_coverage"] for r in rounds])
    print("circle coverage per round and joint", coverage.round(2).tolist())
    assert coverage.shape == (2, 6)
    assert np.all(coverage[:, [0, 3, 4, 5]] >= 0.95)  # pan and the wrists: (almost) the circle
    metrics = json.loads((run / "metrics.json").read_text())
    validation, report = metrics["validation"], metrics["residual"]
    physical, fusion = validation["physical"]["rmse"], validation["fusion"]["rmse"]
    print(f"validation RMSE physical {physical:.4f} Nm, fused {fusion:.4f} Nm")
    print(report["reason"])
    assert report["held_out"] == "leave one recording out"
    assert all(report["accepted"])
    assert fusion <= 0.9 * physical
