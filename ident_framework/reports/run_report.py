"""Writes the run directory (file names in `run_files.py`) and prints the summary. All or
nothing (`staged_outputs`): outputs are moved into the run directory only when the run
succeeded.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
from omegaconf import DictConfig

from ident_framework.config.registry import get_registry
from ident_framework.data.dataset import Dataset
from ident_framework.identify.result import IdentificationResult
from ident_framework.model.robot import RobotModel
from ident_framework.plain_data import config_yaml_text, to_plain, yaml_text
from ident_framework.reports import run_files
from ident_framework.reports.parameters import parameters_document
from ident_framework.reports.plots import write_plots, write_prediction_plots
from ident_framework.reports.run_files import HYDRA_FOLDER, STAGING
from ident_framework.reports.summary import summary_lines
from ident_framework.reports.tuning_report import write_tuning_table
from ident_framework.twin.export import twin_urdf_text


def write_torque_table(path: Path, data: Dataset, physical: np.ndarray, final: np.ndarray) -> None:
    """`timestamp, tau_meas_j..., tau_physical_j..., tau_pred_j...` (Nm) per predicted sample
    of `data` (timestamp and torque as recorded), each value in the shortest form that reads
    back as the same float; with several recordings a last column `recording` (its index in
    metrics.json's `recordings`)."""
    n = data.n_joints
    header = ["timestamp"] + [
        f"{kind}_{j}" for kind in ("tau_meas", "tau_physical", "tau_pred") for j in range(n)
    ]
    columns = [np.asarray(data.recorded_timestamp, dtype=float)[:, None]]
    columns += [np.asarray(c, dtype=float) for c in (data.measured_torque, physical, final)]
    arrays = [_arrow_array(c[:, j]) for c in columns for j in range(c.shape[1])]
    if len(data.recording_paths) > 1:
        header.append("recording")
        arrays.append(_arrow_array(np.asarray(data.recording_index, dtype=np.int64)))
    with pa.OSFile(str(path), "wb") as out:
        out.write((",".join(header) + "\n").encode())
        pa_csv.write_csv(
            pa.Table.from_arrays(arrays, names=header),
            out,
            pa_csv.WriteOptions(include_header=False, quoting_style="none"),
        )


def _arrow_array(values: np.ndarray) -> pa.Array:
    """A pyarrow array on the buffer of a 1-D float64 or int64 array (NaN stays a value);
    `pa.array` would import pandas."""
    values = np.ascontiguousarray(values)
    kind = {np.dtype(np.float64): pa.float64(), np.dtype(np.int64): pa.int64()}[values.dtype]
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def write_twin(folder: Path, twin: RobotModel, prefix: str = "") -> list[Path]:
    """Write `prefix`twin.xml and `prefix`twin.urdf into `folder`; returns their paths."""
    mjcf, urdf = (folder / name for name in run_files.twin_files(prefix))
    mjcf.write_text(twin.mjcf)
    urdf.write_text(twin_urdf_text(twin))
    return [mjcf, urdf]


def write_run_directory(
    staging: Path, result: IdentificationResult, cfg: DictConfig, twin_prefix: str = ""
) -> None:
    """Every file of an identification's run directory into `staging`; the twin's names
    prefixed with `twin_prefix` (a rehearsal's)."""
    model, plots = result.model, result.config.plots
    selection = result.config.selection
    metrics = result.metrics
    if selection is not None:
        metrics = {**metrics, "tuning": selection.to_dict()}
    (staging / run_files.METRICS).write_text(json.dumps(to_plain(metrics), indent=2))
    (staging / run_files.PARAMETERS).write_text(yaml_text(parameters_document(result)))
    validation = result.predictions["validation"]
    write_torque_table(
        staging / run_files.PREDICTIONS_VALIDATION,
        result.data.validation,
        validation.physical,
        validation.final,
    )
    write_tuning_table(staging, selection)
    installed = [
        {"kind": p.kind, "name": p.name, "distribution": p.distribution, "version": p.version}
        for p in get_registry().installed()
    ]  # every installed option, none of the unused ones imported
    (staging / run_files.PLUGINS).write_text(yaml_text({"installed": installed}))
    (staging / run_files.CONFIG).write_text(config_yaml_text(cfg))
    (staging / run_files.SUMMARY).write_text("\n".join(summary_lines(result, twin_prefix)) + "\n")
    if result.data.excitation is not None:
        description = to_plain(result.data.excitation.describe())
        description["cond_base_regressor_recorded"] = result.diagnostics.cond
        if "loop" in result.metrics:  # the last round's excitation; cond is of every round's
            description["closed_loop_round"] = len(result.metrics["loop"]["iterations"])
        (staging / run_files.TRAJECTORY).write_text(yaml_text(description))
    if plots:
        write_plots(staging / run_files.PLOTS, result)
    if model.residual is not None:
        model.residual.save(staging / run_files.RESIDUAL_FOLDER)
        if plots:
            model.residual.write_outputs(staging)
    if result.twin.model is not None:
        write_twin(staging, result.twin.model, twin_prefix)
    model.estimator.write_outputs(staging)


def write_prediction_outputs(
    staging: Path,
    stem: str,
    data: Dataset,
    physical: np.ndarray,
    fusion: np.ndarray | None,
    metrics: dict[str, Any],
    plots: bool,
) -> None:
    """mode=predict: predictions_<stem>.csv, metrics_<stem>.json and (with `plots`) the
    validation plots of the recording `stem`."""
    predictions, metrics_file = run_files.prediction_files(stem)
    final = physical if fusion is None else fusion
    write_torque_table(staging / predictions, data, physical, final)
    (staging / metrics_file).write_text(json.dumps(to_plain(metrics), indent=2))
    if plots:
        write_prediction_plots(staging / run_files.PLOTS, data, physical, fusion, metrics, stem)


def write_summary(staging: Path, lines: list[str]) -> None:
    (staging / run_files.SUMMARY).write_text("\n".join(lines) + "\n")


def print_summary(result: IdentificationResult, run_dir: Path, twin_prefix: str = "") -> None:
    print("\n".join([*summary_lines(result, twin_prefix), f"outputs in {run_dir}"]))


@contextmanager
def staged_outputs(run_dir: Path) -> Iterator[Path]:
    """Yield a staging folder; on success move its files into run_dir, on failure remove it,
    Hydra's files of this job and the run dir if left empty."""
    staging = run_dir / STAGING
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_job_bookkeeping(run_dir)
        raise
    for item in sorted(staging.iterdir()):
        target = run_dir / item.name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        item.rename(target)
    staging.rmdir()


def _remove_job_bookkeeping(run_dir: Path) -> None:
    shutil.rmtree(run_dir / HYDRA_FOLDER, ignore_errors=True)
    for log in run_dir.glob("*.log"):
        log.unlink()
    try:
        run_dir.rmdir()  # only if empty: never delete what an earlier run left there
    except OSError:
        pass
