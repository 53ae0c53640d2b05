"""Coulomb friction near rest: the saturated shape and the acceleration lead of
`coulomb_viscous` (MuJoCo's soft friction loss), and a selection that finds them planted."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from ident_framework.data.dataset import Dataset
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.tuning.selection import select_options
from ident_framework.model import friction_terms
from ident_framework.model.regressor import regressor_builder
from ident_framework.model.robot import load_robot
from ident_framework.testing.known_truth import sines, tuning_config

PENDULUM = """
<mujoco>
  <option timestep="0.001" gravity="0 0 0"/>
  <worldbody>
    <body>
      <joint name="j" type="hinge" axis="0 0 1" frictionloss="{fc}"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.04" mass="3"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_saturated_shape_and_lead_per_joint():
    model = CoulombViscousFriction(
        CoulombViscousParams(
            dead_band=0.0, tanh_width=[0.02, 0.0], saturation_width=[0.0, 0.01],
            acceleration_lead=0.01,
        )
    )  # fmt: skip
    dq = np.array([[0.005, 0.005], [0.001, -0.02]])
    ddq = np.array([[0.0, 0.0], [1.0, 0.5]])
    basis = model.basis(dq, ddq)
    assert basis[0, 0, 1] == pytest.approx(np.tanh(0.25))  # joint 1: tanh of dq + T ddq
    assert basis[0, 1, 1] == pytest.approx(0.5)  # joint 2: linear below the width
    assert basis[1, 0, 1] == pytest.approx(np.tanh(0.011 / 0.02))
    assert basis[1, 1, 1] == -1.0  # saturated: (-0.02 + 0.005) / 0.01 < -1
    assert basis[:, :, 0].tolist() == dq.tolist()  # the viscous column stays dq
    assert friction_terms.uses_acceleration(model)
    with pytest.raises(ValueError, match="needs the joint accelerations"):
        friction_terms.basis(model, None, dq, None)
    with pytest.raises(ValueError, match="acceleration_lead must be >= 0 s"):
        CoulombViscousParams(acceleration_lead=-0.01)
    with pytest.raises(ValueError, match="saturation_width must be >= 0 rad/s"):
        CoulombViscousParams(saturation_width=[0.01, -1.0])


def test_the_saturated_shape_with_a_lead_is_mujocos_friction_loss():
    """Known truth: MuJoCo's inverse dynamics of a joint with frictionloss fc (default
    solref 0.02 1, solimp 0.9 0.95) gives fc·clip((dq + T ddq) / w, -1, 1) with T =
    dmax·timeconst/2 and w = fc·(1 - d)/d·invweight·T, as the module doc says."""
    fc = 5.0
    mj = mujoco.MjModel.from_xml_string(PENDULUM.format(fc=fc))
    frictionless = mujoco.MjModel.from_xml_string(PENDULUM.format(fc=0.0))
    lead = 0.95 * 0.02 / 2
    width = fc * (1 - 0.9) / 0.9 * float(mj.dof_invweight0[0]) * lead
    model = CoulombViscousFriction(
        CoulombViscousParams(dead_band=0.0, saturation_width=width, acceleration_lead=lead)
    )
    rng = np.random.default_rng(3)
    dq = np.concatenate([rng.normal(0, 3 * width, 200), rng.normal(0, 1.0, 50)])
    ddq = rng.normal(0, 3 * width / lead, dq.size)
    ours = fc * model.basis(dq[:, None], ddq[:, None])[:, 0, 1]
    theirs = np.empty_like(dq)
    for k, (v, a) in enumerate(zip(dq, ddq, strict=True)):
        torque = []
        for m in (mj, frictionless):
            data = mujoco.MjData(m)
            data.qvel[0], data.qacc[0] = v, a
            mujoco.mj_inverse(m, data)
            torque.append(data.qfrc_inverse[0])
        theirs[k] = torque[0] - torque[1]
    assert np.abs(np.abs(ours) - fc).min() < 1e-9 and np.abs(ours).max() <= fc  # both regimes
    np.testing.assert_allclose(ours, theirs, atol=1e-9 * fc)


def _ur10e_model(config):
    """The UR10e, the regressor of `config` and its nominal standard parameters."""
    robot = load_robot("ur10e")
    builder = regressor_builder(config, robot)
    return robot, builder, builder.standard_parameters(robot.inertial_parameters())


def _friction_loss_recording(builder, theta, widths, lead, seed) -> Dataset:
    """A 500 Hz recording (no accelerations: to be preprocessed) whose Coulomb friction is
    4 Nm · clip((dq + lead ddq) / width, -1, 1) per joint, viscous 1.5 Nm·s/rad, 0.02 Nm
    torque noise."""
    t, q, dq, ddq = sines(24.0, 500.0, seed=seed)
    tau = builder.rigid_body(q, dq, ddq) @ theta[:60]
    tau += 1.5 * dq + 4.0 * np.clip((dq + lead * ddq) / widths, -1.0, 1.0)
    tau += 0.02 * np.random.default_rng(seed).normal(size=tau.shape)
    return Dataset(t, q, dq, tau, builder.robot.joint_names)


def test_selection_finds_a_planted_friction_loss_law():
    config = tuning_config(
        "tuning.cutoffs_hz=[40.0]",
        "tuning.velocity_sources=[measured]",
        "tuning.saturation_widths=[0.003,0.01,0.03]",
        "tuning.acceleration_leads=[0.0,0.01,0.03]",
        "tuning.stribeck_velocities=[]",  # the saturated shape and lead alone (no Stribeck)
        "preprocessing.friction_columns=filtered_velocity",  # as the law was planted and found
    )
    robot, builder, theta = _ur10e_model(config)
    data = _friction_loss_recording(builder, theta, np.full(6, 0.01), 0.01, seed=5)
    tuned, tuned_builder = select_options(config, robot, builder, [data])
    chosen = tuned.selection.chosen
    assert chosen["friction.acceleration_lead"] == [0.01] * 6
    assert chosen["friction.saturation_width"] is not None
    assert sum(w == 0.01 for w in chosen["friction.saturation_width"]) >= 4, chosen
    assert tuned_builder.friction.uses_acceleration
    stages = {row["stage"] for row in tuned.selection.table}
    assert "acceleration lead" in stages


def test_without_the_grids_nothing_changes():
    config = tuning_config("tuning.cutoffs_hz=[40.0]", "tuning.velocity_sources=[measured]")
    robot, builder, theta = _ur10e_model(config)
    data = _friction_loss_recording(builder, theta, np.full(6, 0.01), 0.01, seed=5)
    tuned, _ = select_options(config, robot, builder, [data])
    assert tuned.selection.chosen["friction.acceleration_lead"] is None
    assert tuned.selection.chosen["friction.saturation_width"] is None
    assert "acceleration lead" not in {row["stage"] for row in tuned.selection.table}


def test_shape_partitions_are_checked():
    with pytest.raises(Exception, match="shape_partitions must be a non-empty list"):
        tuning_config("tuning.shape_partitions=[speed]")


# -- the friction model chosen by the cross-validation (tuning.friction_models) -------------


def _stribeck_recording(builder, theta, fs_ratio, seed) -> Dataset:
    """A 500 Hz recording (no accelerations) whose friction is Stribeck's, (fc + (fs - fc)
    exp(-(dq / 0.05)^2)) tanh(dq / 0.005) + fv dq with fc 3 Nm, fs = fs_ratio fc, fv 1.5
    Nm·s/rad; slow stretches where the Stribeck peak shows; 0.02 Nm torque noise."""
    t, q, dq, ddq = sines(24.0, 500.0, seed=seed)
    slow = 0.1 + 0.9 * np.abs(np.sin(2 * np.pi * t / 12.0))[:, None]
    q, dq, ddq = q * slow, dq * slow, ddq * slow
    fc = 3.0
    tau = builder.rigid_body(q, dq, ddq) @ theta[:60] + 1.5 * dq
    tau += (fc + (fs_ratio - 1) * fc * np.exp(-((dq / 0.05) ** 2))) * np.tanh(dq / 0.005)
    tau += 0.02 * np.random.default_rng(seed).normal(size=tau.shape)
    return Dataset(t, q, dq, tau, builder.robot.joint_names)


def _select_friction(fs_ratio: float):
    from omegaconf import OmegaConf

    from ident_framework.config.registry import get_registry
    from ident_framework.config.run_config import validate_config
    from ident_framework.identify.friction_fit import shape_for_tuning
    from ident_framework.identify.tuning.friction_variants import select_friction_model

    config = tuning_config(
        "tuning.cutoffs_hz=[20.0]",
        "tuning.velocity_sources=[measured]",
        "tuning.friction_models=[coulomb_viscous,stribeck]",
    )
    robot, builder, theta = _ur10e_model(config)
    data = _stribeck_recording(builder, theta, fs_ratio, seed=11)

    def prepare(candidate):
        model = regressor_builder(candidate, robot)
        if friction_terms.is_nonlinear(model.friction):
            model = shape_for_tuning(candidate, model, data)
        return candidate, model

    tuned, tuned_builder = select_friction_model(config, robot, data, None, prepare)
    return tuned, tuned_builder, OmegaConf, get_registry, validate_config


def test_a_planted_stribeck_friction_is_chosen_and_saved_for_predict():
    tuned, builder, OmegaConf, get_registry, validate_config = _select_friction(3.0)
    table = {row["friction"]: row for row in tuned.selection.friction_models}
    assert table["stribeck"]["chosen"] and not table["coulomb_viscous"]["chosen"]
    assert table["stribeck"]["difference_to_configured"] < -table["stribeck"]["difference_se"]
    assert tuned.plugins["friction"].info.name == "stribeck"
    assert friction_terms.is_nonlinear(builder.friction)
    chosen = tuned.selection.chosen
    assert list(chosen)[0] == "friction" and chosen["friction"]["plugin"] == "stribeck"
    # mode=predict applies the saved `tuning.chosen` to the saved config, in order
    from hydra import compose, initialize_config_module

    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose("config", overrides=["robot=ur10e", "source=csv", "source.path=x.csv"])
    for key, value in chosen.items():
        OmegaConf.update(cfg, key, value, merge=False)
    assert validate_config(cfg, get_registry()).plugins["friction"].info.name == "stribeck"


def test_coulomb_friction_keeps_the_configured_model():
    tuned, builder, *_ = _select_friction(1.0)  # fs = fc: no Stribeck peak to find
    table = {row["friction"]: row for row in tuned.selection.friction_models}
    assert table["coulomb_viscous"]["chosen"], table
    assert tuned.plugins["friction"].info.name == "coulomb_viscous"
    assert "friction" not in tuned.selection.chosen


# -- the Stribeck shape of coulomb_viscous (a fixed Stribeck velocity, linear in fc and fs) --


def test_stribeck_shape_per_joint():
    model = CoulombViscousFriction(
        CoulombViscousParams(dead_band=0.0, tanh_width=0.1, stribeck_velocity=[0.01, 0.0])
    )
    assert model.parameter_names == ("fv", "fc", "fs")
    dq = np.array([[0.01, 0.01], [-0.02, 0.3]])
    basis = model.basis(dq)
    near_rest = np.exp(-((dq[:, 0] / 0.01) ** 2))
    smooth = np.tanh(dq[:, 0] / 0.005)
    np.testing.assert_allclose(basis[:, 0, 1], (1 - near_rest) * smooth)  # sliding: fc
    np.testing.assert_allclose(basis[:, 0, 2], near_rest * smooth)  # static: fs
    assert basis[:, 1, 2].tolist() == [0.0, 0.0]  # v_s = 0: joint 2 keeps its tanh shape
    np.testing.assert_allclose(basis[:, 1, 1], np.tanh(dq[:, 1] / 0.1))
    with pytest.raises(ValueError, match="stribeck_velocity must be >= 0 rad/s"):
        CoulombViscousParams(stribeck_velocity=-0.1)
    with pytest.raises(ValueError, match="stribeck_sign_width must be > 0 rad/s"):
        CoulombViscousParams(stribeck_sign_width=0.0)


def test_the_stribeck_shape_is_the_plugins_curve_at_a_fixed_velocity():
    """Known truth: the columns are the Stribeck plugin's fc (1 - e) t and fs e t."""
    stribeck = pytest.importorskip("ident_stribeck.model")
    velocities = np.array([0.002, 0.01, 0.05])
    dq = np.random.default_rng(2).normal(0, 0.03, (200, 3))
    plugin = stribeck.StribeckFriction(stribeck.StribeckParams())
    theirs = plugin.basis_along(None, dq, velocities[:, None])
    ours = CoulombViscousFriction(
        CoulombViscousParams(dead_band=0.0, stribeck_velocity=list(velocities))
    ).basis(dq)
    np.testing.assert_allclose(ours[..., 1], theirs[..., 0], atol=1e-15)
    np.testing.assert_allclose(ours[..., 2], theirs[..., 1], atol=1e-15)


def test_the_static_level_is_friction_kept_at_or_above_zero():
    from ident_framework.model.physical_consistency import sign_constrained

    names = ["fv_1", "fc_1", "fs_1", "fc_T_1"]
    assert sign_constrained(["friction"] * 4, names).tolist() == [True, True, True, False]


def test_selection_finds_a_planted_stribeck_shape():
    config = tuning_config(
        "tuning.cutoffs_hz=[20.0]",
        "tuning.velocity_sources=[measured]",
        "tuning.tanh_widths=[0.005]",
        "tuning.stribeck_velocities=[0.01,0.05,0.2]",
    )
    robot, builder, theta = _ur10e_model(config)
    data = _stribeck_recording(builder, theta, 3.0, seed=11)  # v_s 0.05 rad/s, fs 9 Nm
    tuned, tuned_builder = select_options(config, robot, builder, [data])
    chosen = tuned.selection.chosen["friction.stribeck_velocity"]
    assert chosen is not None and sum(v == 0.05 for v in chosen) >= 5, chosen
    assert "fs" in tuned_builder.friction.parameter_names
    shapes = [row for row in tuned.selection.table if row["stage"].startswith("friction shape")]
    assert any(row["stribeck_velocity"] for row in shapes)


@pytest.mark.parametrize("columns", ["parallel", "filtered_velocity"])
def test_the_tunings_friction_columns_are_the_final_fits(columns):
    """The column space computes each friction column as the final fit does: from the
    unfiltered velocity, low-passed like the torque (parallel), or at the filtered velocity."""
    from ident_framework.data.preprocessing import preprocess
    from ident_framework.identify.linear_problem import recording_friction
    from ident_framework.identify.tuning.column_spaces import _own_columns
    from ident_framework.identify.tuning.selection import _configured

    config = tuning_config(
        f"preprocessing.friction_columns={columns}",
        "friction.dead_band=0",
        "tuning.tanh_widths=[0.003]",
        "tuning.stribeck_velocities=[0.01]",
    )
    robot, builder, theta = _ur10e_model(config)
    data = preprocess(_stribeck_recording(builder, theta, 3.0, seed=3), config.preprocessing)
    start = _configured(config, robot.n_joints)
    own = _own_columns(config, builder, (True, False), start, config.tuning)
    rows = np.random.default_rng(0).permutation(np.arange(0, data.n_samples, 7))  # any order
    values = own.values(data, rows)
    names = list(own.names)

    def final_columns(shape: str) -> np.ndarray:
        final = tuning_config(
            f"preprocessing.friction_columns={columns}", "friction.dead_band=0", shape
        )
        final_builder = regressor_builder(final, robot)
        expected = recording_friction(final_builder, data)
        if expected is None:  # filtered velocity: computed chunk by chunk at the filtered dq
            expected = final_builder.friction_basis(None, data.dq, data.ddq)
        return expected[rows]

    tanh, stribeck = (
        final_columns("friction.tanh_width=0.003"),
        final_columns("friction.stribeck_velocity=0.01"),
    )
    # to rounding: the tuning filters its columns in other groups than the final fit (the
    # blocked filter's products then round differently, ~1e-16 of a column's scale)
    for name, expected in [
        ("fv", tanh[..., 0]),
        ("fc[tanh 0.003]", tanh[..., 1]),
        ("fc[stribeck 0.01]", stribeck[..., 1]),
        ("fs[stribeck 0.01]", stribeck[..., 2]),
    ]:
        got = values[..., names.index(name)]
        np.testing.assert_allclose(got, expected, atol=1e-12 * np.abs(expected).max())


def test_a_space_for_one_candidate_filters_only_the_columns_its_joints_use(
    filtered_batches,
):
    """The spaces that score one candidate (the other preprocessing candidates, built with
    the chosen columns only) compute each Coulomb and Stribeck column only for the joints
    whose shape it is: those equal the whole space's columns, the others are zero, and
    fewer columns are filtered."""
    from ident_framework.data.preprocessing import preprocess
    from ident_framework.identify.tuning.column_spaces import _NO_GRIDS, _own_columns
    from ident_framework.identify.tuning.selection import _configured

    config = tuning_config(
        "preprocessing.friction_columns=parallel",
        "tuning.tanh_widths=[0.003]",
        "tuning.stribeck_velocities=[0.01]",
    )
    robot, builder, theta = _ur10e_model(config)
    data = preprocess(_stribeck_recording(builder, theta, 3.0, seed=3), config.preprocessing)
    n = robot.n_joints
    start = _configured(config, n)
    candidate = start.with_shape(0, "stribeck", 0.01).with_shape(2, "tanh", 0.003)
    rows = np.arange(0, data.n_samples, 5)
    whole = _own_columns(config, builder, (True, False), candidate, config.tuning)
    filtered_batches.clear()  # from here on
    alone = _own_columns(config, builder, (True, False), candidate, _NO_GRIDS, own_shape_only=True)
    values = alone.values(data, rows)
    # fv on every joint; one Coulomb column per joint; fs on joint 1 only
    assert sum(filtered_batches) == n + n + 1
    reference = whole.values(data, rows)
    for j in range(n):
        used = ["fv", candidate.shape(j), "Ia", "offset"]
        if j == 0:
            used.append("fs[stribeck 0.01]")
        for k, name in enumerate(alone.names):
            got = values[:, j, k]
            if name in used:
                expected = reference[:, j, whole.names.index(name)]
                np.testing.assert_allclose(got, expected, atol=1e-12 * np.abs(expected).max())
            else:
                assert not got.any(), (j, name)
