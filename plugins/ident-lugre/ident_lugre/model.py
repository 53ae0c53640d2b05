"""LuGre joint friction: a bristle state z (rad) integrated along the joint velocity.

    dz/dt = dq - sigma0 |dq| z / g(dq),     g(dq) = fc + (fs - fc) exp(-(dq / v_s)^2)
    tau_f = sigma0 z + sigma1 dz/dt + fv dq                                   per joint

fc: Coulomb friction (Nm), fs: static friction (Nm), v_s: Stribeck velocity (rad/s), sigma0:
bristle stiffness (Nm/rad), sigma1: bristle damping (Nm·s/rad), fv: viscous friction
(Nm·s/rad). In steady sliding tau_f = g(dq) sign(dq) + fv dq (the static friction curve).

Separable form. With the shape parameters fs_ratio = fs / fc, v_s and z_ss = fc / sigma0 (the
bristle deflection when sliding at the Coulomb level, rad), the normalised state w = z / z_ss
obeys dw/dt = (dq - |dq| w / ĝ(dq)) / z_ss with ĝ = 1 + (fs_ratio - 1) exp(-(dq / v_s)^2),
independent of fc, and

    tau_f = fc·w + sigma1·(dq - |dq| w / ĝ) + fv·dq,

linear in fc, sigma1, fv given the shape (the engine fits the shape by variable projection).

Integration: over each sample interval the state relaxes toward its steady state ĝ sign(dq) at
the rate |dq| / (ĝ z_ss) of the interval's mean velocity, with the steady state taken linear in
time between the two samples (an exponential integrator with a first-order hold):

    w_{k+1} = a_k w_k + (q_k - a_k) s_k + (1 - q_k) s_{k+1}, a_k = exp(-λ_k), q_k = (1 - a_k) / λ_k

with s_k = ĝ(dq_k) sign(dq_k) and λ_k = |dq_k+½| Δt_k / (ĝ(dq_k+½) z_ss); over an interval where dq
changes sign the steady state is held at the mean velocity's (s = ĝ sign of dq_k+½). Stable for
any step, and accurate for a stiff bristle too (z_ss much shorter than the distance travelled in
a sample): the state then lags its steady state by the relaxation time, as the ODE's does, and
the rate column dz/dt = dq - |dq| w / ĝ is z_ss·d(ĝ sign dq)/dt (with the steady state held
at the interval's mean velocity, a zero-order hold, dz/dt at a stiff bristle was mostly the
hold's error: 5 to 26 times the true rate at 500 Hz for z_ss = 1 µrad). In the stiff limit the
micro-damping term sigma1·dz/dt = (sigma1 / sigma0)·d(g sign dq)/d(dq)·ddq: an acceleration
lead of sigma1 / sigma0 seconds on the Stribeck curve. The recursion is affine in w, so a whole
recording is integrated with a parallel prefix scan (log2 N vectorised passes) instead of a
Python loop. The state starts at its steady state ĝ sign(dq) at the first sample (0 at rest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from ident_framework.params import Params, increasing, param, within

START_FACTORS = (0.3, 1.0, 3.0)  # the fit starts from v_s x each factor (per joint the best)


STRIBECK = ("auto", "on", "off")


def _bounds(lower: float, upper: float, unit: str = "") -> Any:
    """A [lower, upper] field, both > 0."""
    return param(factory=lambda: [lower, upper], each=True, length=2, gt=0, unit=unit)


@dataclass
class LugreParams(Params):
    """Where the fit of the shape starts and its bounds: fs_ratio = fs / fc (> 1: a Stribeck
    dip, < 1: a friction rising from a lower static level), v_s (rad/s; the fit also starts
    from 0.3x and 3x, and from the mirrored ratio 1 / fs_ratio), z_ss = fc / sigma0 (rad).
    stribeck: "on" fits the Stribeck curve (fs_ratio, v_s); "off" holds fs = fc (fs_ratio 1,
    v_s then has no effect) and fits z_ss alone; "auto": tuning=cv compares the two on its
    folds and keeps "off" unless "on" wins fold by fold (untuned: "on"). These values also
    complete a simulated LuGre truth that leaves them out."""

    fs_ratio: float = param(1.5, gt=0)
    fs_ratio_bounds: list[float] = _bounds(0.01, 5.0)
    v_s: float = param(0.1, gt=0, unit="rad/s")
    v_s_bounds: list[float] = _bounds(0.002, 0.1, unit="rad/s")
    z_ss: float = param(1e-3, gt=0, unit="rad")
    z_ss_bounds: list[float] = _bounds(1e-6, 0.05, unit="rad")
    stribeck: str = param("auto", choices=STRIBECK)
    rules = (
        increasing("fs_ratio_bounds", "v_s_bounds", "z_ss_bounds"),
        within("fs_ratio", "fs_ratio_bounds"),
        within("v_s", "v_s_bounds"),
        within("z_ss", "z_ss_bounds"),
    )


def affine_scan(a: np.ndarray, b: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """(N+1, c) states x_0 = x0, x_{k+1} = a_k x_k + b_k for a, b of shape (N, c) with
    0 <= a <= 1 (a Hillis-Steele prefix scan of the affine maps: no division, no overflow)."""
    a, b = a.copy(), b.copy()
    shift = 1
    while shift < len(a):
        b[shift:] = a[shift:] * b[:-shift] + b[shift:]
        a[shift:] = a[shift:] * a[:-shift]
        shift *= 2
    return np.concatenate([x0[None], a * x0 + b])


class LugreFriction:
    """LuGre friction per joint; linear fc, sigma1, fv; nonlinear fs_ratio, v_s, z_ss."""

    parameter_names = ("fc", "sigma1", "fv")
    nonlinear_names = ("fs_ratio", "v_s", "z_ss")
    sequential = True

    def __init__(self, params: LugreParams):
        self.params = params

    def _config_values(self) -> np.ndarray:
        return np.array([self.params.fs_ratio, self.params.v_s, self.params.z_ss])

    @staticmethod
    def _shape(dq: np.ndarray, nonlinear: np.ndarray) -> np.ndarray:
        """ĝ = g / fc at velocities dq (N, c) for the shape per column (c, 3)."""
        ratio, v_s = nonlinear[:, 0], nonlinear[:, 1]
        return 1.0 + (ratio - 1.0) * np.exp(-((dq / v_s) ** 2))

    # ------------------------------------------------------------------ basis
    def basis_along(
        self, t: np.ndarray | None, dq: np.ndarray, nonlinear: np.ndarray
    ) -> np.ndarray:
        """(N, c, 3) columns [w, dz/dt, dq] along dq (N, c) rad/s at times t (N,) s; t None:
        the steady state [ĝ sign(dq), 0, dq]."""
        nonlinear = np.asarray(nonlinear, dtype=float)
        dq = np.asarray(dq, dtype=float)
        shape = self._shape(dq, nonlinear)
        steady = shape * np.sign(dq)
        if t is None:
            return np.stack([steady, np.zeros_like(dq), dq], axis=-1)
        step = np.diff(np.asarray(t, dtype=float))[:, None]
        a, b = _interval_map(dq[:-1], dq[1:], steady[:-1], steady[1:], step, nonlinear)
        w = affine_scan(a, b, steady[0])
        rate = dq - np.abs(dq) * w / shape
        return np.stack([w, rate, dq], axis=-1)

    def basis(self, dq: np.ndarray) -> np.ndarray:
        """Steady-state basis at the configured shape (rows need not be in time order)."""
        return self.basis_along(None, dq, np.tile(self._config_values(), (dq.shape[1], 1)))

    def stepper(self, nonlinear: np.ndarray, dt: float) -> Callable[[np.ndarray], np.ndarray]:
        """For a simulator: dq (n,) -> basis (n, 3) at this step; w then advances by dt s."""
        nonlinear = np.asarray(nonlinear, dtype=float)
        state: dict[str, np.ndarray] = {}

        def step(dq: np.ndarray) -> np.ndarray:
            dq = np.array(dq, dtype=float)
            shape = self._shape(dq[None], nonlinear)[0]
            steady = shape * np.sign(dq)
            if "w" not in state:
                w = steady
            else:  # advance over the last step (as basis_along does)
                a, b = _interval_map(state["dq"], dq, state["steady"], steady, dt, nonlinear)
                w = a * state["w"] + b
            state.update(w=w, dq=dq, steady=steady)
            return np.stack([w, dq - np.abs(dq) * w / shape, dq], axis=-1)

        return step

    # ------------------------------------------------------------ parameters
    def nonlinear_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The configured bounds; without the Stribeck curve fs_ratio and v_s are held (equal
        bounds: 1 and the configured v_s)."""
        p = self.params
        lower, upper = np.array([p.fs_ratio_bounds, p.v_s_bounds, p.z_ss_bounds], dtype=float).T
        if p.stribeck == "off":
            lower[:2] = upper[:2] = [1.0, p.v_s]
        return lower, upper

    def tuning_variants(self) -> list[dict[str, str]]:
        """stribeck: auto: the variants tuning=cv compares, the simpler first (without, then
        with the Stribeck curve)."""
        return [{"stribeck": "off"}, {"stribeck": "on"}] if self.params.stribeck == "auto" else []

    def initial_nonlinear(self, viscous: np.ndarray, coulomb: np.ndarray) -> np.ndarray:
        """Starts at the configured shape and at its mirror fs_ratio -> 1 / fs_ratio (a dip of
        the Stribeck curve and a rise of the same size), each with v_s x 0.3, 1, 3 (within
        bounds) on every joint. fc, sigma1, fv are linear: each start begins at the best fc and
        fv for its shape."""
        del viscous
        n = len(coulomb)
        lower, upper = self.nonlinear_bounds()
        mirrored = np.clip([self.params.fs_ratio, 1 / self.params.fs_ratio], lower[0], upper[0])
        ratios = dict.fromkeys(float(r) for r in mirrored)  # one start when fs_ratio is 1
        factors = START_FACTORS if lower[1] < upper[1] else (1.0,)  # v_s held: one start
        starts = []
        for ratio in ratios:
            for factor in factors:
                values = self._config_values()
                values[0] = ratio
                values[1] *= factor
                starts.append(np.tile(np.clip(values, lower, upper), (n, 1)))
        return np.array(starts)

    def physical_parameters(
        self, linear: np.ndarray, nonlinear: np.ndarray
    ) -> dict[str, np.ndarray]:
        fc, sigma1, fv = linear.T
        ratio, v_s, z_ss = nonlinear.T
        return {
            "fc": fc,
            "fs": ratio * fc,
            "fs_ratio": ratio,
            "fv": fv,
            "v_s": v_s,
            "sigma0": fc / z_ss,
            "sigma1": sigma1,
            "z_ss": z_ss,
        }

    def from_physical(
        self, physical: dict[str, np.ndarray], n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Missing names: fc, fv, sigma1 0; fs from fs_ratio·fc, else the configured fs_ratio;
        z_ss from fc / sigma0, else the configured z_ss; v_s the configured one."""
        zero = np.zeros(n)
        fc = np.broadcast_to(np.asarray(physical.get("fc", zero), dtype=float), (n,))
        nonlinear = np.tile(self._config_values(), (n, 1))
        if "fs" in physical:
            fs = np.broadcast_to(np.asarray(physical["fs"], dtype=float), (n,))
            nonlinear[:, 0] = np.divide(fs, fc, out=np.ones(n), where=fc > 0)
        elif "fs_ratio" in physical:
            nonlinear[:, 0] = physical["fs_ratio"]
        nonlinear[:, 1] = physical.get("v_s", nonlinear[:, 1])
        if "z_ss" in physical:
            nonlinear[:, 2] = physical["z_ss"]
        elif "sigma0" in physical:
            sigma0 = np.broadcast_to(np.asarray(physical["sigma0"], dtype=float), (n,))
            nonlinear[:, 2] = np.divide(
                fc, sigma0, out=nonlinear[:, 2].copy(), where=(sigma0 > 0) & (fc > 0)
            )
        linear = np.column_stack(
            [fc, physical.get("sigma1", zero) + zero, physical.get("fv", zero) + zero]
        )
        return linear, nonlinear


def _interval_map(
    dq0: np.ndarray,
    dq1: np.ndarray,
    steady0: np.ndarray,
    steady1: np.ndarray,
    step: np.ndarray | float,
    nonlinear: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(a, b): the normalised state over one interval of `step` s from velocity dq0 to dq1,
    w1 = a w0 + b, with steady states ĝ sign(dq) steady0, steady1 at its ends (module doc)."""
    middle = 0.5 * (dq0 + dq1)
    middle_shape = LugreFriction._shape(middle, nonlinear)
    rate = np.abs(middle) * step / (middle_shape * nonlinear[:, 2])  # λ
    a = np.exp(-rate)
    small = rate < 1e-6
    held = np.where(  # (1 - a) / λ, its series where λ is tiny
        small, 1.0 - rate / 2.0 + rate**2 / 6.0, -np.expm1(-rate) / np.where(small, 1.0, rate)
    )
    turning = np.sign(dq0) != np.sign(dq1)
    b = np.where(
        turning,
        (1.0 - a) * middle_shape * np.sign(middle),
        (held - a) * steady0 + (1.0 - held) * steady1,
    )
    return a, b
