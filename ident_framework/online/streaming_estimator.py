"""The per-sample work of mode=online. For each sample (t s, q rad, dq rad/s, tau Nm):

1. the causal filter: q, dq, ddq and the smoothed torque of the sample `delay` back;
2. the base regressor rows phi (n, r) of that sample;
3. the a-priori prediction tau_pred = phi theta_{k-1} (latency measured);
4. the estimator's update on the smoothed torque (latency measured), from the rows of the
   joints moving at least `estimator.min_speed_rad_s` (`held_rows` counts the others);
5. sliding RMSE and R² per joint against the torque as recorded;
6. the CUSUM detector on the a-priori residual; an alarm triggers the configured response.

Rationale: docs/design.md#online-service-why-the-low-speed-rows-are-left-out
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ident_framework.config.online_settings import OnlineSettings
from ident_framework.online.causal_filter import CausalPolynomialFilter, window_samples
from ident_framework.online.drift import CusumDetector
from ident_framework.online.estimators import OnlineEstimator, online_estimator
from ident_framework.online.sample_regressor import SampleRegressor
from ident_framework.online.sliding_metrics import LatencyStats, SlidingFit
from ident_framework.online.streams import Sample

LATENCY_RECENT_S = 10.0  # s of samples behind the live latency median / p99


@dataclass
class StepResult:
    """One processed sample (the filter's centre sample, time t in s)."""

    t: float
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    tau_filtered: np.ndarray
    tau_meas: np.ndarray  # as recorded
    tau_pred: np.ndarray  # a priori
    drift_joints: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=int))


class StreamingIdentifier:
    """Streaming identification of base parameters from `theta0` (see the module docstring)."""

    def __init__(
        self,
        regressor: SampleRegressor,
        parameter_names: list[str],
        theta0: np.ndarray,
        settings: OnlineSettings,
        rate_hz: float,
    ):
        n = regressor.n
        self.n, self.settings, self.regressor, self.rate_hz = n, settings, regressor, rate_hz
        window = window_samples(settings.filter.window_s, rate_hz, settings.filter.polyorder)
        self.filter = CausalPolynomialFilter(3 * n, window, settings.filter.polyorder)
        self.estimator: OnlineEstimator = online_estimator(
            theta0, parameter_names, settings, rate_hz
        )
        self.fit = SlidingFit(n, max(int(round(settings.window_s * rate_hz)), 2))
        drift = settings.drift
        self.drift = CusumDetector(
            n,
            rate_hz,
            drift.allowance_sigma,
            drift.threshold_sigma,
            drift.sigma_window_s,
            drift.warmup_s,
            drift.holdoff_s,
            drift.min_speed_rad_s,
        )
        recent = max(int(LATENCY_RECENT_S * rate_hz), 100)  # the dashboard's live figures
        self.latency_prediction = LatencyStats(recent)
        self.latency_update = LatencyStats(recent)
        self.updates = 0
        self.failed_updates = 0
        self.held_rows = 0  # joint rows left out of the update: the joint was too slow
        self.time_: float | None = None  # s, the last processed sample
        self._short_memory_until: float | None = None
        self._buffer = np.empty(3 * n)

    def step(self, sample: Sample) -> StepResult | None:
        """Process one sample; None while the filter's window fills."""
        n, buffer = self.n, self._buffer
        buffer[:n], buffer[n : 2 * n], buffer[2 * n :] = sample.q, sample.dq, sample.tau
        out = self.filter.push(sample.t, buffer)
        if out is None:
            return None
        q, dq, tau_f = out.value[:n], out.value[n : 2 * n], out.value[2 * n :]
        ddq = out.derivative[n : 2 * n]
        phi = self.regressor.rows(q, dq, ddq)
        estimator = self.estimator
        tau_pred = phi @ estimator.coef_  # a priori: theta_{k-1}
        predicted = time.perf_counter()
        residual = tau_f - tau_pred  # the a-priori error, Nm
        moving = np.abs(dq) >= self.settings.estimator.min_speed_rad_s
        n_moving = int(np.count_nonzero(moving))
        try:
            if not np.isfinite(residual).all():
                raise ValueError(f"non-finite sample at t = {out.t} s")
            if n_moving == n:
                estimator.update(phi, tau_f, out.t)
            elif n_moving:
                estimator.update(phi[moving], tau_f[moving], out.t)
        except (ValueError, FloatingPointError):
            self.failed_updates += 1  # non-finite sample: state unchanged
            return None
        self.held_rows += n - n_moving
        self.time_ = out.t
        updated = time.perf_counter()
        self.updates += 1
        self.latency_prediction.add(predicted - sample.arrival)
        self.latency_update.add(updated - sample.arrival)
        tau_meas = out.raw[2 * n :]
        self.fit.update(tau_meas, tau_pred)
        fired = self.drift.update(out.t, residual, np.abs(dq))
        if self._short_memory_until is not None and out.t >= self._short_memory_until:
            estimator.shorten_memory(False)
            self._short_memory_until = None
        drift = self.settings.drift
        if fired.size and drift.response == "reset_covariance":
            estimator.forget()
        elif fired.size and drift.response == "lower_forgetting":
            estimator.shorten_memory(True)
            self._short_memory_until = out.t + drift.response_s
        return StepResult(out.t, q, dq, ddq, tau_f, tau_meas, tau_pred, fired)

    def restart(self) -> None:
        """Back to the starting parameters and uncertainty (dashboard's reset)."""
        self.estimator.restart()
        self.drift.reset_statistics()
