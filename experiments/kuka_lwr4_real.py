"""Real data: identify a KUKA LWR4+ from measured joint torques and validate on a different
measured trajectory (FloBaRoID's data, ../shared/datasets/kuka_lwr4, LGPL-3.0).

    python experiments/kuka_lwr4_real.py [--datasets ../shared/datasets] [--out runs/kuka]

Trains on measurements_1 and validates on measurements_3 (a different trajectory; 1 and 2
repeat the same one, which would flatter the fit), for `ls`, `wls` and `consistent`, with and
without torque-offset columns. The .npz files are converted to the CSV contract first.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset

JOINTS = tuple(f"lwr_{j}_joint" for j in range(7))
RUNS = (
    ("ls", False), ("wls", False), ("consistent", False), ("ls", True), ("consistent", True),
)  # fmt: skip


def npz_to_csv(npz: Path, csv: Path) -> None:
    """times [s], positions [rad], velocities [rad/s], torques [Nm] (joint torque sensors)."""
    data = np.load(npz)
    t = data["times"]
    write_csv_log(
        Dataset(t - t[0], data["positions"], data["velocities"], data["torques"], JOINTS), csv
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--datasets", type=Path, default=here.parent / "shared" / "datasets")
    parser.add_argument("--out", type=Path, default=Path("runs") / "kuka_lwr4_real")
    args = parser.parse_args()
    folder = args.datasets / "kuka_lwr4"
    if not folder.is_dir():
        sys.exit(f"no KUKA data in {folder}: pass --datasets DIR")
    with tempfile.TemporaryDirectory() as tmp:
        train, test = Path(tmp) / "measurements_1.csv", Path(tmp) / "measurements_3.csv"
        npz_to_csv(folder / "measurements_1.npz", train)
        npz_to_csv(folder / "measurements_3.npz", test)
        print(f"{'estimator':<11} {'offsets':<8} {'n_base':>6} {'cond':>7} {'train RMSE':>10} "
              f"{'val RMSE':>9} {'val R²':>8}  val R² per joint")  # fmt: skip
        for estimator, offsets in RUNS:
            run = args.out / f"{estimator}{'_offsets' if offsets else ''}"
            subprocess.run(
                [sys.executable, "-m", "ident_framework", "robot=urdf",
                 f"robot.path={folder / 'kuka_lwr4.urdf'}", "source=csv", f"source.path={train}",
                 "validation=csv", f"validation.path={test}", f"estimator={estimator}",
                 f"regressor.torque_offset={str(offsets).lower()}", f"hydra.run.dir={run}"],
                check=True, capture_output=True,
            )  # fmt: skip
            m = json.loads((run / "metrics.json").read_text())
            v, t = m["validation"]["physical"], m["train"]["physical"]
            per_joint = " ".join(f"{r:.3f}" for r in v["r2_per_joint"])
            print(f"{estimator:<11} {str(offsets):<8} {m['identifiability']['n_base']:>6} "
                  f"{m['identifiability']['cond']:>7.0f} {t['rmse']:>10.4f} {v['rmse']:>9.4f} "
                  f"{v['r2']:>8.5f}  {per_joint}")  # fmt: skip


if __name__ == "__main__":
    main()
