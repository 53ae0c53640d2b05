"""Known truth: a simulated UR12e whose joint friction is this plugin's Stribeck model is
identified with friction=stribeck, at 0.05 Nm torque noise, through the command line.

The true friction is applied in MuJoCo each step (source.true_friction); its sign is
tanh(dq / 0.005) as in the identified model (the plugin's default sign_width), and the
simulation runs at 5 kHz so that this steep friction at rest stays stable on the wrists.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
import yaml
from ident_framework.testing import cli

pytestmark = pytest.mark.slow

V_S = [0.04, 0.05, 0.06, 0.07, 0.08, 0.1]  # rad/s, true Stribeck velocity per joint
TOLERANCE_PERCENT = 5.0


run_cli = partial(cli.run_cli, timeout=600)


def test_stribeck_parameters_recovered_within_five_percent(tmp_path: Path):
    run = tmp_path / "run"
    result = run_cli(
        f"hydra.run.dir={run}",
        "friction=stribeck",
        "source.true_friction.plugin=stribeck",
        "+source.true_friction.parameters.fs_ratio=1.5",
        f"+source.true_friction.parameters.v_s=[{','.join(map(str, V_S))}]",
        "source.sim_rate_hz=5000",
        "source.torque_noise_std=0.05",
        "trajectory.n_candidates=100",
        "trajectory.n_refine=0",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    friction = metrics["friction"]
    assert friction["true"]["v_s"] == pytest.approx(V_S)
    assert friction["true"]["fs"] == pytest.approx([10.5, 10.5, 6.0, 2.25, 2.25, 1.8])
    for name in ("fc", "fs", "fv", "v_s"):
        worst = max(abs(e) for e in friction["error_percent"][name])
        assert worst < TOLERANCE_PERCENT, (name, friction["error_percent"][name])
    fit = metrics["friction_fit"]
    assert fit["sse"] < 0.01 * fit["sse_coulomb_viscous"] and not fit["at_bounds"]
    # the identified model predicts the validation motion as well as the true parameters
    assert metrics["truth"]["rmse_ratio_identified_to_true"] < 1.1

    # parameters.yaml: what mode=predict rebuilds the model with, and identified vs true
    parameters = yaml.safe_load((run / "parameters.yaml").read_text())
    saved = parameters["friction"]
    assert saved["plugin"] == "stribeck" and saved["nonlinear_names"] == ["v_s"]
    wrist = saved["physical"]["wrist_3_joint"]["v_s"]
    assert wrist["true"] == pytest.approx(0.1) and wrist["value"] == pytest.approx(0.1, rel=0.05)
    assert parameters["plugins"]["friction"]["distribution"] == "ident-stribeck"
    assert "friction stribeck: nonlinear v_s fitted" in (run / "summary.txt").read_text()
