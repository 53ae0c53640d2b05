"""Twin re-injection in a worker process (low priority): physically consistent parameters.

`fit_twin` solves the `consistent` estimator (the run's `estimator.*` settings when
estimator=consistent, else its defaults) on a recent window of filtered samples and, when
every link is physically valid, writes `online/twins/twin_<t>.xml` (t: source time, s) and
replaces `twin.xml` in the run directory.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

_worker: dict[str, Any] = {}


def init_worker(cfg_container: dict, run_dir: str) -> None:
    """Build the robot and regressor of the run once per worker process."""
    from omegaconf import OmegaConf

    from ident_framework.config.registry import get_registry
    from ident_framework.config.run_config import validate_config
    from ident_framework.modes.pipeline import robot_and_regressor

    try:
        os.nice(10)  # the estimator comes first
    except OSError:
        pass
    config = validate_config(OmegaConf.create(cfg_container), get_registry())
    robot, builder = robot_and_regressor(config)
    _worker.update(config=config, robot=robot, builder=builder, run_dir=Path(run_dir))


def fit_twin(t_end: float, rows: np.ndarray) -> dict[str, Any]:
    """Consistent fit of `rows` ((m, 1 + 4n): t, q, dq, ddq, tau) and the twin snapshot."""
    from ident_framework.config.registry import get_registry
    from ident_framework.data.dataset import Dataset
    from ident_framework.errors import UserError
    from ident_framework.identify.linear_problem import build_problem
    from ident_framework.reports.run_files import (
        ONLINE_FOLDER,
        ONLINE_TWINS_FOLDER,
        TWIN_MJCF,
        online_twin_snapshot,
    )
    from ident_framework.twin.export import identified_dynamics, twin_model, twin_problems

    config, robot, builder = _worker["config"], _worker["robot"], _worker["builder"]
    n = robot.n_joints
    start = time.perf_counter()
    q, dq, ddq, tau = (rows[:, 1 + k * n : 1 + (k + 1) * n].copy() for k in range(4))
    joints = tuple(robot.joint_names)
    data = Dataset(rows[:, 0].copy(), q, dq, tau, joints, ddq=ddq)
    result: dict[str, Any] = {"kind": "twin", "t": float(t_end), "samples": len(rows)}
    try:
        problem, _, cond = build_problem(
            builder, data, config.chunk_size, config.base_parameters.tolerance, progress=False
        )
        consistent = get_registry().get("estimator", "consistent")
        selected = config.plugins["estimator"]
        params = selected.params if selected.info.name == "consistent" else consistent.schema()
        estimator = consistent.create(params).fit(problem)
    except (UserError, ValueError, np.linalg.LinAlgError) as error:
        return {
            **result,
            "valid": False,
            "reasons": [str(error)],
            "solve_s": time.perf_counter() - start,
        }
    theta = estimator.standard_coef_
    dynamics = identified_dynamics(robot, builder.parameter_names, theta, builder.couplings)
    problems = twin_problems(robot, dynamics)
    predicted = builder.compute(data.q, data.dq, data.ddq) @ theta
    rmse = float(np.sqrt(np.mean((predicted - data.tau) ** 2)))
    result.update(cond=float(cond), rmse=rmse, solve_s=time.perf_counter() - start)
    if problems:
        return {**result, "valid": False, "reasons": problems[:5]}
    twin = twin_model(robot, dynamics)
    run_dir = _worker["run_dir"]
    folder = run_dir / ONLINE_FOLDER / ONLINE_TWINS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = folder / online_twin_snapshot(t_end)
    snapshot.write_text(twin.mjcf)
    latest = run_dir / TWIN_MJCF
    partial = latest.with_suffix(".xml.partial")
    partial.write_text(twin.mjcf)
    os.replace(partial, latest)
    return {
        **result,
        "valid": True,
        "path": str(snapshot),
        "standard": dict(zip(builder.parameter_names, map(float, theta), strict=True)),
    }
