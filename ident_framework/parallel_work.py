"""How many cores to use, and independent CPU-bound tasks on forked worker processes.

`worker_limit` caps the forked workers; `forked_map` runs tasks on forked processes, results
sent back by pickle; `forked_pool` keeps forked workers for many small batches (the excitation
search's candidates, a CMA-ES generation at a time); `shared_zeros` makes an array the
workers write into and the parent reads (large results, not pickled).

The tuning builds one column space per preprocessing candidate (filters, Pinocchio's
per-sample regressor, small QR factorisations: about 0.2 s each for 10⁵ samples), ten of
them by default, independent of one another. Threads do not help there: the work is many
short compiled calls between Python lines, and the threads spend their time waiting for the
interpreter lock (measured: slower on two threads than on one; splitting the final pass's
Pinocchio loop over two threads was slower too, 0.72 s against 0.63 s for 10⁵ samples).
Forked processes inherit the data without copying it and return only the small factors.

Serial where forking is not possible or not wise: one usable core, a single task, no `fork`
start method (not Linux), inside a daemonic process (which may not have children), or when
IDENT_FRAMEWORK_WORKERS=1 (the environment variable caps the worker count).
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

MAX_WORKERS = 8

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_work: Callable[[Any], Any] | None = None  # the task of the current map (inherited by fork)
_in_worker = False  # True in a forked worker: everything there runs on one core


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_limit() -> int:
    """Worker processes to use at most: the usable cores, capped by
    IDENT_FRAMEWORK_WORKERS when it is set to a positive integer (1 inside a forked worker:
    the workers share the cores already)."""
    if _in_worker:
        return 1
    cap = os.environ.get("IDENT_FRAMEWORK_WORKERS", "")
    limit = int(cap) if cap.isdigit() and int(cap) > 0 else MAX_WORKERS
    return max(1, min(limit, usable_cores()))


def worker_count(tasks: int) -> int:
    """Workers `forked_map` uses for `tasks` tasks (1: it runs them in this process)."""
    count = min(worker_limit(), tasks)
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if multiprocessing.current_process().daemon or _work is not None:  # no nested pools
        return 1
    return max(1, count)


def _call(item: Any) -> Any:
    global _in_worker
    _in_worker = True
    assert _work is not None
    return _work(item)


def forked_map(
    work: Callable[[_Item], _Result],
    items: Sequence[_Item],
    done: Callable[[int], object] | None = None,
) -> list[_Result]:
    """[work(item) for item in items], on forked workers when that helps; the first error
    of a task is raised here. `work` may be a closure: the workers inherit it by fork.
    `done(i)` is called here as item i's result arrives, in order (e.g. a progress bar)."""
    return _collect(forked_imap(work, items), done)


def forked_imap(work: Callable[[_Item], _Result], items: Sequence[_Item]) -> Iterator[_Result]:
    """work(item) for each item, in order, each as soon as it and those before it are done,
    on forked workers when that helps (as `forked_map`): what this process does with the
    first results overlaps the workers' work on the next ones. Consume it to the end (or
    close it: the workers are then stopped)."""
    workers = worker_count(len(items))
    if workers == 1:
        yield from map(work, items)
        return
    global _work
    _work = work
    pool = multiprocessing.get_context("fork").Pool(workers)
    try:
        yield from pool.imap(_call, items, chunksize=1)
        # let the workers leave on their own: terminating them (what `with Pool()` does)
        # can leave a queue lock held by a killed worker, and the pool's join then waits
        # forever (seen once in CI: both workers killed by SIGTERM, the command hung)
        pool.close()
    except BaseException:  # a task's error, or the consumer stopped early (GeneratorExit)
        pool.terminate()
        raise
    finally:
        pool.join()
        _work = None


@contextmanager
def forked_pool(
    work: Callable[[_Item], _Result], batch: int
) -> Iterator[Callable[[Sequence[_Item], int], Iterator[_Result]]]:
    """A map kept open for a whole block: `map(items, chunk)` yields work(item) for each
    item, in order, on workers forked once at entry (they inherit `work` and whatever it
    closes over, as of then), `chunk` items per message. For many small batches, e.g. one
    generation of an evolution strategy at a time, where forking per batch would cost more
    than the work. `batch`: the fewest items a call gets (no more workers than that).
    Serial where `forked_map` is."""
    workers = worker_count(batch)
    if workers == 1:
        yield lambda items, chunk: map(work, items)
        return
    global _work
    _work = work
    pool = multiprocessing.get_context("fork").Pool(workers)

    def mapped(items: Sequence[_Item], chunk: int) -> Iterator[_Result]:
        return pool.imap(_call, items, chunksize=chunk)

    try:
        yield mapped
        pool.close()  # as forked_imap: let the workers leave on their own
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        _work = None


def _collect(results: Iterable[_Result], done: Callable[[int], object] | None) -> list[_Result]:
    """The results in order, `done(i)` as result i arrives."""
    out = []
    for i, result in enumerate(results):
        out.append(result)
        if done is not None:
            done(i)
    return out


def shared_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """float64 zeros of `shape` in an anonymous shared mapping: what a forked worker writes
    into it, this process reads (no copy, no pickle)."""
    count = int(np.prod(shape, dtype=np.int64))
    buffer = mmap.mmap(-1, max(8, 8 * count))  # MAP_SHARED | MAP_ANONYMOUS, zero-filled
    return np.frombuffer(buffer, dtype=np.float64, count=count).reshape(shape)
