"""Fleet mode on many simulated robots (run on demand).

    python benchmarks/bench_fleet.py [--robots 50] [--worn 5] [--workers 2] [--out DIR]

Each robot is the UR10e with its own seeded perturbation (masses, inertias, payload) and a
±10 % spread of joint friction; `--worn` of them have one joint worn (Coulomb friction × 2).
Each records the same 20 s excitation at 500 Hz (CSV logs, made in a process of their own).
Then `python -m ident_framework.fleet` identifies all of them with hydra/launcher=joblib
(`--workers` processes), and one robot is identified alone by the same command on its log only
(same launcher, one job). Printed and written to DIR (default outputs/bench_fleet/<date-time>:
results.md, results.json, and the fleet report):

- wall and CPU time (user + system of the command and its workers, from wait4) of both commands
  and the load average (1 min) when each ended;
- each job's own time (the sum of its metrics.json timing_s: the identification steps, without
  Python, Hydra and plugin start-up, which a worker pays once, nor the report);
- the start-up S of a command: the one-robot command's wall time minus its job's time;
- parallel efficiency, clean: (S + N × one robot's job time) / (workers × fleet wall time), the
  time one process would need for the same N jobs over the time the workers had; naive: N × the
  one-robot command / (workers × fleet wall), which counts the start-up N times;
- the workers' occupancy: Σ job times in the fleet / (workers × fleet wall), and the jobs' mean
  time in the fleet over the one robot's (contention for the cores);
- the worn joints flagged and any healthy joint flagged.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
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
    from ident_framework.trajectories.fourier import FourierGenerator
    from ident_framework.trajectories.fourier.params import FourierParams

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
        if (folder / f"{name}_2026-11-01.csv").exists():  # made before (same seeds)
            continue
        source = MujocoSource(MujocoSourceParams(seed=100 + i, coulomb=coulomb.tolist()))
        write_csv_log(source.acquire(robot, motion), folder / f"{name}_2026-11-01.csv")
    return worn_joints


def fleet(logs: list[str], out: Path, workers: int) -> dict:
    """The fleet command on joblib with `workers` processes: wall time (s), CPU time (s, the
    command and all its children), load average at the end, and each job's own time (s)."""
    launcher = ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={workers}"]
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ident_framework.fleet", *logs, "--out", str(out), "--",
         "robot=ur10e", "plots=false", *launcher],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"fleet failed: {process.stderr.read()[-3000:]}")  # type: ignore[union-attr]
    jobs = [
        sum(json.loads(metrics.read_text()).get("timing_s", {}).values())
        for metrics in sorted((out / "runs").glob("*/*/metrics.json"))
    ]
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "load_1min": os.getloadavg()[0], "job_s": jobs}  # fmt: skip


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
    one = fleet([str(logs / last)], out / "one", options.workers)
    many = fleet([str(logs)], out / "fleet", options.workers)
    with open(out / "fleet" / "fleet.csv") as handle:
        rows = list(csv.DictReader(handle))
    joints = list(dict.fromkeys(r["joint"] for r in rows))
    flagged = {(r["robot"], joints.index(r["joint"])) for r in rows if r["outlier"] == "True"}
    expected = set(worn.items())
    n, workers, wall = options.robots, options.workers, many["wall_s"]
    job = one["job_s"][0]
    startup = one["wall_s"] - job
    results = {
        "robots": n, "workers": workers, "worn": sorted(expected),
        "one_robot": {**one, "job_s": job}, "fleet": {**many, "job_s": None},
        "fleet_jobs": len(many["job_s"]),
        "fleet_job_s_mean": sum(many["job_s"]) / len(many["job_s"]),
        "startup_s": startup,
        "parallel_efficiency_clean": (startup + n * job) / (workers * wall),
        "parallel_efficiency_naive": n * one["wall_s"] / (workers * wall),
        "worker_occupancy": sum(many["job_s"]) / (workers * wall),
        "job_slowdown_in_fleet": sum(many["job_s"]) / len(many["job_s"]) / job,
        "worn_flagged": sorted(expected & flagged), "worn_missed": sorted(expected - flagged),
        "healthy_flagged": sorted(flagged - expected),
    }  # fmt: skip
    (out / "results.json").write_text(json.dumps(results, indent=2))
    text = "\n".join(f"- {key}: {value}" for key, value in results.items())
    (out / "results.md").write_text(f"# Fleet benchmark\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
