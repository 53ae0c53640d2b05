"""Known truth at the regressor: a robot whose joint friction is LuGre (this plugin's model,
integrated along the exact motion) is identified by the variable-projection fit, and
`tuning=cv` chooses the plugin's variant (`stribeck: auto`) the planted friction has.

The engine's side is tested in the core (tests/test_friction_fit.py); here the plugin's
shape: a static level below the Coulomb one (fs < fc: a friction rising from rest, which the
former bounds fs_ratio >= 1 could not fit), and the Stribeck curve taking part in the tuning.
"""

from __future__ import annotations

import numpy as np
import pytest
from ident_framework.data.dataset import Dataset
from ident_framework.identify.friction_fit import fit_nonlinear_friction, shape_for_tuning
from ident_framework.identify.tuning.friction_variants import select_friction
from ident_framework.model.regressor import RegressorBuilder, regressor_builder
from ident_framework.model.robot import load_robot
from ident_framework.testing.known_truth import sines, tuning_config

from ident_lugre import LugreFriction, LugreParams

FC = np.array([7.0, 7.0, 4.0, 1.5, 1.5, 1.2])  # Nm
FV = np.array([4.0, 4.0, 2.5, 1.0, 1.0, 1.0])  # Nm·s/rad
SIGMA1 = np.array([20.0, 20.0, 10.0, 2.0, 2.0, 2.0])  # Nm·s/rad


def lugre_recording(
    builder: RegressorBuilder, shape: np.ndarray, seed: int, noise: float = 0.02
) -> tuple[Dataset, np.ndarray]:
    """(a 20 s, 200 Hz multi-sine recording with exact accelerations whose joint friction is
    LuGre of `shape` (n, 3): fs_ratio, v_s, z_ss per joint, fc FC, sigma1 SIGMA1, fv FV; its
    rigid body the nominal robot's; `noise` Nm, its true standard parameters)."""
    robot = builder.robot
    theta = builder.standard_parameters(
        robot.inertial_parameters(), np.column_stack([FC, SIGMA1, FV]), np.full(6, 0.1)
    )
    t, q, dq, ddq = sines(20.0, 200.0, seed)
    true = builder.with_nonlinear(shape)
    tau = true.compute(q, dq, ddq, true.friction_basis(t, dq)) @ theta
    tau += noise * np.random.default_rng(seed).standard_normal(tau.shape)
    return Dataset(t, q, dq, tau, robot.joint_names, ddq=ddq), theta


def test_a_static_level_below_the_coulomb_one_is_identified():
    """fs_ratio from 0.2 (a friction rising from rest, as MuJoCo's soft friction loss and
    several real joints show) to 3 (a Stribeck dip), per joint: the fit recovers the shape
    within 5 % and the static level fs = fs_ratio·fc within 5 %."""
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, LugreFriction(LugreParams()), armature=True)
    shape = np.column_stack(
        [
            [0.2, 3.0, 0.3, 2.0, 0.5, 0.25],  # fs_ratio
            [0.02, 0.05, 0.01, 0.03, 0.02, 0.05],  # v_s, rad/s
            np.full(6, 1e-4),  # z_ss, rad
        ]
    )
    data, _ = lugre_recording(builder, shape, seed=4)
    fit = fit_nonlinear_friction(builder, data, 1000, 1e-8, progress=False)
    np.testing.assert_allclose(fit.values[:, :2], shape[:, :2], rtol=0.05)
    assert fit.sse < 1.2 * data.tau.size * 0.02**2


def _prepare(robot, data):
    def prepare(candidate):  # as modes/pipeline.py prepares a tuned model
        builder = regressor_builder(candidate, robot)
        return candidate, shape_for_tuning(candidate, builder, data)

    return prepare


@pytest.mark.parametrize(
    ("fs_ratio", "chosen"),
    [(3.0, "on"), (1.0, "off")],
    ids=["a Stribeck dip: with the curve", "fs = fc: without"],
)
def test_the_tuning_chooses_the_planted_variant(fs_ratio, chosen):
    """`stribeck: auto`: tuning=cv gives both variants their whole selection on the same
    folds and keeps the simpler (no Stribeck curve) unless the other wins fold by fold. A
    planted dip (fs = 3 fc) is chosen; a planted LuGre without one (fs = fc) keeps the
    simpler. The choice is in the tuned config (the final fit holds fs_ratio = 1 when off),
    in `tuning.chosen` (mode=predict) and in the selection's table."""
    config = tuning_config("friction=lugre", "tuning.prior_weights=[]", "estimator=ls")
    robot = load_robot("ur10e")
    builder = regressor_builder(config, robot)
    shape = np.column_stack([np.full(6, fs_ratio), np.full(6, 0.03), np.full(6, 1e-4)])
    data, _ = lugre_recording(builder, shape, seed=7, noise=0.05)
    tuned, tuned_builder = select_friction(config, robot, data, None, _prepare(robot, data))
    table = tuned.selection.friction_models
    assert [row["friction"] for row in table] == ["lugre[stribeck=off]", "lugre[stribeck=on]"]
    assert [row["chosen"] for row in table] == [chosen == "off", chosen == "on"]
    assert tuned.selection.chosen["friction.stribeck"] == chosen
    assert tuned.plugins["friction"].params.stribeck == chosen
    lower, upper = tuned_builder.friction.nonlinear_bounds()
    assert (lower[0] == upper[0] == 1.0) == (chosen == "off")
    if chosen == "on":  # won by more than the SE of the per-fold difference
        assert table[1]["difference_to_configured"] < -table[1]["difference_se"]


def test_variants_only_with_auto():
    assert LugreFriction(LugreParams()).tuning_variants() == [
        {"stribeck": "off"},
        {"stribeck": "on"},
    ]
    assert LugreFriction(LugreParams(stribeck="on")).tuning_variants() == []
    with pytest.raises(ValueError, match="stribeck must be one of"):
        LugreParams(stribeck="maybe")
