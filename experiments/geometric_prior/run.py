"""The default estimator on every dataset we hold: least squares (the old default) against the
geometric prior with its weight chosen by the tuning's CV, and against each fixed weight, with
the fixed weight a default would need chosen leave-one-dataset-out.

    python experiments/geometric_prior/run.py [--out DIR] [--cases tx40,kuka1,kuka12,ur10e,panda]

Cases (identification -> validation, scored by the command against the torque as recorded):
tx40 (FIGAROH's example rows), kuka1 (measurement 1 -> 3), kuka12 (1+2 -> 3), ur10e (the
peer benchmark's simulated UR10e, 10^4 samples: Fourier excitation -> point-to-point motion
with holds), panda (Gaz et al.'s log: first + last third -> middle third; its own CSV header,
mapped with source.columns). Writes DIR/results.json and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.peers import conversions  # noqa: E402
from benchmarks.peers import project_io as io  # noqa: E402
from benchmarks.peers.cases import DATASETS, TX40_IDENT_ROWS, TX40_VAL_ROWS  # noqa: E402

WEIGHTS = [1.0, 10.0, 100.0, 1000.0, 1e4, 1e5]
PANDA_COLUMNS = "{time: time, q: q_, dq: dq_, tau: tau_}"


def case_overrides(data: Path) -> dict[str, list[str]]:
    """Each case's command-line overrides (its CSVs written into `data` first)."""
    data.mkdir(parents=True, exist_ok=True)
    kuka = DATASETS / "kuka_lwr4"
    for i in (1, 2, 3):
        path = data / f"kuka_{i}.csv"
        if not path.exists():
            io.write_recording(conversions.kuka_recording(kuka / f"measurements_{i}.npz"), path)
    tx40 = DATASETS / "staubli_tx40"
    if not (data / "tx40_val.csv").exists():
        q, current = conversions.read_tx40_motor_side(tx40)
        for (a, b), name in ((TX40_IDENT_ROWS, "tx40_ident.csv"), (TX40_VAL_ROWS, "tx40_val.csv")):
            io.write_recording(conversions.tx40_joint_side(q[a:b], current[a:b], a), data / name)
    ur10e = io.simulate_ur10e(data / "ur10e", [10000], log=print)
    panda = DATASETS / "panda_gaz2019"
    csv = ["source=csv", "validation=csv", "plots=false"]
    kuka_robot = ["robot=urdf", f"robot.path={kuka / 'kuka_lwr4.urdf'}"]
    cases = {
        "tx40": ["robot=staubli_tx40", f"robot.path={tx40 / 'tx40_mdh_modified.urdf'}", *csv,
                 f"source.path={data / 'tx40_ident.csv'}",
                 f"validation.path={data / 'tx40_val.csv'}"],
        "kuka1": [*kuka_robot, *csv, f"source.path={data / 'kuka_1.csv'}",
                  f"validation.path={data / 'kuka_3.csv'}"],
        "kuka12": [*kuka_robot, *csv,
                   f"source.path=[{data / 'kuka_1.csv'},{data / 'kuka_2.csv'}]",
                   f"validation.path={data / 'kuka_3.csv'}"],
        "ur10e": ["robot=ur10e", *csv, f"source.path={ur10e['ident'][10000]}",
                  f"validation.path={ur10e['validation']}"],
    }  # fmt: skip
    if panda.is_dir():
        cases["panda"] = [
            "robot=urdf", f"robot.path={panda / 'panda_arm.urdf'}", *csv,
            f"source.path=[{panda / 'ident_traj1_part1.csv'},{panda / 'ident_traj1_part3.csv'}]",
            f"validation.path={panda / 'val_traj1_middle.csv'}",
            f"source.columns={PANDA_COLUMNS}", f"validation.columns={PANDA_COLUMNS}",
        ]  # fmt: skip
    return cases


def run(overrides: list[str], folder: Path) -> dict | None:
    """metrics.json of one command (None when it failed: its stderr is kept in the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "ident_framework", *overrides, f"hydra.run.dir={folder}"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    (folder / "stderr.txt").write_text(done.stderr)
    if done.returncode != 0:
        return None
    return json.loads((folder / "metrics.json").read_text())


def summary(metrics: dict | None) -> dict:
    if metrics is None:
        return {"status": "failed"}
    tuning = metrics.get("tuning") or {}
    return {
        "status": "ok",
        "validation_rmse": metrics["validation"]["physical"]["rmse"],
        "train_rmse": metrics["train"]["physical"]["rmse"],
        "weight": (tuning.get("chosen") or {}).get("estimator.weight"),
        "twin_written": "twin" in metrics,
        "twin_mujoco_rmse": (metrics.get("twin") or {}).get("inverse_dynamics", {}).get("rmse"),
    }


def leave_one_dataset_out(results: dict, cases: list[str]) -> dict[str, dict]:
    """For each case, the fixed weight with the lowest mean RMSE ratio to least squares on
    the OTHER cases, and its figure on the case itself."""
    out = {}
    for left_out in cases:
        others = [c for c in cases if c != left_out]

        def score(weight: float, cases_=others) -> float:
            ratios = [
                results[c][f"w={weight:g}"]["validation_rmse"] / results[c]["ls"]["validation_rmse"]
                for c in cases_
            ]
            return sum(ratios) / len(ratios)

        best = min(WEIGHTS, key=score)
        out[left_out] = {
            "weight": best,
            "validation_rmse": results[left_out][f"w={best:g}"]["validation_rmse"],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/geometric_prior"))
    parser.add_argument("--cases", default="tx40,kuka1,kuka12,ur10e,panda")
    args = parser.parse_args()
    cases = case_overrides(args.out / "data")
    chosen = [c for c in args.cases.split(",") if c in cases]
    variants = {"ls": ["estimator=ls"], "geometric (CV weight)": []}
    for weight in WEIGHTS:
        variants[f"w={weight:g}"] = [
            f"estimator.weight={weight}",
            f"tuning.prior_weights=[{weight}]",
        ]
    results: dict[str, dict] = {}
    for case in chosen:
        results[case] = {}
        for name, extra in variants.items():
            label = "".join(c if c.isalnum() or c == "." else "_" for c in name)
            folder = args.out / "runs" / case / label  # no '=' (Hydra's override grammar)
            results[case][name] = summary(run(cases[case] + extra, folder))
            print(case, name, results[case][name], flush=True)
    ok = [c for c in chosen if all(v["status"] == "ok" for v in results[c].values())]
    lodo = leave_one_dataset_out(results, ok) if len(ok) > 1 else {}
    (args.out / "results.json").write_text(json.dumps({"results": results, "lodo": lodo}, indent=1))
    print(
        "\n| case | ls (tuned) | geometric, CV weight (chosen) | fixed weight chosen LODO | "
        + " | ".join(f"w={w:g}" for w in WEIGHTS)
        + " |"
    )
    print("|---" * (4 + len(WEIGHTS)) + "|")
    for case in chosen:
        r = results[case]
        cells = [f"{r['ls'].get('validation_rmse', float('nan')):.4f}"]
        g = r["geometric (CV weight)"]
        cells.append(f"{g.get('validation_rmse', float('nan')):.4f} ({g.get('weight')})")
        cells.append(
            f"{lodo[case]['validation_rmse']:.4f} (w={lodo[case]['weight']:g})"
            if case in lodo
            else "-"
        )
        cells += [f"{r[f'w={w:g}'].get('validation_rmse', float('nan')):.4f}" for w in WEIGHTS]
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
