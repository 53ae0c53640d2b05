"""Unit and frame conversions of the shared real-data sets into the CSV contract's quantities.

Numpy only (no ident_framework): the arrays returned here are written by `project_io`.

Stäubli TX40 (``../shared/datasets/README.md``): 5 kHz, no time column, MOTOR-side positions
(rad) and motor torques. Joint side: q = Nq⁻¹ q_motor with Nq = diag(32, 32, 45, −48, 45, 32)
and Nq[5, 4] = 32 (joints 5 and 6 coupled), then q2 −= π/2, q3 += π/2; τ = Nt i with
Nt = diag(32, 32, 45, −48, 45, 32) and Nt[4, 5] = 32; t = k · 0.0002 s (k the file's row).
The data have no velocity: the converter writes dq = numpy.gradient(q, t) (second-order central
differences inside, one-sided at the ends; unfiltered, the project's preprocessing low-passes it).

KUKA LWR4+ (FloBaRoID measurements_N.npz): times (s, Unix epoch), positions (rad), velocities
(rad/s), torques (Nm, joint torque sensors). Time is written relative to the file's first sample:
epoch seconds (1.46e9) printed with 10 significant digits would keep only 0.1 s.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TX40_PERIOD_S = 0.0002  # 5 kHz
TX40_RATIOS = np.array([32.0, 32.0, 45.0, -48.0, 45.0, 32.0])  # TX40_config.yaml reduction_ratio
TX40_JOINTS = tuple(f"joint_{j}" for j in range(1, 7))
KUKA_JOINTS = tuple(f"lwr_{j}_joint" for j in range(7))


@dataclass(frozen=True)
class JointRecording:
    """One recording on the joint side: t (N,) s, q (N, n) rad, dq (N, n) rad/s, tau (N, n)
    Nm, joint names in column order."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    joint_names: tuple[str, ...]

    def rows(self, start: int, stop: int) -> JointRecording:
        part = slice(start, stop)
        return JointRecording(
            self.t[part], self.q[part], self.dq[part], self.tau[part], self.joint_names
        )


def tx40_position_matrix() -> np.ndarray:
    """Nq: q_motor = Nq q_joint (rad)."""
    nq = np.diag(TX40_RATIOS)
    nq[5, 4] = TX40_RATIOS[5]
    return nq


def tx40_torque_matrix() -> np.ndarray:
    """Nt: tau_joint = Nt i_motor (Nm)."""
    nt = np.diag(TX40_RATIOS)
    nt[4, 5] = TX40_RATIOS[5]
    return nt


def tx40_joint_side(q_motor: np.ndarray, i_motor: np.ndarray, first_row: int = 0) -> JointRecording:
    """Motor-side rows (N, 6) of pos_read_data.csv / curr_data.csv → joint-side recording;
    `first_row` is the file row of the first sample (its time is first_row · 0.0002 s)."""
    q = np.linalg.solve(tx40_position_matrix(), np.asarray(q_motor, float).T).T
    q[:, 1] -= np.pi / 2
    q[:, 2] += np.pi / 2
    tau = np.asarray(i_motor, float) @ tx40_torque_matrix().T
    t = (first_row + np.arange(len(q))) * TX40_PERIOD_S
    dq = np.gradient(q, t, axis=0)
    return JointRecording(t, q, dq, tau, TX40_JOINTS)


def read_tx40_motor_side(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """(q_motor, i_motor), each (45000, 6), from the dataset folder (header row skipped)."""
    q = np.loadtxt(folder / "pos_read_data.csv", delimiter=",", skiprows=1)
    i = np.loadtxt(folder / "curr_data.csv", delimiter=",", skiprows=1)
    if q.shape != i.shape or q.shape[1] != 6:
        raise ValueError(f"TX40 files disagree: positions {q.shape}, currents {i.shape}")
    return q, i


def kuka_recording(npz: Path) -> JointRecording:
    """measurements_N.npz → joint-side recording, time from the file's first sample."""
    with np.load(npz) as data:
        t = np.asarray(data["times"], float).reshape(-1)
        return JointRecording(
            t - t[0],
            np.asarray(data["positions"], float),
            np.asarray(data["velocities"], float),
            np.asarray(data["torques"], float),
            KUKA_JOINTS,
        )


def strip_geometry(urdf: Path, out: Path) -> Path:
    """Copy of `urdf` without <visual> and <collision> (their meshes are not shipped with the
    data sets, and FIGAROH's loader builds geometry models); inertias and joints unchanged."""
    tree = ET.parse(urdf)
    for link in tree.getroot().iter("link"):
        for child in [c for c in link if c.tag in ("visual", "collision")]:
            link.remove(child)
    tree.write(out, encoding="unicode", xml_declaration=True)
    return out
