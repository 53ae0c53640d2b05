"""Rigid-body regressor: Pinocchio's per-sample loop vs the numba kernel (run on demand).

    python benchmarks/bench_rigid_body_regressor.py [--sizes 1000 10000 100000] [--robot ur10e]

For each size N, a multi-sine motion of the arm (q rad, dq rad/s, ddq rad/s²) is made and its
(N, n, 10 n) joint torque regressor computed by `RegressorBuilder.rigid_body_pinocchio` (one
`pin.computeJointTorqueRegressor` call per sample) and by `RegressorBuilder.rigid_body`
(`BatchRegressor`, the compiled kernel of model/rigid_body_regressor.py), each the best of
`--repeats` runs. Printed: µs per sample of the loop; of the kernel in one call, in calls of
`--chunk` samples (as the identification calls it, `chunk_size`) and in one call on one
thread (as inside a forked worker, `parallel_work.py`), each with its ratio to the loop (the
kernel runs in parallel only from `_PARALLEL_FROM` samples on); and
the largest deviation of the kernel's result from the loop's relative to the array's largest
entry. First printed: the kernel's first call in this process (compiled, or loaded from
numba's cache in `__pycache__`).
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numba
import numpy as np

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.rigid_body_regressor import _PARALLEL_FROM
from ident_framework.model.robot import load_robot
from ident_framework.testing.multisine import multisine


def one_thread(builder: RegressorBuilder, q, dq, ddq) -> np.ndarray:
    """`builder.rigid_body` with numba limited to one thread (the kernel then runs serially)."""
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return builder.rigid_body(q, dq, ddq)
    finally:
        numba.set_num_threads(previous)


def measure(builder: RegressorBuilder, q, dq, ddq, repeats: int, chunk: int) -> tuple:
    """(loop, kernel, chunked kernel, one-thread kernel) µs per sample, each the shortest of
    `repeats` runs taken in turn (so that a slow spell of the machine hits all four), and the
    kernel result's largest deviation from the loop's relative to the array's largest entry."""

    def chunked() -> None:
        for start in range(0, len(q), chunk):
            part = slice(start, start + chunk)
            builder.rigid_body(q[part], dq[part], ddq[part])

    forms = {
        "loop": partial(builder.rigid_body_pinocchio, q, dq, ddq),
        "kernel": partial(builder.rigid_body, q, dq, ddq),
        "chunked": chunked,
        "one thread": partial(one_thread, builder, q, dq, ddq),
    }
    best = dict.fromkeys(forms, np.inf)
    results = {}
    for _ in range(repeats):
        for name, form in forms.items():
            start = time.perf_counter()
            results[name] = form()
            best[name] = min(best[name], time.perf_counter() - start)
    loop, kernel = results["loop"], results["kernel"]
    deviation = float(np.abs(kernel - loop).max() / np.abs(loop).max())
    return (*(1e6 * best[name] / len(q) for name in forms), deviation)


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
    q, dq, ddq = multisine(np.arange(2 * _PARALLEL_FROM) / args.rate, robot.n_joints, 0)
    start = time.perf_counter()
    builder.rigid_body(q[:10], dq[:10], ddq[:10])  # the serial kernel
    builder.rigid_body(q, dq, ddq)  # the parallel one (unless on one core)
    print(f"first calls (compile or cache load): {time.perf_counter() - start:.2f} s")
    print(
        f"{args.robot}, {robot.n_joints} joints, numba {numba.get_num_threads()} threads "
        f"({numba.threading_layer()}); µs per sample (best of {args.repeats})"
    )
    print(
        f"{'N':>8} {'loop':>8} {'kernel':>8} {'ratio':>6} {f'{args.chunk}s':>8} {'ratio':>6} "
        f"{'1 thread':>8} {'ratio':>6} {'max dev':>9}"
    )
    for n in args.sizes:
        q, dq, ddq = multisine(np.arange(n) / args.rate, robot.n_joints, 0)
        loop, *kernels, deviation = measure(builder, q, dq, ddq, args.repeats, args.chunk)
        columns = " ".join(f"{k:>8.3f} {loop / k:>6.1f}" for k in kernels)
        print(f"{n:>8} {loop:>8.2f} {columns} {deviation:>9.1e}")


if __name__ == "__main__":
    main()
