"""Several recordings: `source.path` / `validation.path` as a list or a glob, each file
checked and preprocessed alone, gaps inside a file as segment boundaries, metrics per
recording and pooled; every estimator; one-paragraph errors (exit 2) for a glob that matches
nothing, a file named twice, recordings of other joints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.model.robot import load_robot
from ident_framework.testing.cli import error_message, run_cli
from ident_framework.testing.known_truth import multisine

VISCOUS = np.array([4.0, 4.0, 2.5, 1.0, 1.0, 1.0])  # Nm·s/rad
COULOMB = np.array([7.0, 7.0, 4.0, 1.5, 1.5, 1.2])  # Nm


def _log(path: Path, seed: int, t: np.ndarray, noise: float = 0.05) -> Path:
    """A UR10e log in the CSV contract: multi-sine motion, rigid body + rotor inertia
    (Pinocchio) + viscous and Coulomb friction + torque noise (Nm)."""
    robot = load_robot("ur10e")
    q, dq, ddq = multisine(t, robot.n_joints, seed, amp_rad=(0.2, 0.5), freq_hz=(0.1, 0.5))
    tau = robot.inverse_dynamics(q, dq, ddq) + VISCOUS * dq + COULOMB * np.tanh(dq / 0.01)
    tau += noise * np.random.default_rng(seed).standard_normal(tau.shape)
    write_csv_log(Dataset(t, q, dq, tau, tuple(robot.joint_names)), path)
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("logs")
    t = np.arange(0.0, 20.0, 0.002)  # 500 Hz
    with_gap = np.concatenate([t[:4000], t[4000:] + 0.4])  # 0.4 s lost at t = 8 s
    return {
        "a": _log(folder / "part_a.csv", 1, t),
        "b": _log(folder / "part_b.csv", 2, with_gap),
        "val": _log(folder / "validation.csv", 3, t[:6000]),
    }


def _run(tmp_path: Path, *args: str, name: str = "run"):
    run = tmp_path / name
    result = run_cli("robot=ur10e", "source=csv", "validation=csv", "plots=false",
                     f"hydra.run.dir={run}", *args, cwd=tmp_path)  # fmt: skip
    return run, result


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["ls", "wls", "rls", "consistent"])
def test_a_glob_of_recordings_with_a_gap(logs, tmp_path: Path, estimator: str):
    pattern = str(logs["a"].parent / "part_*.csv")
    run, result = _run(
        tmp_path, f"source.path={pattern}", f"validation.path={logs['val']}",
        f"estimator={estimator}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    counts = metrics["data"]["train_preprocessing"]
    assert [r["path"] for r in counts["recordings"]] == [str(logs["a"]), str(logs["b"])]
    assert [r["gaps"] for r in counts["recordings"]] == [0, 1]
    assert counts["gaps"] == 1 and counts["short_segments_dropped"] == 0
    # three pieces (a; b before and after its gap), each with its two filter edges dropped
    trim = metrics["data"]["validation_preprocessing"]["edge_samples_dropped"] // 2
    assert counts["edge_samples_dropped"] == 3 * 2 * trim
    assert metrics["data"]["train_samples"] == 20000 - 3 * 2 * trim
    recordings = metrics["train"]["recordings"]
    assert [r["samples"] for r in recordings] == [10000 - 2 * trim, 10000 - 4 * trim]
    assert metrics["validation"]["physical"]["r2"] > 0.99
    assert "recording 1" in result.stdout and "1 timestamp gaps" in result.stdout


@pytest.mark.slow
def test_the_gap_is_not_filtered_across(logs, tmp_path: Path):
    """The file with a gap fits as well as the same motion without one (each piece filtered
    alone); the
    same rows with the gap closed up (a filter runs across the jump in q, dq and tau) fit
    clearly worse."""
    lines = logs["b"].read_text().splitlines()
    t = np.arange(0.0, 20.0, 0.002)
    closed = tmp_path / "closed.csv"
    closed.write_text(
        "\n".join([lines[0], *(f"{t[k]:.10g}," + row.split(",", 1)[1]
                               for k, row in enumerate(lines[1:]))]) + "\n"
    )  # fmt: skip
    whole = _log(tmp_path / "whole.csv", 2, t)  # the same motion, recorded without a gap
    rmse = {}
    for name, path in (("whole", whole), ("b", logs["b"]), ("closed", closed)):
        run, result = _run(
            tmp_path, f"source.path={path}", f"validation.path={logs['val']}", name=name
        )
        assert result.returncode == 0, result.stderr[-3000:]
        rmse[name] = json.loads((run / "metrics.json").read_text())["train"]["physical"]["rmse"]
    assert rmse["b"] < 1.1 * rmse["whole"]
    assert rmse["closed"] > 3 * rmse["b"]  # measured 0.226 whole, 0.225 with the gap, 2.85 closed


@pytest.mark.parametrize(
    ("path", "fragments"),
    [
        ("nothing_*.csv", ["source.path: the pattern 'nothing_*.csv'", "matches no file"]),
        ("[{a},{a}]", ["names the recording", "more than once"]),
        ("[{a},{other}]", ["other.csv' (source.path) has 3 'actual_q_*' column(s)"]),
    ],
)
def test_bad_recording_lists_are_refused(logs, tmp_path: Path, path: str, fragments):
    other = tmp_path / "other.csv"
    t = np.arange(0.0, 1.0, 0.01)
    write_csv_log(Dataset(t, *(np.zeros((100, 3)),) * 3, ("x", "y", "z")), other)
    spec = path.format(a=logs["a"], other=other)
    run, result = _run(tmp_path, f"source.path={spec}", f"validation.path={logs['val']}")
    assert result.returncode == 2, result.stderr[-2000:]
    message = error_message(result.stderr)
    assert "Traceback" not in result.stderr and message.startswith("error: ")
    assert len(message.splitlines()) == 1
    for fragment in fragments:
        assert fragment in message, message
    assert not run.exists() or not (run / "metrics.json").exists()
