"""Rigid-body regressor: Pinocchio's per-sample loop vs the vectorised form (run on demand).

    python benchmarks/bench_rigid_body_regressor.py [--sizes 1000 10000 100000] [--robot ur10e]

For each size N, a multi-sine motion of the arm (q rad, dq rad/s, ddq rad/s²) is made and its
(N, n, 10 n) joint torque regressor computed by `RegressorBuilder.rigid_body_pinocchio` (one
`pin.computeJointTorqueRegressor` call per sample) and by `RegressorBuilder.rigid_body`
(`BatchRegressor`, vectorised over the samples), each the best of `--repeats` runs. Printed:
µs per sample of both, their ratio, the batch form again in calls of `--chunk` samples (as
the identification calls it, `chunk_size`), and the largest deviation of the batch result from
the loop's relative to the array's largest entry.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.testing.multisine import multisine


def measure(builder: RegressorBuilder, q, dq, ddq, repeats: int, chunk: int) -> tuple:
    """(loop, batch, chunked batch) µs per sample, each the shortest of `repeats` runs taken
    in turn (so that a slow spell of the machine hits all three), and the batch result's
    largest deviation from the loop's relative to the array's largest entry."""

    def chunked() -> None:
        for start in range(0, len(q), chunk):
            part = slice(start, start + chunk)
            builder.rigid_body(q[part], dq[part], ddq[part])

    forms = {
        "loop": partial(builder.rigid_body_pinocchio, q, dq, ddq),
        "batch": partial(builder.rigid_body, q, dq, ddq),
        "chunked": chunked,
    }
    best = dict.fromkeys(forms, np.inf)
    results = {}
    for _ in range(repeats):
        for name, form in forms.items():
            start = time.perf_counter()
            results[name] = form()
            best[name] = min(best[name], time.perf_counter() - start)
    loop, batch = results["loop"], results["batch"]
    deviation = float(np.abs(batch - loop).max() / np.abs(loop).max())
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
        raise SystemExit(f"{args.robot}: the vectorised form does not support this model")
    print(f"{args.robot}, {robot.n_joints} joints; µs per sample (best of {args.repeats})")
    print(
        f"{'N':>8} {'loop':>8} {'batch':>8} {'ratio':>6} {'chunked':>8} {'ratio':>6} {'max dev':>9}"
    )
    for n in args.sizes:
        q, dq, ddq = multisine(np.arange(n) / args.rate, robot.n_joints, 0)
        loop, batch, chunked, deviation = measure(builder, q, dq, ddq, args.repeats, args.chunk)
        print(
            f"{n:>8} {loop:>8.2f} {batch:>8.2f} {loop / batch:>6.2f} "
            f"{chunked:>8.2f} {loop / chunked:>6.2f} {deviation:>9.1e}"
        )


if __name__ == "__main__":
    main()
