"""Physical consistency of identified parameters (pure functions, no solver).

A link's parameters pi = [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (kg, kg·m, kg·m², about
the joint frame origin) are physical exactly when the pseudo-inertia matrix
J = [[½ tr(I) 1 - I, h], [h^T, m]] is positive semidefinite (Wensing, Kim and Slotine 2017).
`check_link` lists each violated condition with values (mass > 0, inertia about the centre of
mass positive definite, triangle inequalities, J ⪰ 0); `check_parameters` a whole standard
vector (also friction and rotor inertia >= 0); `physical_check` is the pipeline's step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ident_framework.model.base_parameters import SHARE_TOLERANCE, BaseParameters

if TYPE_CHECKING:
    from ident_framework.hookspecs import StandardModel
    from ident_framework.model.robot import RobotModel

N_LINK = 10  # inertial parameters per link

# vec(J) = PSEUDO_INERTIA_MAP @ pi (row-major 4x4), for the parameter order above.
PSEUDO_INERTIA_MAP = np.zeros((16, N_LINK))


def _fill_map() -> None:
    # Sigma = ½ tr(I) 1 - I: Sigma_xx = ½(-Ixx + Iyy + Izz), Sigma_xy = -Ixy, ...
    ixx, ixy, iyy, ixz, iyz, izz = 4, 5, 6, 7, 8, 9
    diagonal = {0: (ixx, iyy, izz), 1: (iyy, ixx, izz), 2: (izz, ixx, iyy)}
    for axis, (own, other_a, other_b) in diagonal.items():
        row = PSEUDO_INERTIA_MAP[4 * axis + axis]
        row[own], row[other_a], row[other_b] = -0.5, 0.5, 0.5
    for (a, b), index in {(0, 1): ixy, (0, 2): ixz, (1, 2): iyz}.items():
        PSEUDO_INERTIA_MAP[4 * a + b, index] = PSEUDO_INERTIA_MAP[4 * b + a, index] = -1.0
    for axis in range(3):  # h = m c = (mx, my, mz)
        PSEUDO_INERTIA_MAP[4 * axis + 3, 1 + axis] = PSEUDO_INERTIA_MAP[12 + axis, 1 + axis] = 1.0
    PSEUDO_INERTIA_MAP[15, 0] = 1.0


_fill_map()


def pseudo_inertia(params: np.ndarray) -> np.ndarray:
    """(4, 4) pseudo-inertia matrix J (kg, kg·m, kg·m²) of one link's 10 parameters."""
    return (PSEUDO_INERTIA_MAP @ np.asarray(params, dtype=float)).reshape(4, 4)


def rotational_inertia(params: np.ndarray) -> np.ndarray:
    """(3, 3) rotational inertia about the frame origin, kg·m²."""
    ixx, ixy, iyy, ixz, iyz, izz = np.asarray(params, dtype=float)[4:N_LINK]
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def com_inertia(params: np.ndarray) -> np.ndarray:
    """(3, 3) rotational inertia about the centre of mass, kg·m² (needs mass != 0)."""
    params = np.asarray(params, dtype=float)
    mass, h = params[0], params[1:4]
    return rotational_inertia(params) - (h @ h * np.eye(3) - np.outer(h, h)) / mass


def check_link(params: np.ndarray, tolerance: float = 1e-12, mass_share: float = 1.0) -> list[str]:
    """Violated physical conditions of one link's 10 parameters, each with its values (empty:
    valid); `tolerance` is relative to the link's largest inertia (or mass). `mass_share`
    (`BaseParameters.identifiable_share` of the mass): 0 reports the mass as not identifiable
    (not as negative) and skips the centre-of-mass conditions."""
    params = np.asarray(params, dtype=float)
    if params.shape != (N_LINK,):
        return [f"expected {N_LINK} inertial parameters, got shape {params.shape}"]
    if not np.all(np.isfinite(params)):
        return [f"non-finite parameters {params.tolist()}"]
    problems = []
    mass = params[0]
    if mass_share < SHARE_TOLERANCE:
        problems.append(
            f"mass not identifiable from this data (≈ 0 in the minimum-norm solution, {mass:.2g} "
            "kg: no joint torque depends on it)"
        )
    elif not mass > 0.0:
        alone = mass_share > 1.0 - SHARE_TOLERANCE
        problems.append(
            f"mass {mass:.6g} kg is not > 0"
            + ("" if alone else " (identified only in combination with other parameters)")
        )
    else:
        moments = np.linalg.eigvalsh(com_inertia(params))
        scale = max(float(np.abs(moments).max()), np.finfo(float).tiny)
        if not moments[0] > tolerance * scale:
            problems.append(
                "inertia about the centre of mass is not positive definite: principal moments "
                f"{_fmt(moments)} kg·m²"
            )
        slack = moments[0] + moments[1] - moments[2]  # the binding triangle inequality
        if slack < -tolerance * scale:
            problems.append(
                f"principal moments {_fmt(moments)} kg·m² violate the triangle inequality "
                f"I1 + I2 >= I3 (I1 + I2 - I3 = {slack:.6g})"
            )
    j = pseudo_inertia(params)
    eigenvalues = np.linalg.eigvalsh(j)
    scale = max(float(np.abs(eigenvalues).max()), np.finfo(float).tiny)
    if eigenvalues[0] < -tolerance * scale:
        problems.append(
            f"pseudo-inertia matrix J is not positive semidefinite: eigenvalues {_fmt(eigenvalues)}"
        )
    return problems


def check_parameters(
    theta: np.ndarray,
    standard: StandardModel,
    link_names: list[str] | None = None,
    tolerance: float = 1e-12,
    identifiable_share: np.ndarray | None = None,
) -> dict[str, list[str]]:
    """Violations per link (key: `link_names[j]`, default `link_1` ...), under "friction"
    (>= 0) and "armature" (rotor inertia >= 0), of `theta` (in `standard.names` order).
    `identifiable_share` (p,): see `check_link` (None: all identified)."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (len(standard.names),):
        raise ValueError(f"theta has shape {theta.shape}, expected ({len(standard.names)},)")
    names = link_names or [f"link_{j + 1}" for j in range(standard.n_links)]
    if len(names) != standard.n_links:
        raise ValueError(f"{len(names)} link names given for {standard.n_links} links")
    shares = np.ones(len(theta)) if identifiable_share is None else identifiable_share
    report = {
        name: check_link(theta[N_LINK * j : N_LINK * (j + 1)], tolerance, shares[N_LINK * j])
        for j, name in enumerate(names)
    }
    signed = sign_constrained(standard.kinds, standard.names)
    for kind, unit in (("friction", ""), ("armature", " kg·m²")):
        report[kind] = [
            f"{name} = {value:.6g}{unit} is not >= 0"
            for name, k, value, bound in zip(
                standard.names, standard.kinds, theta, signed, strict=True
            )
            if k == kind and bound and not value >= 0.0
        ]
    return report


TEMPERATURE_MARK = "_T_"  # fv_T_j, fc_T_j: a friction's change per kelvin, either sign


def sign_constrained(kinds: list[str], names: list[str]) -> np.ndarray:
    """(p,) True for the standard parameters that must be >= 0: friction and rotor inertia,
    not the friction's temperature coefficients (either sign)."""
    return np.array(
        [
            kind in ("friction", "armature") and TEMPERATURE_MARK not in name
            for kind, name in zip(kinds, names, strict=True)
        ],
        dtype=bool,
    )


def violations(report: dict[str, list[str]]) -> list[str]:
    """The report of `check_parameters` as one flat list of `"<part>: <condition>"`."""
    return [f"{part}: {problem}" for part, problems in report.items() for problem in problems]


def is_consistent(report: dict[str, list[str]]) -> bool:
    """True when `check_parameters` found no violation."""
    return not any(report.values())


def _fmt(values: np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in values) + "]"


@dataclass
class PhysicalCheck:
    """violations: "<link or part>: <condition>" for each broken condition (empty: valid);
    mass_share (n,): how much of each link mass the data determine (None: all of it)."""

    violations: list[str]
    mass_share: np.ndarray | None

    @property
    def valid(self) -> bool:
        return not self.violations


def physical_check(
    theta: np.ndarray,
    standard: StandardModel,
    robot: RobotModel,
    base: BaseParameters,
    from_base_parameters: bool,
) -> PhysicalCheck:
    """Check `theta` (standard parameters); `from_base_parameters`: masses no torque depends on
    are reported as not identifiable."""
    share = base.identifiable_share() if from_base_parameters else None
    report = check_parameters(theta, standard, list(robot.joint_names), 1e-12, share)
    mass_share = None if share is None else share[: 10 * robot.n_joints : 10]
    return PhysicalCheck(violations(report), mass_share)
