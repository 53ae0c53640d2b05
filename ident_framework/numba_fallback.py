"""Numba, set up once for the fallback kernels (the zero-phase filter's
`data/zero_phase_kernel.py`, the rigid-body regressor's `model/rigid_body_kernel.py`), which run
where the C kernels cannot be built (`c_kernels.py`; or IDENT_FRAMEWORK_NATIVE=0): import numba
from here, and only from a module imported when its numba loop is first called (numba's start
costs ~0.25-0.3 s and ~110 MB a process).

- Threads and fork: numba's default threading layer here is GNU OpenMP, which is not fork-safe
  (a forked child that runs a parallel region after its parent did is aborted; the project
  forks workers, `parallel_work.py`). Unless a layer was chosen (NUMBA_THREADING_LAYER), the
  fork-safe one is asked for (`"forksafe"`: TBB if installed, else numba's workqueue) before
  any parallel region has run.
- No SciPy: numba's import checks SciPy's version if it finds SciPy, and its first call of any
  compiled function loads its typing registries, one of which checks for a BLAS by importing
  scipy.linalg (0.17 s, a third of numba's whole start). Our loops use no BLAS: both happen
  here with SciPy hidden (numba then records "no BLAS" for its own np.dot & co., which nothing
  here compiles), and SciPy imports normally afterwards. Numba's start is still ~0.3 s a
  process (its import and this first call).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _scipy_hidden() -> Iterator[None]:
    """`import scipy...` raises ImportError inside (unless SciPy is imported already)."""
    if "scipy" in sys.modules:
        yield
        return
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("scipy", 0) is None:
            del sys.modules["scipy"]


with _scipy_hidden():  # numba's import checks SciPy's version when it finds one
    import numba

if numba.config.THREADING_LAYER == "default":  # not chosen (NUMBA_THREADING_LAYER): fork-safe
    numba.config.THREADING_LAYER = "forksafe"


@numba.njit(cache=True)
def _first_call() -> int:  # pragma: no cover (compiled)
    return 0


with _scipy_hidden():  # numba's first call loads its registries: their BLAS check imports SciPy
    _first_call()

__all__ = ["numba"]
