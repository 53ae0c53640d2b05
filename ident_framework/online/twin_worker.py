"""Twin re-injection in a worker process: physically consistent parameters from recent data.

Every `online.twin.every_s` s the estimator hands the recent window (every `decimation`-th
filtered sample: t, q, dq, ddq, tau) to `fit_twin` in a separate process (a
`ProcessPoolExecutor` of one worker at low priority), so the conic solve (cvxpy, ~1 s) never
holds the estimator's interpreter. The worker builds the least-squares problem of that window
(`identify/linear_problem.build_problem`), solves the `consistent` estimator on it (the run's
`estimator.*` settings when estimator=consistent, else its defaults), and, when every link is
physically valid (`twin/export.twin_problems`), writes the twin: `online/twins/twin_<t>.xml`
(t: source time, s) and `twin.xml` in the run directory (replaced atomically).
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


def _consistent_estimator(config: Any) -> Any:
    """The `consistent` estimator from the plugin registry, with the run's `estimator.*`
    settings when estimator=consistent, else its defaults."""
    from ident_framework.config.registry import get_registry

    consistent = get_registry().get("estimator", "consistent")
    selected = config.plugins["estimator"]
    params = selected.params if selected.info.name == "consistent" else consistent.schema()
    return consistent.create(params)


def fit_twin(t_end: float, rows: np.ndarray) -> dict[str, Any]:
    """Consistent fit of `rows` ((m, 1 + 4n): t, q, dq, ddq, tau) and the twin snapshot."""
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
    data = Dataset(
        timestamp=rows[:, 0].copy(),
        q=rows[:, 1 : 1 + n].copy(),
        dq=rows[:, 1 + n : 1 + 2 * n].copy(),
        ddq=rows[:, 1 + 2 * n : 1 + 3 * n].copy(),
        tau=rows[:, 1 + 3 * n : 1 + 4 * n].copy(),
        joint_names=tuple(robot.joint_names),
    )
    result: dict[str, Any] = {"kind": "twin", "t": float(t_end), "samples": len(rows)}
    try:
        problem, _, cond = build_problem(
            builder, data, config.chunk_size, config.base_parameters.tolerance, progress=False
        )
        estimator = _consistent_estimator(config).fit(problem)
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
