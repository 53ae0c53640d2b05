"""The load-dependent friction term on and off with every other option held fixed.

    python benchmarks/bench_peers.py --cases kuka,tx40,ur10e --sizes 1e4 --no-figaroh \
        --ours-variant on=friction.load_dependent=on \
        --ours-variant off=friction.load_dependent=off --out BENCH
    python experiments/load_friction_ablation.py BENCH [--untuned] [OVERRIDE ...]

The benchmark's variants tune everything else anew (with the term on from the start the
coordinate search may choose other columns and regularisation), so its on / off / auto rows
mix the term with those choices. This script re-runs each default (`auto`) run of BENCH with
`tuning=none` and the options that run's tuning chose (parameters.yaml `tuning.chosen`), the
term off and on: the same model but for the term (`--untuned`: the configured defaults
instead of the chosen options). OVERRIDEs are added to every run (e.g. estimator=consistent:
then the chosen estimator.* keys are dropped). Prints the validation RMSE (against the torque
as recorded in the validation file), per joint, and fL with the iteration's fit count.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import yaml

RUNS = ("kuka-5027-ours", "kuka-10054-ours", "tx40-24750-ours", "ur10e-10000-ours")


def commands(bench: Path) -> dict[str, list[str]]:
    """Run folder name -> the command the benchmark ran (results.json)."""
    found: dict[str, list[str]] = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            command = node.get("command")
            if isinstance(command, list):
                where = [a for a in command if a.startswith("hydra.run.dir=")][0]
                found[Path(where.split("=", 1)[1]).name] = command
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads((bench / "results.json").read_text()))
    return found


def override(key: str, value) -> str:
    return f"{key}={'null' if value is None else json.dumps(value).replace(' ', '')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path)
    parser.add_argument("--untuned", action="store_true")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    found = commands(args.bench)
    out = args.bench / ("untuned" if args.untuned else "ablation")
    for name in RUNS:
        if name not in found:
            continue
        command = [a for a in found[name] if not a.startswith("hydra.run.dir=")]
        keys = []
        if not args.untuned:
            saved = args.bench / "runs" / name / "parameters.yaml"
            parameters = yaml.safe_load(saved.read_text())
            dropped = any(o.startswith("estimator=") for o in args.overrides)
            keys = [
                override(k, v)
                for k, v in parameters["tuning"]["chosen"].items()
                if k != "friction.load_dependent" and not (dropped and k.startswith("estimator."))
            ]
        for mode in ("off", "on"):
            tag = "-".join(o.replace("=", "_") for o in args.overrides)
            run = out / f"{name}-{mode}{'-' + tag if tag else ''}"
            full = [*command, "tuning=none", *keys, *args.overrides]
            full += [f"friction.load_dependent={mode}", f"hydra.run.dir={run}"]
            done = subprocess.run(["nice", "-n", "10", *full], capture_output=True, text=True)
            if done.returncode:
                print(f"{name} {mode}: failed: {done.stderr.strip()[-1000:]}")
                continue
            metrics = json.loads((run / "metrics.json").read_text())
            physical = metrics["validation"]["physical"]
            text = " ".join(f"{v:.3f}" for v in physical["rmse_per_joint"])
            line = f"{name} {mode}: validation RMSE {physical['rmse']:.4f} Nm (per joint {text})"
            fit = metrics.get("load_friction")
            if fit:
                values = " ".join(f"{v:.4f}" for v in fit["fL"])
                line += f"; fL {values}; {fit['fits']} fits, settled {fit['converged']}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
