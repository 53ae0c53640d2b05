"""Training time of the `bpnn` residual learner (run on demand).

    python benchmarks/bench_bpnn.py [--samples 13000] [--no-early-stopping] [--param key=value]

A smooth 6-joint multi-sine motion at 100 Hz (13,000 samples: the source study's size) with a
Stribeck-like residual per joint, 2·exp(−(dq/0.05)²)·sign(dq) + 0.5·sin(q) Nm, plus 0.05 Nm
noise; the physical model's friction torque (a feature of the default set) is a stand-in
Coulomb-viscous 1.0·sign(dq) + 0.5·dq Nm. `BpnnResidual.fit` (held-out acceptance, ensemble,
distance support included) runs with the default parameters (as in conf/residual/bpnn.yaml)
in this fresh process, so the time includes torch's one-off lazy imports on the first fit.
Printed: the training time, wall and CPU (target < 30 s on a 2-core CPU; on a shared machine
the CPU time is the fairer figure), its ratio to the target, the epochs run, the acceptance
per joint, and the RMSE of the predicted residual on a held-out motion of the same kind
relative to predicting zero (the physical model alone).
`--no-early-stopping` (patience 0) times the worst case: every epoch.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import yaml

from ident_framework.hookspecs import ResidualInputs
from ident_framework.residuals.bpnn import BpnnParams, BpnnResidual
from ident_framework.testing.known_truth import multisine

TARGET_S = 30.0
RATE_HZ = 100.0


def motion(n_samples: int, phase_seed: int, n_joints: int = 6):
    """q (rad), dq (rad/s), ddq (rad/s²) of shape (N, n): 3 sines per joint, fixed
    frequencies and amplitudes, phases from `phase_seed`."""
    return multisine(np.arange(n_samples) / RATE_HZ, n_joints, 0, phase_seed)


def stribeck_residual(q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Nm: low-speed friction bump and a position-dependent term."""
    return 2.0 * np.exp(-((dq / 0.05) ** 2)) * np.sign(dq) + 0.5 * np.sin(q)


def inputs(q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> ResidualInputs:
    """The learner's inputs, with a stand-in Coulomb-viscous friction torque (Nm)."""
    return ResidualInputs(q, dq, ddq, tau_friction=1.0 * np.sign(dq) + 0.5 * dq)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=13_000)
    parser.add_argument("--no-early-stopping", action="store_true", help="patience=0")
    parser.add_argument("--param", action="append", default=[], help="key=value (YAML value)")
    args = parser.parse_args()
    values = {"progress": False}
    for item in args.param:
        key, _, text = item.partition("=")
        values[key] = yaml.safe_load(text)
    if args.no_early_stopping:
        values["patience"] = 0
    params = BpnnParams(**values)

    q, dq, ddq = motion(args.samples, phase_seed=0)
    residual = stribeck_residual(q, dq)
    residual += np.random.default_rng(1).normal(0.0, 0.05, residual.shape)
    print(f"{args.samples} samples x {q.shape[1]} joints; {params}")

    learner = BpnnResidual(params)
    start, cpu = time.perf_counter(), time.process_time()
    learner.fit([inputs(q, dq, ddq)], [residual])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"training time {elapsed:.2f} s wall, {cpu:.2f} s CPU (target < {TARGET_S:g} s, ratio "
        f"{elapsed / TARGET_S:.2f} wall, {cpu / TARGET_S:.2f} CPU)"
    )
    print(f"epochs run {learner.epochs_run_}, {learner.n_networks_} networks, "
          f"{elapsed / max(learner.epochs_run_, 1) * 1e3:.1f} ms per epoch")  # fmt: skip
    print(f"accepted {learner.report_['accepted']}, held-out reduction % "
          f"{[round(r, 1) for r in learner.report_['held_out_reduction_percent']]}")  # fmt: skip

    q_h, dq_h, ddq_h = motion(5_000, phase_seed=1)
    truth = stribeck_residual(q_h, dq_h)
    predicted = learner.predict(inputs(q_h, dq_h, ddq_h))
    ratio = np.sqrt(np.mean((truth - predicted) ** 2)) / np.sqrt(np.mean(truth**2))
    print(f"held-out motion: RMSE(residual - predicted) / RMSE(residual) = {ratio:.3f}; "
          f"refused (out of range) {learner.out_of_range_fraction_:.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
