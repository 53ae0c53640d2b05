"""Exact distributed identification against the single-process run (run on demand).

    python benchmarks/bench_distributed.py [--samples 1000000] [--parts 10] [--workers 2]
        [--files] [--out DIR] [OVERRIDES...]

A simulated UR10e (MuJoCo, seeded perturbation, torque noise) follows a Fourier excitation of
`--samples` samples at 500 Hz (20 s periods repeated) and a point-to-point validation motion;
both are written as CSV logs (cached in ~/.cache/ident_framework/bench_distributed). Then, each
as its own process through the command line, as a user would:

1. the single run: `source=csv validation=csv` on the whole log;
2. `--parts` factor jobs (`mode=factor distributed.part=k`), `--workers` at a time;
3. the combine step (`mode=combine distributed.inputs=[...] validation=csv`).

`--files`: the log is first split into `--parts` files (rows in order, each with the header);
the single run reads the list (each file a recording of its own) and factor job k file k.
Every process runs with tuning=none (factor jobs do not tune; the single run must use the same
options). Printed and written to DIR (default outputs/bench_distributed/<date-time>:
results.md, results.json): wall time, CPU time (user + system) and peak memory (max RSS, from
wait4) of every process with the load average when it ended, the difference of every base
parameter (absolute and relative), the largest over them, of the training and validation
RMSE, and the statistics files' sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml

CACHE = Path.home() / ".cache" / "ident_framework" / "bench_distributed"


def make_logs(samples: int) -> tuple[Path, Path]:
    """(identification CSV, validation CSV) of the simulated UR10e, cached by size."""
    from ident_framework.data.csv_log import write_csv_log
    from ident_framework.model.robot import load_robot
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
    from ident_framework.trajectories.fourier import FourierGenerator
    from ident_framework.trajectories.fourier.params import FourierParams
    from ident_framework.trajectories.point_to_point import (
        PointToPointGenerator,
        PointToPointParams,
    )

    CACHE.mkdir(parents=True, exist_ok=True)
    ident, validation = CACHE / f"ident_{samples}.csv", CACHE / "validation.csv"
    robot = load_robot("ur10e")
    source = MujocoSource(MujocoSourceParams(seed=11))
    if not ident.exists():
        periods = max(1, round(samples / (500 * 20)))
        params = FourierParams(n_periods=periods, n_candidates=20, n_refine=0, progress=False)
        excitation = FourierGenerator(params).generate(robot, None, 11)
        write_csv_log(source.acquire(robot, excitation), ident)
    if not validation.exists():
        motion = PointToPointGenerator(PointToPointParams(duration_s=20.0)).generate(
            robot, None, 12
        )
        write_csv_log(source.acquire(robot, motion, "validation"), validation)
    return ident, validation


def split_log(log: Path, parts: int) -> list[Path]:
    """The log's data rows in `parts` files of equal row counts (each with the header),
    streamed line by line; cached beside the log."""
    folder = log.with_name(f"{log.stem}_{parts}_files")
    files = [folder / f"part_{k:02d}.csv" for k in range(parts)]
    if all(f.exists() for f in files):
        return files
    folder.mkdir(exist_ok=True)
    with open(log, "rb") as handle:
        rows = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 24), b"")) - 1
    bounds = np.linspace(0, rows, parts + 1).round().astype(int)
    with open(log, "rb") as handle:
        header = handle.readline()
        for k, target in enumerate(files):
            with open(target, "wb") as out:
                out.write(header)
                for _ in range(bounds[k + 1] - bounds[k]):
                    out.write(handle.readline())
    return files


def run(args: list[str], cwd: Path) -> dict:
    """`python -m ident_framework ARGS` as its own process: wall time (s), CPU time (user +
    system, s), peak RSS (MB), the 1-minute load average when it ended."""
    env = dict(os.environ, MPLBACKEND="Agg")
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ident_framework", *args],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{stderr[-3000:]}")
    del stdout
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024.0,
        "load_1min": os.getloadavg()[0],
    }


def base_values(run_dir: Path) -> np.ndarray:
    parameters = yaml.safe_load((run_dir / "parameters.yaml").read_text())
    return np.array([p["value"] for p in parameters["base_parameters"]])


def standard_values(run_dir: Path) -> np.ndarray:
    parameters = yaml.safe_load((run_dir / "parameters.yaml").read_text())
    return np.array(list(parameters["standard_parameters"].values()), dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--files", action="store_true", help="split the log into part files")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "overrides", nargs="*", help="for every process, e.g. base_parameters.method=qr"
    )
    options = parser.parse_args()
    out = options.out or Path("outputs/bench_distributed") / time.strftime("%Y-%m-%d_%H-%M-%S")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    # the logs are made in a process of their own: Linux children inherit the parent's peak RSS
    # (ru_maxrss survives fork and exec), so a parent that simulated 10^6 samples would taint
    # every figure below
    maker = f"from bench_distributed import make_logs; make_logs({options.samples})"
    subprocess.run([sys.executable, "-c", maker], cwd=Path(__file__).parent, check=True)
    ident, validation = CACHE / f"ident_{options.samples}.csv", CACHE / "validation.csv"
    print(f"logs ready in {time.perf_counter() - started:.0f} s: {ident}")
    source = f"source.path={ident}"
    if options.files:  # split in a process of its own too (it reads the whole log)
        splitter = (
            "from bench_distributed import split_log; from pathlib import Path; print(','.join("
            f"map(str, split_log(Path({str(ident)!r}), {options.parts}))))"
        )
        made = subprocess.run([sys.executable, "-c", splitter], cwd=Path(__file__).parent,
                              check=True, capture_output=True, text=True)  # fmt: skip
        source = f"source.path=[{made.stdout.strip().splitlines()[-1]}]"
    common = ["robot=ur10e", "plots=false", "tuning=none", *options.overrides]
    single_args = [*common, "source=csv", source, "validation=csv",
                   f"validation.path={validation}", f"hydra.run.dir={out / 'single'}"]  # fmt: skip
    single = run(single_args, out)
    print(f"single run: {single}")

    def factor(k: int) -> dict:
        return run([*common, "mode=factor", "source=csv", source,
                    f"distributed.parts={options.parts}", f"distributed.part={k}",
                    f"hydra.run.dir={out / 'factors' / str(k)}"], out)  # fmt: skip

    wall = time.perf_counter()
    with ThreadPoolExecutor(options.workers) as pool:
        jobs = list(pool.map(factor, range(options.parts)))
    factor_wall = time.perf_counter() - wall
    print(f"{options.parts} factor jobs, {options.workers} at a time: {factor_wall:.1f} s")
    combine = run([*common, "mode=combine", f"distributed.inputs=[{out / 'factors'}]",
                   "validation=csv", f"validation.path={validation}",
                   f"hydra.run.dir={out / 'combined'}"], out)  # fmt: skip
    print(f"combine: {combine}")
    results = compare(out, options, single, jobs, factor_wall, combine)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "results.md").write_text(markdown(results))
    print(markdown(results))


def compare(out: Path, options, single: dict, jobs: list, factor_wall: float, combine: dict):
    one, merged = base_values(out / "single"), base_values(out / "combined")
    difference = np.abs(merged - one)
    metrics = {name: json.loads((out / name / "metrics.json").read_text())
               for name in ("single", "combined")}  # fmt: skip
    summaries = [
        json.loads((out / "factors" / str(k) / "statistics.json").read_text())
        for k in range(options.parts)
    ]
    return {
        "samples": metrics["single"]["data"]["train_samples"],
        "parts": options.parts,
        "workers": options.workers,
        "n_base": len(one),
        "files": options.files,
        "per_parameter": [
            {
                "single": float(a),
                "combined": float(b),
                "abs_difference": float(d),
                "relative_difference": float(d / abs(a)) if a != 0 else None,
            }
            for a, b, d in zip(one, merged, difference, strict=True)
        ],  # fmt: skip
        "base_max_abs_difference": float(np.max(np.abs(merged - one))),
        "base_max_difference_relative_to_largest": float(
            np.max(np.abs(merged - one)) / np.max(np.abs(one))
        ),
        "base_max_relative_difference": float(np.max(np.abs(merged - one) / np.abs(one))),
        "standard_max_abs_difference": float(
            np.max(np.abs(standard_values(out / "combined") - standard_values(out / "single")))
        ),
        "overrides": list(options.overrides),
        "train_rmse": [metrics[n]["train"]["physical"]["rmse"] for n in ("single", "combined")],
        "validation_rmse": [
            metrics[n]["validation"]["physical"]["rmse"] for n in ("single", "combined")
        ],
        "single": single,
        "factor_jobs": [
            {**job, "samples": s["samples"], "statistics_kb": s["statistics_file_bytes"] / 1024}
            for job, s in zip(jobs, summaries, strict=True)
        ],  # fmt: skip
        "factor_wall_s": factor_wall,
        "combine": combine,
    }


def markdown(r: dict) -> str:
    lines = [
        f"# Distributed identification: {r['samples']} samples, {r['parts']} parts, "
        f"{r['workers']} at a time",
        "",
        f"- overrides: {' '.join(r['overrides']) or 'none'}; "
        f"{'part files' if r['files'] else 'part indices of one file'}",
        f"- base parameters ({r['n_base']}): max |difference| {r['base_max_abs_difference']:.3g}"
        f" ({r['base_max_difference_relative_to_largest']:.3g} of the largest |value|; largest "
        f"relative difference {r['base_max_relative_difference']:.3g})",
        f"- standard parameters (minimum norm): max |difference| "
        f"{r['standard_max_abs_difference']:.3g}",
        f"- train RMSE single / combined: {r['train_rmse'][0]:.12g} / {r['train_rmse'][1]:.12g} Nm",
        f"- validation RMSE single / combined: {r['validation_rmse'][0]:.12g} / "
        f"{r['validation_rmse'][1]:.12g} Nm",
        "",
        "| process | wall (s) | CPU (s) | peak RSS (MB) | load (1 min) | samples | stats (kB) |",
        "|---|---|---|---|---|---|---|",
        f"| single run | {_figures(r['single'])} | {r['samples']} | |",
    ]
    for k, job in enumerate(r["factor_jobs"]):
        lines.append(
            f"| factor job {k} | {_figures(job)} | {job['samples']} | {job['statistics_kb']:.0f} |"
        )
    lines += [
        f"| all factor jobs ({r['workers']} at a time) | {r['factor_wall_s']:.1f} | | | | | |",
        f"| combine | {_figures(r['combine'])} | | |",
        "",
        "| base parameter | single | combined | abs difference | relative difference |",
        "|---|---|---|---|---|",
        *(
            f"| {i + 1} | {p['single']:.12g} | {p['combined']:.12g} | "
            f"{p['abs_difference']:.2g} | {p['relative_difference'] or 0:.2g} |"
            for i, p in enumerate(r["per_parameter"])
        ),
        "",
    ]
    return "\n".join(lines)


def _figures(process: dict) -> str:
    return (
        f"{process['wall_s']:.1f} | {process['cpu_s']:.1f} | {process['peak_rss_mb']:.0f} | "
        f"{process['load_1min']:.1f}"
    )


if __name__ == "__main__":
    main()
