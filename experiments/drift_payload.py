"""Drift study: the payload grows by 2 kg halfway through a recording; does `rls` follow?

    python experiments/drift_payload.py [--forgetting 0.998 0.999 0.9995 0.9998] [--plot FILE]

Setup (seeded, about 15 s on 2 cores): the MuJoCo UR12e twin (perturbation seed 0, 1.5 kg payload
5 cm beyond the flange, friction, rotor inertia, 0.05 Nm torque noise, 2^20-count encoders)
follows an optimised Fourier excitation of period 10 s for four periods (40 s at 500 Hz); at
20 s, a period boundary where the motion is at rest, the payload becomes 3.5 kg. Exact MuJoCo
accelerations are recorded, so no preprocessing stands between the data and the estimators.
Validation: another Fourier motion (10 s) recorded on the robot with each payload.

Measured:
- `ls` on the whole recording: its RMSE on the post-change half and on the post-change
  validation recording, against LS fitted on the post-change half alone (the best a fixed
  model can do there).
- `rls` for each forgetting factor lam: base parameters are snapshotted every 50 ms; the
  validation RMSE of each snapshot on the recording of the robot that is current (1.5 kg
  before the change, 3.5 kg after) and the running RMSE (0.5 s window) of the a-priori error
  on the incoming data. Recovery time: seconds after the change from which the metric stays
  within 10 % of its pre-change level until the end of the recording. The pre-change level
  is phase-matched (the value at the same phase of the excitation in the last period before
  the change), because both errors depend strongly on where in the motion the robot is
  (friction near zero speed, which directions the memory window excites); the recovery
  against the mean pre-change level is printed as well.

Choice of lam (per sample; memory T = 1 / ((1 - lam) f_s), f_s = 500 Hz):
- Tracking: after a step change the parameter error decays like lam^k, so the excess RMSE
  Delta lam^k must fall to sqrt(1.1² - 1) sigma_pre = 0.46 sigma_pre for "within 10 %":
  t_rec ~= T ln(Delta / (0.46 sigma_pre)). Here Delta ~= 5.3 Nm (the old parameters on the new
  robot's validation), sigma_pre ~= 1 Nm, so t_rec ~= 2.4 T: the shorter the memory the better.
- Accuracy: the memory window must still determine all 52 base parameters. Noise alone
  would allow very short memories (the variance excess is about r / (n N_eff) = 52 / (6 * 2
  / (1 - lam)), 0.4 % at 0.999), but a window much shorter than the excitation period leaves
  directions poorly excited: the pre-change validation RMSE (LS on the pre-change half:
  0.94 Nm) measured 0.96 (T = 10 s), 0.97 (4 s), 1.09 (2 s), 1.70 (1 s), 2.73 Nm (0.7 s).
- Hence lam = 0.999 (T = 2 s, a fifth of the excitation period): the shortest memory that
  costs at most ~15 % of steady-state accuracy; predicted t_rec ~= 5 s, measured ~8 s (right
  after the change the arm is at rest, so the first second brings little information).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ident_framework.estimators.ls import LeastSquares, LeastSquaresParams
from ident_framework.friction.coulomb_viscous import CoulombViscousFriction, CoulombViscousParams
from ident_framework.identify.excitation_objective import make_condition_objective
from ident_framework.identify.recursive import RecursiveLeastSquares, RecursiveLeastSquaresParams
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import load_robot
from ident_framework.simulation.tracking import SimulationParams
from ident_framework.testing.drift_study import (
    DriftSetup,
    least_squares_on,
    phase_matched_reference,
    prepare_drift_setup,
    recovery_time,
    rmse_of,
)
from ident_framework.trajectories.fourier import FourierGenerator
from ident_framework.trajectories.fourier.params import FourierParams

APRIORI_GRACE_S = 0.5  # s: shorter excursions of the a-priori error are not counted
CHOSEN_FORGETTING = 0.999  # 2 s memory at 500 Hz, see the module docstring


def make_setup(
    period_s: float = 10.0,
    n_periods: int = 4,
    record_rate_hz: float = 500.0,
    n_candidates: int = 200,
    n_refine: int = 300,
    seed: int = 0,
) -> tuple[DriftSetup, float]:
    """The drift study's data: change at the middle period boundary. Returns (setup, change
    time in s)."""
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()), armature=True)
    excitation = FourierGenerator(
        FourierParams(
            base_frequency_hz=1.0 / period_s,
            n_periods=n_periods,
            n_candidates=n_candidates,
            n_refine=n_refine,
            progress=False,
        )
    ).generate(robot, make_condition_objective(builder, seed=seed), seed)
    validation = FourierGenerator(
        FourierParams(base_frequency_hz=1.0 / period_s, n_periods=1, progress=False)
    ).generate(robot, None, seed + 1)
    change = period_s * (n_periods // 2)
    simulation = SimulationParams(record_rate_hz=record_rate_hz, record_acceleration=True)
    setup = prepare_drift_setup(
        builder, excitation, validation, change, (1.5, 3.5), simulation=simulation, seed=seed
    )
    return setup, change


def track(
    setup: DriftSetup,
    change: float,
    period_s: float,
    forgetting: float,
    checkpoint_s: float = 0.05,
    window_s: float = 2.0,
) -> dict[str, object]:
    """Run `rls` with this forgetting factor over the recording; recovery figures (s)."""
    params = RecursiveLeastSquaresParams(
        forgetting=forgetting, checkpoint_s=checkpoint_s, running_window_s=window_s
    )
    start = time.perf_counter()
    rls = RecursiveLeastSquares(params).fit(setup.problem)
    seconds = time.perf_counter() - start
    times, thetas = rls.snapshots_
    _, apriori = rls.running_rmse_
    before = times < change
    # validation on the robot that is current at each snapshot
    validation = np.where(
        before,
        rmse_of(setup.factors["validation_before"], thetas),
        rmse_of(setup.factors["validation_after"], thetas),
    )
    pre = before & (times >= change - period_s)
    rate = 1.0 / np.median(np.diff(setup.recording.data.timestamp))
    out: dict[str, object] = {
        "forgetting": forgetting,
        "memory_s": 1.0 / (1.0 - forgetting) / rate if forgetting < 1.0 else float("inf"),
        "updates_per_s": setup.problem.n_samples / seconds,
        "validation_pre_mean": float(validation[pre].mean()),
        "validation_final": float(validation[-1]),
        "times": times,
        "validation": validation,
        "apriori": apriori,
    }
    last_period = times >= times[-1] - period_s
    for name, values in (("validation", validation), ("apriori", apriori)):
        matched = phase_matched_reference(times, values, change, period_s)
        out[f"{name}_recovery_s"] = recovery_time(times, values, matched, change)
        out[f"{name}_recovery_grace_s"] = recovery_time(
            times, values, matched, change, grace_s=APRIORI_GRACE_S
        )
        out[f"{name}_ratio"] = values / matched
        out[f"{name}_recovery_mean_level_s"] = recovery_time(
            times, values, float(values[pre].mean()), change
        )
        out[f"{name}_last_period_max_ratio"] = float(
            np.max(values / matched, where=last_period, initial=0.0)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--forgetting", type=float, nargs="+", default=[0.998, 0.999, 0.9995, 0.9998]
    )
    parser.add_argument("--period", type=float, default=10.0, help="excitation period, s")
    parser.add_argument("--plot", default=None, help="write the curves to this PNG")
    args = parser.parse_args()
    start = time.perf_counter()
    setup, change = make_setup(period_s=args.period)
    data = setup.recording.data
    print(
        f"recording {data.duration:.1f} s, {data.n_samples} samples, payload 1.5 -> 3.5 kg at "
        f"{change:.1f} s (state jump at the change {setup.recording.state_jump_rad:.1e} rad), "
        f"{setup.base.rank} base parameters; setup {time.perf_counter() - start:.1f} s"
    )

    ls = LeastSquares(LeastSquaresParams()).fit(setup.problem).coef_
    ls_after = least_squares_on(setup.factors["after"])
    ls_before = least_squares_on(setup.factors["before"])
    f = setup.factors
    print("\nLS on the whole recording (RMSE, Nm):")
    print(
        f"  post-change data {rmse_of(f['after'], ls)[0]:.3f}   post-change validation "
        f"{rmse_of(f['validation_after'], ls)[0]:.3f}   pre-change validation "
        f"{rmse_of(f['validation_before'], ls)[0]:.3f}"
    )
    print(
        f"  reference, LS on the post-change half only: post-change data "
        f"{rmse_of(f['after'], ls_after)[0]:.3f}, post-change validation "
        f"{rmse_of(f['validation_after'], ls_after)[0]:.3f}; LS on the pre-change half only: "
        f"pre-change validation {rmse_of(f['validation_before'], ls_before)[0]:.3f}"
    )

    print(
        "\nRLS, recovery = s after the change from which the metric stays within 10 % of its "
        "pre-change level\nat the same phase of the excitation (val: validation RMSE on the "
        "robot current at t; mean: against\nthe mean pre-change level instead; a-priori: "
        "running RMSE of the a-priori error over 2 s, excursions\n"
        f"shorter than {APRIORI_GRACE_S} s ignored; strict: none ignored). RMSE in Nm."
    )
    print(
        f"{'lambda':>7} {'memory':>7} {'val pre':>8} {'val final':>9} {'val recovery':>13} "
        f"{'(mean)':>7} {'a-priori recovery':>18} {'(strict)':>9}"
    )
    results = []
    for forgetting in args.forgetting:
        r = track(setup, change, args.period, forgetting)
        results.append(r)
        print(
            f"{forgetting:>7g} {r['memory_s']:>6.1f}s {r['validation_pre_mean']:>8.3f} "
            f"{r['validation_final']:>9.3f} {r['validation_recovery_s']:>11.2f} s "
            f"{r['validation_recovery_mean_level_s']:>7.2f} "
            f"{r['apriori_recovery_grace_s']:>16.2f} s {r['apriori_recovery_s']:>9.2f}"
        )
    chosen = [r for r in results if r["forgetting"] == CHOSEN_FORGETTING]
    if chosen:
        r = chosen[0]
        times = r["times"]
        print(
            f"\nlambda = {CHOSEN_FORGETTING}, largest ratio to the phase-matched pre-change level "
            "per 2 s after the change:"
        )
        edges = np.arange(change, times[-1], 2.0)
        cells = []
        for lo in edges:
            inside = (times >= lo) & (times < lo + 2.0)
            if np.any(inside):
                val = np.max(r["validation_ratio"][inside])
                apriori = np.max(r["apriori_ratio"][inside])
                cells.append(
                    f"{lo - change:4.0f}-{lo - change + 2:<3.0f}s  val {val:5.2f}  "
                    f"a-priori {apriori:5.2f}"
                )
        print("\n".join("  " + cell for cell in cells))
        print(
            f"\nchosen lambda = {CHOSEN_FORGETTING} ({r['memory_s']:.0f} s memory): the "
            f"validation RMSE is back within 10 % of its pre-change level "
            f"{r['validation_recovery_s']:.2f} s after the change, the a-priori error on the "
            f"incoming data {r['apriori_recovery_grace_s']:.2f} s after it; final validation "
            f"RMSE {r['validation_final']:.3f} Nm vs {rmse_of(f['validation_after'], ls)[0]:.3f}"
            " Nm for LS on the whole recording."
        )
    if args.plot:
        plot(args.plot, results, change, rmse_of(f["validation_after"], ls)[0])
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


def plot(path: str, results: list[dict[str, object]], change: float, ls_after: float) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7))
    top, bottom = fig.subplots(2, 1, sharex=True)
    for r in results:
        label = f"λ = {r['forgetting']:g}"
        top.plot(r["times"], r["validation"], lw=1, label=label)
        bottom.plot(r["times"], r["apriori"], lw=0.8, label=label)
    top.axhline(ls_after, color="black", ls="--", lw=1, label="LS, whole recording")
    for ax in (top, bottom):
        ax.axvline(change, color="gray", lw=1)
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    top.set_ylabel("validation RMSE [Nm]\n(robot current at t)")
    bottom.set_ylabel("running a-priori RMSE [Nm]")
    bottom.set_xlabel("time [s]")
    top.legend(fontsize=8)
    top.set_title("Payload 1.5 → 3.5 kg at the grey line")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
