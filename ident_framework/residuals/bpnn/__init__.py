"""Built-in residual learner `bpnn`: small per-joint MLPs (ReLU) on the physical residual
tau_meas_j - tau_physical_j (Nm), judged on held-out motion before they are used and shrunk
where they do not know.

Inputs: `features.py`; folds, acceptance and trust: `acceptance.py`; batched training
(deterministic given `seed` on the CPU): `network.py`; `bpnn_weights.pt` and `bpnn_model.json`
(a reloaded model predicts bitwise the same on the CPU): `files.py`; settings: `BpnnParams`,
validated when the config is composed. torch is optional (the `bpnn` extra): without it
`residual=bpnn` is a UserError naming the install command.

Rationale: docs/design.md#residual-learner-bpnn
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from omegaconf import ListConfig

from ident_framework.errors import UserError
from ident_framework.hookspecs import (
    RESIDUAL_INPUT_FIELDS,
    ResidualInputs,
    ResidualLearnerDefaults,
    hookimpl,
)
from ident_framework.params import Params, param
from ident_framework.residuals.bpnn import acceptance, files, network
from ident_framework.residuals.bpnn.features import (
    check_features,
    choose_features,
    per_candidate,
    raw_features,
)
from ident_framework.residuals.bpnn.network import gather, resolve_device, torch_settings

if TYPE_CHECKING:
    import torch


_STD_FLOOR = 1e-12  # a feature or residual with a smaller std is not scaled (std taken as 1)
__all__ = ["DEFAULT_FEATURES", "BpnnParams", "BpnnResidual", "register_residual_learners"]
DEFAULT_FEATURES = ["velocity", "friction"]
AUTO = "auto"  # features: auto -- each joint's set chosen among feature_candidates, held out
DEFAULT_CANDIDATES = [
    ["velocity", "friction"],  # friction-like: a function of the joint's own velocity
    ["sin_position", "cos_position", "velocity", "friction"],  # ... and of its angle (revolute)
]


def _torch_available(params: BpnnParams) -> None:
    network.require_torch()


def _feature_sets(params: BpnnParams) -> None:
    """`features` (a list or "auto") and `feature_candidates` (distinct lists), checked."""
    if params.features != AUTO:
        params.features = check_features(
            list(params.features) if not isinstance(params.features, str) else params.features
        )
    candidates = params.feature_candidates
    if not isinstance(candidates, list | tuple | ListConfig) or not candidates:
        raise ValueError(
            "feature_candidates must be a non-empty list of feature lists, got "
            f"{params.feature_candidates!r}"
        )
    try:
        params.feature_candidates = [
            check_features(c if isinstance(c, str) else list(c)) for c in candidates
        ]
    except ValueError as error:
        raise ValueError(f"feature_candidates: {error}") from None
    if len({tuple(c) for c in params.feature_candidates}) != len(params.feature_candidates):
        raise ValueError(f"feature_candidates lists a set twice: {params.feature_candidates}")


def _refuse_beyond_trust(params: BpnnParams) -> None:
    if params.refuse_radius is not None and not params.refuse_radius > params.trust_radius:
        raise ValueError(
            f"refuse_radius must be > trust_radius ({params.trust_radius}) or null, got "
            f"{params.refuse_radius}"
        )


def _device_available(params: BpnnParams) -> None:
    if not isinstance(params.device, str) or not network.DEVICE_PATTERN.match(params.device):
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:<index>' or 'mps', got {params.device!r}"
        )
    if params.device != "cpu":  # fail when the config is validated, before any job runs
        try:
            resolve_device(params.device)
        except UserError as error:
            raise ValueError(str(error).rstrip(".")) from None


@dataclass
class BpnnParams(Params):
    """Parameters of the `bpnn` residual learner, each described in conf/residual/bpnn.yaml.

    features: input names per joint (`features.FEATURES`), or "auto": per joint, the set of
    `feature_candidates` whose networks lower the held-out RMSE most in their worst fold.
    trust_radius, refuse_radius: distance to the nearest training sample (standardised units)
    up to which corrections apply fully / beyond which they are 0 (null: no distance
    shrinkage). range_margin: guard margin in units of each feature's training span (None: no
    guard). huber_delta_nm: Nm.
    """

    features: list[str] | str = field(default_factory=lambda: list(DEFAULT_FEATURES))
    feature_candidates: list[list[str]] = field(
        default_factory=lambda: [list(c) for c in DEFAULT_CANDIDATES]
    )
    inputs: str = param("joint", choices=("joint", "full"))
    hidden_width: int = param(32, ge=1)
    hidden_layers: int = param(2, ge=1)
    ensemble_size: int = param(4, ge=1)
    epochs: int = param(60, ge=1)
    learning_rate: float = param(3e-3, gt=0)
    weight_decay: float = param(1e-4, ge=0)
    batch_size: int = param(128, ge=1)
    seed: int = param(0, ge=0)
    device: str = "cpu"
    validation_fraction: float = param(0.2, ge=0, lt=1)
    patience: int = param(15, ge=0)
    acceptance: bool = param(True)
    acceptance_margin: float = param(0.02, ge=0, lt=1)
    holdout_fraction: float = param(0.2, gt=0, le=0.5)
    disagreement_weight: float = param(1.0, ge=0)
    trust_radius: float = param(0.25, ge=0)
    refuse_radius: float | None = param(1.0, null=True, finite=True)
    range_margin: float | None = param(0.1, ge=0, null=True)
    loss: str = param("mse", choices=("mse", "huber"))
    huber_delta_nm: float = param(0.5, gt=0, unit="Nm")
    progress: bool = param(True)
    rules = (_torch_available, _feature_sets, _refuse_beyond_trust, _device_available)


def _floored(std: np.ndarray) -> np.ndarray:
    return np.where(std > _STD_FLOOR, std, 1.0)


def _stack(recordings: list[ResidualInputs]) -> ResidualInputs:
    """One `ResidualInputs` of all recordings' rows (a field missing in one is missing in all)."""
    columns = [[getattr(r, name) for r in recordings] for name in RESIDUAL_INPUT_FIELDS]
    return ResidualInputs(
        *(None if any(v is None for v in c) else np.concatenate(c) for c in columns)
    )


class BpnnResidual(ResidualLearnerDefaults):
    """Per-joint MLP ensemble residual learner (see the module docstring).

    After `fit`: `report_` (acceptance per joint: metrics.json `residual`), `accepted_` (n,
    bool), `history_` (per-epoch "train_loss", "val_loss" — means over the networks — and
    "..._per_joint", each joint's mean over its networks; entry 0 is the untrained network),
    `best_epoch_` (per network), `epochs_run_`, `training_time_s_` (s), `n_folds_`,
    `n_members_` (per fold). After `predict`: `prediction_report_` (fractions corrected /
    shrunk / refused), `out_of_range_fraction_`, `out_of_range_per_joint_`.
    """

    active = True

    def __init__(self, params: BpnnParams):
        self.params = params
        self.feature_names_: list[str] = (
            [] if params.features == AUTO else list(params.features)
        )  # the networks' inputs: the features, or with "auto" every candidate's
        self.feature_mask_: np.ndarray | None = None  # (n, f) bool, with "auto": joint j's set
        self.n_joints_: int | None = None
        self.n_folds_: int = 1
        self.n_members_: int = params.ensemble_size
        self._state: dict[str, Any] | None = None  # name -> tensor, on the CPU
        self.report_: dict[str, Any] | None = None
        self.prediction_report_: dict[str, Any] | None = None
        self.out_of_range_fraction_: float | None = None
        self.out_of_range_per_joint_: list[float] | None = None

    # ----------------------------------------------------------------------------- features
    @property
    def n_features_(self) -> int:
        """Input features per network: len(features) ("joint") or n·len(features) ("full")."""
        k = len(self.feature_names_)
        return k if self.params.inputs == "joint" else k * self.n_joints_

    @property
    def n_networks_(self) -> int:
        """Networks in all: joints × folds × members (joint-major)."""
        return self.n_joints_ * self.n_folds_ * self.n_members_

    @staticmethod
    def _check_inputs(
        data: ResidualInputs, residual: np.ndarray | None, n_joints: int | None
    ) -> int:
        """Check that the arrays share one shape (N, n) (n = n_joints when given); return N."""
        arrays = {n: getattr(data, n) for n in RESIDUAL_INPUT_FIELDS} | {"residual": residual}
        shapes = {name: np.shape(value) for name, value in arrays.items() if value is not None}
        first = shapes["q"]
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

    def _features(self, data: ResidualInputs) -> np.ndarray:
        """(n, N, f) raw features; with "auto", those outside joint j's chosen set are 0 (then
        they are 0 in the scalers, the range guard and the distance too)."""
        raw = raw_features(data, self.feature_names_, self.params.inputs)
        if self.feature_mask_ is not None:
            raw = raw * self.feature_mask_[:, None, :]
        return raw

    # ---------------------------------------------------------------------------------- fit
    def fit(
        self,
        recordings: list[ResidualInputs] | ResidualInputs,
        residuals: list[np.ndarray] | np.ndarray,
    ) -> BpnnResidual:
        """Train on identification recordings (a list of `ResidualInputs`, or one) and their
        residuals tau_meas − tau_physical (Nm, (N_r, n) each, in time order). Returns self."""
        if isinstance(recordings, ResidualInputs):
            recordings, residuals = [recordings], [residuals]
        auto = self.params.features == AUTO
        if auto:  # every candidate's features; joint j's set is chosen below
            sets = self.params.feature_candidates
            self.feature_names_ = list(dict.fromkeys(n for c in sets for n in c))
        self.feature_mask_ = None
        features, target, recording = self._checked_data(recordings, residuals)
        start = time.perf_counter()
        std = features.std(axis=1, keepdims=True)
        scaled = (features - features.mean(axis=1, keepdims=True)) / _floored(std)  # for folds
        folds = acceptance.folds_for(
            recording, scaled.astype(np.float32), self.params.holdout_fraction, self.params.seed
        )
        if auto:  # candidate c of joint j is "joint" j·C + c, judged on joint j's folds
            features, target, folds = per_candidate(self, features, target, folds)
        self.x_mean_ = features.mean(axis=1)
        self.x_std_ = _floored(features.std(axis=1))
        standardised = self._standardise(features)
        self._set_folds(folds, features, target, standardised)
        self._train(folds, features, target, standardised)

        members = self._member_outputs(standardised)  # (n, F, M, N) Nm
        corrections = [
            self._factor(members[:, f], standardised, features, f) * members[:, f].mean(axis=1)
            for f in range(self.n_folds_)
        ]
        p = self.params
        untrained = np.reshape(self.best_epoch_, (-1, self.n_folds_, self.n_members_)) == 0
        self.report_ = acceptance.judge(
            target, corrections, folds, p.acceptance_margin, p.acceptance, untrained.all(axis=2)
        )
        if auto:
            choose_features(self, len(p.feature_candidates))
        self.accepted_ = np.array(self.report_["accepted"], dtype=bool)
        self.training_time_s_ = time.perf_counter() - start
        self.report_.update(
            features=p.features if auto else list(p.features),
            inputs=p.inputs,
            recordings=len(recordings),
            samples=target.shape[1],
            folds=self.folds_,
            members_per_fold=self.n_members_,
            networks=self.n_networks_,
            epochs_run=self.epochs_run_,
            training_time_s=self.training_time_s_,
        )
        return self

    def _checked_data(
        self, recordings: list[ResidualInputs], residuals: list[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(raw features (n, N, f), residual (n, N) Nm, recording id (N,)) of the stacked
        recordings; UserError for data the learner cannot train on."""
        if not recordings or len(recordings) != len(residuals):
            raise UserError(
                f"The bpnn residual learner got {len(recordings)} recordings and "
                f"{len(residuals)} residuals; give one residual per recording."
            )
        for data, residual in zip(recordings, residuals, strict=True):
            self._check_inputs(data, residual, None)
        widths = {np.shape(r.q)[1] for r in recordings}
        if len(widths) != 1:
            raise UserError(f"The bpnn residual learner got recordings of {sorted(widths)} joints.")
        target = np.concatenate([np.asarray(r, dtype=np.float64) for r in residuals])
        recording = np.concatenate([np.full(r.n_samples, i) for i, r in enumerate(recordings)])
        self.n_joints_ = int(widths.pop())
        features = self._features(_stack(recordings))  # (n, N, f)
        if not np.all(np.isfinite(features)) or not np.all(np.isfinite(target)):
            raise UserError(
                "The bpnn residual learner got non-finite values (NaN or inf) in its inputs "
                "or the residual; clean the recording (preprocessing) first."
            )
        if len(target) < 20:
            raise UserError(
                f"The bpnn residual learner got {len(target)} samples: too few to hold some out "
                "and train on the rest. Record a longer motion."
            )
        return features, target.T, recording

    def _set_folds(
        self, folds: list, features: np.ndarray, target: np.ndarray, standardised: np.ndarray
    ) -> None:
        """Fold counts, the output scaler, each fold's training range and distance support."""
        p, n = self.params, self.n_joints_
        self.n_folds_ = len(folds)
        self.n_members_ = max(1, math.ceil(p.ensemble_size / self.n_folds_))
        self.folds_ = [fold.kind for fold in folds]
        seen = np.any([fold.fit for fold in folds], axis=0)  # (n, N)
        self.y_mean_ = np.array([target[j, seen[j]].mean() for j in range(n)])
        self.y_std_ = _floored(np.array([target[j, seen[j]].std() for j in range(n)]))
        ranges = [[(features[j, f.fit[j]].min(0), features[j, f.fit[j]].max(0)) for j in range(n)]
                  for f in folds]  # fmt: skip
        self.fold_min_ = np.array([[r[0] for r in fold] for fold in ranges]).transpose(1, 0, 2)
        self.fold_max_ = np.array([[r[1] for r in fold] for fold in ranges]).transpose(1, 0, 2)
        self.x_min_, self.x_max_ = self.fold_min_.min(axis=1), self.fold_max_.max(axis=1)
        size = int(min(acceptance.MAX_SUPPORT, *(fold.fit.sum(axis=1).min() for fold in folds)))
        rows = [acceptance.support_rows(fold.fit, size)[:, :, None] for fold in folds]
        support = [np.take_along_axis(standardised, r, axis=1) for r in rows]
        self.support_ = np.concatenate(support, axis=1).astype(np.float32)  # fold f: [f·S, (f+1)·S)
        self.support_per_fold_ = size

    def _train(
        self, folds: list, features: np.ndarray, target: np.ndarray, standardised: np.ndarray
    ) -> None:
        """Train every network on its fold's training part, early stopping on the tail."""
        import torch

        p, F, M = self.params, self.n_folds_, self.n_members_
        stop = [acceptance.early_stopping_part(fold.fit, p.validation_fraction) for fold in folds]
        train = [fold.fit & ~s for fold, s in zip(folds, stop, strict=True)]
        if min(int(t.sum(axis=1).min()) for t in train) < 2 or (
            p.validation_fraction > 0 and min(int(s.sum(axis=1).min()) for s in stop) < 1
        ):
            raise UserError(
                f"The bpnn residual learner got {target.shape[1]} samples: too few for a "
                "training part and an early-stopping part of residual.validation_fraction="
                f"{p.validation_fraction} in every fold. Record a longer motion."
            )
        y = ((target - self.y_mean_[:, None]) / self.y_std_[:, None]).astype(np.float32)
        x_train, y_train, _ = gather(standardised, y, train, M)
        x_stop, y_stop, w_stop = gather(standardised, y, stop, M)
        outside = [self._outside(features, f) for f in range(F)]
        refused_stop = network.gather_flags(outside, stop, M)
        if p.validation_fraction == 0:  # no early stopping: empty early-stopping parts
            x_stop, y_stop, w_stop = x_stop[:, :0], y_stop[:, :0], w_stop[:, :0]
            refused_stop = refused_stop[:, :0]
        zero = np.repeat(-self.y_mean_ / self.y_std_, F * M)
        device = resolve_device(p.device)
        with torch_settings(p.seed):
            generator = torch.Generator(device="cpu").manual_seed(p.seed)
            layers = self._initial_layers(generator, device, zero)
            delta = np.repeat(p.huber_delta_nm / self.y_std_, F * M)
            loss = network.pointwise_loss(p.loss, delta, device)
            arrays = (x_train, y_train, x_stop, y_stop, w_stop)
            tensors = tuple(torch.from_numpy(a).to(device) for a in arrays)
            best, best_epoch, history, epoch = network.train_networks(
                p, layers, generator, tensors, refused_stop, zero, loss, device
            )
        self._state = {
            name: tensor.detach().cpu().contiguous()
            for name, tensor in zip(self._shapes(), best, strict=True)
        }
        self.history_ = dict(history)  # per joint: each joint's mean over its networks
        for name in ("train_loss_per_joint", "val_loss_per_joint"):
            self.history_[name] = [
                None if v is None else np.asarray(v).reshape(self.n_joints_, -1).mean(1).tolist()
                for v in history[name]
            ]
        self.best_epoch_ = [int(e) for e in best_epoch]
        self.epochs_run_ = int(epoch)

    def _shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the networks' tensors: weight (K, in, out), bias (K, 1, out) per layer."""
        k_networks, width = self.n_networks_, self.params.hidden_width
        sizes = [self.n_features_] + [width] * self.params.hidden_layers + [1]
        shapes: dict[str, tuple[int, ...]] = {}
        for k in range(len(sizes) - 1):
            shapes[f"layer{k}.weight"] = (k_networks, sizes[k], sizes[k + 1])
            shapes[f"layer{k}.bias"] = (k_networks, 1, sizes[k + 1])
        return shapes

    def _initial_layers(
        self, generator: torch.Generator, device: torch.device, zero: np.ndarray
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """PyTorch's Linear initialisation U(±1/sqrt(in)) per network; the last layer's weights
        at zero and its bias at the standardised 0 Nm, so an untrained network predicts
        residual 0 (the physical model alone)."""
        import torch

        shapes = list(self._shapes().values())
        layers = []
        for k in range(0, len(shapes), 2):
            w_shape, b_shape = shapes[k], shapes[k + 1]
            if k == len(shapes) - 2:  # output -y_mean/y_std: residual 0 in Nm
                weight = torch.zeros(w_shape)
                bias = torch.from_numpy(zero).float().view(b_shape)
            else:
                bound = 1.0 / math.sqrt(w_shape[1])
                weight = (torch.rand(w_shape, generator=generator) * 2 - 1) * bound
                bias = (torch.rand(b_shape, generator=generator) * 2 - 1) * bound
            layers.append((weight.to(device), bias.to(device)))
        return layers

    def _standardise(self, features: np.ndarray) -> np.ndarray:
        """(n, N, f) raw -> standardised float32 (non-finite values set to 0)."""
        x = ((features - self.x_mean_[:, None, :]) / self.x_std_[:, None, :]).astype(np.float32)
        x[~np.isfinite(x)] = 0.0  # refused by the range guard anyway; keeps NaN out of the nets
        return x

    def _member_outputs(self, x: np.ndarray) -> np.ndarray:
        """(n, F, M, N) every network's residual (Nm) at standardised inputs x (n, N, f)."""
        import torch

        n, F, M = self.n_joints_, self.n_folds_, self.n_members_
        device = resolve_device(self.params.device)
        with torch_settings(), torch.no_grad():
            tensors = [self._state[name].to(device) for name in self._shapes()]
            layers = list(zip(tensors[::2], tensors[1::2], strict=True))
            inputs = torch.from_numpy(np.ascontiguousarray(x)).to(device)
            inputs = inputs.repeat_interleave(F * M, dim=0)
            out = network.forward(inputs, layers).cpu().numpy()[:, :, 0].astype(np.float64)
        out = out.reshape(n, F, M, -1)
        return out * self.y_std_[:, None, None, None] + self.y_mean_[:, None, None, None]

    def _outside(self, features: np.ndarray, fold: int | None) -> np.ndarray:
        """(n, N) bool: outside the range guard of `fold` (None: of all folds' training data)."""
        low = self.x_min_ if fold is None else self.fold_min_[:, fold]
        high = self.x_max_ if fold is None else self.fold_max_[:, fold]
        if self.params.range_margin is None:
            return ~np.all(np.isfinite(features), axis=2)
        margin = self.params.range_margin * (high - low)
        inside = (features >= (low - margin)[:, None, :]) & (
            features <= (high + margin)[:, None, :]
        )
        return ~np.all(inside, axis=2)  # NaN counts as outside

    def _factor(
        self, members: np.ndarray, x: np.ndarray, features: np.ndarray, fold: int | None
    ) -> np.ndarray:
        """(n, N) share s of the members' (n, M', N) mean correction applied (`acceptance.py`),
        with the support and range of `fold` (None: all folds)."""
        p = self.params
        mean = members.mean(axis=1)
        spread = members.std(axis=1) if members.shape[1] > 1 else np.zeros_like(mean)
        factor = acceptance.disagreement_factor(mean, spread, p.disagreement_weight)
        if p.refuse_radius is not None:
            size = self.support_per_fold_
            support = (
                self.support_ if fold is None else self.support_[:, fold * size : (fold + 1) * size]
            )
            distance = acceptance.nearest_distance(support, x)
            factor = factor * acceptance.distance_factor(distance, p.trust_radius, p.refuse_radius)
        factor[self._outside(features, fold)] = 0.0
        return factor

    # ------------------------------------------------------------------------------ predict
    def predict(self, inputs: ResidualInputs) -> np.ndarray:
        """(N, n) predicted residual (Nm): the ensemble mean scaled by its trust factor; 0 for
        a joint that failed the held-out acceptance, outside the range guard, or far from
        the training data."""
        if self._state is None:
            raise RuntimeError("BpnnResidual.predict called before fit or load")
        n_samples = self._check_inputs(inputs, None, self.n_joints_)
        features = self._features(inputs)
        x = self._standardise(features)
        members = self._member_outputs(x).reshape(self.n_joints_, -1, n_samples)
        factor = self._factor(members, x, features, None)
        factor[~self.accepted_] = 0.0
        outside = self._outside(features, None)
        self.out_of_range_per_joint_ = (
            outside.mean(axis=1).tolist() if n_samples else [0.0] * self.n_joints_
        )
        self.out_of_range_fraction_ = float(outside.any(axis=0).mean()) if n_samples else 0.0
        self.prediction_report_ = acceptance.classify(factor)
        return np.ascontiguousarray((factor * members.mean(axis=1)).T)

    def save(self, folder: Path) -> None:
        """Write `folder/bpnn_weights.pt` and `folder/bpnn_model.json`."""
        files.save_model(self, folder)

    @classmethod
    def load(cls, folder: Path, device: str | None = None) -> BpnnResidual:
        """The model saved in `folder`, on its saved device or on `device` (absent: UserError)."""
        return files.load_model(cls, BpnnParams, folder, device)

    # ------------------------------------------------------------------------------ outputs
    def write_outputs(self, folder: Path) -> None:
        """Plot the training loss curves to `folder/plots/bpnn_training.png`."""
        files.plot_training(self, Path(folder) / files.PLOT_FILE)


@hookimpl
def register_residual_learners(register) -> None:
    register("bpnn", BpnnResidual, BpnnParams)
