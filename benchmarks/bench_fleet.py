"""Fleet mode on many simulated robots (run on demand).

    python benchmarks/bench_fleet.py [--robots 50] [--worn 5] [--workers 2] [--out DIR]

Each robot is the UR10e with its own seeded perturbation (masses, inertias, payload) and a
±10 % spread of joint friction; `--worn` of them have one joint worn (Coulomb friction × 2).
Each records the same 20 s excitation at 500 Hz (CSV logs, made in a process of their own).
Then `python -m ident_framework.fleet` identifies all of them with hydra/launcher=joblib
(`--workers` processes) and one robot is identified alone (the same command on its log only).
Printed and written to DIR (default outputs/bench_fleet/<date-time>: results.md, results.json,
and the fleet report): wall time of the fleet vs one robot's × N (parallel efficiency), the
worn joints flagged and any healthy joint flagged.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path


def make_logs(folder: Path, robots: int, worn: int) -> dict[str, int]:
    """The logs `r<i>_2026-11-01.csv`; returns robot -> worn joint."""
    import numpy as np

    from ident_framework.data.csv_log import write_csv_log
    from ident_framework.model.robot import load_robot
    from ident_framework.simulation.perturbed_robot import default_joint_dynamics
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
    from ident_framework.trajectories.fourier import FourierGenerator, FourierParams

    robot = load_robot("ur10e")
    params = FourierParams(n_candidates=20, n_refine=0, progress=False)
    motion = FourierGenerator(params).generate(robot, None, 21)
    nominal = default_joint_dynamics(robot)["coulomb"]
    rng = np.random.default_rng(0)
    worn_joints = {f"r{i:02d}": int(rng.integers(0, 6)) for i in range(worn)}
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(robots):
        name = f"r{i:02d}"
        coulomb = nominal * rng.uniform(0.9, 1.1, 6)
        if name in worn_joints:
            coulomb[worn_joints[name]] *= 2.0
        source = MujocoSource(MujocoSourceParams(seed=100 + i, coulomb=coulomb.tolist()))
        write_csv_log(source.acquire(robot, motion), folder / f"{name}_2026-11-01.csv")
    return worn_joints


def fleet(logs: list[str], out: Path, workers: int | None) -> float:
    """Wall time (s) of the fleet command; workers None: the basic launcher (one process)."""
    launcher = (
        [] if workers is None else ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={workers}"]
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ident_framework.fleet", *logs, "--out", str(out), "--",
         "robot=ur10e", "plots=false", *launcher],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=50)
    parser.add_argument("--worn", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    out = (
        options.out or Path("outputs/bench_fleet") / time.strftime("%Y-%m-%d_%H-%M-%S")
    ).resolve()
    logs = out / "logs"
    maker = (f"import json, sys; from bench_fleet import make_logs; "
             f"print(json.dumps(make_logs(__import__('pathlib').Path({str(logs)!r}), "
             f"{options.robots}, {options.worn})))")  # fmt: skip
    made = subprocess.run([sys.executable, "-c", maker], cwd=Path(__file__).parent, check=True,
                          capture_output=True, text=True)  # fmt: skip
    worn = json.loads(made.stdout.strip().splitlines()[-1])
    last = f"r{options.robots - 1:02d}_2026-11-01.csv"  # a healthy robot (the first are worn)
    one = fleet([str(logs / last)], out / "one", None)
    wall = fleet([str(logs)], out / "fleet", options.workers)
    with open(out / "fleet" / "fleet.csv") as handle:
        rows = list(csv.DictReader(handle))
    joints = list(dict.fromkeys(r["joint"] for r in rows))
    flagged = {(r["robot"], joints.index(r["joint"])) for r in rows if r["outlier"] == "True"}
    expected = set(worn.items())
    results = {
        "robots": options.robots, "workers": options.workers, "worn": sorted(expected),
        "one_robot_wall_s": one, "fleet_wall_s": wall,
        "parallel_efficiency": one * options.robots / (wall * options.workers),
        "worn_flagged": sorted(expected & flagged), "worn_missed": sorted(expected - flagged),
        "healthy_flagged": sorted(flagged - expected),
    }  # fmt: skip
    (out / "results.json").write_text(json.dumps(results, indent=2))
    text = "\n".join(f"- {key}: {value}" for key, value in results.items())
    (out / "results.md").write_text(f"# Fleet benchmark\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
