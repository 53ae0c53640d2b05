#!/usr/bin/env python3
"""Identify the Stäubli TX40 with FIGAROH 1.0.2 the way FIGAROH's own example does, and predict
held-out rows (run with FIGAROH's venv, not the project's).

    python figaroh_tx40.py --data DIR --config TX40_config.yaml --urdf tx40.urdf --out OUT
        [--ident-rows 0:24750] [--val-rows 29250:45000] [--border aligned|literal]
        [--tune [--folds 5] [--guard-s 0.1] [--full-grid]]

Our own driver of FIGAROH's API following figaroh-examples' `examples/staubli_TX40`
(identification.py, utils/staubli_tx40_tools.py; commit c0b5c7f, Apache-2.0), with its config
`TX40_config.yaml`. That example's legacy config is converted with FIGAROH 1.0.2's own
`figaroh.utils.config_migration` (1.0 reads the unified format only). As in the example:
motor-side positions and currents read from pos_read_data.csv / curr_data.csv, q = Nq⁻¹ q_motor
with the wrist coupling Nq[5, 4] and the offsets −π/2, +π/2 of joints 2 and 3, median (5) +
Butterworth (order 4, cut-off 100 Hz, 5 kHz) filtering of q, np.gradient for dq and ddq,
τ = Nt i with Nt[4, 5], 5·4 border samples removed, friction, rotor inertia, torque offsets, the
three coupling columns of motor 6 (Iam6, fvm6, fsm6) and solve(decimate=True) (factor 10).

Three departures, each needed with 1.0.2 and none a tuning:
- the coupling columns: 1.0.2's BaseIdentification no longer calls the example's
  `add_additional_parameters` hook; the columns are appended where FIGAROH builds every
  regressor (training and validation alike), with the example's formulas;
- `--border aligned` (default) removes the border samples from kinematics and torque alike, as
  the example's comments intend; 1.0.2 no longer trims the kinematics, so the example's code as
  written (`--border literal`) pairs torque row k + 20 with kinematics row k (4 ms off);
- timestamps are the file rows × 0.0002 s (the example's np.linspace(0, n·ts, n) is 0.004 %
  slow), and rows [a, b) are selected for identification and validation (the example fits all).

`--tune`: the cut-off, the torque offsets on/off and the border (edge trim) chosen by
time-blocked cross-validation on the identification rows alone (figaroh_tuning.py; the
example's 100 Hz, offsets on, border 20 is one of the candidates), then the fit above with
the chosen setting (aligned border).

Writes OUT/config_unified.yaml, OUT/PRED.csv (timestamp, tau_pred_j) and OUT/result.json.
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
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from figaroh.identification import base_identification as figaroh_base  # noqa: E402
from figaroh.identification.base_identification import BaseIdentification  # noqa: E402
from figaroh.tools.load_robot import load_robot  # noqa: E402
from figaroh.utils.config_migration import convert_legacy_to_unified  # noqa: E402

T_IMPORT = time.perf_counter() - T_START
JOINTS = ["joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "joint_6"]
BORDER_FACTOR = 5  # the example: nbord = 5 * nbutter


def migrated_config(
    legacy_file: str, out: str, setting: tuning.Setting | None = None, validation: bool = True
) -> str:
    """TX40_config.yaml converted by FIGAROH's migration, with the example's active joints and
    a validation data token (resolved by load_trajectory_data); `setting`: its cut-off and
    offsets instead of the example's; `validation=False`: no held-out data (FIGAROH then
    predicts the identification rows)."""
    with open(legacy_file, encoding="utf-8") as handle:
        unified = convert_legacy_to_unified(yaml.safe_load(handle))
    unified.pop("extends", None)  # a template path relative to the examples' tree
    unified["tasks"].pop("calibration", None)
    unified["robot"]["name"] = "staubli_tx40"
    unified["robot"]["properties"]["joints"]["active_joints"] = JOINTS
    task = unified["tasks"]["identification"]
    task["data"] = {"validation_data_file": "validation"} if validation else {}
    if setting is not None:
        task.setdefault("signal_processing", {})["cutoff_frequency"] = setting.cutoff_hz
        components = task.setdefault("problem", {}).setdefault("model_components", {})
        components["joint_offset"] = setting.offset
    name = "config_unified.yaml" if validation else "config_cv.yaml"
    path = os.path.join(out, name)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(unified, handle, sort_keys=False)
    return path


def with_coupling(build_regressor):
    """FIGAROH's regressor builder plus the example's three wrist-coupling columns (motor 6
    drives joints 5 and 6): rotor inertia, viscous and dry friction of motor 6."""

    def build(robot, q, v, a, identif_config, *args, **kwargs):
        w = build_regressor(robot, q, v, a, identif_config, *args, **kwargs)
        if not identif_config.get("has_coupled_wrist", False):
            return w
        idx = identif_config["act_idxv"]
        n = len(q)
        v5, v6, a5, a6 = v[:, idx[4]], v[:, idx[5]], a[:, idx[4]], a[:, idx[5]]
        sign = np.sign(v5 + v6)
        extra = np.zeros((w.shape[0], 3))
        extra[4 * n : 5 * n] = np.column_stack([a6, v6, sign])
        extra[5 * n : 6 * n] = np.column_stack([a5, v5, sign])
        return np.hstack([w, extra])

    return build


class TX40Identification(BaseIdentification):
    """The example's TX40Identification, on FIGAROH 1.0.2's base class."""

    data_dir = ""
    rows: dict[str, tuple[int, int]] = {}
    border = "aligned"
    border_samples: int | None = None  # None: the example's 5 * nbutter
    _files: tuple[np.ndarray, np.ndarray] | None = None

    def __init__(self, robot, config_file):
        super().__init__(robot, config_file)
        ids = [self.robot.model.getJointId(name) for name in JOINTS]
        joints = [self.robot.model.joints[i] for i in ids]
        self.identif_config["active_joints"] = JOINTS
        self.identif_config["act_Jid"] = ids
        self.identif_config["act_J"] = joints
        self.identif_config["act_idxq"] = [j.idx_q for j in joints]
        self.identif_config["act_idxv"] = [j.idx_v for j in joints]
        self.identif_config["idx_act_joints"] = [i - 1 for i in ids]
        self.filter_config = {
            "differentiation_method": "gradient",
            "filter_params": {
                "nbutter": 4,
                "f_butter": self.identif_config.get("cut_off_frequency_butterworth", 100.0),
                "f_sample": 1 / self.identif_config["ts"],
            },
        }

    @classmethod
    def _motor_side(cls) -> tuple[np.ndarray, np.ndarray]:
        if cls._files is None:
            current = pd.read_csv(os.path.join(cls.data_dir, "curr_data.csv")).to_numpy()
            position = pd.read_csv(os.path.join(cls.data_dir, "pos_read_data.csv")).to_numpy()
            if current.shape != position.shape:
                raise ValueError(f"size mismatch: {current.shape} vs {position.shape}")
            cls._files = (position, current)
        return cls._files

    def load_trajectory_data(self, data_source=None):
        start, stop = self.rows["validation" if data_source else "identification"]
        position, current = self._motor_side()
        ts = self.identif_config["ts"]
        self.raw_data = {
            "timestamps": (np.arange(start, stop) * ts).reshape(-1, 1),
            "positions": position[start:stop],
            "velocities": None,
            "accelerations": None,
            "torques": current[start:stop],
        }
        return self.raw_data

    def _ratios(self) -> np.ndarray:
        return np.diag(np.asarray(self.identif_config["reduction_ratio"], float))

    def process_kinematics_data(self, filter_config=None):
        ratios = self._ratios()
        reduction = ratios.copy()
        reduction[5, 4] = ratios[5, 5]
        q = np.linalg.solve(reduction, self.raw_data["positions"].T).T
        q[:, 1] += -np.pi / 2
        q[:, 2] += np.pi / 2
        self.raw_data["positions"] = q
        self.filter_kinematics_data(self.filter_config)
        cut = self._border()
        if self.border == "aligned" and cut:
            for key in ("timestamps", "positions", "velocities", "accelerations"):
                self.processed_data[key] = self.processed_data[key][cut:-cut]

    def _border(self) -> int:
        if self.border_samples is not None:
            return self.border_samples
        return BORDER_FACTOR * self.filter_config["filter_params"].get("nbutter", 4)

    def process_torque_data(self, **kwargs):
        ratios = self._ratios()
        reduction = ratios.copy()
        reduction[4, 5] = ratios[5, 5]
        tau = (reduction @ self.raw_data["torques"].T).T
        cut = self._border()
        tau = tau[cut : len(tau) - cut]
        n = len(self.processed_data["positions"])
        if len(tau) != n:  # literal: the example's _sync_torque_w_kinematics
            n = min(n, len(tau))
            tau = tau[:n]
            for key in ("timestamps", "positions", "velocities", "accelerations"):
                self.processed_data[key] = self.processed_data[key][:n]
        self.processed_data["torques"] = tau
        return tau

    def initialize_standard_parameters(self):
        super().initialize_standard_parameters()
        if self.identif_config.get("has_coupled_wrist", False):
            for key in ("Iam6", "fvm6", "fsm6"):
                self.standard_parameter[key] = float(self.identif_config[key])


def tune(args, robot) -> tuple[tuning.Setting, dict]:
    """The setting chosen by cross-validation on the identification rows (never --val-rows)."""
    probe = TX40Identification(robot, migrated_config(args.config, args.out, None, False))
    config = probe.identif_config
    fs = 1 / config["ts"]
    fixed = tuning.Setting(
        float(config["cut_off_frequency_butterworth"]),
        bool(config.get("has_joint_offset", False)),
        probe._border(),
    )
    n_rows = args.ident_rows[1] - args.ident_rows[0]
    order = probe.filter_config["filter_params"].get("nbutter", 4)
    cutoffs, trims, largest = tuning.grid(fixed, fs, order, True, n_rows)
    folds = tuning.make_folds([n_rows], args.folds, round(args.guard_s * fs))
    scored = tuning.scored_rows(n_rows, largest)

    def evaluate(setting: tuning.Setting):
        TX40Identification.border_samples = setting.trim
        config = migrated_config(args.config, args.out, setting, False)
        ident = TX40Identification(robot, config)
        ident.initialize()
        return tuning.fold_errors(ident, setting, folds, scored, solve_for(args))

    chosen, ranked = tuning.search(evaluate, fixed, cutoffs, trims, args.full_grid)
    TX40Identification.border_samples = None
    report = {
        "chosen": {**vars(chosen), "label": chosen.label()},
        "cv_rmse": ranked[0].cv_rmse,
        "fixed_cv_rmse": next(c.cv_rmse for c in ranked if c.setting == fixed),
        "folds": len(folds),
        "fold_kind": "contiguous blocks",
        "guard_samples": round(args.guard_s * fs),
        "scored_rows_per_fold_excluded_ends": largest,
        "search": "full grid" if args.full_grid else "staged (cut-off x offset, then trims)",
        "candidates": [c.to_dict() for c in ranked],
    }
    return chosen, report


def solve_for(args):
    def solve(ident) -> None:
        ident.solve(decimate=not args.no_decimate, plotting=False, save_results=False)

    return solve


def rows(text: str) -> tuple[int, int]:
    start, stop = text.split(":")
    return int(start), int(stop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="folder of pos_read_data.csv, curr_data.csv")
    parser.add_argument("--config", required=True, help="the example's TX40_config.yaml")
    parser.add_argument("--urdf", required=True, help="tx40_mdh_modified.urdf (no meshes needed)")
    parser.add_argument("--out", required=True, help="output folder (created)")
    parser.add_argument("--ident-rows", type=rows, default=(0, 24750))
    parser.add_argument("--val-rows", type=rows, default=(29250, 45000))
    parser.add_argument("--border", choices=("aligned", "literal"), default="aligned")
    parser.add_argument("--no-decimate", action="store_true", help="solve(decimate=False)")
    parser.add_argument("--tune", action="store_true", help="choose cut-off, offset, border by CV")
    parser.add_argument("--folds", type=int, default=5, help="CV blocks of the identification rows")
    parser.add_argument("--guard-s", type=float, default=0.1, help="CV guard gap, s")
    parser.add_argument("--full-grid", action="store_true", help="CV of the whole grid")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    timer = common.Timer()
    timer.add("import", T_IMPORT)
    result: dict = {"tool": "figaroh", "case": "tx40", "error": None, "border": args.border}
    try:
        figaroh_base.build_regressor_basic = with_coupling(figaroh_base.build_regressor_basic)
        TX40Identification.data_dir = os.path.abspath(args.data)
        TX40Identification.rows = {"identification": args.ident_rows, "validation": args.val_rows}
        TX40Identification.border = args.border
        start = time.perf_counter()
        robot = load_robot(os.path.abspath(args.urdf), package_dirs=None, load_by_urdf=True)
        timer.add("load_robot", time.perf_counter() - start)
        setting = None
        if args.tune:
            if args.border != "aligned":
                raise ValueError("--tune trims kinematics and torque alike: --border aligned")
            start = time.perf_counter()
            setting, result["tuning"] = tune(args, robot)
            timer.add("tuning", time.perf_counter() - start)
            TX40Identification.border_samples = setting.trim
            result["setting"] = {**vars(setting), "label": setting.label()}
        ident = TX40Identification(robot, migrated_config(args.config, args.out, setting))
        if setting is None:  # the example's own
            config = ident.identif_config
            fixed = tuning.Setting(
                float(config["cut_off_frequency_butterworth"]),
                bool(config.get("has_joint_offset", False)),
                ident._border(),
            )
            result["setting"] = {**vars(fixed), "label": fixed.label()}
        start = time.perf_counter()
        ident.initialize()
        timer.add("initialize", time.perf_counter() - start)
        start = time.perf_counter()
        ident.solve(decimate=not args.no_decimate, plotting=False, save_results=False)
        timer.add("solve", time.perf_counter() - start)
        t_val, tau_val = common.validation_prediction(ident, JOINTS)
        common.write_predictions(os.path.join(args.out, "PRED.csv"), t_val, tau_val)
        metrics = ident.result["validation_metrics"]
        result |= {
            "ident_rows": list(args.ident_rows),
            "val_rows": list(args.val_rows),
            "decimate": not args.no_decimate,
            "n_train_samples": int(ident.num_samples),
            "n_standard_params": len(ident.standard_parameter),
            "n_base_params": len(ident.phi_base),
            "base_param_names": list(ident.params_base),
            "phi_base": np.asarray(ident.phi_base).tolist(),
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
