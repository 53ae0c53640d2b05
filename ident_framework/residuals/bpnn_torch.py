"""PyTorch helpers of the `bpnn` residual learner: the import check naming the install command,
the device, deterministic settings restored afterwards, and the batched forward pass of the
per-joint networks. torch is imported only inside these functions (it is an optional
dependency, the `bpnn` extra)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ident_framework.errors import UserError

if TYPE_CHECKING:
    import torch


# One torch thread: two gain ~30 % on an idle 2-core CPU but are 5-40x slower as soon as another
# process is busy (parallel tests, multirun jobs); one thread also fixes the kernels at load.
N_THREADS = 1


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
