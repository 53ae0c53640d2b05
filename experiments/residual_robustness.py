"""Is the bpnn residual learner's gain on a different motion robust to seeds and CPU kernels?

    python experiments/residual_robustness.py [--data-seeds 0,1,2] [--learner-seeds 0,1,2]
        [override ...]        e.g. source.unmodelled_scale=3 trajectory.n_refine=0

The workspace-restricted protocol of tests/test_residual_end_to_end.py (position-dependent
friction the model lacks, `validation=mujoco_fourier`, every joint in [-1, 1] rad, joint limits
only: `trajectory.workspace=null`): for each
data seed (`seed=`: perturbed robot, excitation search, validation motion) the pipeline runs
once with the configured learner, then the learner is trained again with each other learner
seed (`residual.seed`: initial weights, minibatch order) on the same residual. Prints one JSON
line per (data seed, learner seed): validation RMSE (Nm) of the physical and the fused model.
Run it under other CPU kernels with e.g. OPENBLAS_CORETYPE=Haswell (numpy's OpenBLAS) or
ATEN_CPU_CAPABILITY=default (torch). About 10-20 s per data seed, 4 s per extra learner seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.identify.metrics import torque_metrics
from ident_framework.modes.pipeline import run_pipeline
from ident_framework.residuals.bpnn import BpnnResidual

PROTOCOL = [
    "source.unmodelled=position",
    "residual=bpnn",
    "residual.progress=false",
    "validation=mujoco_fourier",
    "trajectory.position_limits=[[-1,1],[-1,1],[-1,1],[-1,1],[-1,1],[-1,1]]",
    "trajectory.workspace=null",  # measured with joint limits only (before the workspace)
    "trajectory.progress=false",
    "plots=false",
]


def seeds(text: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2]."""
    return [int(part) for part in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-seeds", type=seeds, default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--learner-seeds", type=seeds, default=[0, 1, 2])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides added to the protocol")
    args = parser.parse_args()
    import torch

    print(json.dumps({"torch": torch.__version__, "overrides": args.overrides}), flush=True)
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        for data_seed in args.data_seeds:
            cfg = compose("config", overrides=[*PROTOCOL, f"seed={data_seed}", *args.overrides])
            config = validate_config(cfg, get_registry())
            start = time.perf_counter()
            result = run_pipeline(config, progress=False)
            physical = result.predictions["validation"].physical
            train, validation = result.data.train, result.data.validation
            residual = train.tau - result.predictions["train"].physical
            params = config.plugins["residual"].params
            for learner_seed in args.learner_seeds:
                if learner_seed == params.seed:
                    fused = result.predictions["validation"].fusion
                else:
                    learner = BpnnResidual(dataclasses.replace(params, seed=learner_seed))
                    learner.fit(train.q, train.dq, train.ddq, residual)
                    fused = physical + learner.predict(validation.q, validation.dq, validation.ddq)
                p = torque_metrics(validation.tau, physical)
                f = torque_metrics(validation.tau, fused)
                row = {
                    "data_seed": data_seed,
                    "learner_seed": learner_seed,
                    "cond": result.diagnostics.cond,
                    "physical_rmse": p["rmse"],
                    "fused_rmse": f["rmse"],
                    "change_percent": 100.0 * (f["rmse"] / p["rmse"] - 1.0),
                    "physical_rmse_per_joint": p["rmse_per_joint"],
                    "fused_rmse_per_joint": f["rmse_per_joint"],
                    "s": time.perf_counter() - start,
                }
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
