"""How many cores to use, and independent CPU-bound tasks on forked worker processes.

- `worker_limit()`: the processes to use (IDENT_FRAMEWORK_WORKERS caps it).
- `forked_map(work, items)` (and `forked_imap`): tasks on forked workers and in this process.
- `forked_pool`: forked workers kept for many small batches (a CMA-ES generation at a time;
  the tuning's whole search), told state built after the fork (`PoolMap.tell`).
- `shared_zeros`: an array the workers write into and the parent reads (large results).

Serial with one usable core or task, without the `fork` start method, inside a daemonic
process or a task of a map, or with IDENT_FRAMEWORK_WORKERS=1.

Rationale: docs/design.md#parallel-work
"""

from __future__ import annotations

import mmap
import multiprocessing
import multiprocessing.connection
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
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
    """Worker processes to use at most: the usable cores, capped by IDENT_FRAMEWORK_WORKERS
    (1 inside a forked worker, and here while this process takes tasks of a forked map)."""
    if _in_worker or _work is not None:
        return 1
    cap = os.environ.get("IDENT_FRAMEWORK_WORKERS", "")
    limit = int(cap) if cap.isdigit() and int(cap) > 0 else MAX_WORKERS
    return max(1, min(limit, usable_cores()))


def worker_count(tasks: int) -> int:
    """Workers `forked_map` uses for `tasks` tasks (1: it runs them in this process)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if multiprocessing.current_process().daemon:  # no nested pools
        return 1
    return max(1, min(worker_limit(), tasks))  # 1 inside a map's task


def forked_map(
    work: Callable[[_Item], _Result],
    items: Sequence[_Item],
    done: Callable[[int], object] | None = None,
) -> list[_Result]:
    """[work(item) for item in items], on forked workers when that helps; the first error
    of a task is raised here. `work` may be a closure: the workers inherit it by fork.
    `done(i)` is called here as item i's result arrives, in order (e.g. a progress bar)."""
    results = []
    for i, result in enumerate(forked_imap(work, items)):
        results.append(result)
        if done is not None:
            done(i)
    return results


def forked_imap(work: Callable[[_Item], _Result], items: Sequence[_Item]) -> Iterator[_Result]:
    """work(item) for each item, in order, as soon as it and those before it are done (as
    `forked_map`; this process takes tasks too). Consume it to the end, or close it."""
    workers = worker_count(len(items))
    if workers == 1:
        yield from map(work, items)
        return
    with _forked(work, workers - 1, items) as team:
        yield from team.run(work, items)


class PoolMap:
    """The map of a `forked_pool`: `pool(items, chunk)` yields work(item) for each item, in
    order (`chunk` is ignored); `pool.tell(message)` has each forked worker (not this
    process) run work(Told(message)) before its next items (state the workers need, e.g.
    an array built here after the fork); `parallel`: whether there are forked workers;
    `processes`: the processes that take items."""

    def __init__(self, work: Callable[[Any], Any], team: _Team | None) -> None:
        self.work, self.team = work, team

    @property
    def parallel(self) -> bool:
        return self.team is not None

    @property
    def processes(self) -> int:
        """The processes that take items: the forked workers and this one."""
        return 1 + (len(self.team.workers) if self.team is not None else 0)

    def __call__(self, items: Sequence[Any], chunk: int = 1) -> Iterator[Any]:
        if self.team is None:
            return map(self.work, items)
        self.team.send(items)
        return self.team.run(self.work, items)

    def tell(self, message: Any) -> None:
        if self.team is not None:
            self.team.send(Told(message))


class Told:
    """A message `PoolMap.tell` sends every forked worker: its work function gets this."""

    def __init__(self, message: Any) -> None:
        self.message = message


@contextmanager
def forked_pool(work: Callable[[_Item], _Result], batch: int) -> Iterator[PoolMap]:
    """A map kept open for a whole block (a `PoolMap`): `map(items, chunk)` yields
    work(item) for each item, in order, on workers forked once at entry (they inherit `work`
    as of then; each call's items are sent to them) and in this process. `batch`: the fewest
    items a call gets (no more processes than that); `chunk` is ignored. Serial where
    `forked_map` is."""
    workers = worker_count(batch)
    if workers == 1:
        yield PoolMap(work, None)
        return
    with _forked(work, workers - 1, None) as team:
        yield PoolMap(work, team)


@contextmanager
def _forked(work: Callable[[Any], Any], count: int, items: Sequence[Any] | None) -> Iterator[_Team]:
    """`count` workers forked for `work` (a `_Team`): closed at the end, terminated on an
    error (a task's, or the consumer stopped early: GeneratorExit)."""
    global _work
    _work = work
    team = _Team(count, items)
    try:
        yield team
        team.close()
    except BaseException:
        team.terminate()
        raise
    finally:
        _work = None


class _Team:
    """Forked workers that take tasks (indices into the current items) from a counter they
    share with this process, which takes tasks too; each worker sends back (index, ok, result
    or error) and, when the counter is spent, None. `items`: the items, inherited by fork
    (`forked_imap`: one batch); None: each batch's items are sent to the workers (`send`)."""

    def __init__(self, count: int, items: Sequence[Any] | None) -> None:
        context = multiprocessing.get_context("fork")
        self.counter = context.RawValue("q", 0)
        self.lock = context.Lock()
        self.workers: list[tuple[Any, Any]] = []  # (process, connection)
        for _ in range(count):
            here, there = context.Pipe(duplex=True)
            process = context.Process(target=_serve, args=(self, there, items), daemon=True)
            process.start()
            there.close()
            self.workers.append((process, here))

    def claim(self, count: int) -> int | None:
        """The next task's index, or None when all `count` are taken."""
        with self.lock:
            index = self.counter.value
            self.counter.value = index + 1
        return index if index < count else None

    def send(self, items: Sequence[Any] | Told) -> None:
        """A new batch: the counter restarts, each worker gets the items (or a `Told`
        message, which does not touch the counter)."""
        if not isinstance(items, Told):
            self.counter.value = 0
        for _, connection in self.workers:
            connection.send(items)

    def run(self, work: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """The results of work(item) in order: this process takes tasks until the counter is
        spent, collecting the workers' results between its own."""
        count = len(items)
        results: dict[int, tuple[bool, Any]] = {}
        busy = {connection for _, connection in self.workers}
        following = 0
        while following < count:
            if following in results:
                ok, value = results.pop(following)
                if not ok:
                    raise value
                yield value
                following += 1
                continue
            for connection in multiprocessing.connection.wait(list(busy), timeout=0):
                self._receive(connection, results, busy)
            if following in results:
                continue
            index = self.claim(count)
            if index is not None:
                results[index] = _attempt(work, items[index])
            elif busy:
                for connection in multiprocessing.connection.wait(list(busy)):
                    self._receive(connection, results, busy)
            else:
                raise RuntimeError(
                    f"task {following} of a forked map never returned (a worker ended early)"
                )
        for connection in list(busy):  # wait for each worker's end of batch
            while connection in busy:
                self._receive(connection, results, busy)

    def _receive(
        self, connection: Any, results: dict[int, tuple[bool, Any]], busy: set[Any]
    ) -> None:
        try:
            message = connection.recv()
        except EOFError:
            message = None
        if message is None:  # the counter is spent for this worker (or it ended)
            busy.discard(connection)
        else:
            index, ok, value = message
            results[index] = (ok, value)

    def close(self) -> None:
        """Let the workers leave and wait for them."""
        for process, connection in self.workers:
            with suppress(OSError):  # a worker that ended
                connection.send(None)
            connection.close()
            process.join()

    def terminate(self) -> None:
        for process, connection in self.workers:
            process.terminate()
            connection.close()
        for process, _ in self.workers:
            process.join()


def _attempt(work: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    try:
        return True, work(item)
    except BaseException as error:  # raised where the results are read, in order
        return False, error


def _serve(team: _Team, connection: Any, items: Sequence[Any] | None) -> None:
    """A worker: for each batch (the inherited items once, or each batch sent), take tasks
    from the shared counter and send back their results, then None."""
    global _in_worker
    _in_worker = True
    assert _work is not None
    told: tuple[bool, Any] = (True, None)  # a failed `Told`: its error is every task's
    while True:
        batch = items if items is not None else connection.recv()
        if batch is None:
            break
        if isinstance(batch, Told):  # state for the next items
            told = _attempt(_work, batch) if told[0] else told
            continue
        while (index := team.claim(len(batch))) is not None:
            ok, value = _attempt(_work, batch[index]) if told[0] else told
            try:
                connection.send((index, ok, value))
            except Exception as error:  # a result or error that does not pickle
                connection.send((index, False, RuntimeError(f"{type(error).__name__}: {error}")))
        connection.send(None)
        if items is not None:  # one batch: the inherited items
            break
    connection.close()


def shared_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """float64 zeros of `shape` in an anonymous shared mapping: what a forked worker writes
    into it, this process reads (no copy, no pickle)."""
    count = int(np.prod(shape, dtype=np.int64))
    buffer = mmap.mmap(-1, max(8, 8 * count))  # MAP_SHARED | MAP_ANONYMOUS, zero-filled
    return np.frombuffer(buffer, dtype=np.float64, count=count).reshape(shape)
