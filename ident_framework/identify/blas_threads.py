"""One BLAS thread for the many small factorisations of estimation and tuning.

`threadpoolctl.threadpool_limits` scans every shared library of the process on each call
(~4 ms here with numpy, scipy, Pinocchio and MuJoCo loaded: 0.35 s of CPU in a 10^5-sample
tuning that entered it 86 times). `one_blas_thread()` reuses a controller, built again only
when one of the modules that bring a BLAS along has been imported since.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

from threadpoolctl import ThreadpoolController

_BLAS_MODULES = ("numpy", "scipy.linalg", "torch")


@cache
def _controller(loaded: tuple[bool, ...]) -> ThreadpoolController:
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """Context manager: the BLAS libraries of the process run on one thread inside it."""
    loaded = tuple(name in sys.modules for name in _BLAS_MODULES)
    return _controller(loaded).limit(limits=1, user_api="blas")
