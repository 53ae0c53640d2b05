"""Forked workers and the regressor's threads: the same results as one process, in order,
errors raised where the work was asked for, and serial where forking is not wise."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ident_framework import parallel_work
from ident_framework.errors import UserError
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model import sample_threads
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.parallel_work import forked_map, usable_cores, worker_count

two_cores = pytest.mark.skipif(usable_cores() < 2, reason="needs two usable cores")


@two_cores
def test_forked_map_returns_every_result_in_order_from_other_processes():
    data = np.arange(10_000.0)  # inherited by the workers, not sent

    def work(i: int) -> tuple[int, float, int]:
        return i, float(data[i::7].sum()), os.getpid()

    results = forked_map(work, list(range(9)))
    assert [r[:2] for r in results] == [(i, float(data[i::7].sum())) for i in range(9)]
    assert os.getpid() not in {r[2] for r in results}
    assert worker_count(9) == min(usable_cores(), 9, parallel_work.MAX_WORKERS)


@two_cores
def test_a_workers_error_is_raised_to_the_caller_with_its_message():
    def work(i: int) -> int:
        if i == 2:
            raise UserError("candidate 2 is too short to filter")
        return i

    with pytest.raises(UserError, match="candidate 2 is too short"):
        forked_map(work, [0, 1, 2, 3])


def test_workers_are_capped_by_the_environment_and_never_nested(monkeypatch):
    monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", "1")
    assert worker_count(8) == 1
    assert forked_map(lambda i: (i, os.getpid()), [0, 1]) == [(0, os.getpid()), (1, os.getpid())]
    monkeypatch.delenv("IDENT_FRAMEWORK_WORKERS")
    # inside a worker, a map runs in that worker (no pool of pools)
    inner = forked_map(lambda i: (worker_count(4), parallel_work.worker_limit()), [0, 1])
    if usable_cores() >= 2:
        assert inner == [(1, 1), (1, 1)]


def test_the_regressor_on_two_threads_equals_one_sample_at_a_time(monkeypatch):
    robot = load_robot("ur10e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    rng = np.random.default_rng(4)
    q, dq, ddq = (rng.uniform(-3, 3, (3001, 6)) for _ in range(3))
    threaded = builder.rigid_body(q, dq, ddq)
    monkeypatch.setenv("IDENT_FRAMEWORK_WORKERS", "1")
    assert len(sample_threads.parts(len(q))) == 1
    single = builder.rigid_body(q, dq, ddq)
    assert np.array_equal(threaded, single)
    monkeypatch.delenv("IDENT_FRAMEWORK_WORKERS")
    if usable_cores() >= 2:
        rows = sample_threads.parts(len(q))
        assert len(rows) == 2 and rows[0].stop == rows[1].start and rows[1].stop == len(q)
