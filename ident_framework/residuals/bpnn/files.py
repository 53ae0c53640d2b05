"""Files of the `bpnn` residual learner: `bpnn_weights.pt` (a state dict of tensors only: the
networks' layers and `support`, the standardised training samples of the distance guard),
`bpnn_model.json` (architecture, parameters, scalers, ranges, acceptance, history), both
checked when read back, and the training plot `plots/bpnn_training.png`.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.errors import UserError
from ident_framework.residuals.bpnn.features import check_features
from ident_framework.residuals.bpnn.network import DEVICE_PATTERN, resolve_device

WEIGHTS_FILE = "bpnn_weights.pt"
MODEL_FILE = "bpnn_model.json"
PLOT_FILE = "plots/bpnn_training.png"
FORMAT = "ident_framework.bpnn/2"
SUPPORT = "support"  # the state dict's distance support (n, folds x S, f)


def describe(model: Any) -> dict[str, Any]:
    """Plain (JSON-safe) description of the fitted model: everything but the weights."""
    if model._state is None:
        raise RuntimeError("BpnnResidual is not fitted")
    import torch

    from ident_framework.residuals.bpnn.features import describe_order

    return {
        "format": FORMAT,
        "plugin": "bpnn",
        "architecture": {
            "n_joints": model.n_joints_,
            "inputs": model.params.inputs,
            "features": list(model.feature_names_),
            "feature_mask": (
                None if model.feature_mask_ is None else model.feature_mask_.tolist()
            ),  # (n, n_features) with features: auto: the inputs joint j's network uses
            "n_features": model.n_features_,
            "feature_order": describe_order(model.feature_names_, model.params.inputs),
            "n_folds": model.n_folds_,
            "members_per_fold": model.n_members_,
            "network_order": "joint-major: network (j, fold, member) is j*F*M + fold*M + member",
            "support_per_fold": model.support_per_fold_,
            "hidden_width": model.params.hidden_width,
            "hidden_layers": model.params.hidden_layers,
            "activation": "relu",
            "tensors": {name: list(shape) for name, shape in model._shapes().items()},
        },
        "params": asdict(model.params),
        "input_scaler": {"mean": model.x_mean_.tolist(), "std": model.x_std_.tolist()},
        "output_scaler": {"mean": model.y_mean_.tolist(), "std": model.y_std_.tolist()},
        "training_range": {"min": model.x_min_.tolist(), "max": model.x_max_.tolist()},
        "fold_range": {"min": model.fold_min_.tolist(), "max": model.fold_max_.tolist()},
        "folds": model.folds_,
        "accepted": [bool(a) for a in model.accepted_],
        "acceptance": model.report_,
        "best_epoch": model.best_epoch_,
        "epochs_run": model.epochs_run_,
        "history": model.history_,
        "training_time_s": model.training_time_s_,
        "torch_version": torch.__version__,
    }


def save_model(model: Any, folder: Path) -> None:
    """Write `folder/bpnn_weights.pt` and `folder/bpnn_model.json`."""
    import torch

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    document = describe(model)
    state = {**model._state, SUPPORT: torch.from_numpy(np.ascontiguousarray(model.support_))}
    torch.save(state, folder / WEIGHTS_FILE)
    (folder / MODEL_FILE).write_text(json.dumps(document, indent=1))


def load_model(cls: type, params_type: type, folder: Path, device: str | None = None) -> Any:
    """The model saved in `folder` by `save_model` (see `BpnnResidual.load`)."""
    import torch

    folder = Path(folder)
    model_path, weights_path = folder / MODEL_FILE, folder / WEIGHTS_FILE
    redo = "re-run the identification with residual=bpnn to write it again"
    for path in (model_path, weights_path):
        if not path.is_file():
            raise UserError(
                f"The bpnn residual model file {path} is missing. Point to the run "
                f"directory of a run made with residual=bpnn, or {redo}."
            )
    model = _from_document(cls, params_type, model_path, device, redo)
    if not isinstance(model.params.device, str) or not DEVICE_PATTERN.match(model.params.device):
        raise UserError(
            f"The bpnn residual model file {model_path} names an unknown device "
            f"{model.params.device!r}; {redo}."
        )
    resolve_device(model.params.device)
    try:
        state = torch.load(weights_path, weights_only=True, map_location="cpu")
    except Exception as error:  # unpickling refused, truncated zip, ...
        raise UserError(
            f"The bpnn residual weights file {weights_path} cannot be read as a state dict "
            f"of tensors ({type(error).__name__}: {str(error).splitlines()[0]}); {redo}."
        ) from None
    checked = _checked_state(model, state, model_path, weights_path, redo)
    model.support_ = checked.pop(SUPPORT).numpy()
    model._state = checked
    return model


def _from_document(
    cls: type, params_type: type, model_path: Path, device: str | None, redo: str
) -> Any:
    """The model described by `model_path` (bpnn_model.json), without its weights."""
    try:
        document = json.loads(model_path.read_text())
        if document.get("format") != FORMAT:
            raise ValueError(f"format {document.get('format')!r} is not {FORMAT!r}")
        values = dict(document["params"])
        saved_device = values.pop("device", "cpu")
        model = cls(params_type(**values))  # device checked below, with its own message
        model.params.device = saved_device if device is None else device
        architecture = document["architecture"]
        model.n_joints_ = int(architecture["n_joints"])
        model.n_folds_ = int(architecture["n_folds"])
        model.n_members_ = int(architecture["members_per_fold"])
        model.support_per_fold_ = int(architecture["support_per_fold"])
        model.feature_names_ = check_features(list(architecture["features"]))
        if architecture["n_features"] != model.n_features_:
            raise ValueError("n_features does not match inputs and n_joints")
        n, f, folds = model.n_joints_, model.n_features_, model.n_folds_

        def array(value: Any, shape: tuple[int, ...]) -> np.ndarray:
            result = np.asarray(value, dtype=np.float64)
            if result.shape != shape or not np.all(np.isfinite(result)):
                raise ValueError(f"an array of shape {result.shape} is not a finite {shape}")
            return result

        mask = architecture.get("feature_mask")
        if mask is not None:
            model.feature_mask_ = np.asarray(mask, dtype=bool)
            if model.feature_mask_.shape != (n, f):
                raise ValueError(f"feature_mask is not of shape {(n, f)}")
        model.x_mean_ = array(document["input_scaler"]["mean"], (n, f))
        model.x_std_ = array(document["input_scaler"]["std"], (n, f))
        model.y_mean_ = array(document["output_scaler"]["mean"], (n,))
        model.y_std_ = array(document["output_scaler"]["std"], (n,))
        model.x_min_ = array(document["training_range"]["min"], (n, f))
        model.x_max_ = array(document["training_range"]["max"], (n, f))
        model.fold_min_ = array(document["fold_range"]["min"], (n, folds, f))
        model.fold_max_ = array(document["fold_range"]["max"], (n, folds, f))
        model.folds_ = [str(kind) for kind in document["folds"]]
        model.accepted_ = np.array([bool(a) for a in document["accepted"]], dtype=bool)
        if model.accepted_.shape != (n,):
            raise ValueError(f"accepted has {model.accepted_.size} entries, not {n}")
        model.report_ = document["acceptance"]
        model.best_epoch_ = [int(e) for e in document["best_epoch"]]
        model.epochs_run_ = int(document["epochs_run"])
        model.history_ = document["history"]
        model.training_time_s_ = float(document["training_time_s"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise UserError(
            f"The bpnn residual model file {model_path} is corrupt or not a bpnn model "
            f"({type(error).__name__}: {error}); {redo}."
        ) from None
    return model


def _checked_state(
    model: Any, state: Any, model_path: Path, weights_path: Path, redo: str
) -> dict[str, Any]:
    """The state dict read from `weights_path`, checked: names, shapes, finite float32."""
    import torch

    expected = {
        **model._shapes(),
        SUPPORT: (model.n_joints_, model.n_folds_ * model.support_per_fold_, model.n_features_),
    }
    problem = None
    if not isinstance(state, dict) or set(state) != set(expected):
        problem = f"its tensors {sorted(state) if isinstance(state, dict) else type(state)}"
        problem += f" are not {sorted(expected)}"
    else:
        for name, shape in expected.items():
            tensor = state[name]
            if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shape:
                problem = f"{name} is not a tensor of shape {shape}"
            elif tensor.dtype != torch.float32 or not bool(torch.isfinite(tensor).all()):
                problem = f"{name} is not finite float32"
            if problem:
                break
    if problem:
        raise UserError(
            f"The bpnn residual weights file {weights_path} does not match {model_path} "
            f"({problem}); {redo}."
        )
    return {name: state[name].contiguous() for name in expected}


def plot_training(model: Any, path: Path) -> None:
    """Train and validation loss per epoch (mean and per joint), best epochs marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    history = model.history_
    epochs = np.arange(len(history["val_loss"]))
    fig, (ax, ax_joint) = plt.subplots(1, 2, figsize=(12, 4))
    train = [np.nan if v is None else v for v in history["train_loss"]]
    ax.semilogy(epochs, train, label="train", color="tab:gray")
    if history["val_loss"][0] is not None:
        label = "early stopping (tail of each fold's training part)"
        ax.semilogy(epochs, history["val_loss"], label=label, color="tab:blue")
        per_joint = np.asarray(history["val_loss_per_joint"])
        for j in range(per_joint.shape[1]):
            verdict = "corrected" if model.accepted_[j] else "refused"
            ax_joint.semilogy(epochs, per_joint[:, j], lw=0.9, label=f"joint {j} ({verdict})")
        ax_joint.legend(fontsize=8)
    for best in sorted(set(model.best_epoch_)):
        ax.axvline(best, color="tab:red", lw=0.6, alpha=0.6)
    ax.set_title("bpnn residual: mean loss over networks (red: kept epochs)", fontsize=9)
    ax_joint.set_title("early-stopping loss per joint (mean of its networks)", fontsize=9)
    for a in (ax, ax_joint):
        a.set_xlabel("epoch (0: untrained)")
        a.set_ylabel("MSE of the standardised residual")
        a.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
