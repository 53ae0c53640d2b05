"""The `bpnn` residual learner's networks and their training in PyTorch (optional, the `bpnn`
extra, imported only inside the functions that need it): the import check, the device,
deterministic settings, the batched forward pass. Every network (joint, fold, member;
joint-major, K = n·F·M) gets its own samples, gathered into one (K, L, ...) array padded to
length L by repeating them (padding weight 0). Training: Adam on seeded shuffled minibatches,
the loss summed over the networks, early stopping per network (each keeps its best epoch;
training stops when none improved for `patience` epochs).
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ident_framework.errors import UserError

if TYPE_CHECKING:
    import torch


N_THREADS = 1  # more are much slower as soon as another process is busy
DEVICE_PATTERN = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")  # residual.device values
TORCH_BUILDS_URL = "https://pytorch.org/get-started/locally/"


def require_torch() -> None:
    """Import torch, or raise a UserError saying how to install it (the `bpnn` extra)."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        raise UserError(
            f"residual=bpnn needs PyTorch, which this Python environment ({sys.executable}) "
            f'cannot import ({error}). Install the bpnn extra: `pip install -e ".[bpnn]"` in '
            'a clone of ident_framework, `pip install "ident-framework[bpnn]"` otherwise. That '
            "installs PyTorch's default build for this platform (on Linux a CUDA build of "
            "several GB); to choose the build, install torch first: the CPU build with "
            "`pip install torch --index-url https://download.pytorch.org/whl/cpu`, a CUDA build "
            "with `--index-url https://download.pytorch.org/whl/cu<version>` (the versions are "
            f"listed at {TORCH_BUILDS_URL}). Or run without the residual learner: residual=none."
        ) from None


def resolve_device(name: str) -> torch.device:
    """The torch device for `name`, or a UserError when this machine does not have it."""
    import torch

    if name.startswith("cuda"):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(name.split(":")[1]) if ":" in name else 0
        if count == 0:
            raise UserError(
                f"residual.device={name} but this machine has no CUDA device; use "
                "residual.device=cpu."
            )
        if index >= count:
            raise UserError(
                f"residual.device={name} but this machine has only {count} CUDA device(s) "
                f"(cuda:0..cuda:{count - 1}); use one of them or residual.device=cpu."
            )
    elif name == "mps" and not torch.backends.mps.is_available():
        raise UserError(
            "residual.device=mps but this machine has no Apple MPS device; use residual.device=cpu."
        )
    return torch.device(name)


@contextlib.contextmanager
def torch_settings(seed: int | None = None) -> Iterator[None]:
    """Deterministic algorithms, a fixed thread count and (with `seed`) a seeded global RNG,
    all restored on exit so the rest of the process is not affected."""
    import torch

    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(N_THREADS)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_flush_denormal(True)  # weight decay drives weights into denormals: 2x slower
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            yield
    finally:
        torch.set_flush_denormal(False)  # the default (there is no getter)
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.set_num_threads(threads)


def forward(x: torch.Tensor, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """(n, B, in) standardised inputs -> (n, B, 1) standardised residuals, network j on x[j]."""
    import torch

    last = len(layers) - 1
    for k, (weight, bias) in enumerate(layers):
        x = torch.baddbmm(bias, x, weight)
        if k < last:
            x = torch.relu_(x)  # in place: baddbmm needs no output for its gradient
    return x


def sample_index(masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per joint and fold the samples of `masks[fold][joint]` ((n, N) bool each), padded to one
    length L by repeating them: index (n, F, L) and weight (n, F, L) (1 a sample, 0 padding)."""
    n = masks[0].shape[0]
    length = max(1, max(int(m.sum(axis=1).max()) for m in masks))
    index = np.zeros((n, len(masks), length), dtype=np.int64)
    weight = np.zeros((n, len(masks), length), dtype=np.float32)
    for f, mask in enumerate(masks):
        for j in range(n):
            rows = np.flatnonzero(mask[j])
            if rows.size:
                weight[j, f, : rows.size] = 1.0
                index[j, f] = np.resize(rows, length)
    return index, weight


def per_network(values: np.ndarray, members: int) -> np.ndarray:
    """(n, F, L, ...) per joint and fold -> (K, L, ...) per network (members repeated)."""
    repeated = np.repeat(values[:, :, None], members, axis=2)
    return np.ascontiguousarray(repeated.reshape(-1, *values.shape[2:]))


def gather(
    x: np.ndarray, y: np.ndarray, masks: list[np.ndarray], members: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per network its samples: x (K, L, f) of `x` (n, N, f), y (K, L, 1) of `y` (n, N),
    w (K, L, 1) their weights (0: padding)."""
    index, weight = sample_index(masks)
    joint = np.arange(x.shape[0])[:, None, None]
    return (
        per_network(x[joint, index], members),
        per_network(y[joint, index][..., None], members),
        per_network(weight[..., None], members),
    )


def gather_flags(flags: list[np.ndarray], masks: list[np.ndarray], members: int) -> np.ndarray:
    """(K, L, 1) per-fold flags ((n, N) bool each) at the samples `gather` takes."""
    index, _ = sample_index(masks)
    joint = np.arange(flags[0].shape[0])[:, None]
    picked = np.stack([flag[joint, index[:, f]] for f, flag in enumerate(flags)], axis=1)
    return per_network(picked[..., None], members)


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
    return lambda error: error**2


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
    per network; w_val: 0 for padding). The early-stopping loss is that of the network as used:
    samples `refused` predict `zero` (K,), the standardised 0 Nm. Returns (the kept tensors, the
    epoch each network kept, the loss history per network, epochs run)."""
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

    def validation() -> torch.Tensor | None:
        """Each network's early-stopping loss, appended to the history (None: no such part)."""
        current = None
        if n_val:
            with torch.no_grad():
                prediction = torch.where(refused_val, zero_val, forward(x_val, layers))
                current = ((loss(prediction - y_val) * w_val).sum(dim=(1, 2)) / w_total).cpu()
        history["val_loss"].append(None if current is None else current.mean().item())
        history["val_loss_per_joint"].append(None if current is None else current.tolist())
        return current

    def train_epoch() -> torch.Tensor:
        """One pass over the training part in shuffled minibatches; (K,) mean loss each."""
        n_train = x_train.shape[1]
        order = torch.randperm(n_train, generator=generator).to(x_train.device)
        total = torch.zeros(n, device=x_train.device)
        for begin in range(0, n_train, params.batch_size):
            index = order[begin : begin + params.batch_size]
            batch_loss = loss(forward(x_train[:, index], layers) - y_train[:, index]).mean((1, 2))
            optimizer.zero_grad(set_to_none=True)
            batch_loss.sum().backward()
            optimizer.step()
            total += batch_loss.detach() * len(index)
        return (total / n_train).cpu()

    best_loss = validation()
    best_loss = torch.full((n,), math.inf) if best_loss is None else best_loss
    best_epoch = torch.zeros(n, dtype=torch.long)
    bar = progress(
        range(1, params.epochs + 1), desc="bpnn residual", unit="epoch",
        enabled=params.progress, leave=False,
    )  # fmt: skip
    epoch = 0
    for epoch in bar:
        train_loss = train_epoch()
        history["train_loss"].append(train_loss.mean().item())
        history["train_loss_per_joint"].append(train_loss.tolist())
        postfix = {"train": f"{history['train_loss'][-1]:.4f}"}
        if (current := validation()) is not None:
            better = current < best_loss  # keep each network's weights of its best epoch
            if bool(better.any()):
                best_loss = torch.where(better, current, best_loss)
                best_epoch = torch.where(better, epoch, best_epoch)
                mask = better.to(device)
                with torch.no_grad():
                    for kept, now in zip(best, parameters, strict=True):
                        shape = (n,) + (1,) * (now.dim() - 1)
                        kept.copy_(torch.where(mask.view(shape), now, kept))
            postfix["val"] = f"{history['val_loss'][-1]:.4f}"
        bar.set_postfix(postfix, refresh=False)
        if n_val and params.patience and bool(((epoch - best_epoch) >= params.patience).all()):
            break
    bar.close()
    if not n_val:  # no early stopping: keep the last epoch
        best = [t.detach().clone() for t in parameters]
        best_epoch = torch.full((n,), epoch, dtype=torch.long)
    return best, best_epoch, history, epoch
