"""Speed of the real command beside the kernel benchmark, in one run (run on demand).

    python benchmarks/bench_command.py [--sizes 10000 100000] [--data DIR] [--repeat 3]

Data: the simulated UR10e of the peer benchmark (`peers/project_io.simulate_ur10e`: default
Fourier excitation, soft MuJoCo friction, unknown payload; validation on the default
point-to-point motion), cached in DIR; and an RTDE-style log of the largest size, the same
samples in the layout of this project's RTDE recorder (targets, currents, controller torques,
temperatures: 61 columns), for the reading time. Printed:

- CSV reading of the largest identification log (19 columns) and of the RTDE-style one with
  `read_csv_log` (fast path; wall best of --repeat, CPU mean) and with numpy's `loadtxt` (the
  reference path), warm; and in a fresh process (imports included);
- per size, the whole command `python -m ident_framework robot=ur10e source=csv ...
  validation=csv ...` (defaults, plots on): wall and CPU time, samples/s of the whole command,
  its steps from metrics.json `timing_s`, and the identification rate N / (regressor +
  estimation + prediction); then the same command with `tuning=none` (untuned) and the ratio
  tuned / untuned (issue 13: at most 3);
- the kernel of `bench_regressor_ls.py` (regressor + friction columns + factors + LS, streamed)
  and a bare `computeJointTorqueRegressor` loop at the same sizes, and the ratios.
The machine may be shared: CPU time is printed beside wall time, and the load average
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_regressor_ls import bare_loop, identify  # noqa: E402
from peers.project_io import simulate_ur10e  # noqa: E402

from ident_framework.data import csv_log  # noqa: E402
from ident_framework.data.csv_columns import column_names as names_of  # noqa: E402
from ident_framework.data.csv_log import read_csv_log  # noqa: E402
from ident_framework.friction.coulomb_viscous import (  # noqa: E402
    CoulombViscousFriction,
    CoulombViscousParams,
)
from ident_framework.model.regressor import RegressorBuilder  # noqa: E402
from ident_framework.model.robot import load_robot  # noqa: E402
from ident_framework.rtde.recorder import column_groups  # noqa: E402

DEFAULT_DATA = Path.home() / ".cache" / "ident_framework" / "bench_command"
JOINTS = tuple(f"j{j}" for j in range(6))
CORE_STEPS = ("regressor", "estimation", "prediction")


def rtde_style_log(source: Path, target: Path) -> Path:
    """`source` (a contract CSV) as this project's RTDE recorder writes a recording
    (`rtde/recorder.column_groups`: 61 columns for 6 joints, timestamps to the microsecond,
    other values to 10 significant digits): targets equal to the measured motion, currents
    from the torque, temperatures near 35 degrees C."""
    if target.exists():
        return target
    data = read_csv_log(source, JOINTS)
    rng = np.random.default_rng(0)
    values = {
        "timestamp": data.timestamp[:, None],
        "actual_q": data.q, "actual_qd": data.dq, "actual_current_as_torque": data.tau,
        "actual_current": data.tau / 10.0, "target_current": data.tau / 10.0,
        "target_moment": data.tau, "joint_temperatures": 35 + rng.random(data.tau.shape),
        "target_q": data.q, "target_qd": data.dq, "target_qdd": np.gradient(data.dq, axis=0),
    }  # fmt: skip
    groups = column_groups(len(JOINTS), with_torque=True)
    header = ",".join(names_of(groups))
    table = np.hstack([values[name] for name, _ in groups])
    formats = ["%.6f"] + ["%.10g"] * (table.shape[1] - 1)
    np.savetxt(target, table, delimiter=",", header=header, comments="", fmt=formats)
    return target


def reading_times(path: Path, repeat: int) -> dict[str, float]:
    """Seconds to read `path`: fast path and reference path (warm, best of `repeat`), and the
    fast path in a fresh process with its imports."""
    read_csv_log(path, JOINTS)  # warm: pyarrow imported, file in the page cache
    cpu = time.process_time()
    fast = min(_timed(lambda: read_csv_log(path, JOINTS)) for _ in range(repeat))
    fast_cpu = (time.process_time() - cpu) / repeat
    original = csv_log.read_used_columns
    csv_log.read_used_columns = lambda *args: None
    try:
        reference = min(_timed(lambda: read_csv_log(path, JOINTS)) for _ in range(repeat))
    finally:
        csv_log.read_used_columns = original
    code = (
        "import time; t = time.perf_counter(); "
        "from ident_framework.data.csv_log import read_csv_log; "
        f"read_csv_log({str(path)!r}, {JOINTS!r}); print(time.perf_counter() - t)"
    )
    fresh = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)  # fmt: skip
    return {"fast": fast, "fast_cpu": fast_cpu, "reference": reference, "fresh_process": fresh}


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def run_command(ident: Path, validation: Path, folder: Path, *extra: str) -> dict:
    """Wall and CPU seconds of the whole command, and its metrics.json `timing_s`."""
    command = [
        sys.executable, "-m", "ident_framework", "robot=ur10e",
        "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={validation}",
        f"hydra.run.dir={folder}", *extra,
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # a user's default Python caches compiled modules (see benchmarks/peers/runs._env)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    metrics = json.loads((folder / "metrics.json").read_text())
    return {"wall": wall, "cpu": cpu, "timing": metrics["timing_s"], "data": metrics["data"]}


def kernel_rates(n: int) -> tuple[float, float]:
    """(samples/s of bench_regressor_ls's streamed pipeline, of a bare Pinocchio loop)."""
    robot = load_robot("ur12e")
    builder = RegressorBuilder(robot, CoulombViscousFriction(CoulombViscousParams()), armature=True)
    elapsed = _timed(lambda: identify(builder, n))
    return n / elapsed, bare_loop(robot.pin_model, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    paths = simulate_ur10e(args.data, args.sizes, log=lambda text: print(text, flush=True))
    largest = max(args.sizes)
    wide = rtde_style_log(paths["ident"][largest], args.data / f"rtde_recorder_{largest}.csv")
    layouts = (("contract columns only, 19", paths["ident"][largest]),
               ("RTDE recorder layout, 61", wide))  # fmt: skip
    for label, path in layouts:
        times = reading_times(path, args.repeat)
        print(f"CSV reading, {largest} rows ({label} columns): fast path {times['fast']:.3f} s "
              f"wall / {times['fast_cpu']:.3f} s CPU, numpy loadtxt {times['reference']:.3f} s "
              f"(x{times['reference'] / times['fast']:.1f}); in a fresh process with its imports "
              f"{times['fresh_process']:.3f} s")  # fmt: skip
    columns = ("N", "wall s", "cpu s", "N/wall", "ident/s", "kernel/s", "bare/s")
    print("\n" + " ".join(f"{c:>9}" for c in columns) + " ident/kernel N/wall/kernel  steps (s)")
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            run = run_command(paths["ident"][n], paths["validation"], Path(folder))
        kernel, bare = kernel_rates(n)
        timing = run["timing"]
        core = sum(timing.get(step, 0.0) for step in CORE_STEPS)
        ident_rate = run["data"]["train_samples"] / core
        steps = ", ".join(f"{name} {value:.2f}" for name, value in timing.items())
        values = (n, run["wall"], run["cpu"], n / run["wall"], ident_rate, kernel, bare)
        print(" ".join(f"{v:>9.0f}" if v > 100 else f"{v:>9.2f}" for v in values)
              + f" {ident_rate / kernel:>12.2f} {n / run['wall'] / kernel:>13.2f}  {steps}",
              flush=True)  # fmt: skip
        with tempfile.TemporaryDirectory() as folder:
            plain = run_command(paths["ident"][n], paths["validation"], Path(folder), "tuning=none")
        print(f"{'':>9} untuned (tuning=none): {plain['wall']:.2f} s wall, {plain['cpu']:.2f} s "
              f"CPU; tuned / untuned: x{run['wall'] / plain['wall']:.2f} wall, "
              f"x{run['cpu'] / plain['cpu']:.2f} CPU", flush=True)  # fmt: skip
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
