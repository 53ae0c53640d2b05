"""Leave-one-dataset-out choice of the model-selection defaults (tuning.rule, tuning.partitions).

    python experiments/selection_lodo/run.py [--out DIR] [--data DIR] [--cases tx40,kuka,...]
        [--variants a,b,...] [--analyse-only]

Every case runs the project's command line (`python -m ident_framework`) once per variant: the
same identification data and validation file, only the tuning overrides differ. The score is
the validation RMSE of metrics.json (against the torque as recorded in the validation file, at
its own timestamps: DESIGN.md's run-directory contract). Cases (the data are built as
`benchmarks/bench_peers.py` builds them, `benchmarks/peers/`):

  tx40     Staubli TX40, rows [0, 24750) identify, [29250, 45000) validate (robot=staubli_tx40)
  kuka1    KUKA LWR4+, measurement 1 identifies, measurement 3 validates
  kuka12   KUKA LWR4+, measurements 1 + 2 (two recordings) identify, 3 validates
  ur10e    simulated UR10e (soft MuJoCo friction, an unknown payload): the default Fourier
           excitation, 10^4 samples at 500 Hz; the default point-to-point validation motion
  panda    Franka Panda (Gaz 2019): parts 1 + 3 identify, the middle third validates (its
           columns renamed to the CSV contract in DIR; skipped when the command fails on it)

Datasets for leave-one-out: tx40, kuka (both KUKA cases: they share measurements 1 and 3),
ur10e, panda. For each left-out dataset the variant chosen is the one with the lowest mean
log-ratio of validation RMSE to the baseline (today's default) over the cases of the other
datasets; the table gives that variant's validation RMSE on the left-out dataset's cases.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from peers import conversions, project_io  # noqa: E402
from peers.cases import DATASETS, TX40_IDENT_ROWS, TX40_VAL_ROWS  # noqa: E402

BASELINE = "min_time"
VARIANTS: dict[str, list[str]] = {
    "min_time": ["tuning.rule=min", "tuning.partitions=[time]"],
    "1se_time": ["tuning.rule=one_se", "tuning.partitions=[time]"],
    "min_time+kind": ["tuning.rule=min", "tuning.partitions=[time,kind]"],
    "1se_time+kind": ["tuning.rule=one_se", "tuning.partitions=[time,kind]"],
    "min_kind": ["tuning.rule=min", "tuning.partitions=[kind]"],
    "1se_kind": ["tuning.rule=one_se", "tuning.partitions=[kind]"],
    "1sep_time": ["tuning.rule=one_se_paired", "tuning.partitions=[time]"],
    "1sep_time+kind": ["tuning.rule=one_se_paired", "tuning.partitions=[time,kind]"],
}
_SAT6 = "tuning.saturation_widths=[0.0001,0.0003,0.001,0.003,0.01,0.03]"
_SAT5 = "tuning.saturation_widths=[0.0003,0.001,0.003,0.01,0.03]"
_LEADS = "tuning.acceleration_leads=[0.0,0.003,0.01,0.03]"
AT_REST: dict[str, list[str]] = {  # friction at rest, experiments/at_rest_friction/README.md
    "sat": [_SAT6],
    "sat_lead": [_SAT6, _LEADS],
    "sat5": [_SAT5],
    "sat5_lead": [_SAT5, _LEADS],
    "sat_lead_shapekind": [_SAT6, _LEADS, "tuning.shape_partitions=[time,kind]"],
    "sat5_lead_kind": [
        _SAT5,
        _LEADS,
        "tuning.partitions=[time,kind]",
        "tuning.shape_partitions=[time,kind]",
    ],
}
SPEED: dict[str, list[str]] = {  # fewer rows for the cross-validation (issue 26's 10^5 speed)
    "max10k": ["tuning.max_samples=10000"],
    "sweeps1": ["tuning.sweeps=1"],
    "differentiated": ["tuning.velocity_sources=[differentiated]"],
    "cut3": ["tuning.cutoffs_hz=[5.0,10.0,20.0]"],
    "differentiated_sweeps1": ["tuning.velocity_sources=[differentiated]", "tuning.sweeps=1"],
}
REFERENCES: dict[str, list[str]] = {  # reported, never chosen
    "none_db0": ["tuning=none", "friction.dead_band=0"],
}
DATASET_OF = {"tx40": "tx40", "kuka1": "kuka", "kuka12": "kuka", "ur10e": "ur10e", "panda": "panda"}
PANDA_JOINTS = 7


def prepare(data: Path) -> dict[str, list[str]]:
    """The command-line overrides of each case (data files written to `data` once)."""
    cases: dict[str, list[str]] = {}
    tx40_dir = DATASETS / "staubli_tx40"
    folder = data / "tx40"
    folder.mkdir(parents=True, exist_ok=True)
    ident, val = folder / "tx40_ident.csv", folder / "tx40_validation.csv"
    if not (ident.exists() and val.exists()):
        q_motor, i_motor = conversions.read_tx40_motor_side(tx40_dir)
        for (start, stop), path in ((TX40_IDENT_ROWS, ident), (TX40_VAL_ROWS, val)):
            recording = conversions.tx40_joint_side(q_motor[start:stop], i_motor[start:stop], start)
            project_io.write_recording(recording, path)
    cases["tx40"] = [
        "robot=staubli_tx40", f"robot.path={tx40_dir / 'tx40_mdh_modified.urdf'}",
        "source=csv", f"source.path={ident}", "validation=csv", f"validation.path={val}",
    ]  # fmt: skip
    kuka_dir = DATASETS / "kuka_lwr4"
    folder = data / "kuka"
    folder.mkdir(parents=True, exist_ok=True)
    m = {i: folder / f"kuka_measurements_{i}.csv" for i in (1, 2, 3)}
    for i, path in m.items():
        if not path.exists():
            recording = conversions.kuka_recording(kuka_dir / f"measurements_{i}.npz")
            project_io.write_recording(recording, path)
    common = [
        "robot=urdf", f"robot.path={kuka_dir / 'kuka_lwr4.urdf'}", "source=csv",
        "validation=csv", f"validation.path={m[3]}",
    ]  # fmt: skip
    cases["kuka1"] = [*common, f"source.path={m[1]}"]
    cases["kuka12"] = [*common, f"source.path=[{m[1]},{m[2]}]"]
    paths = project_io.simulate_ur10e(data / "ur10e", [10_000])
    cases["ur10e"] = [
        "robot=ur10e", "source=csv", f"source.path={paths['ident'][10_000]}",
        "validation=csv", f"validation.path={paths['validation']}",
    ]  # fmt: skip
    panda = DATASETS / "panda_gaz2019"
    if panda.is_dir():
        folder = data / "panda"
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, start in (
            ("ident_traj1_part1", 0.0),
            ("val_traj1_middle", 7.190),
            ("ident_traj1_part3", 13.857),
        ):
            files[name] = _panda_contract(panda / f"{name}.csv", folder / f"{name}.csv", start)
        cases["panda"] = [
            "robot=urdf", f"robot.path={panda / 'panda_arm.urdf'}", "source=csv",
            f"source.path=[{files['ident_traj1_part1']},{files['ident_traj1_part3']}]",
            "validation=csv", f"validation.path={files['val_traj1_middle']}",
        ]  # fmt: skip
    return cases


def _panda_contract(source: Path, target: Path, start_s: float) -> Path:
    """The Panda file with the CSV contract's column names, on the original time base; a lone
    first sample before a timestamp gap dropped (only part 1 has one; no other change)."""
    if target.exists():
        return target
    table = np.loadtxt(source, delimiter=",", skiprows=1)
    header = ["timestamp"]
    for prefix in ("actual_q", "actual_qd", "actual_current_as_torque"):
        header += [f"{prefix}_{j}" for j in range(PANDA_JOINTS)]
    table[:, 0] += start_s
    steps = np.diff(table[:, 0])
    gaps = np.flatnonzero(steps > 10 * np.median(steps))
    if len(gaps) and gaps[0] == 0:  # a lone first sample before a gap (part 1: 15.5 ms)
        table = table[1:]  # a one-sample piece the command cannot filter today
    np.savetxt(target, table, delimiter=",", header=",".join(header), comments="", fmt="%.9g")
    return target


def run_case(case: str, overrides: list[str], variant: str, extra: list[str], out: Path) -> dict:
    run = out / "runs" / case / variant
    metrics = run / "metrics.json"
    if not metrics.exists():
        run.mkdir(parents=True, exist_ok=True)
        command = ["nice", "-n", "10", *project_io.project_command(), *overrides, *extra]
        command += ["plots=false", f"hydra.run.dir={run}"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
        logs = out / "logs"  # beside the run: a failed run removes its directory
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{case}_{variant}.txt").write_text(done.stdout + done.stderr)
        if done.returncode != 0 or not metrics.exists():
            last = (done.stdout + done.stderr).strip().splitlines()[-3:]
            return {"case": case, "variant": variant, "status": f"failed: {' | '.join(last)}"}
        (run / "wall_s.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
    figures = json.loads(metrics.read_text())
    tuning = figures.get("tuning") or {}
    return {
        "case": case,
        "variant": variant,
        "status": "ok",
        "val_rmse": figures["validation"]["physical"]["rmse"],
        "cv_rmse": tuning.get("cv_rmse"),
        "chosen": json.dumps(tuning.get("chosen", {}), sort_keys=True),
    }


def lodo(rows: list[dict], candidates: list[str]) -> list[dict]:
    """Per left-out dataset: the candidate with the lowest mean log(RMSE / baseline RMSE) over
    the other datasets' cases (each case weighted 1 / its dataset's case count)."""
    score = {(r["case"], r["variant"]): r["val_rmse"] for r in rows if r["status"] == "ok"}
    cases = sorted({r["case"] for r in rows if (r["case"], BASELINE) in score})
    datasets = sorted({DATASET_OF[c] for c in cases})
    out = []
    for left in datasets:
        others = [c for c in cases if DATASET_OF[c] != left]
        weights = {c: 1 / sum(DATASET_OF[o] == DATASET_OF[c] for o in others) for c in others}

        def loss(variant: str, among: list[str] = others, weights: dict = weights) -> float:
            if not among or any((c, variant) not in score for c in among):
                return math.inf
            total = sum(weights[c] for c in among)
            return (
                sum(
                    weights[c] * math.log(score[(c, variant)] / score[(c, BASELINE)]) for c in among
                )
                / total
            )

        chosen = min(candidates, key=loss)
        for case in (c for c in cases if DATASET_OF[c] == left):
            out.append(
                {
                    "left_out": left,
                    "case": case,
                    "chosen_without_it": chosen,
                    "others_mean_log_ratio": loss(chosen),
                    "baseline_rmse": score[(case, BASELINE)],
                    "chosen_rmse": score.get((case, chosen), math.nan),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/selection_lodo"))
    parser.add_argument(
        "--data", type=Path, default=Path.home() / ".cache/ident_framework/selection_lodo"
    )
    parser.add_argument("--cases", default="tx40,kuka1,kuka12,ur10e,panda")
    parser.add_argument("--variants", default=",".join([*VARIANTS, *REFERENCES]))
    args = parser.parse_args()
    cases = prepare(args.data)
    wanted = [c for c in args.cases.split(",") if c in cases]
    variants = {**VARIANTS, **AT_REST, **SPEED, **REFERENCES}
    rows = []
    for case in wanted:
        for name in args.variants.split(","):
            row = run_case(case, cases[case], name, variants[name], args.out)
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(
            handle, ["case", "variant", "status", "val_rmse", "cv_rmse", "chosen"]
        )
        writer.writeheader()
        writer.writerows(rows)
    chosen = args.variants.split(",")
    table = lodo(rows, [v for v in {**VARIANTS, **AT_REST, **SPEED} if v in chosen])
    (args.out / "lodo.json").write_text(json.dumps(table, indent=1))
    for row in table:
        print(
            f"left out {row['left_out']:6s} {row['case']:7s} chosen without it: "
            f"{row['chosen_without_it']:14s} "
            f"(others' mean log ratio {row['others_mean_log_ratio']:+.4f}) "
            f"RMSE {row['chosen_rmse']:.4f} vs baseline {row['baseline_rmse']:.4f} Nm"
        )


if __name__ == "__main__":
    main()
