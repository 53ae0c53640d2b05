"""Coupled transmissions: one motor that drives two joints (e.g. a coupled wrist).

The motor of joint b turns at ω = dq_b + r dq_a (rad/s, joint side); its torque
T = Ia_m (ddq_b + r ddq_a) + friction(ω) (Nm) acts on joint b as T and on joint a as r T. The
regressor adds per coupling the motor's friction columns (at ω, joint b's settings) and rotor
inertia column, named `<parameter>_m<b>` (`fv_m6`, `Ia_m6`), on rows b (× 1) and a (× r).
Config: `robot.coupled_joints: [{joints: [a, b], ratio: r}]`, 1-based (the Stäubli TX40's
wrist: [5, 6], ratio 1, `conf/robot/staubli_tx40.yaml`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ident_framework.errors import UserError
from ident_framework.params import Params, param

KEY = "robot.coupled_joints"


def _two_joints_nonzero_ratio(coupled: CoupledJoints) -> None:
    if coupled.joints[0] == coupled.joints[1]:
        raise ValueError(f"joints must be two different joint numbers, got {coupled.joints}")
    if coupled.ratio == 0.0:
        raise ValueError(f"ratio must be a finite non-zero number, got {coupled.ratio}")


@dataclass
class CoupledJoints(Params):
    """joints: [a, b] 1-based joint numbers, b the joint whose motor drives both; ratio: r in
    ω = dq_b + r dq_a (the motor's speed over its gear ratio, rad/s; r T acts on joint a)."""

    joints: list[int] = param(
        each=True,
        length=2,
        ge=1,
        note="1-based joint numbers [a, b], b: the joint whose motor drives both",
    )
    ratio: float = param(1.0, finite=True)
    rules = (_two_joints_nonzero_ratio,)


@dataclass(frozen=True)
class Coupling:
    """One coupled motor, 0-based: `driven` (b) is the joint whose motor it is, `other` (a)
    the joint it also feels, ω = dq_b + ratio dq_a."""

    other: int
    driven: int
    ratio: float

    def weights(self, n: int) -> np.ndarray:
        """(n,) the transmission's row: the motor's speed per joint speed, its torque per joint."""
        c = np.zeros(n)
        c[self.driven], c[self.other] = 1.0, self.ratio
        return c

    def motor_speed(self, dq: np.ndarray) -> np.ndarray:
        """ω (N,) rad/s from joint velocities dq (N, n); the same map for accelerations."""
        return dq[:, self.driven] + self.ratio * dq[:, self.other]


def resolve(settings: list[CoupledJoints] | None, n_joints: int) -> tuple[Coupling, ...]:
    """The couplings of the config, checked against a robot of `n_joints` joints; UserError
    naming the key when a joint does not exist or one motor is given twice."""
    couplings = []
    for i, entry in enumerate(settings or []):
        a, b = (int(j) for j in entry.joints)
        if max(a, b) > n_joints:
            raise UserError(
                f"{KEY}[{i}].joints = {list(entry.joints)} names a joint the robot does not "
                f"have: it has joints 1 to {n_joints}. Give the 1-based numbers [a, b] of two "
                "of its joints, b the one whose motor drives both (the Stäubli TX40's wrist: "
                "[5, 6])."
            )
        couplings.append(Coupling(a - 1, b - 1, float(entry.ratio)))
    driven = [c.driven for c in couplings]
    if len(set(driven)) != len(driven):
        raise UserError(
            f"{KEY} gives the motor of one joint twice (joints b = "
            f"{[d + 1 for d in driven]}): each motor drives at most one other joint; "
            "give one entry per coupled motor."
        )
    return tuple(couplings)
