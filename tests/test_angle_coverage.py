"""Angle coverage (trajectories/fourier/search.py) and the `fourier` search's coverage term."""

from __future__ import annotations

import numpy as np
import pytest

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.testing.cli import run_cli
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams
from ident_framework.trajectories.fourier.search import (
    ANGLE_BINS,
    angle_bins,
    circle_coverage,
    samples_covered,
)

SMALL = {"n_candidates": 60, "n_refine": 150, "progress": False}


def test_coverage_of_known_arcs():
    t = np.linspace(0.0, 1.0, 10_001)[:, None]
    q = np.hstack([
        -np.pi + 2.0 * np.pi * t,  # the whole circle
        0.5 * np.pi * t,  # a quarter
        np.full_like(t, 1.0),  # one angle: one arc
        0.5 * np.pi * t + 4.0 * np.pi,  # the same quarter, two turns on: q mod 2 pi
    ])  # fmt: skip
    np.testing.assert_allclose(
        circle_coverage(q), [1.0, 0.25 + 1 / ANGLE_BINS, 1 / ANGLE_BINS, 0.25 + 1 / ANGLE_BINS]
    )
    assert angle_bins(np.array([[2.0 * np.pi - 1e-15, -1e-12]])).max() == ANGLE_BINS - 1


def test_samples_covered_counts_validation_samples_in_visited_arcs():
    reference = np.linspace(0.0, np.pi, 5000)[:, None]  # the upper half circle
    query = np.array([[0.5], [3.0], [-0.5], [-3.0], [0.5 + 2.0 * np.pi]])
    np.testing.assert_allclose(samples_covered(reference, query), [3 / 5])


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True])
def test_bad_coverage_weight_is_rejected(bad):
    with pytest.raises(ValueError, match="coverage_weight"):
        FourierParams(coverage_weight=bad)


def test_coverage_weight_widens_the_excitation_at_a_price_in_cond():
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()), armature=True)
    objective = make_condition_objective(builder)
    plain = FourierGenerator(FourierParams(**SMALL)).generate(robot, objective, seed=0)
    wide = FourierGenerator(FourierParams(coverage_weight=3.0, **SMALL)).generate(
        robot, objective, seed=0
    )
    plain_cover = np.mean(plain.info["angle_coverage"])
    wide_cover = np.mean(wide.info["angle_coverage"])
    assert wide_cover > plain_cover + 0.1, (plain_cover, wide_cover)
    # cond_search is the excitation's cond, not the cost with the coverage term in it
    assert wide.info["cond_search"] >= plain.info["cond_search"] * 0.9
    assert wide.info["cond_search"] == pytest.approx(wide.info["cond"], rel=0.2)
    q = wide.evaluate(np.arange(0.0, 20.0, 0.001))[0]
    np.testing.assert_allclose(wide.info["angle_coverage"], circle_coverage(q), atol=1e-12)


def test_bad_coverage_weight_on_the_command_line_is_a_user_error(tmp_path):
    result = run_cli("trajectory.coverage_weight=-1", f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2
    assert "trajectory.coverage_weight must be >= 0 (0: cond alone), got -1.0" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists()
