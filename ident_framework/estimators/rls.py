"""Built-in estimator `rls`: recursive least squares with forgetting (`identify/recursive.py`)
over the identification recording, with its outputs rls_snapshots.csv, rls_running_rmse.csv
and their plots.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ident_framework.hookspecs import EstimatorDefaults, hookimpl
from ident_framework.identify.recursive import RecursiveLeastSquares, RecursiveLeastSquaresParams


class RlsEstimator(RecursiveLeastSquares, EstimatorDefaults):
    """`RecursiveLeastSquares` as the `rls` estimator, with `write_outputs`."""

    def write_outputs(self, folder: Path) -> None:
        """rls_snapshots.csv (time_s, one column per base parameter), rls_running_rmse.csv
        (time_s, running_rmse_Nm), plots/rls_convergence.png, plots/rls_running_rmse.png."""
        folder = Path(folder)
        times, thetas = self.snapshots_
        if not len(times):
            return
        folder.mkdir(parents=True, exist_ok=True)
        rmse_t, rmse = self.running_rmse_
        for name, header, columns in (
            ("rls_snapshots.csv", ",".join(["time_s", *self.parameter_names]), [times, thetas]),
            ("rls_running_rmse.csv", "time_s,running_rmse_Nm", [rmse_t, rmse]),
        ):
            table = np.column_stack(columns)
            np.savetxt(folder / name, table, delimiter=",", header=header, comments="", fmt="%.10g")
        plot_convergence(folder / "plots" / "rls_convergence.png", times, thetas)
        plot_running_rmse(
            folder / "plots" / "rls_running_rmse.png", rmse_t, rmse, self.params.running_window_s
        )


@hookimpl
def register_estimators(register) -> None:
    register("rls", RlsEstimator, RecursiveLeastSquaresParams)


def normalised_deviation(thetas: np.ndarray) -> np.ndarray:
    """(k, r) (theta(t) - theta_final) / scale, scale = max(|theta_final|, 1 % of the
    largest |theta_final|): relative deviation from the final estimate."""
    final = thetas[-1]
    scale = np.maximum(np.abs(final), 0.01 * max(float(np.abs(final).max()), 1e-300))
    return (thetas - final) / scale


def plot_convergence(path: Path, times: np.ndarray, thetas: np.ndarray) -> None:
    """Every base parameter's normalised deviation from its final value, and their median."""
    from matplotlib.figure import Figure

    path.parent.mkdir(parents=True, exist_ok=True)
    deviation = normalised_deviation(thetas)
    fig = Figure(figsize=(9, 4.5))
    ax = fig.subplots()
    ax.plot(times, deviation, lw=0.6, alpha=0.5)
    ax.plot(times, np.median(np.abs(deviation), axis=1), color="black", lw=1.8,
            label="median |deviation|")  # fmt: skip
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("(θ(t) − θ_final) / |θ_final|")
    ax.set_title(f"RLS parameter convergence ({thetas.shape[1]} base parameters)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_running_rmse(path: Path, times: np.ndarray, rmse: np.ndarray, window_s: float) -> None:
    from matplotlib.figure import Figure

    path.parent.mkdir(parents=True, exist_ok=True)
    fig = Figure(figsize=(9, 4))
    ax = fig.subplots()
    ax.plot(times, rmse, color="tab:blue", lw=1.0)
    if np.any(rmse > 0):
        ax.set_yscale("log")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("RMSE [Nm]")
    ax.set_title(f"RLS a-priori prediction error, running RMSE over {window_s:g} s")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
