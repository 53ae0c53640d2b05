"""Rigid-body regressor: Pinocchio's per-sample loop vs the C kernel vs the numba one (on demand).

    python benchmarks/bench_rigid_body_regressor.py [--sizes 1000 10000 100000] [--robot ur10e]

For each size N, a multi-sine motion of the arm (q rad, dq rad/s, ddq rad/s²) is made and its
(N, n, 10 n) joint torque regressor computed by `RegressorBuilder.rigid_body_pinocchio` (one
`pin.computeJointTorqueRegressor` call per sample) and by `RegressorBuilder.rigid_body`
(`BatchRegressor`, model/rigid_body_regressor.py) with its C kernel and with its numba
fallback (IDENT_FRAMEWORK_NATIVE=0), each the best of `--repeats` runs taken in turn. Printed:
µs per sample of the loop; of each kernel in one call, in calls of `--chunk` samples (as the
identification calls it, `chunk_size`) and in one call on one thread (as inside a forked
worker: IDENT_FRAMEWORK_WORKERS=1), each with its ratio to the loop (the kernels run in
parallel only from `_PARALLEL_FROM` samples on); and the largest deviation of each kernel's
result from the loop's relative to the array's largest entry, and whether C and numba agree
bit for bit. First printed: each kernel's first call in this process (the C library loaded
from its cache or built; numba imported and its kernels loaded from `__pycache__` or compiled).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.rigid_body_regressor import _PARALLEL_FROM, c_kernel
from ident_framework.model.robot import load_robot
from ident_framework.parallel_work import worker_limit
from ident_framework.testing.known_truth import multisine

ENGINES = {"C": "1", "numba": "0"}  # IDENT_FRAMEWORK_NATIVE


@contextmanager
def environment(**values: str) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def forms(builder: RegressorBuilder, q, dq, ddq, chunk: int) -> dict[str, Callable]:
    """The timed calls: the loop, then per engine one call, chunked calls, one thread."""

    def engine(native: str, workers: str | None = None, step: int | None = None) -> Callable:
        def run() -> np.ndarray:
            extra = {} if workers is None else {"IDENT_FRAMEWORK_WORKERS": workers}
            with environment(IDENT_FRAMEWORK_NATIVE=native, **extra):
                if step is None:
                    return builder.rigid_body(q, dq, ddq)
                for start in range(0, len(q), step):
                    part = slice(start, start + step)
                    builder.rigid_body(q[part], dq[part], ddq[part])
                return np.empty(0)

        return run

    calls = {"loop": lambda: builder.rigid_body_pinocchio(q, dq, ddq)}
    for name, native in ENGINES.items():
        calls[f"{name} call"] = engine(native)
        calls[f"{name} chunked"] = engine(native, step=chunk)
        calls[f"{name} 1 thread"] = engine(native, workers="1")
    return calls


def measure(builder: RegressorBuilder, q, dq, ddq, repeats: int, chunk: int) -> tuple:
    """µs per sample of each form (the shortest of `repeats` runs taken in turn, so that a slow
    spell of the machine hits all), each engine's largest deviation from the loop relative to
    the array's largest entry, and whether the engines agree bit for bit."""
    calls = forms(builder, q, dq, ddq, chunk)
    best = dict.fromkeys(calls, np.inf)
    results = {}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            results[name] = call()
            best[name] = min(best[name], time.perf_counter() - start)
    loop = results["loop"]
    deviation = {
        name: float(np.abs(results[f"{name} call"] - loop).max() / np.abs(loop).max())
        for name in ENGINES
    }
    same = np.array_equal(results["C call"], results["numba call"])
    return {name: 1e6 * t / len(q) for name, t in best.items()}, deviation, same


def first_calls(builder: RegressorBuilder, q, dq, ddq) -> str:
    times = []
    for name, native in ENGINES.items():
        with environment(IDENT_FRAMEWORK_NATIVE=native):
            start = time.perf_counter()
            builder.rigid_body(q[:10], dq[:10], ddq[:10])  # the serial kernel
            builder.rigid_body(q, dq, ddq)  # the parallel one (unless on one core)
            times.append(f"{name} {time.perf_counter() - start:.3f} s")
    return ", ".join(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--robot", default="ur10e", help="a built-in UR arm")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=2000, help="samples per chunked call")
    parser.add_argument("--rate", type=float, default=500.0, help="sample rate of the motion, Hz")
    args = parser.parse_args()
    robot = load_robot(args.robot)
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()))
    if builder._batch is None:
        raise SystemExit(f"{args.robot}: the kernel does not support this model")
    if c_kernel() is None:
        raise SystemExit("no C kernel (no C compiler, or IDENT_FRAMEWORK_NATIVE=0)")
    q, dq, ddq = multisine(np.arange(2 * _PARALLEL_FROM) / args.rate, robot.n_joints, 0)
    print(f"first calls (load or build): {first_calls(builder, q, dq, ddq)}")
    print(
        f"{args.robot}, {robot.n_joints} joints, up to {worker_limit()} threads; µs per sample "
        f"(best of {args.repeats}), ratio = loop / kernel"
    )
    header = f"{'N':>8} {'loop':>7} {'kernel':>6} {'one call':>14} {f'{args.chunk}s':>14}"
    print(f"{header} {'1 thread':>14} {'max dev':>9} {'C == numba':>10}")
    for n in args.sizes:
        q, dq, ddq = multisine(np.arange(n) / args.rate, robot.n_joints, 0)
        per_sample, deviation, same = measure(builder, q, dq, ddq, args.repeats, args.chunk)
        loop = per_sample["loop"]
        for i, name in enumerate(ENGINES):
            kernels = [per_sample[f"{name} {form}"] for form in ("call", "chunked", "1 thread")]
            columns = " ".join(f"{k:>7.3f} ({loop / k:>4.1f})" for k in kernels)
            lead = f"{n:>8} {loop:>7.2f}" if i == 0 else " " * 16
            tail = f" {same!s:>10}" if i == 0 else ""
            print(f"{lead} {name:>6} {columns} {deviation[name]:>9.1e}{tail}")


if __name__ == "__main__":
    main()
