"""Training of the `bpnn` residual learner's networks (one per joint, fold and ensemble member,
batched): Adam on minibatches shuffled with a seeded generator, the loss summed over the
networks (each network's gradient is its own loss's), and early stopping on each network's
early-stopping loss (each keeps the weights of its own best epoch; training stops when none
improved for `patience` epochs). Runs inside `bpnn_torch.torch_settings`; see `bpnn.py` for
the whole method."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.residuals.bpnn_torch import forward

if TYPE_CHECKING:
    import torch

Layers = list[tuple["torch.Tensor", "torch.Tensor"]]
Loss = Callable[["torch.Tensor"], "torch.Tensor"]


def pointwise_loss(loss: str, delta: np.ndarray, device: torch.device) -> Loss:
    """The loss of each standardised error: squared ("mse"), or Huber ("huber", quadratic up
    to `delta` (n,) per joint, in each joint's standardised units)."""
    import torch

    if loss == "huber":
        limit = torch.from_numpy(delta.astype(np.float32)).to(device)[:, None, None]

        def huber(error: torch.Tensor) -> torch.Tensor:
            size = error.abs()
            return torch.where(size <= limit, 0.5 * size**2, limit * (size - 0.5 * limit))

        return huber

    def squared(error: torch.Tensor) -> torch.Tensor:
        return error**2

    return squared


def train_networks(
    params: Any,
    layers: Layers,
    generator: torch.Generator,
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    refused: np.ndarray,
    zero: np.ndarray,
    loss: Loss,
    device: torch.device,
) -> tuple[list[torch.Tensor], torch.Tensor, dict[str, list], int]:
    """Train `layers` in place on data = (x_train, y_train, x_val, y_val, w_val) (standardised,
    (K, N, f) and (K, N, 1) per network; w_val (K, N_val, 1) the weight of each early-stopping
    sample: 0 for padding) with the `BpnnParams` `params`. The early-stopping loss is that of
    the network as used: samples `refused` (K, N_val, 1) predict `zero` (K,), the standardised
    0 Nm. Returns (the kept tensors, the epoch each network kept, the loss history per
    network, epochs run)."""
    import torch

    from ident_framework.progress import progress

    x_train, y_train, x_val, y_val, w_val = data
    n, n_val = x_train.shape[0], x_val.shape[1]
    w_total = w_val.sum(dim=(1, 2)).clamp_min(1.0)
    parameters = [t for layer in layers for t in layer]
    for t in parameters:
        t.requires_grad_(True)
    optimizer = torch.optim.Adam(
        parameters, lr=params.learning_rate, weight_decay=params.weight_decay, fused=True
    )
    best = [t.detach().clone() for t in parameters]
    names = ("train_loss", "val_loss", "train_loss_per_joint", "val_loss_per_joint")
    history: dict[str, list] = {name: [None] if name.startswith("train") else [] for name in names}
    refused_val = torch.from_numpy(refused).to(device)
    zero_val = torch.from_numpy(zero.astype(np.float32)).to(device)[:, None, None]

    def validation_loss() -> torch.Tensor:
        with torch.no_grad():
            prediction = torch.where(refused_val, zero_val, forward(x_val, layers))
            return (loss(prediction - y_val) * w_val).sum(dim=(1, 2)) / w_total

    best_loss = validation_loss().cpu() if n_val else torch.full((n,), math.inf)
    best_epoch = torch.zeros(n, dtype=torch.long)
    history["val_loss"].append(best_loss.mean().item() if n_val else None)
    history["val_loss_per_joint"].append(best_loss.tolist() if n_val else None)
    bar = progress(
        range(1, params.epochs + 1), desc="bpnn residual", unit="epoch",
        enabled=params.progress, leave=False,
    )  # fmt: skip
    epoch = 0
    for epoch in bar:
        train_loss = _epoch(layers, optimizer, loss, x_train, y_train, params.batch_size, generator)
        history["train_loss"].append(train_loss.mean().item())
        history["train_loss_per_joint"].append(train_loss.tolist())
        if not n_val:
            history["val_loss"].append(None)
            history["val_loss_per_joint"].append(None)
            bar.set_postfix(train=f"{history['train_loss'][-1]:.4f}", refresh=False)
            continue
        current = validation_loss().cpu()
        history["val_loss"].append(current.mean().item())
        history["val_loss_per_joint"].append(current.tolist())
        best_loss, best_epoch = _keep_better(
            current, best_loss, best_epoch, epoch, best, parameters, device
        )
        bar.set_postfix(
            train=f"{history['train_loss'][-1]:.4f}",
            val=f"{history['val_loss'][-1]:.4f}",
            refresh=False,
        )
        if params.patience and bool(((epoch - best_epoch) >= params.patience).all()):
            break
    bar.close()
    if not n_val:  # no early stopping: keep the last epoch
        best = [t.detach().clone() for t in parameters]
        best_epoch = torch.full((n,), epoch, dtype=torch.long)
    return best, best_epoch, history, epoch


def _epoch(
    layers: Layers,
    optimizer: torch.optim.Optimizer,
    loss: Loss,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    batch_size: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """One pass over the training part in shuffled minibatches; (n,) mean loss per joint."""
    import torch

    n, n_train, device = x_train.shape[0], x_train.shape[1], x_train.device
    order = torch.randperm(n_train, generator=generator).to(device)
    total = torch.zeros(n, device=device)
    for begin in range(0, n_train, batch_size):
        index = order[begin : begin + batch_size]
        error = forward(x_train[:, index], layers) - y_train[:, index]
        per_joint = loss(error).mean(dim=(1, 2))
        optimizer.zero_grad(set_to_none=True)
        per_joint.sum().backward()
        optimizer.step()
        total += per_joint.detach() * len(index)
    return (total / n_train).cpu()


def _keep_better(
    loss: torch.Tensor,
    best_loss: torch.Tensor,
    best_epoch: torch.Tensor,
    epoch: int,
    best: list[torch.Tensor],
    parameters: list[torch.Tensor],
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep, per joint, the weights of the epoch with the lowest validation loss so far."""
    import torch

    better = loss < best_loss
    if bool(better.any()):
        best_loss = torch.where(better, loss, best_loss)
        best_epoch = torch.where(better, epoch, best_epoch)
        mask = better.to(device)
        n = len(mask)
        with torch.no_grad():
            for kept, current in zip(best, parameters, strict=True):
                shape = (n,) + (1,) * (current.dim() - 1)
                kept.copy_(torch.where(mask.view(shape), current, kept))
    return best_loss, best_epoch
