"""The per-sample estimators of mode=online behind one interface (`online.estimator.method`).

- `rls`: recursive least squares with forgetting, P0 = alpha I around the starting parameters;
- `sliding_ls`: least squares over the last `online.estimator.window_s` s (`sliding_ls.py`),
  with a ridge 1/alpha toward the starting parameters.

`update` returns the a-priori error (Nm). Drift responses, both keeping the estimate:
`forget()` (rls: P <- 1000 P; sliding_ls: the window restarts) and `shorten_memory(bool)`
(forgetting `drift.response_forgetting`, or a window of 1 / (1 - that) samples).
"""

from __future__ import annotations

import math

import numpy as np
from threadpoolctl import threadpool_limits

from ident_framework.config.online_settings import OnlineSettings
from ident_framework.identify.recursive import RecursiveLeastSquares, RecursiveLeastSquaresParams
from ident_framework.online.sliding_ls import SlidingWindowLeastSquares

RESET_GAIN = 1.0e3  # rls: covariance inflation of the drift response
SLIDING_BLOCKS = 50  # sliding_ls: blocks per window (the window moves a block at a time)


class OnlineEstimator:
    """Both estimators: the update, estimate, standard deviations and time of the wrapped
    `inner` estimator, and the drift responses (see the module docstring)."""

    method: str
    inner: RecursiveLeastSquares | SlidingWindowLeastSquares

    def update(self, phi: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
        return self.inner.update(phi, y, t)

    def restart(self) -> None:
        raise NotImplementedError

    def forget(self) -> None:
        raise NotImplementedError

    def shorten_memory(self, shorter: bool) -> None:
        raise NotImplementedError

    @property
    def coef_(self) -> np.ndarray:
        return self.inner.coef_

    @property
    def coef_std_(self) -> np.ndarray | None:
        return self.inner.coef_std_

    @property
    def time_(self) -> float | None:
        return self.inner.time_


def memory_samples(forgetting: float) -> float:
    """Memory 1 / (1 - lambda) of a forgetting factor, in samples (inf for lambda = 1)."""
    return math.inf if forgetting >= 1.0 else 1.0 / (1.0 - forgetting)


class RlsOnline(OnlineEstimator):
    """`rls` with forgetting, started from `theta0`."""

    method = "rls"

    def __init__(self, theta0: np.ndarray, names: list[str], settings: OnlineSettings, rate_hz):
        est = settings.estimator
        self.rate_hz, self.forgetting = rate_hz, est.forgetting
        self.response_forgetting = settings.drift.response_forgetting
        self.inner = self.rls = RecursiveLeastSquares(
            RecursiveLeastSquaresParams(
                forgetting=est.forgetting,
                alpha=est.alpha,
                checkpoint_s=1e12,
                running_window_s=settings.window_s,
            )
        )
        self.rls.reset(len(theta0), names)
        self.theta0 = np.asarray(theta0, dtype=float).copy()
        self.rls.set_state(self.theta0)

    def restart(self) -> None:
        self.rls.set_state(self.theta0)

    def forget(self) -> None:
        self.rls.set_state(self.rls.coef_, self.rls.covariance_ * RESET_GAIN)

    def shorten_memory(self, shorter: bool) -> None:
        self.rls.params.forgetting = self.response_forgetting if shorter else self.forgetting

    @property
    def memory_s(self) -> float:
        return memory_samples(self.rls.params.forgetting) / self.rate_hz


class SlidingLsOnline(OnlineEstimator):
    """`sliding_ls` over `online.estimator.window_s` s, started from `theta0`."""

    method = "sliding_ls"

    def __init__(self, theta0: np.ndarray, names: list[str], settings: OnlineSettings, rate_hz):
        est = settings.estimator
        window = max(int(round(est.window_s * rate_hz)), 1)
        block = max(window // SLIDING_BLOCKS, 1)
        self.rate_hz = rate_hz
        self.theta0 = np.asarray(theta0, dtype=float).copy()
        self.inner = self.ls = SlidingWindowLeastSquares(self.theta0, window, block, 1 / est.alpha)
        short = memory_samples(settings.drift.response_forgetting)
        self._short_blocks = max(int(math.ceil(short / block)), 1)

    def restart(self) -> None:
        self.ls.restart(self.theta0)

    def forget(self) -> None:
        self.ls.restart_window()

    def shorten_memory(self, shorter: bool) -> None:
        self.ls.shorten(self._short_blocks if shorter else None)

    @property
    def memory_s(self) -> float:
        return self.ls.active_blocks * self.ls.block / self.rate_hz


ESTIMATORS = {"rls": RlsOnline, "sliding_ls": SlidingLsOnline}


def online_estimator(
    theta0: np.ndarray, names: list[str], settings: OnlineSettings, rate_hz: float
) -> OnlineEstimator:
    return ESTIMATORS[settings.estimator.method](theta0, names, settings, rate_hz)


def single_threaded() -> threadpool_limits:
    """BLAS limited to one thread around the online loop (small matrices, loaded machine)."""
    return threadpool_limits(limits=1, user_api="blas")
