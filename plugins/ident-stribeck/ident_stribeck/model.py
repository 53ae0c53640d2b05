"""Stribeck joint friction, linear in fc, fs, fv given the Stribeck velocity v_s and shape δ.

    tau_f = (fc + (fs - fc) exp(-|dq / v_s|^δ)) sign(dq) + fv dq        per joint

fc: Coulomb (sliding) friction, Nm; fs: static (break-away) friction, Nm; fv: viscous friction,
Nm·s/rad; v_s: Stribeck velocity, rad/s; δ: shape exponent (2: Gaussian). As regressor columns,
with e = exp(-|dq / v_s|^δ): fc·(1 - e)·sign(dq) + fs·e·sign(dq) + fv·dq. With `asymmetric` the
Coulomb and static levels differ by direction (fc_pos, fc_neg, fs_pos, fs_neg; all > 0, the
friction opposing the motion either way). `sign_width` > 0 (default 0.005 rad/s) replaces
sign(dq) by tanh(dq / sign_width): a real joint's friction is continuous at rest (presliding),
and a simulator needs it continuous too (at a step dt it stays stable while
dt·fs / (sign_width·M_jj) < 2, M_jj the joint's inertia: 5 kHz for a UR wrist at 0.005 rad/s).
0 gives the exact sign, which misfits every sample near rest.

The basis is memoryless (no state): it is evaluated sample by sample, in any order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ident_framework.params import Params, increasing, param, within

START_FACTORS = (0.3, 1.0, 3.0)  # the fit starts from v_s x each factor (per joint the best)


@dataclass
class StribeckParams(Params):
    """v_s: Stribeck velocity (rad/s) the fit starts from (also from 0.3x and 3x) and the value
    of a simulated truth that gives none; v_s_bounds: its range (rad/s). delta: shape exponent
    δ; fit_delta: fit δ too (within delta_bounds), else keep it fixed. asymmetric: direction-
    dependent Coulomb and static levels. sign_width: rad/s, sign(dq) is taken as
    tanh(dq / sign_width); 0: the exact sign."""

    v_s: float = param(0.1, gt=0, unit="rad/s")
    v_s_bounds: list[float] = param(
        factory=lambda: [0.002, 2.0], each=True, length=2, gt=0, unit="rad/s"
    )
    delta: float = param(2.0, gt=0)
    fit_delta: bool = False
    delta_bounds: list[float] = param(factory=lambda: [0.5, 4.0], each=True, length=2, gt=0)
    asymmetric: bool = False
    sign_width: float = param(0.005, ge=0, unit="rad/s")
    rules = (
        increasing("v_s_bounds", "delta_bounds"),
        within("v_s", "v_s_bounds"),
        within("delta", "delta_bounds", when="fit_delta"),
    )


class StribeckFriction:
    """Stribeck friction per joint; linear parameters fc, fs, fv (or their directional
    variants), nonlinear v_s (and δ with fit_delta)."""

    sequential = False

    def __init__(self, params: StribeckParams):
        self.params = params
        if params.asymmetric:
            self.parameter_names = ("fc_pos", "fc_neg", "fs_pos", "fs_neg", "fv")
        else:
            self.parameter_names = ("fc", "fs", "fv")
        self.nonlinear_names = ("v_s", "delta") if params.fit_delta else ("v_s",)

    # ------------------------------------------------------------------ basis
    def _sign(self, dq: np.ndarray) -> np.ndarray:
        width = self.params.sign_width
        return np.tanh(dq / width) if width > 0 else np.sign(dq)

    def basis_along(
        self, t: np.ndarray | None, dq: np.ndarray, nonlinear: np.ndarray
    ) -> np.ndarray:
        """(N, c, k) at velocities dq (N, c) rad/s with v_s (and δ) per column (c, m); memoryless,
        so t is not needed."""
        del t
        nonlinear = np.asarray(nonlinear, dtype=float)
        v_s = nonlinear[:, 0]
        delta = nonlinear[:, 1] if self.params.fit_delta else self.params.delta
        stribeck = np.exp(-(np.abs(dq / v_s) ** delta))
        sign = self._sign(dq)
        sliding, static = (1.0 - stribeck) * sign, stribeck * sign
        if not self.params.asymmetric:
            return np.stack([sliding, static, dq], axis=-1)
        positive, negative = dq > 0, dq < 0
        return np.stack(
            [sliding * positive, sliding * negative, static * positive, static * negative, dq],
            axis=-1,
        )

    def basis(self, dq: np.ndarray) -> np.ndarray:
        """The basis at the configured v_s and δ (e.g. for designing an excitation)."""
        return self.basis_along(None, dq, np.tile(self._config_values(), (dq.shape[1], 1)))

    # ------------------------------------------------------------ parameters
    def _config_values(self) -> np.ndarray:
        values = [self.params.v_s] + ([self.params.delta] if self.params.fit_delta else [])
        return np.array(values, dtype=float)

    def nonlinear_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        bounds = [self.params.v_s_bounds] + (
            [self.params.delta_bounds] if self.params.fit_delta else []
        )
        lower, upper = np.array(bounds, dtype=float).T
        return lower, upper

    def initial_nonlinear(self, viscous: np.ndarray, coulomb: np.ndarray) -> np.ndarray:
        """Starts v_s x 0.3, 1, 3 (within bounds) on every joint. fc, fs, fv are linear: the
        Coulomb-viscous solution is where every start begins with fs = fc."""
        del viscous
        n = len(coulomb)
        lower, upper = self.nonlinear_bounds()
        starts = []
        for factor in START_FACTORS:
            values = self._config_values()
            values[0] *= factor
            starts.append(np.tile(np.clip(values, lower, upper), (n, 1)))
        return np.array(starts)

    def physical_parameters(
        self, linear: np.ndarray, nonlinear: np.ndarray
    ) -> dict[str, np.ndarray]:
        values = {name: linear[:, k] for k, name in enumerate(self.parameter_names)}
        if not self.params.asymmetric:
            fc, fs = values["fc"], values["fs"]
            values["fs_ratio"] = np.divide(fs, fc, out=np.full(len(fc), np.nan), where=fc != 0)
        values["v_s"] = nonlinear[:, 0]
        n = len(linear)
        values["delta"] = (
            nonlinear[:, 1] if self.params.fit_delta else np.full(n, self.params.delta)
        )
        return values

    def from_physical(
        self, physical: dict[str, np.ndarray], n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Missing names: fc, fv 0; fs = fc (no Stribeck effect) or fs_ratio·fc when fs_ratio
        is given; v_s and δ the configured ones. Directional names default to the symmetric
        ones."""
        zero = np.zeros(n)
        fc = np.asarray(physical.get("fc", zero), dtype=float)
        fs = physical.get("fs")
        if fs is None:
            fs = fc * np.asarray(physical.get("fs_ratio", 1.0), dtype=float)
        values = {"fc": fc, "fs": np.asarray(fs, dtype=float), "fv": physical.get("fv", zero)}
        for level in ("fc", "fs"):
            for direction in ("pos", "neg"):
                values[f"{level}_{direction}"] = physical.get(f"{level}_{direction}", values[level])
        linear = np.column_stack(
            [
                np.broadcast_to(np.asarray(values[name], dtype=float), (n,))
                for name in self.parameter_names
            ]
        )
        nonlinear = np.tile(self._config_values(), (n, 1))
        nonlinear[:, 0] = physical.get("v_s", nonlinear[:, 0])
        if self.params.fit_delta:
            nonlinear[:, 1] = physical.get("delta", nonlinear[:, 1])
        return linear, nonlinear
