"""The Fourier-series trajectory of the `fourier` generator (the form: the package's
docstring), its basis and the rest constraints of its coefficients."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ident_framework.plain_data import to_plain

_REST_TOLERANCE = 1e-9  # relative tolerance of the rest constraints of a loaded description


def constraint_basis(n_harmonics: int) -> np.ndarray:
    """(2L, 2L-3) orthonormal basis of the coefficients [a; b] that start at rest at q0."""
    harmonics = np.arange(1, n_harmonics + 1, dtype=float)
    zeros = np.zeros(n_harmonics)
    constraints = np.array(
        [
            np.concatenate([np.ones(n_harmonics), zeros]),  # dq(0) = 0
            np.concatenate([zeros, harmonics]),  # ddq(0) = 0
            np.concatenate([zeros, 1.0 / harmonics]),  # q(0) = q0 = mean position
        ]
    )
    from scipy.linalg import null_space  # 0.16 s to import: not on a recorded log's path

    return null_space(constraints)


def fourier_basis(
    t: np.ndarray, omega: float, n_harmonics: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(len(t), 2L) maps from [a; b] to q - q0 (rad), dq (rad/s) and ddq (rad/s²)."""
    wl = omega * np.arange(1, n_harmonics + 1, dtype=float)
    phase = np.outer(t, wl)
    sin, cos = np.sin(phase), np.cos(phase)
    position = np.hstack([sin / wl, (1.0 - cos) / wl])
    velocity = np.hstack([cos, sin])
    acceleration = np.hstack([-sin * wl, cos * wl])
    return position, velocity, acceleration


@dataclass
class FourierTrajectory:
    """Finite Fourier series per joint (see the module docstring), at rest at t = 0 and at
    t = duration. q0 (n,) rad; a, b (n, L) rad/s; base_frequency_hz Hz. `info` holds what the
    search measured (condition number, limit usage) and is reported by `describe`."""

    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    base_frequency_hz: float
    n_periods: int = 1
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.q0 = np.asarray(self.q0, dtype=float).reshape(-1)
        self.a = np.atleast_2d(np.asarray(self.a, dtype=float))
        self.b = np.atleast_2d(np.asarray(self.b, dtype=float))
        n, n_harmonics = self.a.shape
        if self.q0.shape != (n,) or self.b.shape != (n, n_harmonics):
            raise ValueError(
                f"Fourier trajectory shapes disagree: q0 {self.q0.shape}, a {self.a.shape}, "
                f"b {self.b.shape}; expected (n,), (n, L), (n, L)"
            )
        if not (self.base_frequency_hz > 0.0 and self.n_periods >= 1):
            raise ValueError("base_frequency_hz must be > 0 and n_periods >= 1")
        harmonics = np.arange(1, n_harmonics + 1)
        scale = max(
            1.0, float(np.abs(self.a).max(initial=0.0)), float(np.abs(self.b).max(initial=0.0))
        )
        residual = max(
            float(np.abs(self.a.sum(axis=1)).max(initial=0.0)),
            float(np.abs(self.b @ harmonics).max(initial=0.0)) / n_harmonics,
        )
        if residual > _REST_TOLERANCE * scale * n_harmonics:
            raise ValueError(
                "Fourier coefficients do not start at rest: need sum_l a_jl = 0 and "
                "sum_l l b_jl = 0 for every joint"
            )

    @property
    def n_joints(self) -> int:
        return self.a.shape[0]

    @property
    def n_harmonics(self) -> int:
        return self.a.shape[1]

    @property
    def omega(self) -> float:
        """Base angular frequency (rad/s)."""
        return 2.0 * math.pi * self.base_frequency_hz

    @property
    def duration(self) -> float:
        """Duration (s): whole periods."""
        return self.n_periods / self.base_frequency_hz

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q (rad), dq (rad/s), ddq (rad/s²) at times t (s), each (len(t), n). Outside
        [0, duration] the robot rests at q0."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        position, velocity, acceleration = fourier_basis(t, self.omega, self.n_harmonics)
        coefficients = np.hstack([self.a, self.b]).T  # (2L, n)
        q = self.q0 + position @ coefficients
        dq = velocity @ coefficients
        ddq = acceleration @ coefficients
        outside = (t < 0.0) | (t > self.duration)
        if outside.any():
            q[outside] = self.q0
            dq[outside] = 0.0
            ddq[outside] = 0.0
        return q, dq, ddq

    def describe(self) -> dict[str, Any]:
        """YAML-safe description (plain floats and lists); `from_description` rebuilds it."""
        return {
            "generator": "fourier",
            "base_frequency_hz": float(self.base_frequency_hz),
            "n_harmonics": int(self.n_harmonics),
            "n_periods": int(self.n_periods),
            "duration_s": float(self.duration),
            "q0": [float(v) for v in self.q0],
            "a": [[float(v) for v in row] for row in self.a],
            "b": [[float(v) for v in row] for row in self.b],
            **to_plain(self.info),
        }

    @classmethod
    def from_description(cls, description: dict[str, Any]) -> FourierTrajectory:
        """Rebuild from `describe()` output (e.g. read back from YAML)."""
        known = {"generator", "base_frequency_hz", "n_harmonics", "n_periods", "duration_s"}
        known |= {"q0", "a", "b"}
        try:
            trajectory = cls(
                q0=np.asarray(description["q0"], dtype=float),
                a=np.asarray(description["a"], dtype=float),
                b=np.asarray(description["b"], dtype=float),
                base_frequency_hz=float(description["base_frequency_hz"]),
                n_periods=int(description.get("n_periods", 1)),
                info={k: v for k, v in description.items() if k not in known},
            )
        except KeyError as missing:
            raise ValueError(f"Fourier trajectory description lacks {missing}") from None
        return trajectory
