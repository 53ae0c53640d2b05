"""The `bpnn` residual learner on synthetic residuals: what it learns, what it refuses, that it
is deterministic, and that its saved files reload exactly and safely."""

from __future__ import annotations

import dataclasses
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
from ident_framework.residuals.bpnn import BpnnParams, BpnnResidual, register_residual_learners
from ident_framework.residuals.bpnn_files import MODEL_FILE, PLOT_FILE, WEIGHTS_FILE
from ident_framework.testing.multisine import multisine

REPO = Path(__file__).resolve().parents[1]
# Small and fast: a few hundred ms per fit on 4000 samples of 2 joints.
FAST = dict(hidden_width=32, epochs=80, batch_size=128, learning_rate=3e-3, progress=False)


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


@pytest.fixture(scope="module")
def train_data():
    q, dq, ddq = motion(4000, phase_seed=0)
    noise = np.random.default_rng(1).normal(0.0, 0.05, q.shape)
    return q, dq, ddq, stribeck(q, dq) + noise


@pytest.fixture(scope="module")
def fitted(train_data) -> BpnnResidual:
    return BpnnResidual(BpnnParams(**FAST)).fit(*train_data)


def test_learns_a_nonlinear_residual_on_held_out_motion(fitted):
    q, dq, ddq = motion(2000, phase_seed=1)
    truth = stribeck(q, dq)
    predicted = fitted.predict(q, dq, ddq)
    ratio = rmse(truth - predicted) / rmse(truth)
    print(f"held-out RMSE ratio learned/zero = {ratio:.3f}")  # measured 0.2-0.3
    assert ratio < 0.5
    assert fitted.out_of_range_fraction_ < 0.05
    assert len(fitted.history_["val_loss"]) == fitted.epochs_run_ + 1  # + untrained epoch 0
    assert fitted.training_time_s_ > 0 and len(fitted.best_epoch_) == 2


def test_white_noise_residual_does_not_hurt():
    """Physical model exact, residual pure noise: fusion must not be worse than 2 %."""
    rng = np.random.default_rng(3)
    q, dq, ddq = motion(4000, phase_seed=0)
    learner = BpnnResidual(BpnnParams(**FAST)).fit(q, dq, ddq, rng.normal(0.0, 0.3, q.shape))
    q_h, dq_h, ddq_h = motion(2000, phase_seed=1)
    noise = rng.normal(0.0, 0.3, q_h.shape)  # tau_meas - tau_physical on held-out data
    fused = noise - learner.predict(q_h, dq_h, ddq_h)
    print(f"white noise: fusion/physical RMSE = {rmse(fused) / rmse(noise):.4f}")
    assert rmse(fused) <= 1.02 * rmse(noise)


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
        learner = BpnnResidual(BpnnParams(**FAST, loss=loss, huber_delta_nm=0.3))
        learner.fit(q, dq, ddq, target)
        q_h, dq_h, ddq_h = motion(2000, phase_seed=1)
        errors[loss] = rmse(smooth(q_h, dq_h) - learner.predict(q_h, dq_h, ddq_h))
    print(f"held-out RMSE to the smooth part: {errors}")  # measured mse 0.15, huber 0.03
    assert errors["huber"] < 0.7 * errors["mse"]


def test_same_seed_same_network_other_seed_other_network(train_data, fitted):
    again = BpnnResidual(BpnnParams(**FAST)).fit(*train_data)
    for name, tensor in fitted._state.items():
        assert torch.equal(tensor, again._state[name]), name
    q, dq, ddq = motion(500, phase_seed=2)
    np.testing.assert_array_equal(fitted.predict(q, dq, ddq), again.predict(q, dq, ddq))
    assert again.history_ == fitted.history_

    other = BpnnResidual(BpnnParams(**{**FAST, "seed": 1})).fit(*train_data)
    assert not torch.equal(other._state["layer0.weight"], fitted._state["layer0.weight"])
    assert not np.array_equal(other.predict(q, dq, ddq), fitted.predict(q, dq, ddq))


def test_validation_part_is_the_time_tail_and_never_trained_on(train_data):
    q, dq, ddq, residual = train_data
    params = BpnnParams(**{**FAST, "epochs": 15, "patience": 0, "range_margin": None})
    learner = BpnnResidual(params).fit(q, dq, ddq, residual)
    n_train = int(round(len(q) * 0.8))
    assert (learner.n_train_, learner.n_validation_) == (n_train, len(q) - n_train)

    # Changing the tail changes only the validation losses: the training never saw it.
    changed = residual.copy()
    changed[n_train:] += 5.0
    other = BpnnResidual(params).fit(q, dq, ddq, changed)
    assert other.history_["train_loss_per_joint"] == learner.history_["train_loss_per_joint"]
    assert other.history_["val_loss"] != learner.history_["val_loss"]

    # The kept weights are each joint's best epoch on that tail.
    tail = slice(n_train, None)
    error = (learner.predict(q[tail], dq[tail], ddq[tail]) - residual[tail]) / learner.y_std_
    val = np.asarray(learner.history_["val_loss_per_joint"])
    for j in range(2):
        assert np.mean(error[:, j] ** 2) == pytest.approx(val[:, j].min(), rel=1e-4)
        assert learner.best_epoch_[j] == int(np.argmin(val[:, j]))


def test_early_stopping_keeps_the_untrained_network_when_nothing_generalises():
    """Head and tail residuals unrelated: epoch 0 (residual 0 Nm) is kept and training stops
    `patience` epochs after it."""
    q, dq, ddq = motion(2000, phase_seed=0)
    residual = np.random.default_rng(0).normal(0.0, 1.0, q.shape)
    params = BpnnParams(**{**FAST, "epochs": 200, "patience": 5, "hidden_width": 64})
    learner = BpnnResidual(params).fit(q, dq, ddq, residual)
    kept_untrained = [j for j, epoch in enumerate(learner.best_epoch_) if epoch == 0]
    assert kept_untrained  # measured: best epochs [0, 2]
    np.testing.assert_allclose(learner.predict(q, dq, ddq)[:, kept_untrained], 0.0, atol=1e-6)
    assert learner.epochs_run_ == max(learner.best_epoch_) + 5


def test_without_validation_part_the_last_epoch_is_kept(tmp_path):
    q, dq, ddq = motion(1000, phase_seed=0)
    params = BpnnParams(**{**FAST, "epochs": 5, "validation_fraction": 0.0})
    learner = BpnnResidual(params).fit(q, dq, ddq, stribeck(q, dq))
    assert learner.best_epoch_ == [5, 5] and learner.n_validation_ == 0
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
    assert set(torch.load(tmp_path / WEIGHTS_FILE, weights_only=True)) == set(fitted._state)

    loaded = BpnnResidual.load(tmp_path)
    q, dq, ddq = motion(3000, phase_seed=4)
    q[:10, 0] = 50.0  # a few refused samples too
    np.testing.assert_array_equal(loaded.predict(q, dq, ddq), fitted.predict(q, dq, ddq))
    assert loaded.out_of_range_per_joint_ == fitted.out_of_range_per_joint_
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
    state = dict(fitted._state)
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
    wrong = {**fitted._state, "layer1.weight": torch.zeros(2, 5, 5)}
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
    inside = fitted.predict(q, dq, ddq)
    q, dq, ddq = q.copy(), dq.copy(), ddq.copy()
    span = fitted.x_max_[0, 0] - fitted.x_min_[0, 0]
    q[:100, 0] = fitted.x_max_[0, 0] + 0.2 * span  # beyond the 10 % margin: refused
    q[100:200, 0] = fitted.x_max_[0, 0] + 0.05 * span  # within the margin: predicted
    dq[300:400, 1] = np.nan  # not finite: refused
    predicted = fitted.predict(q, dq, ddq)
    assert np.all(predicted[:100, 0] == 0.0)
    assert np.all(predicted[100:200, 0] != 0.0)
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
    for inputs in ("full", "joint"):
        learner = BpnnResidual(BpnnParams(**{**FAST, "inputs": inputs}))
        learner.fit(q, dq, ddq, residual)
        assert learner.n_features_ == (6 if inputs == "full" else 3)
        error = truth - learner.predict(q_h, dq_h, ddq_h)
        ratios[inputs] = rmse(error[:, 0]) / rmse(truth[:, 0])
    print(f"joint 0 RMSE ratio: full {ratios['full']:.3f}, joint {ratios['joint']:.3f}")
    assert ratios["full"] < 0.3 < 0.8 < ratios["joint"]


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
    ],
)
def test_bad_params_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        BpnnParams(**{field: value})


def test_bad_data_are_user_errors():
    learner = BpnnResidual(BpnnParams(**FAST))
    q = np.zeros((100, 2))
    with pytest.raises(UserError, match="shape"):
        learner.fit(q, q, q, np.zeros((100, 3)))
    bad = q.copy()
    bad[3, 1] = np.inf
    with pytest.raises(UserError, match="non-finite"):
        learner.fit(q, q, q, bad)
    with pytest.raises(UserError, match="too few"):
        learner.fit(q[:2], q[:2], q[:2], q[:2])


def test_predict_on_other_joint_count_is_a_user_error(fitted):
    q = np.zeros((10, 3))
    with pytest.raises(UserError, match="trained for 2 joints"):
        fitted.predict(q, q, q)


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
