"""mode=predict: apply a saved identification to a new recording.

`python -m ident_framework mode=predict run=DIR source=csv source.path=FILE` rebuilds the
model of the run in DIR (its config.yaml with the options its parameters.yaml records as
chosen, its standard parameters, its residual learner) and writes the predicted torques of
FILE: `predictions_<stem>.csv`, `metrics_<stem>.json` (several files: stem `recordings`),
`summary.txt` and plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from omegaconf import OmegaConf

from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import RunConfig, validate_config
from ident_framework.data.checks import drop_untrusted
from ident_framework.data.preprocessing import preprocess
from ident_framework.errors import UserError
from ident_framework.hookspecs import ResidualLearner, conform
from ident_framework.identify.linear_problem import predict_torque
from ident_framework.identify.metrics import (
    fusion_gain,
    preprocessing_counts,
    recording_metrics,
    torque_metrics,
)
from ident_framework.identify.prediction import learner_figures, residual_inputs
from ident_framework.identify.result import TorquePredictions
from ident_framework.launch_path import resolve_launch_path
from ident_framework.model import friction_terms
from ident_framework.model.regressor import RegressorBuilder
from ident_framework.model.robot import RobotModel
from ident_framework.modes.pipeline import robot_and_regressor
from ident_framework.reports import run_files
from ident_framework.reports.run_report import write_prediction_outputs

MODEL_GROUPS = ("estimator", "friction", "residual")  # named in the metrics and the summary


@dataclass
class SavedModel:
    """What an identification run left behind, ready to predict."""

    run_dir: Path
    config: RunConfig
    robot: RobotModel
    builder: RegressorBuilder
    theta: np.ndarray
    residual: ResidualLearner | None  # a fitted residual learner, or None


def _read(path: Path, what: str) -> str:
    if not path.is_file():
        raise UserError(
            f"The run directory {path.parent} has no {path.name} ({what}): give run=DIR of a "
            "finished identification (python -m ident_framework ... writes one)."
        )
    return path.read_text()


def load_saved_model(run_dir: str | Path) -> SavedModel:
    """The physical model (and residual learner) of an identification run directory."""
    folder = Path(resolve_launch_path(str(run_dir)))
    if not folder.is_dir():
        raise UserError(f"The run directory {folder} (config key 'run') does not exist.")
    try:
        cfg = OmegaConf.create(_read(folder / run_files.CONFIG, "the run's resolved config"))
        parameters = yaml.safe_load(_read(folder / run_files.PARAMETERS, "identified parameters"))
        parameters = parameters or {}
    except (yaml.YAMLError, ValueError) as error:
        raise UserError(f"Cannot read the saved run in {folder}: {error}") from None
    # what was chosen for that run: tuning=cv's options, the friction's temperature and load terms
    for section in ("tuning", "temperature", "load_friction"):
        for key, value in ((parameters.get(section) or {}).get("chosen") or {}).items():
            OmegaConf.update(cfg, key, value, merge=False)
    config = validate_config(cfg, get_registry())
    robot, builder = robot_and_regressor(config)
    saved = parameters.get("standard_parameters")
    if not isinstance(saved, dict) or list(saved) != builder.parameter_names:
        raise UserError(
            f"{folder / run_files.PARAMETERS} holds no physical model matching its config "
            f"(expected 'standard_parameters' {builder.parameter_names[:3]}...): the residual "
            "learner needs the physical model it was trained on. Re-run the identification."
        )
    if builder.nonlinear is not None:
        builder = builder.with_nonlinear(_saved_nonlinear(folder, parameters, builder))
    selected = config.plugins["residual"]
    learner = selected.create()
    residual = None
    if learner.active:
        loaded = learner.load(folder / run_files.RESIDUAL_FOLDER)
        residual = conform("residual", loaded, selected.info.name, selected.info.distribution)
    theta = np.array([float(v) for v in saved.values()])
    if builder.load_dependent:  # tau_load from the model's own parameters, as identified
        builder = builder.with_load(theta)
    return SavedModel(folder, config, robot, builder, theta, residual)


def _saved_nonlinear(folder: Path, parameters: dict, builder: RegressorBuilder) -> np.ndarray:
    """(n, m) the fitted nonlinear friction values in parameters.yaml (`friction.nonlinear`)."""
    names = list(friction_terms.nonlinear_names(builder.friction))
    saved = (parameters.get("friction") or {}).get("nonlinear")
    joints = list(builder.robot.joint_names)
    try:
        return np.array([[float(saved[joint][name]) for name in names] for joint in joints])
    except (KeyError, TypeError, ValueError):
        raise UserError(
            f"{folder / run_files.PARAMETERS} holds no fitted nonlinear friction parameters "
            f"{names} for the joints {joints} (key 'friction.nonlinear'), which its friction "
            "model needs. Re-run the identification."
        ) from None


def run_prediction(config: RunConfig, out_dir: Path) -> dict[str, Any]:
    """Predict the torques of the recording of `config`'s source with the model of
    `config.run`; write predictions and metrics into out_dir; return the metrics."""
    model = load_saved_model(config.run)
    source = config.plugins["source"].create()
    if source.moves_robot:
        raise UserError(
            "mode=predict applies a saved model to a recording: use source=csv "
            "source.path=FILE (the source must not move a robot)."
        )
    recorded = source.acquire(model.robot, None, "identification")
    data = preprocess(recorded, model.config.preprocessing)
    data = drop_untrusted(recorded, data, model.robot.limits, config.checks)
    physical = predict_torque(model.builder, data, model.theta, config.chunk_size)
    fusion, plugins = None, model.config.plugins
    measured = data.measured_torque  # as recorded, at the recorded timestamps
    metrics: dict[str, Any] = {
        "run": str(model.run_dir),
        "models": {group: plugins[group].info.name for group in MODEL_GROUPS},
        "data": {
            "path": ", ".join(data.recording_paths),
            "samples": data.n_samples,
            "recorded_samples": recorded.n_samples,
            "duration_s": data.duration,
            "resampled": bool(data.metadata.get("preprocessing", {}).get("resampled", False)),
            "joint_names": list(data.joint_names),
            "preprocessing": preprocessing_counts(data),
            **({"checks": data.metadata["checks"]} if "checks" in data.metadata else {}),
        },
        "physical": torque_metrics(measured, physical),
    }
    if model.residual is not None:
        inputs = residual_inputs(model.builder, data, model.theta, physical, config.chunk_size)
        fusion = physical + model.residual.predict(inputs)
        metrics["fusion"] = torque_metrics(measured, fusion)
        metrics["fusion_gain"] = fusion_gain(metrics["physical"], metrics["fusion"])
        metrics["fusion"].update(learner_figures(model.residual) or {})
    metrics["recordings"] = recording_metrics(data, TorquePredictions(physical, fusion))
    paths = data.recording_paths
    stem = Path(paths[0]).stem if len(paths) == 1 else "recordings"  # several: one table
    write_prediction_outputs(out_dir, stem, data, physical, fusion, metrics, config.plots)
    return metrics
