"""Built-in residual learner `bpnn`: one small MLP (ReLU) per joint on the physical residual.

As in the source study, joint j's network maps its standardised state [q_j, dq_j, ddq_j]
(rad, rad/s, rad/s²; z-score from the training part) to its standardised residual
tau_meas_j − tau_physical_j (Nm; un-standardised at prediction). `inputs: full` feeds all
joints' states to every joint's network. The n networks are trained together as one batched
computation (weights shaped (n, in, out), `torch.baddbmm`), which is still one independent
MLP per joint: the loss is the sum of the per-joint mean losses, so each network's
gradient is that of its own loss (and Adam is element-wise).

Training: the data given to `fit` are split in time — the last `validation_fraction` of the
samples are the validation part (never trained on; minibatches are shuffled inside the training
part with a seeded generator). Scalers and training ranges come from the training part. Adam
with weight decay (L2), MSE or Huber loss (`loss`), early stopping on the validation loss *per
joint* (computed as the learner is used, refused samples predicting 0): each joint keeps the
weights of its own best epoch, and training stops when no joint improved for `patience`
epochs. The last layer starts so that "epoch 0" (the untrained network) predicts residual 0 Nm:
a joint whose residual does not generalise to the validation part (noise, nothing learnable)
keeps the physical model alone. Deterministic given `seed` on the CPU (one thread,
deterministic algorithms, seeded generators; the process's torch settings are restored
afterwards).

Extrapolation guard: `fit` records each raw input feature's training range [min, max]. At
prediction a joint's network refuses a sample (predicts residual 0: the physical model alone)
when any of its input features lies outside [min − m·span, max + m·span], m = `range_margin`,
span = max − min. `predict` reports `out_of_range_fraction_` (fraction of samples refused by
at least one joint's network) and `out_of_range_per_joint_` (fraction refused per joint).

Files (`save`/`load`): `bpnn_weights.pt` (state dict of tensors only, read back with
`torch.load(..., weights_only=True)`) and `bpnn_model.json` (architecture, parameters,
scalers, training ranges, best epochs, loss history, torch version). A reloaded model
reproduces the predictions bitwise on the CPU.

torch is an optional dependency (the `bpnn` extra): it is imported only inside the functions
that need it (this module is imported at every start of the command line), and validating a
`residual=bpnn` config without it is a UserError naming the install command.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.hookspecs import hookimpl
from ident_framework.interfaces import ResidualLearnerDefaults
from ident_framework.residuals import bpnn_files
from ident_framework.residuals.bpnn_files import PLOT_FILE
from ident_framework.residuals.bpnn_torch import (
    DEVICE_PATTERN,
    forward,
    require_torch,
    resolve_device,
    torch_settings,
)
from ident_framework.residuals.bpnn_training import pointwise_loss, train_networks

if TYPE_CHECKING:
    import torch

_STD_FLOOR = 1e-12  # a feature or residual with a smaller std is not scaled (std taken as 1)


@dataclass
class BpnnParams:
    """Parameters of the `bpnn` residual learner.

    inputs: "joint" (network j sees [q_j, dq_j, ddq_j]) or "full" (every network sees all
    joints' states). hidden_width: neurons per hidden layer. hidden_layers: hidden layers
    (ReLU). epochs: maximum training epochs. learning_rate: Adam step size. weight_decay:
    Adam's L2 penalty on the (standardised) weights. batch_size: samples per minibatch.
    seed: initial weights and minibatch order. device: "cpu", "cuda", "cuda:<i>" or "mps".
    validation_fraction: last fraction of the samples (in time) held out for early stopping,
    in [0, 1); 0: no early stopping, the last epoch is kept. patience: epochs without a
    better validation loss before training stops (0: never stop early).
    range_margin: extrapolation guard margin m (≥ 0) in units of each feature's training span;
    None: no guard. loss: "mse" or "huber" (quadratic up to huber_delta_nm, in Nm, linear
    beyond: robust to stick-slip spikes in the residual). progress: tqdm bar over the epochs on
    stderr.
    """

    inputs: str = "joint"
    hidden_width: int = 64
    hidden_layers: int = 2
    epochs: int = 300
    learning_rate: float = 2e-3
    weight_decay: float = 1e-4
    batch_size: int = 512
    seed: int = 0
    device: str = "cpu"
    validation_fraction: float = 0.2
    patience: int = 25
    range_margin: float | None = 0.1
    loss: str = "mse"
    huber_delta_nm: float = 0.5
    progress: bool = True

    def __post_init__(self) -> None:
        def integer(name: str, minimum: int) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            if value < minimum:
                raise ValueError(f"{name} must be >= {minimum}, got {value}")
            setattr(self, name, int(value))

        def number(name: str) -> float:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")
            setattr(self, name, float(value))
            return float(value)

        require_torch()  # before any job runs: the learner cannot train or load without it
        if self.inputs not in ("joint", "full"):
            raise ValueError(f"inputs must be 'joint' or 'full', got {self.inputs!r}")
        integer("hidden_width", 1)
        integer("hidden_layers", 1)
        integer("epochs", 1)
        integer("batch_size", 1)
        integer("seed", 0)
        integer("patience", 0)
        if not number("learning_rate") > 0.0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if not number("weight_decay") >= 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not 0.0 <= number("validation_fraction") < 1.0:
            raise ValueError(
                f"validation_fraction must be in [0, 1), got {self.validation_fraction}"
            )
        if self.range_margin is not None and not number("range_margin") >= 0.0:
            raise ValueError(f"range_margin must be >= 0 or null, got {self.range_margin}")
        if not isinstance(self.device, str) or not DEVICE_PATTERN.match(self.device):
            raise ValueError(
                f"device must be 'cpu', 'cuda', 'cuda:<index>' or 'mps', got {self.device!r}"
            )
        if self.device != "cpu":  # fail when the config is validated, before any job runs
            try:
                resolve_device(self.device)
            except UserError as error:
                raise ValueError(str(error).rstrip(".")) from None
        if self.loss not in ("mse", "huber"):
            raise ValueError(f"loss must be 'mse' or 'huber', got {self.loss!r}")
        if not number("huber_delta_nm") > 0.0:
            raise ValueError(f"huber_delta_nm must be > 0, got {self.huber_delta_nm}")
        if not isinstance(self.progress, bool):
            raise ValueError(f"progress must be true or false, got {self.progress!r}")


class BpnnResidual(ResidualLearnerDefaults):
    """Per-joint MLP residual learner (see the module docstring).

    After `fit`: `history_` (dict of per-epoch lists: "train_loss", "val_loss" — means over the
    joints — and "train_loss_per_joint", "val_loss_per_joint"; MSE (or Huber) of the standardised
    residual, dimensionless; entry 0 is the untrained network, val only), `best_epoch_`
    (per joint, 0 = untrained), `epochs_run_`, `training_time_s_` (s), `n_train_`,
    `n_validation_` (samples of the time-ordered split: validation = samples [n_train_:]).
    After `predict`: `out_of_range_fraction_`, `out_of_range_per_joint_`.
    """

    active = True

    def __init__(self, params: BpnnParams):
        self.params = params
        self.n_joints_: int | None = None
        self._state: dict[str, Any] | None = None  # name -> tensor, on the CPU
        self.out_of_range_fraction_: float | None = None
        self.out_of_range_per_joint_: list[float] | None = None

    # ----------------------------------------------------------------------------- features
    @property
    def n_features_(self) -> int:
        """Input features per network: 3 ("joint") or 3n ("full")."""
        assert self.n_joints_ is not None
        return 3 if self.params.inputs == "joint" else 3 * self.n_joints_

    @staticmethod
    def _check_arrays(arrays: dict[str, np.ndarray], n_joints: int | None) -> int:
        """Check that the arrays share one shape (N, n) (n = n_joints when given); return N."""
        shapes = {name: np.shape(value) for name, value in arrays.items()}
        first = next(iter(shapes.values()))
        if len(first) != 2 or any(shape != first for shape in shapes.values()):
            raise UserError(
                f"The bpnn residual learner needs arrays of one shape (samples, joints); got "
                f"{', '.join(f'{k} {v}' for k, v in shapes.items())}."
            )
        if n_joints is not None and first[1] != n_joints:
            raise UserError(
                f"The bpnn residual model was trained for {n_joints} joints but the data have "
                f"{first[1]}; apply it to recordings of the robot it was trained on."
            )
        return int(first[0])

    def _raw_features(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(n, N, f) raw input features of each joint's network (rad, rad/s, rad/s²)."""
        state = np.stack([q, dq, ddq], axis=-1).astype(np.float64)  # (N, n, 3)
        if self.params.inputs == "joint":
            return np.ascontiguousarray(state.transpose(1, 0, 2))
        full = state.reshape(state.shape[0], -1)  # (N, 3n): q_0, dq_0, ddq_0, q_1, ...
        return np.broadcast_to(full, (self.n_joints_, *full.shape))

    # ---------------------------------------------------------------------------------- fit
    def fit(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, residual: np.ndarray
    ) -> BpnnResidual:
        """Train on joint states q (rad), dq (rad/s), ddq (rad/s²) and residual (Nm), each
        (N, n) in time order. Returns self."""
        import torch

        p = self.params
        arrays = {"q": q, "dq": dq, "ddq": ddq, "residual": residual}
        n_samples = self._check_arrays(arrays, None)
        if not all(np.all(np.isfinite(a)) for a in arrays.values()):
            raise UserError(
                "The bpnn residual learner got non-finite values (NaN or inf) in the joint "
                "states or the residual; clean the recording (preprocessing) first."
            )
        n_train = int(round(n_samples * (1.0 - p.validation_fraction)))
        n_val = n_samples - n_train
        if n_train < 2 or (p.validation_fraction > 0 and n_val < 1):
            raise UserError(
                f"The bpnn residual learner got {n_samples} samples: too few for a training "
                f"part and a validation part of residual.validation_fraction="
                f"{p.validation_fraction}. Record a longer motion."
            )
        device = resolve_device(p.device)
        start = time.perf_counter()
        self.n_joints_ = int(np.shape(q)[1])
        features = self._raw_features(q, dq, ddq)  # (n, N, f)
        target = np.asarray(residual, dtype=np.float64).T[:, :, None]  # (n, N, 1)

        # Scalers and ranges from the training part only (the tail is unseen data).
        train_x = features[:, :n_train]
        self.x_mean_ = train_x.mean(axis=1)  # (n, f)
        x_std = train_x.std(axis=1)
        self.x_std_ = np.where(x_std > _STD_FLOOR, x_std, 1.0)
        self.x_min_ = train_x.min(axis=1)
        self.x_max_ = train_x.max(axis=1)
        self.y_mean_ = target[:, :n_train, 0].mean(axis=1)  # (n,)
        y_std = target[:, :n_train, 0].std(axis=1)
        self.y_std_ = np.where(y_std > _STD_FLOOR, y_std, 1.0)

        x_all = torch.from_numpy(self._standardise(features)).to(device)
        y_all = torch.from_numpy(
            ((target - self.y_mean_[:, None, None]) / self.y_std_[:, None, None]).astype(np.float32)
        ).to(device)
        x_train, y_train = x_all[:, :n_train], y_all[:, :n_train]
        x_val, y_val = x_all[:, n_train:], y_all[:, n_train:]
        self.n_train_, self.n_validation_ = n_train, n_val

        with torch_settings(p.seed):
            generator = torch.Generator(device="cpu").manual_seed(p.seed)
            layers = self._initial_layers(generator, device)
            loss = pointwise_loss(p.loss, p.huber_delta_nm / self.y_std_, device)
            best, best_epoch, history, epoch = train_networks(
                p,
                layers,
                generator,
                (x_train, y_train, x_val, y_val),
                self.refused(features[:, n_train:])[:, :, None],
                -self.y_mean_ / self.y_std_,
                loss,
                device,
            )

        self._state = {
            name: tensor.detach().cpu().contiguous()
            for name, tensor in zip(self._parameter_names(), best, strict=True)
        }
        self.history_ = history
        self.best_epoch_ = [int(e) for e in best_epoch]
        self.epochs_run_ = int(epoch)
        self.training_time_s_ = time.perf_counter() - start
        return self

    def _parameter_names(self) -> list[str]:
        names = []
        for k in range(self.params.hidden_layers + 1):
            names += [f"layer{k}.weight", f"layer{k}.bias"]
        return names

    def _shapes(self) -> dict[str, tuple[int, ...]]:
        """Tensor shapes of the state dict: weight (n, in, out), bias (n, 1, out)."""
        n, width = self.n_joints_, self.params.hidden_width
        sizes = [self.n_features_] + [width] * self.params.hidden_layers + [1]
        shapes: dict[str, tuple[int, ...]] = {}
        for k in range(len(sizes) - 1):
            shapes[f"layer{k}.weight"] = (n, sizes[k], sizes[k + 1])
            shapes[f"layer{k}.bias"] = (n, 1, sizes[k + 1])
        return shapes

    def _initial_layers(
        self, generator: torch.Generator, device: torch.device
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """PyTorch's Linear initialisation U(±1/sqrt(in)) per joint; the last layer's weights
        at zero and its bias at the standardised 0 Nm, so the untrained network predicts
        residual 0 (the physical model alone)."""
        import torch

        shapes = list(self._shapes().values())
        layers = []
        for k in range(0, len(shapes), 2):
            w_shape, b_shape = shapes[k], shapes[k + 1]
            if k == len(shapes) - 2:  # output -y_mean/y_std: residual 0 in Nm
                weight = torch.zeros(w_shape)
                bias = torch.from_numpy(-self.y_mean_ / self.y_std_).float().view(b_shape)
            else:
                bound = 1.0 / math.sqrt(w_shape[1])
                weight = (torch.rand(w_shape, generator=generator) * 2 - 1) * bound
                bias = (torch.rand(b_shape, generator=generator) * 2 - 1) * bound
            layers.append((weight.to(device), bias.to(device)))
        return layers

    def _standardise(self, features: np.ndarray) -> np.ndarray:
        """(n, N, f) raw -> standardised float32."""
        return ((features - self.x_mean_[:, None, :]) / self.x_std_[:, None, :]).astype(np.float32)

    # ------------------------------------------------------------------------------ predict
    def predict(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n) predicted residual (Nm) at joint states q (rad), dq (rad/s), ddq (rad/s²);
        0 where a joint's network refuses the sample (outside its training range)."""
        import torch

        if self._state is None:
            raise RuntimeError("BpnnResidual.predict called before fit or load")
        n_samples = self._check_arrays({"q": q, "dq": dq, "ddq": ddq}, self.n_joints_)
        features = self._raw_features(q, dq, ddq)
        refused = self.refused(features)  # (n, N)
        x = self._standardise(features)
        x[~np.isfinite(x)] = 0.0  # refused anyway; keeps NaN out of the network
        device = resolve_device(self.params.device)
        with torch_settings(), torch.no_grad():
            layers = [
                (
                    self._state[f"layer{k}.weight"].to(device),
                    self._state[f"layer{k}.bias"].to(device),
                )
                for k in range(self.params.hidden_layers + 1)
            ]
            out = forward(torch.from_numpy(x).to(device), layers).cpu().numpy()[:, :, 0]
        prediction = out.astype(np.float64) * self.y_std_[:, None] + self.y_mean_[:, None]
        prediction[refused] = 0.0
        self.out_of_range_per_joint_ = (
            refused.mean(axis=1).tolist() if n_samples else [0.0] * self.n_joints_
        )
        self.out_of_range_fraction_ = float(refused.any(axis=0).mean()) if n_samples else 0.0
        return np.ascontiguousarray(prediction.T)

    def refused(self, features: np.ndarray) -> np.ndarray:
        """(n, N) bool: sample outside network j's training range (by more than the margin)."""
        if self.params.range_margin is None:
            return ~np.all(np.isfinite(features), axis=2)
        margin = self.params.range_margin * (self.x_max_ - self.x_min_)
        low = (self.x_min_ - margin)[:, None, :]
        high = (self.x_max_ + margin)[:, None, :]
        inside = (features >= low) & (features <= high)  # NaN counts as outside
        return ~np.all(inside, axis=2)

    def describe(self) -> dict[str, Any]:
        """Plain (JSON-safe) description of the fitted model: everything but the weights."""
        return bpnn_files.describe(self)

    def save(self, folder: Path) -> None:
        """Write `folder/bpnn_weights.pt` and `folder/bpnn_model.json`."""
        bpnn_files.save_model(self, folder)

    @classmethod
    def load(cls, folder: Path, device: str | None = None) -> BpnnResidual:
        """The model saved in `folder` by `save`, on its saved device or on `device` (e.g. "cpu"
        for a model trained on a GPU); an unavailable device is a UserError."""
        return bpnn_files.load_model(cls, BpnnParams, folder, device)

    # ------------------------------------------------------------------------------ outputs
    def write_outputs(self, folder: Path) -> None:
        """Plot the loss curves of training to `folder/plots/bpnn_training.png` (the model
        files are written by `save`)."""
        self.plot_training(Path(folder) / PLOT_FILE)

    def plot_training(self, path: Path) -> None:
        """Train and validation loss per epoch (mean over joints and per joint), best epochs
        marked."""
        bpnn_files.plot_training(self, path)


@hookimpl
def register_residual_learners(register) -> None:
    register("bpnn", BpnnResidual, BpnnParams)
