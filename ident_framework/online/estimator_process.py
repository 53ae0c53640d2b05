"""The estimator process of mode=online: source, streaming identification, run files, frames.

Its own interpreter (the web view never takes its GIL), linked to the web process by two
queues: frames out (~25 per second, never blocking: `publisher.py`), commands in (reset,
snapshot, stop; read at frame time). It ignores SIGINT: the web process stops it through
`stop` (or by ending), and it then saves everything. Twin fits run in a third process.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import resource
import signal
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import RunConfig, validate_config
from ident_framework.errors import UserError
from ident_framework.modes.pipeline import robot_and_regressor
from ident_framework.online.estimators import single_threaded
from ident_framework.online.publisher import Publisher, RecordingBuffer
from ident_framework.online.run_logs import (
    EventLog,
    ParametersLog,
    write_parameters_yaml,
    write_summary,
)
from ident_framework.online.sample_regressor import (
    SampleRegressor,
    check_streamable,
    structural_base,
)
from ident_framework.online.scheduling import realtime_scheduling, short_time_slice
from ident_framework.online.session_setup import (
    check_source,
    load_initial_parameters,
    open_stream,
    say,
)
from ident_framework.online.streaming_estimator import StepResult, StreamingIdentifier
from ident_framework.online.twin_schedule import TwinSchedule
from ident_framework.plain_data import to_plain
from ident_framework.reports.run_files import ONLINE_FOLDER

# behind the source (s of source time from a sample's arrival to its processing) by more than
# this share of online.max_lag_s: dashboard frames are skipped (one a second still goes out)
BEHIND_SHARE = 0.1
BEHIND_FRAME_EVERY_S = 1.0
CAUGHT_UP_S = 5.0  # s of source time below half that lag before it counts as caught up
_FINAL_TWIN_TIMEOUT_S = 120.0
RECORDING_BACKLOG_S = 60.0  # mcap=true: s of rows kept while frames cannot go out
_FINAL_RECORD_TIMEOUT_S = 30.0


def estimator_main(cfg: dict, run_dir: str, outbox: Any, commands: Any, stop: Any) -> None:
    """Process entry point (spawned by `service.py`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    session = None
    try:
        session = OnlineSession(cfg, Path(run_dir), outbox)
        outbox.put(to_plain({"kind": "ready", **session.describe()}))
        session.run(commands, stop)
    except UserError as error:
        outbox.put({"kind": "error", "message": str(error)})
    except BaseException:  # noqa: BLE001 (reported by the web process)
        outbox.put({"kind": "error", "message": traceback.format_exc(), "internal": True})
    finally:
        if session is not None and session.started:
            try:
                outbox.put({"kind": "final", "summary": to_plain(session.finish())})
            except BaseException:  # noqa: BLE001
                outbox.put({"kind": "error", "message": traceback.format_exc(), "internal": True})
        outbox.close()
        outbox.join_thread()


class OnlineSession:
    """Everything the estimator process owns."""

    def __init__(self, cfg: dict, run_dir: Path, outbox: Any):
        self.started = False
        self.run_dir, self.outbox = run_dir, outbox
        self.config: RunConfig = validate_config(OmegaConf.create(cfg), get_registry())
        config = self.config
        self.settings = online = config.online
        self.robot, self.builder = robot, builder = robot_and_regressor(config)
        n = robot.n_joints
        check_streamable(builder, config.plugins["friction"].info.name)
        check_source(config)
        say("structural base parameters from random states within the limits")
        self.base = structural_base(
            builder,
            online.estimator.structural_samples,
            config.base_parameters.tolerance,
            config.base_parameters.method,
            seed=config.seed,
        )
        if online.initial_run:
            standard0 = load_initial_parameters(online.initial_run, builder.parameter_names)
            self.initial = str(online.initial_run)
        else:
            standard0 = builder.standard_parameters(
                robot.inertial_parameters(), armature=robot.armature()
            )
            self.initial = "nominal"
        self.stream = open_stream(config, robot, builder, run_dir)
        self.identifier = StreamingIdentifier(
            SampleRegressor(builder, self.base),
            self.base.names,
            self.base.to_base(standard0),
            online,
            self.stream.rate_hz,
        )
        folder = run_dir / ONLINE_FOLDER
        self.parameters_log = ParametersLog(folder, self.base.names, n)
        self.events = EventLog(folder)
        self.publisher = Publisher(
            outbox, online.dashboard.publish_hz, online.dashboard.trace_hz, n
        )
        self.drift_events: list[dict[str, Any]] = []
        self.stop_reason = "stream ended"
        self.lag_s = self.largest_lag_s = 0.0
        self.behind, self._behind_since, self.behind_episodes = False, 0.0, 0
        self._below_since: float | None = None
        self.scheduling = "normal (SCHED_OTHER)"
        self.twin = TwinSchedule(online.twin, self.stream.rate_hz, n, cfg, run_dir)
        self.recording = (  # mcap=true: the web process writes online/run.mcap
            RecordingBuffer(n, int(RECORDING_BACKLOG_S * self.stream.rate_hz) + 1)
            if config.mcap
            else None
        )

    def describe(self) -> dict[str, Any]:
        filt = self.identifier.filter
        return {
            "robot": self.robot.name,
            "joint_names": list(self.robot.joint_names),
            "parameter_names": list(self.base.names),
            "n_standard": self.base.n_standard,
            "n_base": self.base.rank,
            "initial": self.initial,
            "stream": self.stream.describe(),
            "rate_hz": self.stream.rate_hz,
            "filter": {
                "window_samples": filt.window,
                "polyorder": filt.polyorder,
                "delay_samples": filt.delay_samples,
                "delay_s": filt.delay_samples / self.stream.rate_hz,
            },
            "settings": dataclasses.asdict(self.settings),
        }

    # ------------------------------------------------------------------ main loop
    def run(self, commands: Any, stop: Any) -> None:
        self.started = True
        online = self.settings
        if online.realtime_priority is not None:
            self.scheduling = realtime_scheduling(online.realtime_priority, say)
        if online.scheduler_slice_ms is not None and "FIFO" not in self.scheduling:
            self.scheduling = short_time_slice(online.scheduler_slice_ms, say)
        identifier, publisher, recording = self.identifier, self.publisher, self.recording
        parent = os.getppid()
        self._wall0 = time.perf_counter()
        self._cpu0 = self._cpu()
        self._cpu_mark = (self._wall0, self._cpu0[0] - self._cpu0[1])
        self.cpu_share = float("nan")
        t_first: float | None = None
        next_row = -np.inf
        twin_every = online.twin.every_s
        next_twin = None
        self.event({"kind": "start", "stream": self.stream.describe(), "initial": self.initial})
        stream = iter(self.stream)
        with single_threaded():
            for sample in stream:
                if t_first is None:
                    t_first = sample.t
                    next_twin = t_first + (twin_every or 0.0)
                result = identifier.step(sample)
                if recording is not None:  # after the step: not in its latency
                    recording.sample(sample)
                    if result is not None:
                        recording.step(result)
                if result is not None:
                    publisher.add(result)
                    self.twin.add(result)
                    if result.drift_joints.size:
                        self._drift(result)
                    if result.t >= next_row:
                        next_row = result.t + online.parameters_every_s
                        self._parameter_row(result.t)
                    if twin_every is not None and result.t >= next_twin:
                        next_twin = result.t + twin_every
                        self._submit_twin(result.t)
                if online.duration_s is not None and sample.t - t_first >= online.duration_s:
                    self.stop_reason = f"online.duration_s={online.duration_s:g} reached"
                    break
                if publisher.due():
                    lag = (time.perf_counter() - sample.arrival) * (self.stream.time_factor or 1.0)
                    self._watch_lag(sample.t, lag)
                    self._poll_twin()
                    if stop.is_set():
                        self.stop_reason = "stopped (Ctrl-C, SIGTERM or the dashboard)"
                        break
                    if self._commands(commands):
                        break
                    if os.getppid() != parent:
                        self.stop_reason = "the web process ended"
                        break
                    if self.behind and not publisher.overdue(BEHIND_FRAME_EVERY_S):
                        publisher.skip()  # behind: catch up first, the view waits
                    else:
                        self._send_frame()
        self._wall_end, self._cpu_end = time.perf_counter(), self._cpu()

    def _watch_lag(self, t: float, lag: float) -> None:
        """Say when processing falls behind the source (an event and a line), and when it has
        caught up; `lag` in s of source time from a sample's arrival to now."""
        self.lag_s = lag
        self.largest_lag_s = max(self.largest_lag_s, lag)
        behind = BEHIND_SHARE * self.settings.max_lag_s
        if not self.behind and lag > behind:
            self.behind, self._behind_since = True, t
            self.behind_episodes += 1
            say(f"behind the source by {lag:.2f} s at t = {t:.1f} s: dashboard frames skipped")
            self.event({"kind": "behind", "t": t, "lag_s": lag})
        elif self.behind and lag < 0.5 * behind:
            if self._below_since is None:
                self._below_since = t
            elif t - self._below_since >= CAUGHT_UP_S:  # one episode, not one per hiccup
                self.behind, self._below_since = False, None
                self.event({"kind": "caught_up", "t": t, "behind_s": t - self._behind_since})
        elif self.behind:
            self._below_since = None

    def _commands(self, commands: Any) -> bool:
        """Apply queued commands; True when asked to stop."""
        while True:
            try:
                command = commands.get_nowait()
            except queue.Empty:
                return False
            name = command.get("cmd")
            t = self.identifier.time_
            if name == "stop":
                self.stop_reason = "stop requested from the dashboard"
                self.event({"kind": "stop", "t": t})
                return True
            if name == "reset":
                self.identifier.restart()
                self.event({"kind": "reset", "t": t, "to": self.initial})
            elif name == "snapshot" and t is not None:
                self._submit_twin(t, requested=True)

    def event(self, event: dict[str, Any]) -> None:
        event = {"wall_time": time.time(), **event}
        self.events.write(event)
        self.publisher.event(event)

    def _drift(self, result: StepResult) -> None:
        sigma = self.identifier.drift.sigma
        for joint in result.drift_joints.tolist():
            event = {
                "kind": "drift",
                "joint": int(joint),
                "t": result.t,
                "sigma_Nm": float(sigma[joint]),
                "joint_name": self.robot.joint_names[joint],
            }
            self.drift_events.append(event)
            self.event(event)
        self.twin.restart_window()  # the next twin is fitted on data after the change only
        self.event({"kind": "response", "t": result.t, "response": self.settings.drift.response})

    def _parameter_row(self, t: float) -> None:
        identifier = self.identifier
        self.parameters_log.write(
            t,
            (identifier.updates, self.stream.received, self.skipped_updates),
            identifier.fit,
            identifier.estimator.coef_,
        )

    @property
    def skipped_updates(self) -> int:
        return int(self.stream.skipped + self.identifier.failed_updates)

    # ------------------------------------------------------------------ twin
    def _submit_twin(self, t: float, requested: bool = False) -> None:
        if (event := self.twin.submit(t, requested)) is not None:
            self.event(event)

    def _poll_twin(self) -> None:
        if (event := self.twin.poll(self.identifier.time_)) is not None:
            self.event(event)

    # ------------------------------------------------------------------ frames
    def _send_frame(self) -> None:
        """The next dashboard frame, with the recording's rows since the last one (mcap=true;
        they wait when it cannot go out). None before the first sample (a frame's `t` is source
        time); the events so far wait for the first frame."""
        if self.publisher.latest is None:
            self.publisher.wait()
            return
        frame, recording = self.frame(), self.recording
        if recording is not None:
            frame["record"] = recording.rows()
        if self.publisher.send(frame) and recording is not None:
            recording.sent(frame["record"])

    def _send_last_record(self) -> None:
        """The rows and events after the last frame (mcap=true), before the final summary."""
        recording = self.recording
        if recording is None:
            return
        rows = recording.rows()
        message = {"kind": "record", "record": rows, "events": list(self.publisher.events)}
        try:
            self.outbox.put(message, timeout=_FINAL_RECORD_TIMEOUT_S)
        except queue.Full:
            return
        recording.sent(rows)

    def frame(self) -> dict[str, Any]:
        identifier, fit = self.identifier, self.identifier.fit
        latest = self.publisher.latest  # not None: see _send_frame
        wall = time.perf_counter()
        last_wall, last_cpu = self._cpu_mark
        if wall - last_wall >= 1.0:
            process, source = self._cpu()
            cpu = process - source  # the estimator's own work, not the simulated robot's
            self.cpu_share = (cpu - last_cpu) / (wall - last_wall)
            self._cpu_mark = (wall, cpu)
        pred_median, pred_p99 = identifier.latency_prediction.recent()
        upd_median, upd_p99 = identifier.latency_update.recent()
        send_theta = self.publisher.seq % 5 == 0
        return {
            "kind": "frame",
            "t": latest.t,
            "tau_meas": latest.tau_meas.tolist(),
            "tau_pred": latest.tau_pred.tolist(),
            "rmse": fit.rmse.tolist(),
            "r2": fit.r2.tolist(),
            "pooled_rmse": fit.pooled_rmse,
            "pooled_r2": fit.pooled_r2,
            "updates": identifier.updates,
            "skipped_updates": self.skipped_updates,
            "samples_received": self.stream.received,
            "latency_ms": {
                "prediction_median": 1e3 * pred_median,
                "prediction_p99": 1e3 * pred_p99,
                "update_median": 1e3 * upd_median,
                "update_p99": 1e3 * upd_p99,
            },
            "cpu_share": self.cpu_share,
            "wall_s": wall - self._wall0,
            "frames_deferred": self.publisher.frames_deferred,
            "frames_skipped": self.publisher.frames_skipped,
            "lag_ms": 1e3 * self.lag_s,  # of source time
            "behind": self.behind,
            "drift_statistic": identifier.drift.statistic.tolist(),
            "residual_sigma": identifier.drift.sigma.tolist(),
            "estimator": identifier.estimator.method,
            "memory_s": identifier.estimator.memory_s,
            "theta": identifier.estimator.coef_.tolist() if send_theta else None,
            "twin": self.twin.last,
            "twin_pending": self.twin.pending,
        }

    # ------------------------------------------------------------------ end
    def finish(self) -> dict[str, Any]:
        """Final twin, parameters.yaml and summary.json; closes everything."""
        identifier = self.identifier
        if not hasattr(self, "_wall_end"):
            self._wall_end, self._cpu_end = time.perf_counter(), self._cpu()
        stream_summary = self.stream.close() or {}
        t_end = identifier.time_
        for event in self.twin.finish(t_end, _FINAL_TWIN_TIMEOUT_S, say):
            self.event(event)
        if t_end is not None:
            self._parameter_row(t_end)
        wall = self._wall_end - self._wall0
        summary = {
            "stop_reason": self.stop_reason,
            "scheduling": self.scheduling,
            "initial": self.initial,
            "stream": {**self.stream.describe(), **stream_summary},
            "t_end_s": t_end,
            "wall_s": wall,
            "updates": identifier.updates,
            "skipped_updates": self.skipped_updates,
            "samples_received": self.stream.received,
            "failed_updates": identifier.failed_updates,
            # joint rows left out of the update (slower than online.estimator.min_speed_rad_s)
            "held_rows": identifier.held_rows,
            "held_row_share": identifier.held_rows / max(identifier.updates * identifier.n, 1),
            **self._cpu_shares(wall),
            "latency_prediction": identifier.latency_prediction.summary(),
            "latency_update": identifier.latency_update.summary(),
            "sliding": {
                "rmse": identifier.fit.rmse,
                "r2": identifier.fit.r2,
                "pooled_r2": identifier.fit.pooled_r2,
            },
            "drift_events": self.drift_events,
            "twin_updates": self.twin.fits,
            "twin_last": self.twin.last,
            "frames_sent": self.publisher.frames_sent,
            "frames_deferred": self.publisher.frames_deferred,
            "frames_skipped_behind": self.publisher.frames_skipped,
            "behind_episodes": self.behind_episodes,
            "largest_lag_s": self.largest_lag_s,
            "parameter_rows": self.parameters_log.rows,
        }
        if t_end is not None:
            write_parameters_yaml(self.run_dir, self.parameters_document())
        self.event({"kind": "end", "t": t_end, "reason": self.stop_reason})
        self.parameters_log.close()
        self.events.close()
        self._send_last_record()
        if self.recording is not None:
            counts = ("samples", "steps", "dropped_samples", "dropped_steps")
            summary["mcap"] = {key: getattr(self.recording, key) for key in counts}
        write_summary(self.run_dir, summary)
        return summary

    def parameters_document(self) -> dict[str, Any]:
        """`parameters.yaml` at the end: the base parameters (with their standard deviations
        where the estimator has them), the standard ones B·beta, the last valid twin's."""
        estimator, base, est = self.identifier.estimator, self.base, self.settings.estimator
        theta, std = estimator.coef_, estimator.coef_std_
        combos = base.combinations()
        entries = [
            {"name": name, "value": float(theta[i]), "combination": combos[i]}
            | ({} if std is None else {"std": float(std[i])})
            for i, name in enumerate(base.names)
        ]
        standard = base.to_standard(theta)
        plugins = {
            group: {
                "plugin": p.info.name,
                "distribution": p.info.distribution,
                "version": p.info.version,
            }
            for group, p in self.config.plugins.items()
        }
        robot, valid = self.robot, self.twin.valid
        return {
            "robot": {
                "name": robot.name,
                "model": self.config.robot.model,
                "joint_names": list(robot.joint_names),
            },
            "plugins": plugins,
            "online": {
                "estimator": f"{estimator.method} (streaming, per sample)",
                **(
                    {"window_s": est.window_s, "ridge": 1.0 / est.alpha}
                    if est.method == "sliding_ls"
                    else {"forgetting": est.forgetting, "alpha": est.alpha}
                ),
                "initial": self.initial,
                "updates": self.identifier.updates,
                "t_end_s": self.identifier.time_,
                "base": "structural (random states within the limits)",
            },
            "base_parameters": entries,
            "standard_parameters": dict(
                zip(self.builder.parameter_names, standard.tolist(), strict=True)
            ),
            "twin": None
            if valid is None
            else {
                "t_s": valid["t"],
                "path": valid.get("path"),
                "standard_parameters": valid.get("standard"),
            },
        }

    def _cpu(self) -> tuple[float, float]:
        """(CPU s of this process, of which the stream's own: simulation, RTDE reception)."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime, float(self.stream.cpu_s)

    def _cpu_shares(self, wall: float) -> dict[str, float | None]:
        """Shares of one core over the run: the process, the stream, the estimator (the rest)."""
        if wall <= 0:
            return {"cpu_share_of_one_core": None}
        process = (self._cpu_end[0] - self._cpu0[0]) / wall
        source = (self._cpu_end[1] - self._cpu0[1]) / wall
        return {
            "cpu_share_of_one_core": process,
            "source_cpu_share": source,
            "estimator_cpu_share": process - source,
        }
