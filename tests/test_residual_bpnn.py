"""The `bpnn` residual learner on synthetic residuals: what it learns, what it refuses, that it
is deterministic, and that its saved files reload exactly and safely."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ident_framework.config.plugin_config import build_params
from ident_framework.errors import UserError
from ident_framework.hookspecs import ResidualInputs
from ident_framework.residuals.bpnn import (
    BpnnParams,
    BpnnResidual,
    acceptance,
    register_residual_learners,
)
from ident_framework.residuals.bpnn.acceptance import early_stopping_part, region_fold
from ident_framework.residuals.bpnn.files import MODEL_FILE, PLOT_FILE, WEIGHTS_FILE
from ident_framework.testing.known_truth import multisine

REPO = Path(__file__).resolve().parents[1]
# Small and fast: about a second per fit on 6000 samples of 2 joints.
FAST = dict(
    hidden_width=32, epochs=80, batch_size=128, learning_rate=3e-3, progress=False,
    ensemble_size=2, features=["position", "velocity", "acceleration"],
)  # fmt: skip


def motion(n_samples: int, phase_seed: int, n_joints: int = 2, rate_hz: float = 50.0):
    """q (rad), dq (rad/s), ddq (rad/s²), each (N, n): 3 sines per joint with fixed frequencies
    and amplitudes; the phases (from `phase_seed`) make a different motion over the same
    range of states."""
    t = np.arange(n_samples) / rate_hz
    return multisine(t, n_joints, 0, phase_seed, freq_hz=(0.05, 0.3), amp_rad=(0.1, 0.4))


def stribeck(q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Nm: low-speed friction bump plus a position-dependent term."""
    return 2.0 * np.exp(-((dq / 0.05) ** 2)) * np.sign(dq) + 0.5 * np.sin(q)


def rmse(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2)))


def inputs(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> ResidualInputs:
    """The joint state as the learner's inputs (no physical torque parts)."""
    return ResidualInputs(q, dq, ddq)


# The networks alone: no acceptance, no shrinkage (tests of the loss and the inputs).
PLAIN = dict(acceptance=False, refuse_radius=None, disagreement_weight=0.0)


@pytest.fixture(scope="module")
def train_data():
    """Two recordings (different phases, same range of states) of a Stribeck-like residual."""
    rng = np.random.default_rng(1)
    recordings, residuals = [], []
    for phase_seed in (0, 3):
        q, dq, ddq = motion(3000, phase_seed=phase_seed)
        recordings.append(inputs(q, dq, ddq))
        residuals.append(stribeck(q, dq) + rng.normal(0.0, 0.05, q.shape))
    return recordings, residuals


@pytest.fixture(scope="module")
def fitted(train_data) -> BpnnResidual:
    return BpnnResidual(BpnnParams(**FAST)).fit(*train_data)


def test_learns_a_nonlinear_residual_on_held_out_motion(fitted):
    q, dq, ddq = motion(2000, phase_seed=1)
    truth = stribeck(q, dq)
    predicted = fitted.predict(inputs(q, dq, ddq))
    ratio = rmse(truth - predicted) / rmse(truth)
    report = fitted.report_
    print(f"held-out RMSE ratio learned/zero = {ratio:.3f}; acceptance {report}")
    assert ratio < 0.5  # measured 0.2-0.3
    assert report["accepted"] == [True, True] and report["folds"] == ["recording 0", "recording 1"]
    assert all(r > 30.0 for r in report["held_out_reduction_percent"])
    assert fitted.out_of_range_fraction_ < 0.05
    assert fitted.prediction_report_["corrected_fraction"] > 0.5
    assert len(fitted.history_["val_loss"]) == fitted.epochs_run_ + 1  # + untrained epoch 0
    assert fitted.training_time_s_ > 0 and len(fitted.best_epoch_) == fitted.n_networks_ == 4


def test_white_noise_residual_is_refused_and_changes_nothing():
    """Physical model exact, residual pure noise: no joint passes the held-out acceptance, the
    correction is exactly 0."""
    rng = np.random.default_rng(3)
    q, dq, ddq = motion(4000, phase_seed=0)
    learner = BpnnResidual(BpnnParams(**FAST)).fit(
        [inputs(q, dq, ddq)], [rng.normal(0.0, 0.3, q.shape)]
    )
    assert learner.report_["accepted"] == [False, False], learner.report_["reason"]
    assert all(reason.startswith("refused") for reason in learner.report_["reason"])
    q_h, dq_h, ddq_h = motion(2000, phase_seed=1)
    np.testing.assert_array_equal(learner.predict(inputs(q_h, dq_h, ddq_h)), 0.0)
    assert learner.prediction_report_["refused_fraction"] == 1.0


def test_a_correction_that_does_not_carry_over_to_another_recording_is_refused():
    """Two recordings over the same states with opposite residuals: each fold learns the
    opposite of what it is judged on, so held-out RMSE rises and the joint is refused — though
    the training fit improved a lot (the source study's figure)."""
    q, dq, ddq = motion(3000, phase_seed=0)
    q2, dq2, ddq2 = motion(3000, phase_seed=3)
    learner = BpnnResidual(BpnnParams(**FAST)).fit(
        [inputs(q, dq, ddq), inputs(q2, dq2, ddq2)], [np.sin(3 * q), -np.sin(3 * q2)]
    )
    report = learner.report_
    print(report["training_reduction_percent"], report["held_out_reduction_percent"])
    assert report["accepted"] == [False, False]
    assert all(r > 50.0 for r in report["training_reduction_percent"])
    assert all(r < 0.0 for r in report["held_out_reduction_percent"])
    assert all("worse" in reason for reason in report["reason"])
    np.testing.assert_array_equal(learner.predict(inputs(q, dq, ddq)), 0.0)


def test_one_recording_holds_out_a_region_and_the_time_tail():
    """One recording: two folds, the input-space region farthest from the centre (it depends
    only on the inputs) and the last 20 % in time. A residual changed only where both folds
    hold out changes the acceptance but not one trained weight (no network saw it)."""
    q, dq, ddq = motion(3000, phase_seed=0)
    residual = stribeck(q, dq)
    params = BpnnParams(**{**FAST, "epochs": 10, "patience": 0})
    learner = BpnnResidual(params).fit([inputs(q, dq, ddq)], [residual])
    assert learner.folds_ == ["region", "time tail"]
    region = region_fold(learner._standardise(learner._features(inputs(q, dq, ddq))), 0.2, 0)
    tail = np.zeros_like(region.held_out)
    tail[:, 2400:] = True
    held = np.array(learner.report_["held_out_samples"])
    assert held.tolist() == (region.held_out.sum(axis=1) + 600).tolist()
    assert np.all(region.held_out.sum(axis=1) > 0.1 * len(q))
    assert len(learner.report_["held_out_reduction_percent_per_fold"]) == 2

    never_seen = region.held_out & tail
    assert never_seen.sum(axis=1).min() > 0
    changed = residual.copy()
    changed[never_seen.T] += 5.0
    other = BpnnResidual(params).fit([inputs(q, dq, ddq)], [changed])
    for name, tensor in learner._state.items():
        assert torch.equal(tensor, other._state[name]), name
    assert other.history_ == learner.history_
    assert other.report_["held_out_rmse_physical"] != learner.report_["held_out_rmse_physical"]
    assert other.report_["training_rmse_physical"] == learner.report_["training_rmse_physical"]


def test_early_stopping_part_is_spread_over_the_recording():
    """The early-stopping samples are blocks spread over each joint's fit samples (every fifth
    of 50 blocks for 0.2), not the time tail (a Fourier recording's ramp to rest)."""
    fit = np.ones((2, 1000), dtype=bool)
    fit[1, :500] = False  # joint 1 fits on the second half only
    stop = early_stopping_part(fit, 0.2)
    assert stop.sum(axis=1).tolist() == [200, 100]
    assert not np.any(stop & ~fit)
    first, last = np.flatnonzero(stop[0])[[0, -1]]
    assert first < 100 and last == 999  # from the start to the end, not only the tail
    assert stop[0, 80:100].all() and not stop[0, 100:180].any()  # blocks of 20 samples
    assert early_stopping_part(fit, 0.0).sum() == 0


def test_features_auto_chooses_per_joint_on_held_out_motion(tmp_path):
    """Joint 0's residual depends on its angle (sin 3q), joint 1's on its velocity only: with
    features=auto joint 0 takes the set with sin/cos q (the other cannot represent it); the
    choice, the candidates' scores and the masked inputs survive save and load bitwise."""
    rng = np.random.default_rng(2)
    recordings, residuals = [], []
    for phase_seed in (0, 3):
        q, dq, ddq = motion(3000, phase_seed=phase_seed)
        recordings.append(inputs(q, dq, ddq))
        truth = np.stack([np.sin(3.0 * q[:, 0]), np.tanh(dq[:, 1] / 0.05)], axis=1)
        residuals.append(truth + rng.normal(0.0, 0.05, q.shape))
    candidates = [["velocity", "acceleration"], ["sin_position", "cos_position", "velocity"]]
    params = BpnnParams(**{**FAST, "features": "auto", "feature_candidates": candidates})
    learner = BpnnResidual(params).fit(recordings, residuals)
    report = learner.report_
    assert report["features"] == "auto" and report["feature_candidates"] == candidates
    assert report["features_per_joint"][0] == candidates[1]
    scores = np.array(report["candidate_worst_fold_reduction_percent"])
    assert scores.shape == (2, 2) and scores[0, 1] > scores[0, 0] + 20.0
    assert report["accepted"][0]
    assert learner.feature_names_ == ["velocity", "acceleration", "sin_position", "cos_position"]
    assert learner.feature_mask_[0].tolist() == [True, False, True, True]
    assert learner.n_networks_ == 2 * len(learner.folds_) * learner.n_members_

    q, dq, ddq = motion(2000, phase_seed=1)
    predicted = learner.predict(inputs(q, dq, ddq))
    assert rmse(predicted[:, 0] - np.sin(3.0 * q[:, 0])) < 0.5 * rmse(np.sin(3.0 * q[:, 0]))
    learner.save(tmp_path)
    loaded = BpnnResidual.load(tmp_path)
    np.testing.assert_array_equal(loaded.predict(inputs(q, dq, ddq)), predicted)
    assert loaded.feature_mask_.tolist() == learner.feature_mask_.tolist()


def test_distance_in_the_input_space_refuses_what_per_axis_ranges_let_through():
    """One sine per joint: (dq, ddq) lie on an ellipse. Its centre (rest) is inside every
    per-axis range but far from every training sample: refused by the distance."""
    t = np.arange(4000) / 50.0
    q = np.stack([0.5 * np.sin(2 * np.pi * 0.2 * t)] * 2, axis=1)
    dq = np.gradient(q, t, axis=0)
    ddq = np.gradient(dq, t, axis=0)
    params = BpnnParams(**{**FAST, "features": ["velocity", "acceleration"], "acceptance": False})
    learner = BpnnResidual(params).fit([inputs(q, dq, ddq)], [np.tanh(dq / 0.1)])
    rest = np.zeros((50, 2))
    predicted = learner.predict(inputs(rest, rest, rest))
    assert learner.out_of_range_fraction_ == 0.0  # inside the per-axis ranges
    np.testing.assert_array_equal(predicted, 0.0)
    assert learner.prediction_report_["refused_fraction"] == 1.0
    on_curve = learner.predict(inputs(q[:500], dq[:500], ddq[:500]))
    assert learner.prediction_report_["corrected_fraction"] > 0.5
    assert rmse(np.tanh(dq[:500] / 0.1) - on_curve) < 0.5 * rmse(np.tanh(dq[:500] / 0.1))


def test_trust_factors():
    mean = np.array([[1.0, 1.0, 0.0, 2.0]])
    std = np.array([[0.0, 1.0, 0.0, 2.0]])
    np.testing.assert_allclose(acceptance.disagreement_factor(mean, std, 1.0), [[1, 0.5, 1, 0.5]])
    np.testing.assert_allclose(
        acceptance.distance_factor(np.array([0.1, 0.25, 0.625, 1.0, 2.0]), 0.25, 1.0),
        [1.0, 1.0, 0.5, 0.0, 0.0],
    )
    figures = acceptance.classify(np.array([[1.0, 0.95, 0.5, 0.0]]))
    assert (figures["corrected_fraction"], figures["shrunk_fraction"]) == (0.5, 0.25)
    assert figures["refused_per_joint"] == [0.25]


def test_physical_torque_parts_as_features():
    """A residual proportional to the gravity torque (load-dependent friction) is learnt from
    the `gravity` feature; without the part the engine provides, the feature is a UserError."""
    q, dq, ddq = motion(3000, phase_seed=0)
    gravity = 10.0 * np.cos(q)
    residual = 0.05 * np.abs(gravity) * np.tanh(dq / 0.05)
    params = BpnnParams(**{**FAST, "features": ["velocity", "gravity"]})
    learner = BpnnResidual(params).fit(
        [ResidualInputs(q, dq, ddq, tau_gravity=gravity)], [residual]
    )
    assert learner.n_features_ == 2
    with pytest.raises(UserError, match="'gravity'"):
        learner.predict(inputs(q, dq, ddq))


def test_huber_loss_is_robust_to_stick_slip_spikes():
    """Residual = smooth function + rare large spikes (stick-slip at reversals): the Huber loss
    recovers the smooth part better than MSE, on a held-out motion."""
    q, dq, ddq = motion(4000, phase_seed=0)
    rng = np.random.default_rng(4)
    spikes = np.where(rng.random(q.shape) < 0.05, rng.choice([-6.0, 6.0], q.shape), 0.0)
    smooth = lambda q, dq: 0.5 * np.sin(3.0 * q) + 0.3 * np.tanh(dq / 0.05)  # noqa: E731
    target = smooth(q, dq) + spikes
    errors = {}
    for loss in ("mse", "huber"):
        params = BpnnParams(**FAST, loss=loss, huber_delta_nm=0.3)
        learner = BpnnResidual(dataclasses.replace(params, **PLAIN))
        learner.fit([inputs(q, dq, ddq)], [target])
        q_h, dq_h, ddq_h = motion(2000, phase_seed=1)
        errors[loss] = rmse(smooth(q_h, dq_h) - learner.predict(inputs(q_h, dq_h, ddq_h)))
    print(f"held-out RMSE to the smooth part: {errors}")  # measured mse 0.15, huber 0.03
    assert errors["huber"] < 0.7 * errors["mse"]


def test_same_seed_same_network_other_seed_other_network(train_data, fitted):
    again = BpnnResidual(BpnnParams(**FAST)).fit(*train_data)
    for name, tensor in fitted._state.items():
        assert torch.equal(tensor, again._state[name]), name
    q, dq, ddq = motion(500, phase_seed=2)
    np.testing.assert_array_equal(
        fitted.predict(inputs(q, dq, ddq)), again.predict(inputs(q, dq, ddq))
    )
    assert again.history_ == fitted.history_ and again.report_["reason"] == fitted.report_["reason"]

    other = BpnnResidual(BpnnParams(**{**FAST, "seed": 1})).fit(*train_data)
    assert not torch.equal(other._state["layer0.weight"], fitted._state["layer0.weight"])
    assert not np.array_equal(other.predict(inputs(q, dq, ddq)), fitted.predict(inputs(q, dq, ddq)))


def test_early_stopping_keeps_the_untrained_network_when_nothing_generalises():
    """Residual unrelated to the inputs: networks keep epoch 0 (residual 0 Nm) and training
    stops `patience` epochs after the last improvement."""
    q, dq, ddq = motion(2000, phase_seed=0)
    residual = np.random.default_rng(0).normal(0.0, 1.0, q.shape)
    params = BpnnParams(**{**FAST, "epochs": 200, "patience": 5, "hidden_width": 64})
    learner = BpnnResidual(params).fit([inputs(q, dq, ddq)], [residual])
    assert 0 in learner.best_epoch_  # measured: most networks keep epoch 0
    assert learner.epochs_run_ == max(learner.best_epoch_) + 5
    # where a fold's networks all kept epoch 0 and that fold is the joint's worst, the
    # refusal says so (not "unlike the training data": nothing was learnt at all)
    epochs = np.reshape(learner.best_epoch_, (-1, learner.n_folds_, learner.n_members_))
    report = learner.report_
    for joint, reason in enumerate(report["reason"]):
        per_fold = report["held_out_reduction_percent_per_fold"]
        worst = min(range(learner.n_folds_), key=lambda f: per_fold[f][joint])
        idle = bool((epochs[joint, worst] == 0).all())
        assert ("best epoch 0" in reason) == (idle and abs(per_fold[worst][joint]) < 1e-6), reason
    assert any("best epoch 0" in reason for reason in report["reason"]), report["reason"]


def test_without_early_stopping_the_last_epoch_is_kept(tmp_path):
    q, dq, ddq = motion(1000, phase_seed=0)
    params = BpnnParams(**{**FAST, "epochs": 5, "validation_fraction": 0.0})
    learner = BpnnResidual(params).fit([inputs(q, dq, ddq)], [stribeck(q, dq)])
    assert learner.best_epoch_ == [5] * learner.n_networks_
    assert learner.history_["val_loss"] == [None] * 6
    learner.write_outputs(tmp_path)
    assert (tmp_path / PLOT_FILE).is_file()


def test_save_and_load_reproduce_predictions_exactly(fitted, tmp_path):
    fitted.save(tmp_path)
    fitted.write_outputs(tmp_path)
    assert (tmp_path / PLOT_FILE).stat().st_size > 0
    document = json.loads((tmp_path / MODEL_FILE).read_text())
    assert document["architecture"]["n_joints"] == 2
    assert document["best_epoch"] == fitted.best_epoch_
    assert document["torch_version"] == torch.__version__
    saved = torch.load(tmp_path / WEIGHTS_FILE, weights_only=True)
    assert set(saved) == {*fitted._state, "support"}

    assert document["acceptance"]["accepted"] == fitted.report_["accepted"]
    assert document["architecture"]["features"] == FAST["features"]

    loaded = BpnnResidual.load(tmp_path)
    q, dq, ddq = motion(3000, phase_seed=4)
    q[:10, 0] = 50.0  # a few refused samples too
    dq[100:400] *= 3.0  # and some far from the training data
    np.testing.assert_array_equal(
        loaded.predict(inputs(q, dq, ddq)), fitted.predict(inputs(q, dq, ddq))
    )
    assert loaded.out_of_range_per_joint_ == fitted.out_of_range_per_joint_
    assert loaded.prediction_report_ == fitted.prediction_report_
    assert loaded.history_ == fitted.history_


def test_load_uses_weights_only(fitted, tmp_path, monkeypatch):
    fitted.save(tmp_path)
    calls = []
    original = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    BpnnResidual.load(tmp_path)
    assert calls and all(call.get("weights_only") is True for call in calls)


class _Payload:
    """Unpickling this would touch a marker file: weights_only loading must refuse it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_pickled_objects_in_the_weights_file_are_refused(fitted, tmp_path):
    fitted.save(tmp_path)
    marker = tmp_path / "unpickled"
    state = torch.load(tmp_path / WEIGHTS_FILE, weights_only=True)
    state["layer0.weight"] = _Payload(marker)
    torch.save(state, tmp_path / WEIGHTS_FILE)
    with pytest.raises(UserError, match=WEIGHTS_FILE):
        BpnnResidual.load(tmp_path)
    assert not marker.exists()


def test_missing_or_corrupt_files_are_user_errors(fitted, tmp_path):
    fitted.save(tmp_path)
    weights, model = tmp_path / WEIGHTS_FILE, tmp_path / MODEL_FILE
    good_weights, good_model = weights.read_bytes(), model.read_text()

    weights.unlink()
    with pytest.raises(UserError, match=f"{WEIGHTS_FILE} is missing"):
        BpnnResidual.load(tmp_path)
    weights.write_bytes(good_weights[: len(good_weights) // 2])  # truncated
    with pytest.raises(UserError, match=WEIGHTS_FILE):
        BpnnResidual.load(tmp_path)
    good_state = torch.load(io.BytesIO(good_weights), weights_only=True)
    wrong = {**good_state, "layer1.weight": torch.zeros(2, 5, 5)}
    torch.save(wrong, weights)
    with pytest.raises(UserError, match="does not match"):
        BpnnResidual.load(tmp_path)
    weights.write_bytes(good_weights)

    model.write_text(good_model[:100])  # truncated JSON
    with pytest.raises(UserError, match=f"{MODEL_FILE} is corrupt"):
        BpnnResidual.load(tmp_path)
    broken = json.loads(good_model)
    broken["input_scaler"]["std"] = [[1.0]]
    model.write_text(json.dumps(broken))
    with pytest.raises(UserError, match=MODEL_FILE):
        BpnnResidual.load(tmp_path)
    model.unlink()
    with pytest.raises(UserError, match=f"{MODEL_FILE} is missing"):
        BpnnResidual.load(tmp_path)


def test_out_of_range_samples_get_residual_zero(fitted):
    q, dq, ddq = motion(1000, phase_seed=0)
    inside = fitted.predict(inputs(q, dq, ddq))
    q, dq, ddq = q.copy(), dq.copy(), ddq.copy()
    span = fitted.x_max_[0, 0] - fitted.x_min_[0, 0]
    q[:100, 0] = fitted.x_max_[0, 0] + 0.2 * span  # beyond the 10 % margin: refused
    q[100:200, 0] = fitted.x_max_[0, 0] + 0.05 * span  # within the margin: not by the guard
    dq[300:400, 1] = np.nan  # not finite: refused
    predicted = fitted.predict(inputs(q, dq, ddq))
    assert np.all(predicted[:100, 0] == 0.0)
    assert np.all(predicted[300:400, 1] == 0.0)
    # Joint mode: the other joint's network still predicts where only joint 0 left its range.
    np.testing.assert_array_equal(predicted[:100, 1], inside[:100, 1])
    assert fitted.out_of_range_per_joint_ == [0.1, 0.1]
    assert fitted.out_of_range_fraction_ == pytest.approx(0.2)


def test_full_inputs_learn_cross_joint_dependence():
    """Joint 0's residual depends on joint 1's position: only `inputs=full` can learn it."""
    q, dq, ddq = motion(4000, phase_seed=0)
    residual = np.stack([np.sin(4.0 * q[:, 1]), 0.5 * dq[:, 1]], axis=1)
    q_h, dq_h, ddq_h = motion(2000, phase_seed=1)
    truth = np.stack([np.sin(4.0 * q_h[:, 1]), 0.5 * dq_h[:, 1]], axis=1)
    ratios = {}
    for scope in ("full", "joint"):
        params = BpnnParams(**{**FAST, "inputs": scope, "acceptance": False})
        learner = BpnnResidual(dataclasses.replace(params, refuse_radius=None))
        learner.fit([inputs(q, dq, ddq)], [residual])
        assert learner.n_features_ == (6 if scope == "full" else 3)
        error = truth - learner.predict(inputs(q_h, dq_h, ddq_h))
        ratios[scope] = rmse(error[:, 0]) / rmse(truth[:, 0])
    print(f"joint 0 RMSE ratio: full {ratios['full']:.3f}, joint {ratios['joint']:.3f}")
    assert ratios["full"] < 0.5 < 0.8 < ratios["joint"]  # measured 0.39, 1.0


def test_unavailable_device_is_refused(fitted, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    message = "residual.device=cuda but this machine has no CUDA device; use residual.device=cpu"
    with pytest.raises(ValueError, match=message):  # when the config is validated
        BpnnParams(device="cuda")
    with pytest.raises(UserError, match=message):  # as the command line reports it
        build_params(BpnnParams, {"device": "cuda"}, "residual", "bpnn")
    fitted.save(tmp_path)
    with pytest.raises(UserError, match="residual.device=cuda:1"):
        BpnnResidual.load(tmp_path, device="cuda:1")
    assert BpnnResidual.load(tmp_path, device="cpu").params.device == "cpu"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("inputs", "all"),
        ("hidden_width", 0),
        ("hidden_layers", 1.5),
        ("epochs", True),
        ("learning_rate", 0.0),
        ("weight_decay", -1e-4),
        ("batch_size", 0),
        ("seed", -1),
        ("device", "tpu"),
        ("validation_fraction", 1.0),
        ("patience", -1),
        ("range_margin", float("nan")),
        ("progress", "yes"),
        ("loss", "l1"),
        ("huber_delta_nm", 0.0),
        ("features", ["speed"]),
        ("features", []),
        ("features", ["velocity", "velocity"]),
        ("features", "velocity"),
        ("feature_candidates", []),
        ("feature_candidates", [["velocity"], ["velocity"]]),
        ("feature_candidates", [["speed"]]),
        ("ensemble_size", 0),
        ("acceptance", "yes"),
        ("acceptance_margin", -0.1),
        ("holdout_fraction", 0.9),
        ("disagreement_weight", -1.0),
        ("trust_radius", -1.0),
        ("refuse_radius", 0.1),
    ],
)
def test_bad_params_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        BpnnParams(**{field: value})


def test_bad_data_are_user_errors():
    learner = BpnnResidual(BpnnParams(**FAST))
    q = np.zeros((100, 2))
    with pytest.raises(UserError, match="shape"):
        learner.fit([inputs(q, q, q)], [np.zeros((100, 3))])
    bad = q.copy()
    bad[3, 1] = np.inf
    with pytest.raises(UserError, match="non-finite"):
        learner.fit([inputs(q, q, q)], [bad])
    with pytest.raises(UserError, match="too few"):
        learner.fit([inputs(q[:2], q[:2], q[:2])], [q[:2]])
    with pytest.raises(UserError, match="one residual per recording"):
        learner.fit([inputs(q, q, q)], [])


def test_predict_on_other_joint_count_is_a_user_error(fitted):
    q = np.zeros((10, 3))
    with pytest.raises(UserError, match="trained for 2 joints"):
        fitted.predict(inputs(q, q, q))


def test_registration_and_shipped_config():
    registered = []
    register_residual_learners(lambda *args: registered.append(args))
    assert registered == [("bpnn", BpnnResidual, BpnnParams)]
    values = yaml.safe_load((REPO / "conf" / "residual" / "bpnn.yaml").read_text())
    assert values.pop("plugin") == "bpnn"
    assert set(values) == {field.name for field in dataclasses.fields(BpnnParams)}
    assert build_params(BpnnParams, values, "residual", "bpnn") == BpnnParams()


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, ident_framework.residuals.bpnn; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
