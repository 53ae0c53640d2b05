"""Threads for Pinocchio's per-sample regressor calls, which release the interpreter lock.

`computeJointTorqueRegressor` is one call per sample; Pinocchio releases Python's lock
inside it, so a chunk of samples split over two threads runs on two cores (measured here:
20,000 UR10e samples, 0.236 s on one thread, 0.142 s on two at load 3). Only the call loop
is split: Python work elsewhere on threads waits for the lock more than it gains (measured:
the tuning's candidates on two threads were slower than on one; they run on forked workers,
`parallel_work.py`). One pool per process (a forked child builds its own), started on
first use; `parts` gives the row slices, one per thread, none shorter than MIN_ROWS.
IDENT_FRAMEWORK_WORKERS caps the thread count as it caps the workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from ident_framework.parallel_work import worker_limit

MAX_THREADS = 2
MIN_ROWS = 500  # rows per thread at least (below, the hand-over costs more than it saves)


@cache
def _pool(pid: int, workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ident-regressor")


def parts(n_rows: int) -> list[slice]:
    """Contiguous row slices of `n_rows` rows, one per thread to use (one: no threads)."""
    count = max(1, min(MAX_THREADS, worker_limit(), n_rows // MIN_ROWS))
    bounds = [round(i * n_rows / count) for i in range(count + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def run_each(work: Callable[[slice], None], rows: list[slice]) -> None:
    """`work(r)` for every slice on the pool's threads (the first on the calling thread);
    the first error is raised."""
    pool = _pool(os.getpid(), len(rows) - 1)
    futures = [pool.submit(work, r) for r in rows[1:]]
    work(rows[0])
    for future in futures:
        future.result()
