#!/usr/bin/env python3
"""Identify any serial arm with FIGAROH 1.0.2 from CSVs in ident_framework's contract and
predict a held-out validation CSV (run with FIGAROH's venv, not the project's).

    python figaroh_csv.py --ident A.csv [B.csv ...] --val V.csv --urdf ROBOT.urdf --out DIR
        [--joints j0,j1,...] [--cutoff 10] [--order 4] [--fs HZ] [--offset] [--trim N]
        [--columns time=time,q=q_,dq=dq_,tau=tau_] [--tune [--folds 5] [--guard-s 0.1]]

Generalises the lead's 6-joint UR driver (`../shared/peers/figaroh/run_figaroh.py`) to any
joint list (default: the URDF's movable joints in model order). The workflow is FIGAROH's own:
a unified config, a BaseIdentification subclass that loads the data, initialize() (median +
Butterworth filter of q and the recorded dq, np.gradient for ddq, raw torque, regressor with
viscous + sign friction and rotor inertia), solve() (zero-column elimination, double QR base
parameters, least squares) and FIGAROH's validation path (`validation_data_file`) for the
held-out prediction. Several --ident files are joined end to end (FIGAROH takes one
trajectory; its filters then run across the seams). `--trim N` drops N samples at each end of
the trajectory after the filters (as FIGAROH's TX40 example drops its border; default 0).
`--tune`: the cut-off, the offset on/off and the trim chosen by time-blocked cross-validation on
the identification files alone (figaroh_tuning.py), then the fit above with the chosen setting.

Writes DIR/config.yaml, DIR/PRED.csv (timestamp, tau_pred_j) and DIR/result.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings

T_START = time.perf_counter()
warnings.filterwarnings("ignore")
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import figaroh_common as common  # noqa: E402
import figaroh_tuning as tuning  # noqa: E402
import yaml  # noqa: E402
from figaroh.identification.base_identification import BaseIdentification  # noqa: E402
from figaroh.tools.load_robot import load_robot  # noqa: E402

T_IMPORT = time.perf_counter() - T_START


def unified_config(
    args, joints: list[str], robot_name: str, setting: tuning.Setting, validation: str | None
) -> dict:
    """FIGAROH's unified config: the lead's UR driver's, for `joints`, with `setting`'s cut-off
    and offset; `validation`: the held-out file (None: none, FIGAROH then predicts the
    identification trajectory)."""
    return {
        "robot": {"name": robot_name, "properties": {"joints": {"active_joints": joints}}},
        "tasks": {
            "identification": {
                "type": "dynamic_identification",
                "enabled": True,
                "problem": {
                    "use_joint_torques": True,
                    "include_external_forces": False,
                    "model_components": {
                        "friction": True,
                        "actuator_inertia": True,
                        "joint_offset": bool(setting.offset),
                    },
                    "wls": False,
                },
                "signal_processing": {
                    "sampling_frequency": args.fs,
                    "cutoff_frequency": setting.cutoff_hz,
                    "filter_order": args.order,
                    "differentiation_method": "gradient",
                    "filter_type": "butterworth",
                },
                "data": {"validation_data_file": validation} if validation else {},
            }
        },
    }


class CsvIdentification(BaseIdentification):
    """A robot-specific subclass as FIGAROH's examples write one: joint indices and a loader."""

    ident_files: list[str] = []
    n_joints = 0
    columns: dict[str, str] | None = None
    trim = 0  # samples dropped at each end after the filters

    def __init__(self, robot, config_file):
        super().__init__(robot, config_file)
        joints = self.identif_config["active_joints"]
        ids = [self.model.getJointId(name) for name in joints]
        self.identif_config["act_Jid"] = ids
        self.identif_config["act_idxq"] = [self.model.joints[i].idx_q for i in ids]
        self.identif_config["act_idxv"] = [self.model.joints[i].idx_v for i in ids]

    def load_trajectory_data(self, data_source=None):
        files = [data_source] if data_source else self.ident_files
        parts = [common.load_contract_csv(f, self.n_joints, self.columns) for f in files]
        data = common.concatenate_recordings(parts)
        return {
            "timestamps": data["t"].reshape(-1, 1),
            "positions": data["q"],
            "velocities": data["dq"],
            "accelerations": None,
            "torques": data["tau"],
        }

    def process_kinematics_data(self, filter_config=None):
        super().process_kinematics_data(filter_config)
        if self.trim:
            for key in ("timestamps", "positions", "velocities", "accelerations"):
                self.processed_data[key] = self.processed_data[key][self.trim : -self.trim]

    def process_torque_data(self, **kwargs):
        tau = super().process_torque_data(**kwargs)
        if self.trim:
            tau = self.processed_data["torques"] = tau[self.trim : -self.trim]
        return tau


def movable_joints(model) -> list[str]:
    return [name for i, name in enumerate(model.names) if i > 0 and model.joints[i].nq > 0]


def identification(args, robot, joints, setting: tuning.Setting, validation: str | None):
    """A CsvIdentification with `setting` (its config written to the output folder)."""
    name = "config.yaml" if validation else "config_cv.yaml"
    config_path = os.path.join(args.out, name)
    with open(config_path, "w", encoding="utf-8") as handle:
        config = unified_config(args, joints, robot.model.name, setting, validation)
        yaml.safe_dump(config, handle, sort_keys=False)
    CsvIdentification.trim = setting.trim
    return CsvIdentification(robot, config_path)


def solve(ident) -> None:
    ident.solve(decimate=False, plotting=False, save_results=False)


def tune(args, robot, joints, fixed: tuning.Setting) -> tuple[tuning.Setting, dict]:
    """The setting chosen by cross-validation on the identification files (never --val)."""
    lengths = [len(common.load_contract_csv(f, len(joints), CsvIdentification.columns)["t"])
               for f in CsvIdentification.ident_files]  # fmt: skip
    n_rows = sum(lengths)
    cutoffs, trims, largest = tuning.grid(fixed, args.fs, args.order, False, n_rows)
    folds = tuning.make_folds(lengths, args.folds, round(args.guard_s * args.fs))
    scored = tuning.scored_rows(n_rows, largest)

    def evaluate(setting: tuning.Setting):
        ident = identification(args, robot, joints, setting, None)
        ident.initialize()
        return tuning.fold_errors(ident, setting, folds, scored, solve)

    chosen, ranked = tuning.search(evaluate, fixed, cutoffs, trims, args.full_grid)
    report = {
        "chosen": {**vars(chosen), "label": chosen.label()},
        "cv_rmse": ranked[0].cv_rmse,
        "fixed_cv_rmse": next(c.cv_rmse for c in ranked if c.setting == fixed),
        "folds": len(folds),
        "fold_kind": "one per recording" if len(lengths) > 1 else "contiguous blocks",
        "guard_samples": round(args.guard_s * args.fs),
        "scored_rows_per_fold_excluded_ends": largest,
        "search": "full grid" if args.full_grid else "staged (cut-off x offset, then trims)",
        "candidates": [c.to_dict() for c in ranked],
    }
    return chosen, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ident", nargs="+", required=True, help="identification CSV(s)")
    parser.add_argument("--val", required=True, help="validation CSV")
    parser.add_argument("--urdf", required=True, help="robot URDF (no meshes needed)")
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--joints", default=None, help="comma-separated active joints")
    parser.add_argument("--cutoff", type=float, default=10.0, help="Butterworth cut-off, Hz")
    parser.add_argument("--order", type=int, default=4, help="Butterworth order")
    parser.add_argument("--fs", type=float, default=None, help="sampling rate, Hz")
    parser.add_argument("--offset", action="store_true", help="torque offset per joint")
    parser.add_argument("--trim", type=int, default=0, help="samples dropped at each end")
    parser.add_argument("--columns", default=None, help="time=NAME,q=PREFIX,dq=...,tau=...")
    parser.add_argument("--tune", action="store_true", help="choose cut-off, offset, trim by CV")
    parser.add_argument("--folds", type=int, default=5, help="CV blocks of one recording")
    parser.add_argument("--guard-s", type=float, default=0.1, help="CV guard gap, s")
    parser.add_argument("--full-grid", action="store_true", help="CV of the whole grid")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    timer = common.Timer()
    timer.add("import", T_IMPORT)
    result: dict = {"tool": "figaroh", "ident": args.ident, "val": args.val, "error": None}
    try:
        start = time.perf_counter()
        robot = load_robot(os.path.abspath(args.urdf), package_dirs=None, load_by_urdf=True)
        timer.add("load_robot", time.perf_counter() - start)
        joints = args.joints.split(",") if args.joints else movable_joints(robot.model)
        CsvIdentification.ident_files = [os.path.abspath(f) for f in args.ident]
        CsvIdentification.n_joints = len(joints)
        CsvIdentification.columns = common.parse_columns(args.columns)
        if args.fs is None:
            first = common.load_contract_csv(args.ident[0], len(joints), CsvIdentification.columns)
            args.fs = common.estimate_fs(first["t"])
        setting = tuning.Setting(args.cutoff, bool(args.offset), args.trim)
        if args.tune:
            start = time.perf_counter()
            setting, result["tuning"] = tune(args, robot, joints, setting)
            timer.add("tuning", time.perf_counter() - start)
        for name in ("process_data", "calculate_full_regressor", "_load_validation_data",
                     "_calculate_base_parameters", "_compute_validation_metrics"):  # fmt: skip
            timer.wrap(CsvIdentification, name)
        ident = identification(args, robot, joints, setting, os.path.abspath(args.val))
        start = time.perf_counter()
        ident.initialize()
        timer.add("initialize", time.perf_counter() - start)
        start = time.perf_counter()
        solve(ident)
        timer.add("solve", time.perf_counter() - start)
        t_val, tau_val = common.validation_prediction(ident, joints)
        common.write_predictions(os.path.join(args.out, "PRED.csv"), t_val, tau_val)
        metrics = ident.result["validation_metrics"]
        result |= {
            "joints": joints,
            "fs_hz": args.fs,
            "cutoff_hz": setting.cutoff_hz,
            "setting": {**vars(setting), "label": setting.label()},
            "n_train_samples": int(ident.num_samples),
            "n_base_params": len(ident.phi_base),
            "regressor_shape": list(ident.dynamic_regressor.shape),
            "cond_base_regressor": float(ident.result["condition number"]),
            "fit_rmse": float(ident.rms_error),
            "n_val_samples": len(t_val),
            "figaroh_validation_rmse": metrics.get("rmse_identified"),
        }
    except BaseException as error:  # noqa: BLE001 - recorded, reported by the benchmark
        traceback.print_exc()
        result["error"] = f"{type(error).__name__}: {error}"
    result["timings_s"] = timer.seconds
    result["peak_rss_mb"] = common.peak_rss_mb()
    result["process_wall_s"] = time.perf_counter() - T_START
    common.dump(os.path.join(args.out, "result.json"), result)
    print("figaroh:", "error " + result["error"] if result["error"] else "ok", flush=True)
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
