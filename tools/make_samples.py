"""Make the sample recordings that ship with the package (`ident_framework/sample_data/`).

    python tools/make_samples.py [--rate 250] [--validation-s 10] [--out FOLDER]

The simulated UR12e of the default run (`source=mujoco`, seed 0: UR's nominal model with its
masses, centres of mass and inertias perturbed, an unknown 1.5 kg payload, joint friction,
rotor inertia, 0.05 Nm torque noise and 2^20-count encoders) is driven along

- `ident`: the default run's excitation (the `fourier` search, seed 0: 20 s, starts and ends
  at rest), and
- `validation`: a point-to-point motion with slow segments and holds (the default validation
  motion, seed 1, shortened to `--validation-s`),

simulated at 1 kHz and recorded at `--rate` Hz. Each recording is written in the CSV contract
(`<name>.csv`) and as a ROS 2 bag of `sensor_msgs/msg/JointState` on `/joint_states`
(`<name>_bag/`, one MCAP file, joint names in UR's driver order: alphabetical). `truth.yaml`
holds the simulated robot's true parameters and how the files were made; `README.md` says it in
prose. Same inputs, same files (seeded), except for the bags' MCAP library stamps.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import yaml
from hydra import compose, initialize_config_module

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import validate_config
from ident_framework.config.search_path import register_plugin_search_path
from ident_framework.data.csv_log import write_csv_log
from ident_framework.data.dataset import Dataset
from ident_framework.modes.pipeline import (
    acquire_validation,
    design_excitation,
    robot_and_regressor,
)
from ident_framework.plain_data import to_plain
from ident_framework.testing.rosbag_writer import write_joint_state_bag

ROOT = Path(__file__).resolve().parents[1]
UR_DRIVER_ORDER = sorted  # UR's ROS drivers publish the joints in alphabetical order

README = """# Sample recordings (made by `tools/make_samples.py`; do not edit)

Two recordings of the simulated UR12e of the default run (`source=mujoco source.seed=0`), for
the getting-started page and README's examples:

| name | motion | duration | rate |
|---|---|---|---|
| `ident` | the default excitation (Fourier series, search seed 0), from rest to rest \
| {ident_s:.1f} s | {rate:g} Hz |
| `validation` | point-to-point moves with slow segments and holds (seed 1) \
| {validation_s:.1f} s | {rate:g} Hz |

Each as a CSV in the CSV contract (`ident.csv`, `validation.csv`: `timestamp`, `actual_q_*`,
`actual_qd_*`, `actual_current_as_torque_*`) and as a ROS 2 bag (`ident_bag/`,
`validation_bag/`: `sensor_msgs/msg/JointState` on `/joint_states`, effort = torque in Nm,
joints in alphabetical order as UR's drivers publish them).

Use them as `source.path=sample:ident validation.path=sample:validation` with `source=csv
validation=csv` or `source=rosbag validation=rosbag`.

The robot: UR's nominal UR12e with its link masses (10 %), centres of mass (1 cm), inertias
(20 %, axes turned by 5°) perturbed, seed 0; a 1.5 kg payload 5 cm out of the flange that the
nominal model does not know; viscous friction 4, 4, 2.5, 1, 1, 1 Nm·s/rad, Coulomb friction
(MuJoCo's soft friction loss) 7, 7, 4, 1.5, 1.5, 1.2 Nm, rotor inertia 0.4, 0.4, 0.15, 0.04,
0.04, 0.04 kg·m²; simulated at 1 kHz with computed-torque feed-forward and PD tracking; torque
noise 0.05 Nm, encoders of 2^20 counts per turn. `truth.yaml` lists every true parameter.
"""


def composed_config(rate: float, validation_s: float):
    register_plugin_search_path()
    with initialize_config_module("ident_framework.conf", version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "robot=ur12e", "source=mujoco", "source.seed=0", "trajectory.progress=false",
                f"source.record_rate_hz={rate:g}",
                f"validation.trajectory.duration_s={validation_s:g}",
            ],
        )  # fmt: skip
    return validate_config(cfg, get_registry())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=250.0, help="recording rate, Hz")
    parser.add_argument("--validation-s", type=float, default=10.0, help="validation motion, s")
    parser.add_argument("--out", type=Path, default=ROOT / "ident_framework" / "sample_data")
    args = parser.parse_args(argv)

    config = composed_config(args.rate, args.validation_s)
    robot, builder = robot_and_regressor(config)
    print("designing the excitation (the default search, ~20 s) ...", file=sys.stderr)
    excitation = design_excitation(config, robot, builder, config.seed)
    print("simulating ...", file=sys.stderr)
    ident = config.plugins["source"].create().acquire(robot, excitation, "identification")
    ident, validation = acquire_validation(config, robot, ident)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    order = UR_DRIVER_ORDER(robot.joint_names)
    for name, data in (("ident", ident), ("validation", validation)):
        # what a recorder measures (no controller targets: they are optional, and size counts)
        measured = Dataset(data.timestamp, data.q, data.dq, data.tau, data.joint_names)
        write_csv_log(measured, out / f"{name}.csv")
        bag = out / f"{name}_bag"
        if bag.exists():
            shutil.rmtree(bag)
        write_joint_state_bag(data, bag, fmt="mcap", order=order, extra_topics=())
    durations = {
        name: float(data.timestamp[-1] - data.timestamp[0])
        for name, data in (("ident", ident), ("validation", validation))
    }
    truth = {
        "made_by": f"tools/make_samples.py --rate {args.rate:g} --validation-s "
        f"{args.validation_s:g}",
        "robot": "ur12e",
        "simulated_robot": "source=mujoco source.seed=0 (the default run's robot)",
        "record_rate_hz": args.rate,
        "recordings": {
            "ident": {
                "samples": ident.n_samples,
                "duration_s": durations["ident"],
                "motion": excitation.describe(),
            },
            "validation": {
                "samples": validation.n_samples,
                "duration_s": durations["validation"],
                "motion": validation.metadata.get("trajectory"),
            },
        },  # fmt: skip
        "truth": to_plain(ident.metadata["truth"]),
    }
    (out / "truth.yaml").write_text(yaml.safe_dump(truth, sort_keys=False, width=100))
    (out / "README.md").write_text(
        README.format(
            ident_s=durations["ident"], validation_s=durations["validation"], rate=args.rate
        )
    )
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({size / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
