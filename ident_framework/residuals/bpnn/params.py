"""Parameters of the `bpnn` residual learner (`residual.*`), validated when the config is
composed (a bad value fails before any job starts)."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import ListConfig

from ident_framework.errors import UserError
from ident_framework.params import Params, param
from ident_framework.residuals.bpnn.features import check_features
from ident_framework.residuals.bpnn.network import DEVICE_PATTERN, require_torch, resolve_device

DEFAULT_FEATURES = ["velocity", "friction"]
AUTO = "auto"  # features: auto -- each joint's set chosen among feature_candidates, held out
DEFAULT_CANDIDATES = [
    ["velocity", "friction"],  # friction-like: a function of the joint's own velocity
    ["sin_position", "cos_position", "velocity", "friction"],  # ... and of its angle (revolute)
]


def _torch_available(params: BpnnParams) -> None:
    require_torch()


def _feature_sets(params: BpnnParams) -> None:
    """`features` (a list or "auto") and `feature_candidates` (distinct lists), checked."""
    if params.features != AUTO:
        params.features = check_features(
            list(params.features) if not isinstance(params.features, str) else params.features
        )
    candidates = params.feature_candidates
    if isinstance(candidates, str) or not isinstance(candidates, list | tuple | ListConfig):
        candidates = None
    if not candidates:
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
    if not isinstance(params.device, str) or not DEVICE_PATTERN.match(params.device):
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
