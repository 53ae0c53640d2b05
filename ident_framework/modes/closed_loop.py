"""Closed identification loop: identify, validate, and while the validation fit is below the
target, record a new excitation and identify again on every recording so far.

Round k designs its excitation seeded `seed + LOOP_SEED_STRIDE * k` (round 0 is the single run
of `run_pipeline`; `loop.design=aimed`: rounds k >= 1 minimise cond of the base regressor of all
recordings so far plus the candidate), records it in the data-source role `recording_role(k)`
(fresh simulated noise), preprocesses it on its own and stacks it under the earlier ones. The
validation recording is acquired once, so every round's R² is comparable; the fit judged is
the twin's when the run checked one, else the physical model's (`validation_fit`).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from ident_framework.config.run_config import RunConfig
from ident_framework.data.checks import drop_untrusted
from ident_framework.data.dataset import Dataset, concatenate
from ident_framework.data.preprocessing import preprocess
from ident_framework.hookspecs import Trajectory
from ident_framework.identify.excitation_objective import make_augmented_condition_objective
from ident_framework.identify.result import IdentificationResult, StepTimer
from ident_framework.modes.pipeline import (
    acquire_validation,
    design_excitation,
    identify,
    robot_and_regressor,
)
from ident_framework.reports.summary import R2_SOURCES

log = logging.getLogger(__name__)

LOOP_SEED_STRIDE = 1000  # excitation seed step per round: never the validation motion's seed + 1


def validation_fit(metrics: dict[str, Any]) -> tuple[float, float, str]:
    """(validation RMSE in Nm, validation R², "twin" or "physical"): the twin's when the run
    checked one, else the identified physical model's."""
    twin = (metrics.get("twin") or {}).get("inverse_dynamics") or {}
    if twin.get("r2") is not None:
        return float(twin.get("rmse", math.nan)), float(twin["r2"]), "twin"
    physical = metrics["validation"]["physical"]
    return float(physical["rmse"]), float(physical["r2"]), "physical"


def recording_role(k: int) -> str:
    """Data-source role of round k's identification recording."""
    return "identification" if k == 0 else f"identification_{k + 1}"


def _round_record(
    k: int, seed: int, train: Dataset, result: IdentificationResult, seconds: float
) -> dict[str, Any]:
    metrics, excitation = result.metrics, result.data.excitation
    rmse, r2, source = validation_fit(metrics)
    return {
        "iteration": k + 1,
        "seed": seed,
        "recordings": k + 1,
        "samples": train.n_samples,
        "n_base": metrics["identifiability"]["n_base"],
        "cond": float(metrics["identifiability"]["cond"]),
        "validation_rmse": rmse,
        "validation_r2": r2,
        "r2_source": source,
        "physical_r2": float(metrics["validation"]["physical"]["r2"]),
        "rmse_ratio_to_true": (metrics.get("truth") or {}).get("rmse_ratio_identified_to_true"),
        "excitation_cond": None if excitation is None else excitation.describe().get("cond"),
        "wall_time_s": seconds,
    }


@dataclass
class LoopResult:
    """The final round's result (its metrics hold `loop`: every round's record, the target and
    whether it was reached) and the excitation of every round, in order."""

    final: IdentificationResult
    excitations: list[Trajectory]


def run_closed_loop(config: RunConfig, progress: bool = True) -> LoopResult:
    """Identify round after round on all recordings so far, until the validation R² reaches
    `config.loop.target_r2` or after `config.loop.iterations` rounds."""
    settings = config.loop
    timer = StepTimer()  # cumulative over the rounds: the final metrics' timing_s
    with timer("robot"):
        robot, builder = robot_and_regressor(config)
    source = config.plugins["source"].create()  # one that moves a robot (`validate_config`)
    records: list[dict[str, Any]] = []
    excitations: list[Trajectory] = []
    train: Dataset | None = None
    validation: Dataset | None = None
    truth, reached = None, False
    for k in range(settings.iterations):
        started = time.perf_counter()
        seed = config.seed + LOOP_SEED_STRIDE * k
        with timer("excitation"):
            objective = None
            if settings.design == "aimed" and train is not None:
                objective = make_augmented_condition_objective(
                    builder,
                    train,
                    expected_samples=train.n_samples / k,  # as many as an earlier recording
                    seed=config.seed,
                    chunk_size=config.chunk_size,
                )
            excitation = design_excitation(config, robot, builder, seed, objective)
            excitations.append(excitation)
        with timer("data"):
            recorded = source.acquire(robot, excitation, recording_role(k))
            if validation is None:
                recorded, validation_recorded = acquire_validation(config, robot, recorded)
        with timer("preprocessing"):
            new = preprocess(recorded, config.preprocessing)
            new = drop_untrusted(recorded, new, robot.limits, config.checks)
            if validation is None:
                validation = preprocess(validation_recorded, config.preprocessing)
                validation = drop_untrusted(
                    validation_recorded, validation, robot.limits, config.checks
                )
                truth = recorded.metadata.get("truth")
            train = new if train is None else concatenate([train, new])
        del recorded, new  # only the preprocessed union is kept
        result = identify(
            config, robot, builder, train, validation, excitation, truth, timer, progress
        )
        records.append(_round_record(k, seed, train, result, time.perf_counter() - started))
        r2 = records[-1]["validation_r2"]
        log.info(
            "closed loop round %d/%d: %d samples, cond %.1f, validation R² %.5f (%s)%s",
            k + 1, settings.iterations, train.n_samples, records[-1]["cond"], r2,
            R2_SOURCES[records[-1]["r2_source"]],
            "" if settings.target_r2 is None else f", target {settings.target_r2}",
        )  # fmt: skip
        if settings.target_r2 is not None and r2 >= settings.target_r2:
            reached = True
            break
    result.metrics["loop"] = {
        "iterations": records,
        "target_r2": settings.target_r2,
        "reached": reached,
        "max_iterations": settings.iterations,
        "design": settings.design,
        "seed_stride": LOOP_SEED_STRIDE,
    }
    return LoopResult(result, excitations)
