"""The windowed single run (`modes/windowed.py`): a long recording, identified in windows with
a halo and merged sufficient statistics, writes the whole-recording run's files, values within
1e-9; shorter recordings (the benchmark's 10^5 samples) keep the whole path."""

from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from ident_framework.model.robot import load_robot
from ident_framework.modes import windowed
from ident_framework.testing.cli import run_cli
from ident_framework.testing.run_documents import assert_same_runs

WINDOWED = """
import runpy, sys
import ident_framework.modes.windowed as windowed
windowed.WINDOWED_FROM_BYTES, windowed.WINDOW_SAMPLES = 0, 3000
sys.argv = ["ident_framework", *sys.argv[1:]]
runpy.run_module("ident_framework", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_windowed_run_equals_the_whole_recordings(ur10e_logs, tmp_path):
    """Threshold lowered (every recording windowed, 3000-sample windows): the same files (the
    plots too), the same keys, values within 1e-9; the run says it went windowed."""
    ident, val = ur10e_logs
    common = ["robot=ur10e", "estimator=ls", "tuning=none", "plots=true", "source=csv",
              f"source.path={ident}", "validation=csv", f"validation.path={val}"]  # fmt: skip
    whole = tmp_path / "whole"
    single = run_cli(*common, f"hydra.run.dir={whole}")
    assert single.returncode == 0, single.stderr[-3000:]
    assert "regressor: windowed" not in single.stdout
    split = tmp_path / "windowed"
    run = subprocess.run(
        [sys.executable, "-c", WINDOWED, *common, f"hydra.run.dir={split}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert re.search(r"regressor: windowed \(\d+ samples in [4-9] windows", run.stdout)

    assert_same_runs(whole, split, metrics_skip=("/timing_s", "/estimator/solve_time_s"))


def test_only_long_recordings_are_windowed():
    """The benchmark's 10^5 UR10e samples keep the whole path; its 10^6 go windowed."""
    friction = SimpleNamespace(parameter_names=["fv", "fc", "fs"])  # the tuned UR10e friction
    builder = SimpleNamespace(robot=load_robot("ur10e"), friction=friction)
    assert windowed.preprocessed_bytes(builder, 100_000) <= windowed.WINDOWED_FROM_BYTES
    assert windowed.preprocessed_bytes(builder, 1_000_000) > windowed.WINDOWED_FROM_BYTES
