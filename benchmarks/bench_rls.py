"""Speed of the `rls` estimator's online update (run on demand).

    python benchmarks/bench_rls.py [--samples 50000] [--forgetting 0.999]

A smooth 6-joint UR12e motion at 500 Hz gives the base regressor (Coulomb-viscous friction and
rotor inertia: r = 52 base parameters) and torques from fixed parameters plus 0.05 Nm noise.
Each sample (phi (6, 52), y (6,)) is fed to `RecursiveLeastSquares.update` inside
`single_threaded()` (BLAS limited to one thread, as an online service should run it).
Printed: updates per second over the whole run (target >= 20,000, i.e. 40x the 500 Hz RTDE
rate), the 50th/99th/99.9th percentile and maximum latency of one `update` call (target p99
< 0.5 ms), their ratios to the targets, and the same throughput through `fit` on the
whole recording.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import time

import numpy as np

from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.hookspecs import LinearProblem
from ident_framework.identify.recursive import RecursiveLeastSquares, RecursiveLeastSquaresParams
from ident_framework.model.base_parameters import BaseParameters, TriangularAccumulator
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot

TARGET_RATE = 20_000.0  # updates/s
TARGET_P99_S = 0.5e-3  # s
RATE_HZ = 500.0


def base_regressor_rows(n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list]:
    """(t (N,) s, phi (N, 6, r) base regressor, y (N, 6) Nm, names) of a multi-sine motion."""
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()), armature=True)
    rng = np.random.default_rng(seed)
    t = np.arange(n_samples) / RATE_HZ
    freq = rng.uniform(0.05, 0.4, (3, 6))
    amp = rng.uniform(0.2, 0.8, (3, 6))
    phase = rng.uniform(0, 2 * np.pi, (3, 6))
    w = 2 * np.pi * freq
    arg = w[None] * t[:, None, None] + phase[None]
    q = np.sum(amp * np.sin(arg), axis=1)
    dq = np.sum(amp * w * np.cos(arg), axis=1)
    ddq = -np.sum(amp * w**2 * np.sin(arg), axis=1)
    regressor = builder.compute(q, dq, ddq)
    accumulator = TriangularAccumulator(builder.n_parameters)
    accumulator.add(regressor.reshape(-1, builder.n_parameters))
    base = BaseParameters.from_r_factor(accumulator.factor, builder.parameter_names)
    phi = np.ascontiguousarray(regressor @ base.basis)
    theta = base.to_base(
        builder.standard_parameters(
            robot.inertial_parameters(), np.tile([4.0, 7.0], (6, 1)), robot.armature() + 0.1
        )
    )
    y = phi @ theta + rng.normal(0.0, 0.05, (n_samples, 6))
    return t, phi, y, base.names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--forgetting", type=float, default=0.999)
    parser.add_argument(
        "--multithreaded-blas", action="store_true", help="do not limit BLAS to one thread"
    )
    args = parser.parse_args()
    t, phi, y, names = base_regressor_rows(args.samples)
    n, r = phi.shape[1:]
    params = RecursiveLeastSquaresParams(forgetting=args.forgetting)
    print(
        f"{args.samples} samples of {n} joints, r = {r} base parameters, lambda = "
        f"{args.forgetting}, BLAS {'unlimited' if args.multithreaded_blas else '1 thread'}"
    )

    rls = RecursiveLeastSquares(params)
    rls.reset(r, names)
    latency = np.empty(args.samples)
    clock = time.perf_counter
    gc.collect()
    with contextlib.nullcontext() if args.multithreaded_blas else rls.single_threaded():
        start = clock()
        for k in range(args.samples):
            before = clock()
            rls.update(phi[k], y[k], t[k])
            latency[k] = clock() - before
        elapsed = clock() - start
    rate = args.samples / elapsed
    p50, p99, p999 = np.percentile(latency, [50, 99, 99.9])
    print(f"update(): {rate:,.0f} updates/s  (target {TARGET_RATE:,.0f}/s, ratio "
          f"{rate / TARGET_RATE:.2f})")  # fmt: skip
    print(f"latency of one update: p50 {p50 * 1e3:.4f} ms, p99 {p99 * 1e3:.4f} ms, p99.9 "
          f"{p999 * 1e3:.4f} ms, max {latency.max() * 1e3:.3f} ms  (target p99 < "
          f"{TARGET_P99_S * 1e3:g} ms, ratio target/p99 {TARGET_P99_S / p99:.1f})")  # fmt: skip
    print(f"P symmetric: {np.array_equal(rls.covariance_, rls.covariance_.T)}, "
          f"min eigenvalue {np.linalg.eigvalsh(rls.covariance_)[0]:.3e}, "
          f"repairs {rls.n_repairs_}")  # fmt: skip

    def chunks():
        for s in range(0, args.samples, 2000):
            yield t[s : s + 2000], phi[s : s + 2000], y[s : s + 2000]

    problem = LinearProblem([np.eye(r + 1)] * n, args.samples, names, chunks)
    start = clock()
    RecursiveLeastSquares(params).fit(problem)
    fit_rate = args.samples / (clock() - start)
    print(f"fit(): {fit_rate:,.0f} updates/s (ratio {fit_rate / TARGET_RATE:.2f})")


if __name__ == "__main__":
    main()
