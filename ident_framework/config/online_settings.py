"""The `online:` section of the config (mode=online), validated: one dataclass per subsection,
so a bad value names its full key (`online.drift.threshold_sigma`). Every key with its unit:
conf/config.yaml. Imports nothing of the web stack.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import Any

from ident_framework.config.plugin_config import build_params
from ident_framework.errors import UserError
from ident_framework.params import Params, param

DRIFT_RESPONSES = ("reset_covariance", "lower_forgetting", "none")
ESTIMATOR_METHODS = ("rls", "sliding_ls")


@dataclass
class FilterSettings(Params):
    """Causal local-polynomial filter."""

    window_s: float = param(0.05, gt=0, unit="s")
    polyorder: int = param(3, ge=2, le=6)


@dataclass
class EstimatorSettings(Params):
    """The per-sample estimator."""

    method: str = param("rls", choices=ESTIMATOR_METHODS)
    forgetting: float = param(0.9995, ge=0.9, le=1)
    window_s: float = param(5.0, gt=0, unit="s")
    alpha: float = param(100.0, gt=0)
    structural_samples: int = param(3000, ge=200)
    min_speed_rad_s: float = param(0.05, ge=0, unit="rad/s")


@dataclass
class DriftSettings(Params):
    """Two-sided CUSUM per joint on the normalised a-priori residual."""

    allowance_sigma: float = param(4.0, gt=0)
    threshold_sigma: float = param(200.0, gt=0)
    sigma_window_s: float = param(30.0, gt=0, unit="s")
    warmup_s: float = param(10.0, ge=0, unit="s")
    holdoff_s: float = param(10.0, ge=0, unit="s")
    min_speed_rad_s: float = param(0.05, ge=0, unit="rad/s")
    response: str = param("reset_covariance", choices=DRIFT_RESPONSES)
    response_forgetting: float = param(0.995, ge=0.9, lt=1)
    response_s: float = param(3.0, gt=0, unit="s")


@dataclass
class TwinSettings(Params):
    """Twin re-injection: every `every_s` s of source time the recent `window_s` s (every
    `decimation`-th sample) are fitted with the physically consistent estimator (null: off)."""

    every_s: float | None = param(30.0, gt=0, unit="s", null=True)
    window_s: float = param(20.0, gt=0, unit="s")
    decimation: int = param(5, ge=1)


@dataclass
class DashboardSettings(Params):
    """What the dashboard is sent, and how long a lagging client is kept."""

    publish_hz: float = param(25.0, gt=0, unit="Hz")
    trace_hz: float = param(100.0, gt=0, unit="Hz")
    history_s: float = param(600.0, gt=0, unit="s")
    client_queue: int = param(16, ge=1)
    client_timeout_s: float = param(5.0, gt=0, unit="s")


@dataclass
class PayloadChange(Params):
    """source=mujoco: at source time t_s (s) the payload becomes mass_kg (kg)."""

    t_s: float = param(ge=0, unit="s")
    mass_kg: float = param(ge=0, unit="kg")


@dataclass
class OnlineSettings:
    """See conf/config.yaml's `online:` section for every key with its unit."""

    host: str = "127.0.0.1"
    port: int = 8765
    allow_remote: bool = False
    duration_s: float | None = None
    time_factor: float | None = 1.0
    initial_run: str | None = None
    max_lag_s: float = 1.0
    realtime_priority: int | None = None
    scheduler_slice_ms: float | None = 0.1
    window_s: float = 5.0
    parameters_every_s: float = 1.0
    trajectory: str = "excitation"
    payload_change: PayloadChange | None = None
    filter: FilterSettings = field(default_factory=FilterSettings)
    estimator: EstimatorSettings = field(default_factory=EstimatorSettings)
    drift: DriftSettings = field(default_factory=DriftSettings)
    twin: TwinSettings = field(default_factory=TwinSettings)
    dashboard: DashboardSettings = field(default_factory=DashboardSettings)

    @property
    def loopback(self) -> bool:
        try:
            return self.host == "localhost" or ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


TRAJECTORIES = ("excitation", "default_motion", "validation_motion")
_SUBSECTIONS = {
    "filter": FilterSettings,
    "estimator": EstimatorSettings,
    "drift": DriftSettings,
    "twin": TwinSettings,
    "dashboard": DashboardSettings,
}


def online_settings(values: dict[str, Any]) -> OnlineSettings:
    """Validate the `online:` section (a plain dict); UserError naming the key."""
    values = dict(values)
    sections = {}
    for name, schema in _SUBSECTIONS.items():
        section = values.pop(name, None) or {}
        if not isinstance(section, dict):
            raise UserError(
                f"Config key 'online.{name}' must be a section of keys, got {section!r}."
            )
        sections[name] = build_params(schema, section, f"online.{name}", f"online {name} settings")
    change = values.pop("payload_change", None)
    if change is not None:
        if not isinstance(change, dict):
            raise UserError(
                "Config key 'online.payload_change' must be {t_s: SECONDS, mass_kg: KG} or null, "
                f"got {change!r}."
            )
        change = build_params(PayloadChange, change, "online.payload_change", "payload change")
    settings = build_params(OnlineSettings, values, "online", "online service")
    settings.payload_change = change
    for name, section in sections.items():
        setattr(settings, name, section)
    _check(settings)
    return settings


def _check(settings: OnlineSettings) -> None:
    def bad(key: str, message: str) -> UserError:
        return UserError(f"Bad value for config key 'online.{key}': {message}.")

    if not 0 <= settings.port <= 65535:  # (an int: `build_params`)
        raise bad(
            "port", f"a TCP port in [0, 65535] is needed (0: a free one), got {settings.port}"
        )
    host = str(settings.host).strip()
    if not host:
        raise bad("host", "give an address to listen on, e.g. 127.0.0.1")
    settings.host = host
    if not settings.loopback and not settings.allow_remote:
        raise bad(
            "host",
            f"{host} is not a loopback address; the service would be reachable from other "
            "computers. Add online.allow_remote=true to do that on purpose (state-changing "
            "requests then need the token printed at start), or keep online.host=127.0.0.1",
        )
    if settings.duration_s is not None and not settings.duration_s > 0:
        raise bad("duration_s", f"seconds > 0 or null (until stopped), got {settings.duration_s}")
    if settings.time_factor is not None and not settings.time_factor > 0:
        raise bad(
            "time_factor",
            f"a factor > 0 (1: real time, 10: ten times faster) or null (as fast as possible), "
            f"got {settings.time_factor}",
        )
    priority = settings.realtime_priority
    if priority is not None and not 1 <= priority <= 99:
        raise bad("realtime_priority", f"a SCHED_FIFO priority in [1, 99] or null, got {priority}")
    slice_ms = settings.scheduler_slice_ms
    if slice_ms is not None and not (math.isfinite(slice_ms) and 0.1 <= slice_ms <= 100):
        raise bad(
            "scheduler_slice_ms",
            f"a time slice in [0.1, 100] ms or null (the kernel's default), got {slice_ms}",
        )
    if settings.trajectory not in TRAJECTORIES:
        raise bad("trajectory", f"one of {list(TRAJECTORIES)}, got {settings.trajectory!r}")
    for key in ("max_lag_s", "window_s", "parameters_every_s"):
        value = getattr(settings, key)
        if not (math.isfinite(value) and value > 0):
            raise bad(key, f"seconds > 0, got {value}")
    if settings.initial_run is not None and not str(settings.initial_run).strip():
        settings.initial_run = None
