"""Throughput and memory of regressor + friction columns + least squares (run on demand).

    python benchmarks/bench_regressor_ls.py [--sizes 10000 100000 1000000]

For each size N, a smooth 6-joint UR12e motion is generated chunk by chunk (never held whole),
its regressor with Coulomb-viscous friction and rotor-inertia columns is accumulated into the
per-joint triangular factors, base parameters are found and LS is solved. Printed: samples/s of
that pipeline, samples/s of a bare loop of `pinocchio.computeJointTorqueRegressor` on the same
states measured in the same run, their ratio (target >= 0.6), and the peak memory traced while
a second run of the pipeline (target: growth < 50 MB from 1e5 to 1e6 samples; tracing slows
allocations, so the speed is taken from an untraced run).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import pinocchio as pin

from ident_framework.estimators.ls import solve_stacked
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.linear_problem import accumulate_joint_factors, project_to_base
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.testing.known_truth import multisine

CHUNK = 2000


def motion_chunks(n_samples: int, seed: int = 0, rate: float = 500.0):
    """(q, dq, ddq, tau) chunks of a multi-sine motion; tau from a fixed random parameter set."""
    rng = np.random.default_rng(seed + 1)
    for start in range(0, n_samples, CHUNK):
        t = np.arange(start, min(start + CHUNK, n_samples)) / rate
        q, dq, ddq = multisine(t, 6, seed)
        yield q, dq, ddq, rng.normal(size=q.shape)


def bare_loop(model: pin.Model, n_samples: int) -> float:
    data = model.createData()
    start = time.perf_counter()
    for q, dq, ddq, _ in motion_chunks(n_samples):
        for k in range(len(q)):
            pin.computeJointTorqueRegressor(model, data, q[k], dq[k], ddq[k])
    return n_samples / (time.perf_counter() - start)


def identify(builder: RegressorBuilder, n_samples: int) -> int:
    """Regressor with friction columns, base parameters and LS, streamed; returns the rank."""
    factors, seen = accumulate_joint_factors(builder, motion_chunks(n_samples))
    base, base_factors, _ = project_to_base(factors, builder.parameter_names, 1e-8)
    solve_stacked(base_factors, seen * builder.robot.n_joints)
    return base.rank


def pipeline(builder: RegressorBuilder, n_samples: int) -> tuple[float, float, int]:
    """(samples/s timed without tracing, peak traced memory in MB of a second, traced run,
    rank): tracemalloc slows every allocation, so speed and memory are measured apart."""
    start = time.perf_counter()
    rank = identify(builder, n_samples)
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    identify(builder, n_samples)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return n_samples / elapsed, peak / 2**20, rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()), armature=True)
    print(f"{'N':>9} {'pipeline/s':>11} {'bare/s':>10} {'ratio':>6} {'peak MB':>8} rank")
    peaks = {}
    for n in args.sizes:
        bare = bare_loop(robot.pin_model, n)
        rate, peak, rank = pipeline(builder, n)
        peaks[n] = peak
        print(f"{n:>9} {rate:>11.0f} {bare:>10.0f} {rate / bare:>6.2f} {peak:>8.1f} {rank}")
    if 100_000 in peaks and 1_000_000 in peaks:
        print(f"peak memory growth 1e5 -> 1e6: {peaks[1_000_000] - peaks[100_000]:.1f} MB")


if __name__ == "__main__":
    main()
