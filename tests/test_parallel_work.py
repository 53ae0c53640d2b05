"""Forked workers: the same results as one process, in order (this process takes tasks
too), errors raised where the work was asked for, and serial where forking is not wise."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from ident_framework import parallel_work
from ident_framework.errors import UserError
from ident_framework.parallel_work import (
    Told,
    forked_imap,
    forked_map,
    forked_pool,
    usable_cores,
    worker_count,
)

two_cores = pytest.mark.skipif(usable_cores() < 2, reason="needs two usable cores")


@two_cores
def test_forked_map_returns_every_result_in_order_from_this_and_other_processes():
    """Results in order; this process takes tasks too, the forked workers the others."""
    data = np.arange(10_000.0)  # inherited by the workers, not sent

    def work(i: int) -> tuple[int, float, int]:
        time.sleep(0.02)
        return i, float(data[i::7].sum()), os.getpid()

    results = forked_map(work, list(range(9)))
    assert [r[:2] for r in results] == [(i, float(data[i::7].sum())) for i in range(9)]
    pids = {r[2] for r in results}
    assert os.getpid() in pids and len(pids) >= 2
    assert worker_count(9) == min(usable_cores(), 9, parallel_work.MAX_WORKERS)


@two_cores
def test_forked_imap_hands_out_results_while_the_workers_go_on(tmp_path):
    """The first result is here before the last task has started; closing the iterator early
    stops the workers, and a map after it runs forked again."""
    started = tmp_path / "started"
    started.mkdir()

    def work(i: int) -> int:
        (started / str(i)).touch()
        if i > 0:
            time.sleep(0.2)
        return i * i

    arriving = forked_imap(work, list(range(8)))
    assert next(arriving) == 0
    assert len(list(started.iterdir())) < 8  # tasks 6 and 7 wait for a free worker
    assert next(arriving) == 1
    arriving.close()  # the consumer stops: the pool is terminated and joined
    assert parallel_work._work is None
    assert len(set(forked_map(lambda i: time.sleep(0.05) or os.getpid(), [0, 1, 2]))) == 2
    assert list(forked_imap(lambda i: i + 1, [1, 2, 3])) == [2, 3, 4]


@two_cores
def test_a_workers_error_is_raised_to_the_caller_with_its_message():
    def work(i: int) -> int:
        if i == 2:
            raise UserError("candidate 2 is too short to filter")
        return i

    with pytest.raises(UserError, match="candidate 2 is too short"):
        forked_map(work, [0, 1, 2, 3])


@two_cores
def test_a_forked_pool_serves_many_batches_from_the_same_workers():
    """Each batch's results in order; every batch runs on the workers forked at entry (no
    fork per batch); a task's error reaches the caller and the pool is closed after it."""
    data = np.arange(1000.0)

    def work(i: int) -> tuple[int, float, int]:
        if i < 0:
            raise UserError(f"task {i} refused")
        time.sleep(0.005)
        return i, float(data[i::3].sum()), os.getpid()

    workers = set()
    with forked_pool(work, batch=4) as mapped:
        for start in range(0, 40, 8):
            batch = list(range(start, start + 8))
            results = list(mapped(batch, 1 + start % 3))
            assert [r[:2] for r in results] == [(i, float(data[i::3].sum())) for i in batch]
            workers |= {r[2] for r in results}
    assert os.getpid() in workers and 2 <= len(workers) <= min(usable_cores(), 4)
    assert parallel_work._work is None
    with pytest.raises(UserError, match="task -1 refused"):
        with forked_pool(work, batch=2) as mapped:
            list(mapped([0, -1, 2], 1))
    assert parallel_work._work is None


def test_a_forked_pool_of_one_worker_runs_here(monkeypatch):
    monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", "1")
    with forked_pool(lambda i: (i, os.getpid()), batch=8) as mapped:
        assert not mapped.parallel
        mapped.tell("nothing to tell: no forked worker")
        assert list(mapped([0, 1], 1)) == [(0, os.getpid()), (1, os.getpid())]


@two_cores
def test_a_forked_pool_tells_its_workers_state_built_after_the_fork():
    """`PoolMap.tell`: every forked worker (not this process) gets the message before its
    next items; the workers' results then use it like this process's own state. A tell that
    fails in a worker fails that worker's tasks."""
    state: dict[str, np.ndarray] = {}

    def work(item: object) -> tuple[float, int]:
        if isinstance(item, Told):
            name, values = item.message
            state[name] = values
            return 0.0, os.getpid()
        time.sleep(0.005)
        return float(state["table"][item]), os.getpid()

    with forked_pool(work, batch=2) as mapped:
        assert mapped.parallel
        state["table"] = np.arange(20.0) ** 2  # after the fork: the workers lack it
        mapped.tell(("table", state["table"]))
        results = list(mapped(list(range(20)), 1))
    assert [r[0] for r in results] == [float(i**2) for i in range(20)]
    assert len({r[1] for r in results}) == 2

    def refuse(item: object) -> object:
        if isinstance(item, Told):
            raise UserError("no state for the workers")
        time.sleep(0.01)
        return item

    with pytest.raises(UserError, match="no state"):  # a failed tell: the worker's tasks fail
        with forked_pool(refuse, batch=2) as mapped:
            mapped.tell(None)
            list(mapped(list(range(20)), 1))


def test_workers_are_capped_by_the_environment_and_never_nested(monkeypatch):
    monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", "1")
    assert worker_count(8) == 1
    assert forked_map(lambda i: (i, os.getpid()), [0, 1]) == [(0, os.getpid()), (1, os.getpid())]
    monkeypatch.delenv("IDENT_FRAMEWORK_WORKERS")
    # inside a worker, a map runs in that worker (no pool of pools)
    inner = forked_map(lambda i: (worker_count(4), parallel_work.worker_limit()), [0, 1])
    if usable_cores() >= 2:
        assert inner == [(1, 1), (1, 1)]
