"""Twin re-injection: physically consistent parameters from recent data, in a worker process.

`TwinSchedule` (estimator process) keeps the recent window of filtered samples (every
`online.twin.decimation`-th: t, q, dq, ddq, tau) and runs one fit at a time in a worker at low
priority: `fit_twin` solves the `consistent` estimator (the run's `estimator.*` settings when
estimator=consistent, else its defaults) and, when every link is physically valid, writes
`online/twins/twin_<t>.xml` (t: source time, s) and replaces `twin.xml` in the run directory.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ident_framework.config.online_settings import TwinSettings
from ident_framework.online.ring_buffer import RingBuffer
from ident_framework.online.streaming_estimator import StepResult

MIN_SAMPLES = 50  # rows of the window before a fit is worth starting
_START_TIMEOUT_S = 300.0  # the worker builds the robot and regressor once


class TwinSchedule:
    """The twin fits of one run. Methods that finish or refuse a fit return its event (a dict
    for `events.jsonl` and the dashboard), else None."""

    def __init__(
        self, settings: TwinSettings, rate_hz: float, n_joints: int, cfg: dict, run_dir: Path
    ):
        rows = max(int(settings.window_s * rate_hz / settings.decimation), 10)
        self.rows = RingBuffer(rows, 1 + 4 * n_joints)
        self.decimation = settings.decimation
        self._since_kept = 0
        self.future: Future | None = None
        self.last: dict[str, Any] | None = None  # the last fit's event (valid or not)
        self.valid: dict[str, Any] | None = None  # the last valid one, with its parameters
        self.fits = 0
        self.executor: ProcessPoolExecutor | None = None
        if settings.every_s is not None:  # started now, not in the middle of the stream
            self.executor = ProcessPoolExecutor(
                1, multiprocessing.get_context("spawn"), init_worker, (cfg, str(run_dir))
            )
            self.executor.submit(time.sleep, 0).result(timeout=_START_TIMEOUT_S)

    @property
    def pending(self) -> bool:
        return self.future is not None

    def add(self, result: StepResult) -> None:
        """Keep every `decimation`-th processed sample for the next fit."""
        self._since_kept += 1
        if self._since_kept >= self.decimation:
            self._since_kept = 0
            self.rows.append(
                np.concatenate([[result.t], result.q, result.dq, result.ddq, result.tau_filtered])
            )

    def restart_window(self) -> None:
        """After a detected change: the next twin is fitted on data after it only."""
        self.rows.clear()

    def submit(self, t: float, requested: bool = False) -> dict[str, Any] | None:
        """Start a fit of the window up to source time `t` (s), unless one is running or the
        window is too short; a requested fit with re-injection off is refused (an event)."""
        if self.executor is None:
            if not requested:
                return None
            reason = "twin re-injection is off (online.twin.every_s=null)"
            return {"kind": "twin", "t": t, "valid": False, "reasons": [reason]}
        if self.future is None and len(self.rows) >= MIN_SAMPLES:
            self.future = self.executor.submit(fit_twin, t, self.rows.to_array())
        return None

    def poll(self, t_now: float | None, wait_s: float | None = None) -> dict[str, Any] | None:
        """The finished fit's event (waiting up to `wait_s` s for it; None: not at all)."""
        future = self.future
        if future is None or (wait_s is None and not future.done()):
            return None
        try:
            result = future.result(timeout=wait_s)
        except Exception as error:  # noqa: BLE001 (a worker failure is an event, not a crash)
            reason = f"twin worker failed: {error!r}"
            result = {"kind": "twin", "t": t_now, "valid": False, "reasons": [reason]}
        self.future = None
        self.fits += 1
        standard = result.pop("standard", None)
        self.last = {**result, "wall_time": time.time()}
        if result.get("valid"):
            self.valid = {**self.last, "standard": standard}
        return dict(result)

    def finish(self, t_end: float | None, wait_s: float, say: Any) -> list[dict[str, Any]]:
        """The running fit, then one on the last window; the worker is shut down."""
        if self.executor is None:
            return []
        events = [self.poll(t_end, wait_s)]
        if t_end is not None and len(self.rows) >= MIN_SAMPLES:
            say("final twin fit on the last window")
            self.submit(t_end)
            events.append(self.poll(t_end, wait_s))
        self.executor.shutdown(wait=True, cancel_futures=True)
        return [e for e in events if e is not None]


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
