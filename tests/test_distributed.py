"""Exact distributed identification: sufficient statistics of parts, merged, give what one
pass over all samples gives; `mode=factor` jobs on a Hydra launcher and `mode=combine` give the
single-process run's base parameters (1e-10)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ident_framework.data.dataset import Dataset
from ident_framework.errors import UserError
from ident_framework.identify.linear_problem import build_problem, project_to_base
from ident_framework.identify.metrics import slow_motion_metrics, torque_metrics
from ident_framework.identify.sufficient_statistics import (
    SufficientStatistics,
    merge,
    statistics_of,
)
from ident_framework.testing.cli import run_cli
from ident_framework.testing.known_truth import exact_dataset
from ident_framework.testing.run_documents import assert_same_runs


def _parts(data: Dataset, count: int) -> list[Dataset]:
    bounds = np.linspace(0, data.n_samples, count + 1).astype(int)
    return [data.select(slice(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _info(index: int, count: int, **changes) -> dict:
    info = {"robot": "ur12e", "joint_names": ["a"], "parameter_names": ["p"],
            "friction": "coulomb_viscous", "regressor": {}, "preprocessing": {}}  # fmt: skip
    info.update(changes)
    return {**info, "part": {"source": "log.csv", "index": index, "count": count}}


def test_merged_parts_equal_one_pass(true_setup, tmp_path):
    """Five parts' statistics, saved, loaded and merged: the same Gram matrix, base
    parameters, LS solution and training fit as one pass over all samples."""
    builder, theta = true_setup
    data = exact_dataset(builder, theta, seed=4, duration=10.0)
    noise = np.random.default_rng(0).normal(0, 0.05, data.tau.shape)
    data = Dataset(
        data.timestamp, data.q, data.dq, data.tau + noise, data.joint_names, ddq=data.ddq
    )
    limits = builder.robot.limits.velocity
    whole = statistics_of(builder, data, 500, _info(0, 1), limits)
    files = []
    for k, part in enumerate(_parts(data, 5)):
        statistics = statistics_of(builder, part, 500, _info(k, 5), limits)
        files.append(statistics.save(tmp_path / f"{k}.npz"))
    assert max(f.stat().st_size for f in files) < 400_000  # small whatever N is
    merged = merge([SufficientStatistics.load(f) for f in files], [str(f) for f in files])
    assert merged.n_samples == data.n_samples
    for r_whole, r_merged in zip(whole.r_factors, merged.r_factors, strict=True):
        gram = r_whole.T @ r_whole
        np.testing.assert_allclose(
            r_merged.T @ r_merged, gram, rtol=0, atol=1e-9 * np.abs(gram).max()
        )

    names = builder.parameter_names
    base_one, factors_one, _ = project_to_base(whole.joint_factors, names, 1e-8)
    base_all, factors_all, _ = project_to_base(merged.joint_factors, names, 1e-8)
    np.testing.assert_allclose(base_all.basis, base_one.basis, atol=1e-10)

    def solve(factors, rank):
        stacked = np.vstack(factors)
        return np.linalg.lstsq(stacked[:, :rank], stacked[:, rank], rcond=None)[0]

    beta_one, beta_all = solve(factors_one, base_one.rank), solve(factors_all, base_all.rank)
    np.testing.assert_allclose(beta_all, beta_one, rtol=1e-10, atol=1e-10)
    theta_hat = base_all.to_standard(beta_all)
    predicted = builder.compute(data.q, data.dq, data.ddq) @ theta_hat
    on_samples = torque_metrics(data.tau, predicted)
    from_statistics = merged.fit(theta_hat)
    for key in ("rmse", "r2"):
        assert from_statistics[key] == pytest.approx(on_samples[key], rel=1e-9)
    np.testing.assert_allclose(
        from_statistics["r2_per_joint"], on_samples["r2_per_joint"], rtol=1e-9
    )
    slow = slow_motion_metrics(data.tau, predicted, data.dq, limits)
    assert min(slow["samples_per_joint"]) > 0  # every joint has slow rows to compare
    slow_from_statistics = merged.slow_fit(theta_hat, limits)
    assert slow_from_statistics["samples_per_joint"] == slow["samples_per_joint"]
    assert slow_from_statistics["rmse"] == pytest.approx(slow["rmse"], rel=1e-9)
    np.testing.assert_allclose(
        slow_from_statistics["rmse_per_joint"], slow["rmse_per_joint"], rtol=1e-9
    )
    problem, _, _ = build_problem(builder, data, 500, 1e-8, progress=False)
    assert problem.n_samples == merged.n_samples


def test_parts_that_do_not_belong_together_are_refused():
    r = np.eye(2)[None]
    one, two = (SufficientStatistics(r, 5, np.zeros(1), np.ones(1), _info(k, 2)) for k in (0, 1))
    merge([one, two], ["0", "1"])
    with pytest.raises(UserError, match=r"Parts \[1\] of 2 of log.csv are missing"):
        merge([one], ["0"])
    with pytest.raises(UserError, match="hold the same part 0 of log.csv"):
        merge([one, one, two], ["0", "0b", "1"])
    other = SufficientStatistics(r, 5, np.zeros(1), np.ones(1), _info(1, 2, preprocessing={"x": 1}))
    with pytest.raises(UserError, match="1 was factored with another preprocessing"):
        merge([one, other], ["0", "1"])


def _base(run: Path) -> np.ndarray:
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    return np.array([p["value"] for p in parameters["base_parameters"]])


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["ls", "wls"])
def test_factor_jobs_on_joblib_then_combine_equal_the_single_run(ur10e_logs, tmp_path, estimator):
    ident, val = ur10e_logs
    common = ["robot=ur10e", f"estimator={estimator}", "plots=false"]
    # the single run with the options as configured: mode=factor does not tune (says so)
    single = run_cli("tuning=none",
        *common, "source=csv", f"source.path={ident}", "validation=csv",
        f"validation.path={val}", f"hydra.run.dir={tmp_path / 'single'}",
    )  # fmt: skip
    assert single.returncode == 0, single.stderr[-3000:]
    assert "tuning=cv is not applied by mode=factor" in factor_note(ident, tmp_path)
    sweep = tmp_path / "factors"
    factor = run_cli(
        "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *common, "mode=factor",
        "source=csv", f"source.path={ident}", "distributed.parts=5",
        "distributed.part=range(5)", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert factor.returncode == 0, factor.stderr[-3000:]
    summaries = [json.loads((sweep / str(k) / "statistics.json").read_text()) for k in range(5)]
    assert [s["rows"] for s in summaries][0][0] == 0 and summaries[-1]["rows"][1] == 10001
    combined = tmp_path / "combined"
    combine = run_cli(
        *common, "mode=combine", f"distributed.inputs=[{sweep}]", "validation=csv",
        f"validation.path={val}", f"hydra.run.dir={combined}",
    )  # fmt: skip
    assert combine.returncode == 0, combine.stderr[-3000:]
    np.testing.assert_allclose(_base(combined), _base(tmp_path / "single"), rtol=1e-10, atol=1e-10)
    one = json.loads((tmp_path / "single" / "metrics.json").read_text())
    merged = json.loads((combined / "metrics.json").read_text())
    assert merged["data"]["train_samples"] == one["data"]["train_samples"]
    for split in ("train", "validation"):
        for key in ("rmse", "r2"):
            assert merged[split]["physical"][key] == pytest.approx(
                one[split]["physical"][key], rel=1e-10
            )
    assert merged["identifiability"]["cond"] == pytest.approx(one["identifiability"]["cond"], 1e-9)
    # the combined run directory is one mode=predict can apply
    predicted = run_cli(
        "mode=predict", f"run={combined}", "source=csv", f"source.path={val}",
        f"hydra.run.dir={tmp_path / 'predict'}",
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    metrics = json.loads((tmp_path / "predict" / "metrics_val.json").read_text())
    assert metrics["physical"]["rmse"] == pytest.approx(one["validation"]["physical"]["rmse"], 1e-9)


def factor_note(ident: Path, tmp_path: Path) -> str:
    """What one factor job with the defaults (tuning=cv) prints."""
    result = run_cli(
        "robot=ur10e", "mode=factor", "source=csv", f"source.path={ident}",
        "distributed.parts=5", f"hydra.run.dir={tmp_path / 'note'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_what_the_statistics_cannot_serve_is_refused(ur10e_logs, tmp_path):
    ident, _ = ur10e_logs
    lugre = run_cli(
        "robot=ur10e", "mode=factor", "source=csv", f"source.path={ident}", "friction=lugre",
        f"hydra.run.dir={tmp_path / 'l'}",
    )  # fmt: skip
    assert lugre.returncode == 2 and "linear in its parameters" in lugre.stderr
    run = tmp_path / "f"
    factor = run_cli(
        "robot=ur10e", "mode=factor", "source=csv", f"source.path={ident}", f"hydra.run.dir={run}"
    )
    assert factor.returncode == 0, factor.stderr[-2000:]
    rls = run_cli(
        "robot=ur10e", "mode=combine", f"distributed.inputs=[{run}]", "estimator=rls",
        "validation=split", f"hydra.run.dir={tmp_path / 'r'}",
    )  # fmt: skip
    assert rls.returncode == 2 and "re-streams the samples" in rls.stderr
    other_robot = run_cli(
        "robot=ur5e", "mode=combine", f"distributed.inputs=[{run}]", "validation=split",
        f"hydra.run.dir={tmp_path / 'o'}",
    )  # fmt: skip
    assert other_robot.returncode == 2 and "were factored with robot" in other_robot.stderr
    nothing = run_cli("mode=combine", "validation=split", f"hydra.run.dir={tmp_path / 'n'}")
    assert nothing.returncode == 2 and "needs distributed.inputs" in nothing.stderr


@pytest.mark.slow
def test_combined_run_directory_is_the_single_runs(ur10e_logs, tmp_path):
    """mode=combine writes the files of a single run on the same data, the same keys in
    parameters.yaml and metrics.json (plus `combine`), values within 1e-9: per-joint friction
    and rotor inertia, stds, relative stds, physical validity, the summary."""
    ident, val = ur10e_logs
    common = ["robot=ur10e", "estimator=ls", "tuning=none", "source=csv", f"source.path={ident}",
              "validation=csv", f"validation.path={val}"]  # fmt: skip
    single = tmp_path / "single"
    assert run_cli(*common, f"hydra.run.dir={single}").returncode == 0
    sweep = tmp_path / "factors"
    factor = run_cli(
        "-m", *common, "mode=factor", "distributed.parts=3", "distributed.part=range(3)",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert factor.returncode == 0, factor.stderr[-3000:]
    combined = tmp_path / "combined"
    combine = run_cli(
        *common, "mode=combine", f"distributed.inputs=[{sweep}]", f"hydra.run.dir={combined}"
    )
    assert combine.returncode == 0, combine.stderr[-3000:]

    one, merged = (json.loads((r / "metrics.json").read_text()) for r in (single, combined))
    assert set(merged) - set(one) == {"combine"} and merged["combine"]["parts"] == 3
    assert_same_runs(single, combined, metrics_skip=("/timing_s", "/combine"))
