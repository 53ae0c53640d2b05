"""Writes the run-directory contract (metrics.json, parameters.yaml, predictions, plots) and
prints the summary a user reads at the end of a run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from omegaconf import DictConfig, OmegaConf

from .closed_loop import loop_table
from .physical_consistency import com_inertia
from .pipeline import PipelineResult
from .plain_data import to_plain
from .plots import write_plots
from .plugins import DISTRIBUTION, get_registry
from .prediction import RESIDUAL_FOLDER
from .twin_export import TWIN_MJCF, TWIN_URDF, write_twin

# Units of the per-joint parameters by their conventional names (a friction plugin may declare
# its own as `parameter_units`, a dict name -> unit); "" means dimensionless.
PARAMETER_UNITS = {
    "fv": "Nm·s/rad",
    "fc": "Nm",
    "fs": "Nm",
    "fc_pos": "Nm",
    "fc_neg": "Nm",
    "fs_pos": "Nm",
    "fs_neg": "Nm",
    "v_s": "rad/s",
    "sigma0": "Nm/rad",
    "sigma1": "Nm·s/rad",
    "z_ss": "rad",
    "fs_ratio": "",
    "delta": "",
    "Ia": "kg·m²",
    "offset": "Nm",
}


def parameter_unit(name: str, friction: Any = None) -> str | None:
    """The unit of a per-joint parameter (None: not known)."""
    declared = getattr(friction, "parameter_units", None) or {}
    return declared.get(name, PARAMETER_UNITS.get(name))


def _with_unit(name: str, friction: Any) -> str:
    unit = parameter_unit(name, friction)
    return f"{name} [{unit}]" if unit else name


def joint_parameters(result: PipelineResult) -> list[dict[str, Any]]:
    """Friction, rotor inertia and offset per joint, identified (and true when simulated)."""
    names = result.builder.parameter_names
    index = {name: i for i, name in enumerate(names)}
    alone = result.base.identifiable_alone()
    rows = []
    for j, joint in enumerate(result.robot.joint_names):
        row: dict[str, Any] = {"joint": joint}
        keys = [*result.builder.friction.parameter_names]
        if result.builder.armature:
            keys.append("Ia")
        if result.builder.torque_offset:
            keys.append("offset")
        for key in keys:
            i = index[f"{key}_{j + 1}"]
            entry = {"value": float(result.theta[i]), "identifiable_alone": bool(alone[i])}
            if result.truth_theta is not None:
                entry["true"] = float(result.truth_theta[i])
            row[key] = entry
        rows.append(row)
    return rows


def link_parameters(result: PipelineResult) -> list[dict[str, Any]] | None:
    """Full per-link parameters (mass kg, centre of mass m and inertia about it kg·m², in the
    link frame) when they are physically valid, else None."""
    if result.physical_violations:
        return None
    links = []
    for j, joint in enumerate(result.robot.joint_names):
        params = result.theta[10 * j : 10 * (j + 1)]
        mass = float(params[0])
        links.append(
            {
                "joint": joint,
                "mass": mass,
                "com": (params[1:4] / mass).tolist(),
                "inertia_about_com": com_inertia(params).tolist(),
                "dynamic_parameters": params.tolist(),
            }
        )
    return links


def _plugins_used(result: PipelineResult) -> dict[str, Any]:
    used = {}
    for group, selected in result.config.plugins.items():
        used[group] = {
            "plugin": selected.info.name,
            "distribution": selected.info.distribution,
            "version": selected.info.version,
            "params": dataclasses.asdict(selected.params),
        }
    validation = result.config.validation
    if validation.split is not None:
        used["validation"] = {"plugin": "split", **dataclasses.asdict(validation.split)}
    else:
        used["validation"] = {
            "plugin": validation.source.info.name,
            "distribution": validation.source.info.distribution,
            "version": validation.source.info.version,
        }
    return used


def parameters_document(result: PipelineResult) -> dict[str, Any]:
    estimator = result.estimator
    std = getattr(estimator, "coef_std_", None)
    combos = result.base.combinations()
    base = []
    for i, name in enumerate(result.base.names):
        value = float(estimator.coef_[i])
        entry = {"name": name, "value": value, "combination": combos[i]}
        if std is not None:
            entry["std"] = float(std[i])
            entry["relative_std_percent"] = float(100 * std[i] / abs(value)) if value != 0 else None
        base.append(entry)
    return to_plain(
        {
            "robot": {
                "name": result.robot.name,
                "model": result.config.robot.model,
                "joint_names": list(result.robot.joint_names),
            },
            "plugins": _plugins_used(result),
            "base_parameters": base,
            "joints": joint_parameters(result),
            "links": link_parameters(result),
            "physical_violations": result.physical_violations,
            "standard_parameters": dict(
                zip(result.builder.parameter_names, result.theta.tolist(), strict=True)
            ),
            **({"friction": friction_document(result)} if result.friction_fit else {}),
        }
    )


def friction_document(result: PipelineResult) -> dict[str, Any]:
    """A nonlinear friction model's fitted nonlinear values per joint (what `mode=predict`
    rebuilds the model with) and every physical parameter per joint, with the true value when
    the robot was simulated."""
    fit = result.friction_fit
    comparison = result.metrics["friction"]
    joints = list(result.robot.joint_names)
    physical = {}
    for j, joint in enumerate(joints):
        row = {}
        for name, values in comparison["identified"].items():
            entry = {"value": values[j]}
            if name in comparison.get("true", {}):
                entry["true"] = comparison["true"][name][j]
            row[name] = entry
        physical[joint] = row
    return {
        "plugin": result.config.plugins["friction"].info.name,
        "nonlinear_names": list(fit.names),
        "nonlinear": {
            joint: dict(zip(fit.names, map(float, values), strict=True))
            for joint, values in zip(joints, result.builder.nonlinear, strict=True)
        },
        "physical": physical,
    }


def installed_plugins() -> list[dict[str, str]]:
    return [
        {"kind": p.kind, "name": p.name, "distribution": p.distribution, "version": p.version}
        for p in get_registry().all()
    ]


def write_predictions(path: Path, result: PipelineResult) -> None:
    data, stage = result.validation, result.predictions["validation"]
    n = data.n_joints
    header = (
        ["timestamp"]
        + [f"tau_meas_{j}" for j in range(n)]
        + [f"tau_physical_{j}" for j in range(n)]
        + [f"tau_pred_{j}" for j in range(n)]
    )
    table = np.column_stack([data.timestamp, data.tau, stage.physical, stage.final])
    np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.9g")


def write_run_directory(stage: Path, result: PipelineResult, cfg: DictConfig) -> None:
    (stage / "metrics.json").write_text(json.dumps(to_plain(result.metrics), indent=2))
    (stage / "parameters.yaml").write_text(
        yaml.safe_dump(parameters_document(result), sort_keys=False)
    )
    write_predictions(stage / "predictions_validation.csv", result)
    (stage / "plugins.yaml").write_text(
        yaml.safe_dump({"installed": installed_plugins()}, sort_keys=False)
    )
    (stage / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    (stage / "summary.txt").write_text("\n".join(summary_lines(result)) + "\n")
    if result.excitation is not None:
        description = to_plain(result.excitation.describe())
        description["cond_base_regressor_recorded"] = result.cond
        if "loop" in result.metrics:  # the last round's excitation; cond is of every round's
            description["closed_loop_round"] = len(result.metrics["loop"]["iterations"])
        (stage / "trajectory.yaml").write_text(yaml.safe_dump(description, sort_keys=False))
    if result.config.plots:
        write_plots(stage / "plots", result)
    if result.residual is not None:
        result.residual.save(stage / RESIDUAL_FOLDER)
        residual_outputs = getattr(result.residual, "write_outputs", None)
        if residual_outputs is not None and result.config.plots:
            residual_outputs(stage)
    if result.twin is not None:
        write_twin(stage, result.twin, result.twin_prefix)
    estimator_outputs = getattr(result.estimator, "write_outputs", None)
    if estimator_outputs is not None:
        estimator_outputs(stage)


def print_summary(result: PipelineResult, run_dir: Path) -> None:
    print("\n".join([*summary_lines(result), f"outputs in {run_dir}"]))


def summary_lines(result: PipelineResult) -> list[str]:
    """The run's summary as a user reads it (also saved as summary.txt)."""
    m = result.metrics
    ident = m["identifiability"]
    lines = [
        f"robot {result.robot.name}: {ident['n_base']} base parameters of {ident['n_standard']},"
        f" cond(W_base) = {ident['cond']:.1f}",
        models_line(result),
    ]
    for split in ("train", "validation"):
        lines += metric_lines(split, m[split])
    poor = ident.get("poorly_identified")
    if poor:
        lines.append(
            f"warning: {len(poor)} of {ident['n_base']} base parameters have a relative std above "
            f"{ident['relative_std_bound_percent']:g} % (see parameters.yaml): {', '.join(poor)}"
        )
    if "truth" in m:
        t = m["truth"]
        lines.append(
            f"true parameters reach validation RMSE {t['validation_rmse_true_parameters']:.4f} Nm;"
            f" identified / true = {t['rmse_ratio_identified_to_true']:.4f}"
        )
    lines += fusion_table(result)
    lines += joint_parameter_table(result)
    lines += friction_table(result)
    lines += twin_lines(result)
    if "loop" in m:
        lines += ["closed loop (every round; the lines above are the last one's):"]
        lines += loop_table(m["loop"])
    return lines


def _option(selected: Any) -> str:
    """'stribeck (ident-stribeck 0.1.0)' for a plugin of another distribution, else 'ls'."""
    info = selected.info
    if info.distribution == DISTRIBUTION:
        return info.name
    return f"{info.name} ({info.distribution} {info.version})"


def models_line(result: PipelineResult) -> str:
    """Which estimator, friction model and residual learner made these figures, and from
    which data."""
    plugins, validation = result.config.plugins, result.config.validation
    held_out = (
        f"split (last {100 * validation.split.fraction:g} %)"
        if validation.split is not None
        else _option(validation.source)
    )
    return (
        f"estimator {_option(plugins['estimator'])}, friction {_option(plugins['friction'])}, "
        f"residual {_option(plugins['residual'])}; data: source {_option(plugins['source'])}, "
        f"validation {held_out}"
    )


def metric_lines(label: str, metrics: dict[str, Any], width: int = 10) -> list[str]:
    """Pooled RMSE and R² with the per-joint R², of the physical model and (when present) the
    fusion, as the summary prints them for `label` (train, validation, a recording)."""
    lines = []
    for stage in ("physical", "fusion"):
        if stage not in metrics:
            continue
        values = metrics[stage]
        per_joint = " ".join(f"{v:.4f}" if v is not None else "nan" for v in values["r2_per_joint"])
        lines.append(
            f"{label:>{width}} {stage:<8} RMSE {values['rmse']:.4f} Nm  R² {values['r2']:.5f}"
            f"  (per joint R²: {per_joint})"
        )
    return lines


def prediction_summary_lines(metrics: dict[str, Any]) -> list[str]:
    """mode=predict: which saved model predicted which recording, and how well, in the same
    form as an identification's summary (physical and fused; pooled and per joint)."""
    data, models = metrics["data"], metrics["models"]
    how = "filter edges trimmed" + (", resampled to a uniform grid" if data["resampled"] else "")
    lines = [
        f"prediction with the model of run {metrics['run']} (estimator {models['estimator']}, "
        f"friction {models['friction']}, residual {models['residual']})",
        f"on {data['path']}: {data['samples']} samples ({data['duration_s']:.2f} s) predicted of "
        f"{data['recorded_samples']} recorded ({how})",
    ]
    lines += metric_lines("recording", metrics, width=9)
    per_joint = " ".join(f"{v:.4f}" for v in metrics["physical"]["rmse_per_joint"])
    lines.append(f"physical model RMSE per joint (Nm): {per_joint}")
    if "fusion" in metrics:
        lines += fusion_lines(
            data["joint_names"],
            metrics["physical"],
            metrics["fusion"],
            metrics["fusion_gain"],
            "recording",
        )
    return lines


def twin_lines(result: PipelineResult) -> list[str]:
    """The twin write-back: what was written and how it matches the validation data, or why
    nothing was written and how to get parameters that can be."""
    twin = result.metrics.get("twin")
    if twin is None:
        first, more = result.twin_refused[0], len(result.twin_refused) - 1
        return [
            f"twin not written: the identified parameters are not physically valid ({first}"
            + (f"; and {more} more, listed in metrics.json" if more > 0 else "")
            + "). Identify with estimator=consistent to get parameters that satisfy every "
            "physical condition and can be written into twin.xml / twin.urdf."
        ]
    inverse, moving = twin["inverse_dynamics"], twin["moving_samples"]
    lines = [
        f"twin written ({result.twin_prefix}{TWIN_MJCF}, {result.twin_prefix}{TWIN_URDF}): "
        "MuJoCo inverse dynamics on the validation "
        f"data RMSE {inverse['rmse']:.4f} Nm, R² {inverse['r2']:.5f}",
        f"  on moving samples (|dq| ≥ {moving['speed_threshold_rad_s']:g} rad/s, "
        f"{100 * moving['fraction']:.0f} %): twin in MuJoCo {moving['twin_mujoco_rmse']:.4f} Nm,"
        f" identified model {moving['identified_model_rmse']:.4f} Nm "
        f"(ratio {moving['ratio_twin_to_identified']:.4f})",
    ]
    for key, label in (
        ("forward_divergence_rad", "twin"),
        ("forward_divergence_rad_nominal", "nominal"),
    ):
        forward = twin[key]
        if forward.get("windows"):
            spans = ", ".join(
                f"{h}: {max(forward[h]['rms_per_joint']):.4f}" for h in forward if h != "windows"
            )
            lines.append(
                f"  {label:<7} driven by the recorded torques, worst joint RMS divergence (rad) "
                f"after {spans} ({forward['windows']} windows)"
            )
    return lines


def fusion_table(result: PipelineResult) -> list[str]:
    """Per joint on the validation data: physical vs fused RMSE, RMSE reduction, R² gain and,
    for a learner with a range guard, the share of samples outside its training range."""
    validation = result.metrics["validation"]
    if "fusion" not in validation:
        return []
    return fusion_lines(
        list(result.robot.joint_names),
        validation["physical"],
        validation["fusion"],
        validation["fusion_gain"],
        "validation",
    )


def fusion_lines(
    joints: list[str],
    physical: dict[str, Any],
    fusion: dict[str, Any],
    gain: dict[str, Any],
    data: str,
) -> list[str]:
    """The per-joint fusion table of `data` (a name for the recording) from its metrics."""
    per_joint = fusion.get("out_of_range_per_joint")
    header = "joint                 RMSE physical  RMSE fusion  reduction %  R² gain %"
    lines = [header + ("  outside training range %" if per_joint is not None else "")]
    for j, joint in enumerate(joints):
        line = (
            f"{joint:<20}{physical['rmse_per_joint'][j]:>14.4f}"
            f"{fusion['rmse_per_joint'][j]:>13.4f}"
            f"{gain['rmse_reduction_percent'][j]:>13.2f}{gain['r2_gain_percent'][j]:>11.3f}"
        )
        if per_joint is not None:
            line += f"{100 * per_joint[j]:>27.2f}"
        lines.append(line)
    fraction = fusion.get("out_of_range_fraction")
    if fraction is not None:
        lines.append(
            f"{data} samples with at least one joint outside the residual learner's training "
            f"range: {100 * fraction:.2f} % (a joint outside it gets no correction there: "
            "physical model only; per joint in the table)"
        )
    return lines


def _table(joints: list[str], headers: list[str], cells: list[list[str]]) -> list[str]:
    """Rows of `cells` (one list per joint) under `headers`, right-aligned, each column as wide
    as its widest entry plus two spaces."""
    widths = [max(len(h), *(len(row[i]) for row in cells)) + 2 for i, h in enumerate(headers)]
    first = max(len("joint"), *map(len, joints)) + 1

    def line(name: str, texts: list[str]) -> str:
        return name.ljust(first) + "".join(t.rjust(w) for t, w in zip(texts, widths, strict=True))

    return [line("joint", headers)] + [line(j, row) for j, row in zip(joints, cells, strict=True)]


def friction_table(result: PipelineResult) -> list[str]:
    """A nonlinear friction model: the fit, and per joint its physical parameters as
    identified (true; error %) for a simulated robot."""
    if result.friction_fit is None:
        return []
    fit, comparison = result.friction_fit, result.metrics["friction"]
    plugin = result.config.plugins["friction"].info.name
    lines = [
        f"friction {plugin}: nonlinear {', '.join(fit.names)} fitted by variable projection "
        f"({fit.evaluations} evaluations; SSE {fit.sse:.4g} Nm², Coulomb-viscous "
        f"{fit.sse_coulomb_viscous:.4g} Nm²)"
    ]
    names = list(comparison["identified"])
    true = comparison.get("true", {})
    friction = result.builder.friction
    headers = [
        f"{_with_unit(k, friction)} (true, err %)" if k in true else _with_unit(k, friction)
        for k in names
    ]
    rows = []
    for j in range(result.robot.n_joints):
        cells = []
        for name in names:
            text = f"{comparison['identified'][name][j]:.4g}"
            if name in true:
                error = comparison["error_percent"][name][j]
                shown = "-" if error is None else f"{error:+.1f}"
                text += f" ({true[name][j]:.4g}, {shown})"
            cells.append(text)
        rows.append(cells)
    lines += _table(list(result.robot.joint_names), headers, rows)
    if fit.at_bounds:
        shown = ", ".join(f"{result.robot.joint_names[j]}.{name}" for j, name in fit.at_bounds)
        lines.append(f"warning: on a bound of the friction plugin's config: {shown}")
    return lines


def joint_parameter_table(result: PipelineResult) -> list[str]:
    """Per joint: identified (and, for a simulated robot, true) friction and rotor inertia."""
    rows = joint_parameters(result)
    keys = [k for k in rows[0] if k != "joint"] if rows else []
    if not keys:
        return []
    truth = result.truth_theta is not None
    friction = result.builder.friction
    headers = [
        f"{_with_unit(k, friction)} (true)" if truth else _with_unit(k, friction) for k in keys
    ]
    cells = []
    for row in rows:
        texts = []
        for key in keys:
            entry = row[key]
            mark = "" if entry["identifiable_alone"] else "*"
            text = f"{entry['value']:.4g}{mark}"
            if truth:
                text += f" ({entry['true']:.4g})"
            texts.append(text)
        cells.append(texts)
    lines = _table([row["joint"] for row in rows], headers, cells)
    if any(not row[k]["identifiable_alone"] for row in rows for k in keys):
        lines.append("* not identifiable on its own (merged into a base parameter)")
    return lines
