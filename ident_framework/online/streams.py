"""Sample streams for mode=online: a simulated robot in (scaled) real time and a CSV replay.

A stream yields `Sample`s in source-time order; `arrival` (perf_counter s) is when a sample is
due (source time / `time_factor` after the start; None: as fast as possible), so catching up
counts as latency. Samples more than `max_lag_s` s behind are skipped (`skipped`). `cpu_s`:
CPU time (s) the stream used in the estimator process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ident_framework.config.online_settings import PayloadChange
from ident_framework.data.dataset import Dataset
from ident_framework.model.robot import RobotModel
from ident_framework.rtde.emulated_arm import RealTimeTwin
from ident_framework.rtde.emulated_arm import TwinSettings as SimulatedArmSettings
from ident_framework.simulation.perturbed_robot import perturb_robot
from ident_framework.simulation.tracking import simulation_model


@dataclass
class Sample:
    """One robot sample: t (s, source clock), q (rad), dq (rad/s), tau (Nm), arrival (s)."""

    t: float
    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    arrival: float


class Pacer:
    """Releases samples at source time / time_factor after the first one (perf_counter s)."""

    def __init__(self, time_factor: float | None, max_lag_s: float):
        self.factor = time_factor
        self.max_lag_s = max_lag_s
        self._t0: float | None = None
        self._wall0 = 0.0

    def due(self, t: float) -> float:
        if self._t0 is None:
            self._t0, self._wall0 = t, time.perf_counter()
        if self.factor is None:
            return time.perf_counter()
        return self._wall0 + (t - self._t0) / self.factor

    def wait(self, t: float) -> tuple[float, bool]:
        """Sleep until sample t is due; (its due time, whether it is too late to process)."""
        due = self.due(t)
        while (ahead := due - (now := time.perf_counter())) > 0:
            time.sleep(ahead if ahead < 0.0005 else ahead - 0.0002)
        lag = (now - due) * (self.factor or 1.0)  # in source seconds
        return due, self.factor is not None and lag > self.max_lag_s


class MujocoStream:
    """The simulated robot of `source=mujoco` (seeded perturbation and payload, its noise and
    rates) stepped sample by sample along a periodic trajectory, looping; optionally with a
    planted payload change."""

    def __init__(
        self,
        nominal: RobotModel,
        trajectory: Any,
        source_params: Any,
        time_factor: float | None,
        max_lag_s: float,
        payload_change: PayloadChange | None = None,
    ):
        noise = np.asarray(source_params.torque_noise_std, dtype=float)
        settings = SimulatedArmSettings(
            seed=source_params.seed,
            noise_seed=source_params.seed + 1,
            torque_noise_std=0.0 if noise.size != 1 else float(noise),
            encoder_resolution=source_params.encoder_resolution,
            sim_rate_hz=source_params.sim_rate_hz,
            record_rate_hz=source_params.record_rate_hz,
            perturbation=source_params.perturbation(),
        )
        self._noise = noise if noise.size != 1 else None  # per joint, added here
        self._rng = np.random.default_rng(source_params.seed + 2)
        self.arm = RealTimeTwin(nominal, trajectory, settings)
        self.rate_hz = float(source_params.record_rate_hz)
        self.pacer = Pacer(time_factor, max_lag_s)
        self.time_factor = time_factor
        self.payload_change = payload_change
        self._changed = False
        self._changed_model = None
        if payload_change is not None:  # built now: the switch itself is a few array copies
            params = replace(settings.perturbation, payload_mass_kg=payload_change.mass_kg)
            changed, _ = perturb_robot(nominal, params, settings.seed)
            self._changed_model = simulation_model(changed, settings.sim_rate_hz)
        self.skipped = 0
        self.received = 0
        self.cpu_s = 0.0

    def describe(self) -> dict[str, Any]:
        return {
            "source": "mujoco",
            **self.arm.describe(),
            "payload_kg": self.arm.truth.payload["mass_kg"] if self.arm.truth.payload else 0.0,
            "payload_change": None
            if self.payload_change is None
            else {"t_s": self.payload_change.t_s, "mass_kg": self.payload_change.mass_kg},
        }

    def _apply_payload_change(self) -> None:
        other, model = self._changed_model, self.arm.model
        assert other is not None
        for name in ("body_mass", "body_inertia", "body_ipos", "body_iquat"):
            getattr(model, name)[:] = getattr(other, name)
        # no mj_setConst: it re-derives qpos0-dependent constants and jolted the arm (330 Nm)
        self._changed = True

    def __iter__(self) -> Iterator[Sample]:
        arm = self.arm
        while True:
            t = arm.time
            if (
                self.payload_change is not None
                and not self._changed
                and t >= self.payload_change.t_s
            ):
                self._apply_payload_change()
            cpu0 = time.thread_time()
            fields = arm.advance()
            tau = np.asarray(fields["actual_current_as_torque"], dtype=float)
            if self._noise is not None:
                tau = tau + self._rng.normal(size=tau.shape) * self._noise
            self.cpu_s += time.thread_time() - cpu0
            due, late = self.pacer.wait(float(fields["timestamp"]))
            self.received += 1
            if late:
                self.skipped += 1
                continue
            yield Sample(
                float(fields["timestamp"]),
                np.asarray(fields["actual_q"], dtype=float),
                np.asarray(fields["actual_qd"], dtype=float),
                tau,
                due,
            )

    def close(self) -> None:
        pass


class CsvStream:
    """A recording (`Dataset`) replayed at its own timestamps, scaled by time_factor; ends
    with the recording."""

    def __init__(self, data: Dataset, time_factor: float | None, max_lag_s: float):
        self.data = data
        steps = np.diff(data.timestamp)
        self.rate_hz = float(1.0 / np.median(steps)) if len(steps) else 1.0
        self.pacer = Pacer(time_factor, max_lag_s)
        self.time_factor = time_factor
        self.skipped = 0
        self.received = 0
        self.cpu_s = 0.0  # indexing a loaded recording: nothing worth measuring

    def describe(self) -> dict[str, Any]:
        return {
            "source": "csv",
            "path": self.data.metadata.get("path"),
            "samples": self.data.n_samples,
            "duration_s": float(self.data.timestamp[-1] - self.data.timestamp[0]),
            "median_rate_hz": self.rate_hz,
        }

    def __iter__(self) -> Iterator[Sample]:
        data = self.data
        for k in range(data.n_samples):
            t = float(data.timestamp[k])
            due, late = self.pacer.wait(t)
            self.received += 1
            if late:
                self.skipped += 1
                continue
            yield Sample(t, data.q[k], data.dq[k], data.tau[k], due)

    def close(self) -> None:
        pass
