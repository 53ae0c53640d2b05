"""Parameters of the `bpnn` residual learner (`residual.*`), validated when the config is
composed (a bad value fails before any job starts); see the package's docstring
for the method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from omegaconf import ListConfig

from ident_framework.errors import UserError
from ident_framework.residuals.bpnn.features import check_features
from ident_framework.residuals.bpnn.network import DEVICE_PATTERN, require_torch, resolve_device

DEFAULT_FEATURES = ["velocity", "friction"]
AUTO = "auto"  # features: auto -- each joint's set chosen among feature_candidates, held out
DEFAULT_CANDIDATES = [
    ["velocity", "friction"],  # friction-like: a function of the joint's own velocity
    ["sin_position", "cos_position", "velocity", "friction"],  # ... and of its angle (revolute)
]


@dataclass
class BpnnParams:
    """Parameters of the `bpnn` residual learner.

    features: input names per joint (`features.FEATURES`: position, sin_position,
    cos_position, velocity, acceleration, load, gravity, inertial, friction), or "auto": per
    joint, the set of `feature_candidates` whose networks lower the held-out RMSE most in their
    worst fold (all candidates train together on the same folds; the validation data play no
    part). feature_candidates: the sets "auto" chooses from. inputs: "joint" (network j sees
    joint j's features) or "full" (every network sees all joints'). hidden_width,
    hidden_layers: MLP size (ReLU). ensemble_size: members per joint (split over the folds,
    at least one per fold).
    epochs: maximum training epochs. learning_rate: Adam step size. weight_decay: Adam's L2
    penalty. batch_size: samples per minibatch. seed: weights, minibatch order, k-means.
    device: "cpu", "cuda", "cuda:<i>" or "mps". validation_fraction: share of each network's
    training samples kept for early stopping (blocks spread over the recordings), in [0, 1)
    (0: the last epoch is kept). patience: epochs without a better early-stopping loss
    before training stops (0: never early). acceptance: judge each joint on held-out motion (false:
    accept every joint,
    for experiments). acceptance_margin: the held-out RMSE reduction (fraction) a joint must
    reach to be corrected. holdout_fraction: share of the samples held out per joint when there
    is one recording (the region fold). disagreement_weight: κ of the ensemble shrinkage (0:
    none). trust_radius, refuse_radius: distance to the nearest training sample
    (standardised units) up to which corrections apply fully / beyond which they are 0;
    refuse_radius null: no distance shrinkage. range_margin: per-feature guard margin m (≥ 0)
    in units of each feature's training span; None: no guard. loss: "mse" or "huber"
    (quadratic up to huber_delta_nm, Nm). progress: tqdm bar over the epochs on stderr.
    """

    features: list[str] | str = field(default_factory=lambda: list(DEFAULT_FEATURES))
    feature_candidates: list[list[str]] = field(
        default_factory=lambda: [list(c) for c in DEFAULT_CANDIDATES]
    )
    inputs: str = "joint"
    hidden_width: int = 32
    hidden_layers: int = 2
    ensemble_size: int = 4
    epochs: int = 60
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    batch_size: int = 128
    seed: int = 0
    device: str = "cpu"
    validation_fraction: float = 0.2
    patience: int = 15
    acceptance: bool = True
    acceptance_margin: float = 0.02
    holdout_fraction: float = 0.2
    disagreement_weight: float = 1.0
    trust_radius: float = 0.25
    refuse_radius: float | None = 1.0
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

        def flag(name: str) -> None:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")

        require_torch()  # before any job runs: the learner cannot train or load without it
        self._check_feature_sets()
        if self.inputs not in ("joint", "full"):
            raise ValueError(f"inputs must be 'joint' or 'full', got {self.inputs!r}")
        for name in ("hidden_width", "hidden_layers", "ensemble_size", "epochs", "batch_size"):
            integer(name, 1)
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
        flag("acceptance")
        if not 0.0 <= number("acceptance_margin") < 1.0:
            raise ValueError(f"acceptance_margin must be in [0, 1), got {self.acceptance_margin}")
        if not 0.0 < number("holdout_fraction") <= 0.5:
            raise ValueError(f"holdout_fraction must be in (0, 0.5], got {self.holdout_fraction}")
        if not number("disagreement_weight") >= 0.0:
            raise ValueError(f"disagreement_weight must be >= 0, got {self.disagreement_weight}")
        if not number("trust_radius") >= 0.0:
            raise ValueError(f"trust_radius must be >= 0, got {self.trust_radius}")
        if self.refuse_radius is not None and not number("refuse_radius") > self.trust_radius:
            raise ValueError(
                f"refuse_radius must be > trust_radius ({self.trust_radius}) or null, got "
                f"{self.refuse_radius}"
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
        flag("progress")

    def _check_feature_sets(self) -> None:
        """`features` (a list or "auto") and `feature_candidates` (distinct lists), checked."""
        if self.features != AUTO:
            self.features = check_features(
                list(self.features) if not isinstance(self.features, str) else self.features
            )
        candidates = self.feature_candidates
        if isinstance(candidates, str) or not isinstance(candidates, list | tuple | ListConfig):
            candidates = None
        if not candidates:
            raise ValueError(
                "feature_candidates must be a non-empty list of feature lists, got "
                f"{self.feature_candidates!r}"
            )
        try:
            self.feature_candidates = [
                check_features(c if isinstance(c, str) else list(c)) for c in candidates
            ]
        except ValueError as error:
            raise ValueError(f"feature_candidates: {error}") from None
        if len({tuple(c) for c in self.feature_candidates}) != len(self.feature_candidates):
            raise ValueError(f"feature_candidates lists a set twice: {self.feature_candidates}")
