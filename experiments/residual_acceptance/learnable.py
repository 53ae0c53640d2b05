"""Better where learnable: a simulated UR12e with an effect the physical model lacks, two
closed-loop Fourier excitations (leave one recording out), the default point-to-point
validation over the workspace; the residual learner refitted offline per feature set and
learner seed on the pipeline's captured residuals, beside an oracle least-squares fit of the
planted term's known form.

    python experiments/residual_acceptance/learnable.py [--data-seeds 0,1,2]
        [--learner-seeds 0,1,2] [--variants default,auto,sincos] [override ...]
        e.g. source.unmodelled_scale=2, trajectory.coverage_weight=2 (excitations that cover
        the joints' circles); residual.KEY=VALUE set the learner's parameters

Per data seed (`seed=`: perturbed robot, excitations, validation motion) the closed loop runs
once with `residual=none` and `loop.iterations=2`; its identification data (two recordings),
physical predictions and residual inputs are what `fuse_residual` would hand the learner, so
learner seed 0 with the default features reproduces `python -m ident_framework residual=bpnn
loop.iterations=2 source.unmodelled=cogging`. Prints one JSON line per (data seed, learner
variant, learner seed): validation RMSE (Nm, against the torque as recorded) pooled and per joint,
the accepted joints and their worst-fold held-out reduction; and one per data seed for the
oracle (residual ≈ a_j sin(n_j q_j) + b_j cos(n_j q_j) fitted by least squares on the
training recordings, added to the physical model on the validation motion), with the angle
coverage per joint: the share of each joint's circle (q mod 2π, 5° arcs) each recording visits,
the share of the validation samples whose angle lies in an arc the training recordings visit,
and each round's cond. CPU seconds per fit in `cpu_s`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.dataset import recording_rows
from ident_framework.identify.metrics import torque_metrics
from ident_framework.identify.prediction import recordings, residual_inputs
from ident_framework.modes.closed_loop import run_closed_loop
from ident_framework.residuals.bpnn import DEFAULT_CANDIDATES, BpnnResidual
from ident_framework.trajectories.fourier.search import circle_coverage, samples_covered

PROTOCOL = [
    "source.unmodelled=cogging",
    "loop.iterations=2",
    "trajectory.progress=false",
    "plots=false",
]
SINCOS = ["sin_position", "cos_position", "velocity", "friction"]
UNSHRUNK = {"disagreement_weight": 0.0, "refuse_radius": None, "range_margin": None}
VARIANTS = {  # name: the learner's parameters replaced (none: its defaults)
    "default": {},
    "auto": {"features": "auto"},
    "sincos": {"features": SINCOS},
    # diagnostics, not options to use: acceptance as usual, no shrinkage and no range guard
    "sincos_unshrunk": {"features": SINCOS, **UNSHRUNK},
    "sincos_only": {"features": ["sin_position", "cos_position"]},  # the planted term's inputs
    # auto with the position-only set as a third candidate
    "auto3": {
        "features": "auto",
        "feature_candidates": [*DEFAULT_CANDIDATES, ["sin_position", "cos_position"]],
    },
}


def listed(text: str) -> list[str]:
    """'a,b' -> ['a', 'b']."""
    return [part for part in text.split(",") if part]


def oracle_fused(train_q, residual, validation_q, physical, periods) -> np.ndarray:
    """Physical + the least-squares fit, per joint, of the training residual on
    [sin(n_j q_j), cos(n_j q_j)] (the planted cogging term's known form), on the validation q."""
    fused = physical.copy()
    for j, n in enumerate(periods):

        def basis(q: np.ndarray, n: int = n, j: int = j) -> np.ndarray:
            return np.column_stack([np.sin(n * q[:, j]), np.cos(n * q[:, j])])

        coef, *_ = np.linalg.lstsq(basis(train_q), residual[:, j], rcond=None)
        fused[:, j] += basis(validation_q) @ coef
    return fused


def ratios(measured, physical, fused) -> dict:
    p, f = torque_metrics(measured, physical), torque_metrics(measured, fused)
    return {
        "physical_rmse": p["rmse"],
        "fused_rmse": f["rmse"],
        "ratio": f["rmse"] / p["rmse"],
        "physical_rmse_per_joint": p["rmse_per_joint"],
        "fused_rmse_per_joint": f["rmse_per_joint"],
        "ratio_per_joint": (np.array(f["rmse_per_joint"]) / np.array(p["rmse_per_joint"])).tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-seeds", type=listed, default=["0", "1", "2"])
    parser.add_argument("--learner-seeds", type=listed, default=["0", "1", "2"])
    parser.add_argument("--variants", type=listed, default=["default", "auto", "sincos"],
                        help=f"learner variants, from {list(VARIANTS)}")  # fmt: skip
    parser.add_argument("overrides", nargs="*", help="Hydra overrides added to the protocol")
    args = parser.parse_args()
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        for data_seed in args.data_seeds:
            learner_keys = [o for o in args.overrides if o.startswith("residual.")]
            common = [*PROTOCOL, f"seed={data_seed}",
                      *(o for o in args.overrides if o not in learner_keys)]  # fmt: skip
            config = validate_config(compose("config", overrides=[*common, "residual=none"]),
                                     get_registry())  # fmt: skip
            learner_config = validate_config(
                compose("config", overrides=[*common, "residual=bpnn", "residual.progress=false",
                                             *learner_keys]),
                get_registry(),
            )  # fmt: skip
            base_params = learner_config.plugins["residual"].params
            cpu = time.process_time()
            result = run_closed_loop(config, progress=False).final
            pipeline_cpu = time.process_time() - cpu
            model, size = result.model, config.chunk_size
            train, validation = result.data.train, result.data.validation
            physical_train = result.predictions["train"].physical
            physical = result.predictions["validation"].physical
            measured = validation.measured_torque  # as recorded, as metrics.json scores
            residual = train.tau - physical_train
            inputs = residual_inputs(model.builder, train, model.theta, physical_train, size)
            validation_inputs = residual_inputs(model.builder, validation, model.theta, physical,
                                                size)  # fmt: skip
            parts, targets = recordings(inputs, residual, train)
            train_q = [train.q[rows] for _, rows in recording_rows(train.recording_index)]
            coverage = {
                "circle_coverage_per_recording": [circle_coverage(q).tolist() for q in train_q],
                "validation_samples_covered": samples_covered(train.q, validation.q).tolist(),
                "validation_circle_coverage": circle_coverage(validation.q).tolist(),
                "excitation_cond_per_round": [
                    r["excitation_cond"] for r in result.metrics["loop"]["iterations"]
                ],
                "cond_all_recordings": result.metrics["loop"]["iterations"][-1]["cond"],
            }
            source = config.plugins["source"].params
            periods = np.broadcast_to(source.cogging_periods, (train.q.shape[1],))
            print(json.dumps({
                "data_seed": data_seed, "learner": "oracle_least_squares",
                "recordings": len(parts), "train_samples": train.n_samples,
                "validation_samples": validation.n_samples, "pipeline_cpu_s": pipeline_cpu,
                **coverage,
                **ratios(measured, physical,
                         oracle_fused(train.q, residual, validation.q, physical, periods)),
            }), flush=True)  # fmt: skip
            for name in args.variants:
                for learner_seed in args.learner_seeds:
                    params = dataclasses.replace(
                        base_params, seed=int(learner_seed), **VARIANTS[name]
                    )
                    learner = BpnnResidual(params)
                    cpu = time.process_time()
                    learner.fit(parts, targets)
                    fused = physical + learner.predict(validation_inputs)
                    report = learner.report_ or {}
                    print(json.dumps({
                        "data_seed": data_seed, "variant": name, "learner_seed": learner_seed,
                        **ratios(measured, physical, fused),
                        "accepted": report.get("accepted"),
                        "worst_fold_reduction_percent": report.get("worst_fold_reduction_percent"),
                        "training_reduction_percent": report.get("training_reduction_percent"),
                        "features_per_joint": report.get("features_per_joint"),
                        "shares": learner.prediction_report_,
                        "cpu_s": time.process_time() - cpu,
                    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
