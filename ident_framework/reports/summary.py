"""The summary a user reads at the end of a run (also saved as summary.txt): models and data,
fit per data set, warnings, the fusion, per-joint parameter and friction tables, the twin, and
for `mode=predict` the same for the predicted recording; the closed loop's outputs (loop.csv,
loop.md, loop_trajectories.yaml, plots/loop_r2.png), whose table closes its summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ident_framework.data.preprocessing import JITTER_TOLERANCE
from ident_framework.hookspecs import DISTRIBUTION, FrictionModel, Trajectory
from ident_framework.identify.result import IdentificationResult
from ident_framework.plain_data import to_plain, yaml_text
from ident_framework.reports import run_files
from ident_framework.reports.parameters import (
    coupled_motor_parameters,
    joint_parameters,
    parameter_unit,
    temperature_document,
)
from ident_framework.reports.run_files import twin_files
from ident_framework.reports.tables import aligned_table, format_cell, markdown_table
from ident_framework.reports.tuning_report import tuning_lines


def summary_lines(result: IdentificationResult, twin_prefix: str = "") -> list[str]:
    """The run's summary; `twin_prefix`: that of the twin's file names."""
    m = result.metrics
    ident = m["identifiability"]
    lines = [
        f"robot {result.model.robot.name}: {ident['n_base']} base parameters of "
        f"{ident['n_standard']}, cond(W_base) = {ident['cond']:.1f}",
        models_line(result),
    ]
    lines += tuning_lines(result.config.selection)
    lines += estimator_lines(result)
    lines += temperature_lines(result)
    lines += load_friction_lines(result)
    for split in ("train", "validation"):
        lines += metric_lines(split, m[split])
        lines += recording_lines(m[split].get("recordings") or [])
    lines += data_lines(m.get("data") or {})
    lines += check_lines(m.get("data", {}).get("checks", {}))
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
    lines += twin_lines(result, twin_prefix)
    if "loop" in m:
        lines += ["closed loop (every round; the lines above are the last one's):"]
        lines += loop_table(m["loop"])
    return lines


def estimator_lines(result: IdentificationResult) -> list[str]:
    """A physically consistent fit's training RMSE vs least squares, and held out (CV)."""
    report = result.metrics.get("estimator") or {}
    if "train_rmse_least_squares" not in report:
        return []
    fit, ls = report["train_rmse"], report["train_rmse_least_squares"]
    line = (
        f"physically consistent fit (weight {report['weight']:g}): on the identification rows "
        f"(filtered torque) RMSE {fit:.4f} Nm vs least squares {ls:.4f} Nm "
        f"({100 * (fit / ls - 1) if ls > 0 else 0.0:+.1f} %)"
    )
    selection = result.config.selection
    held_ls = getattr(selection, "least_squares_cv_rmse", None)
    if held_ls:
        held = selection.cv_rmse
        line += (
            f"; held out (CV) {held:.4f} Nm vs least squares {held_ls:.4f} Nm "
            f"({100 * (held / held_ls - 1):+.1f} %)"
        )
    if report.get("converged") is False:
        return [
            line,
            f"warning: the physically consistent fit did not converge in "
            f"{report['newton_steps']} Newton steps; its parameters are not the optimum "
            "(raise estimator.weight, or try estimator=consistent)",
        ]
    return [line]


def temperature_lines(result: IdentificationResult) -> list[str]:
    """The friction's temperature term, when on: its reference and what the twin carries."""
    document = temperature_document(result)
    if not document:
        return []
    reference = " ".join(f"{v:.2f}" for v in document["temperature"]["reference_c"])
    return [
        f"friction temperature term on: fv(T) = fv + fv_T (T - T_ref), fc(T) = fc + fc_T "
        f"(T - T_ref), T_ref per joint {reference} °C; twin.xml carries fv and fc at T_ref "
        "(MuJoCo's damping and frictionloss are constants)"
    ]


def load_friction_lines(result: IdentificationResult) -> list[str]:
    """The friction's load-dependent term, when on: how tau_load was iterated."""
    fit = result.metrics.get("load_friction")
    if fit is None:
        return []
    values = " ".join(f"{v:.4g}" for v in fit["fL"])
    settled = "settled" if fit["converged"] else f"not settled within {fit['max_fits']}"
    twin = fit["twin"]
    return [
        f"friction load-dependent term on: + fL |tau_load| s(dq), tau_load the model's own "
        f"rigid-body torque; fL per joint {values} Nm/Nm; {fit['fits']} fits ({settled}; "
        f"fit 1 with the nominal model's torque); validation RMSE without the term (as the "
        f"twin has it) {twin['validation_rmse_without_term']:.4f} Nm, with it "
        f"{twin['validation_rmse_with_term']:.4f} Nm"
    ]


def check_lines(checks: dict[str, Any]) -> list[str]:
    """Per recording: samples the data checks excluded and why, then their warnings."""
    lines = []
    for split, report in checks.items():
        clip, stale = report["torque_clipping"]["samples"], report["stale_samples"]
        lines.append(
            f"data checks ({split}): {report['excluded_rows']} of {report['rows_in']} rows "
            f"excluded (torque clipped {clip}, stale {stale} samples of {report['n_samples']} "
            f"recorded, +-{report['margin_s']:g} s around each), {report['gaps']['count']} "
            f"timestamp gap(s), {len(report['idle_joints'])} idle joint(s)"
        )
        lines += [f"warning: {text}" for text in report["warnings"]]
    return lines


def _option(selected: Any) -> str:
    """'stribeck (ident-stribeck 0.1.0)' for a plugin of another distribution, else 'ls'."""
    info = selected.info
    if info.distribution == DISTRIBUTION:
        return info.name
    return f"{info.name} ({info.distribution} {info.version})"


def models_line(result: IdentificationResult) -> str:
    """The estimator, friction model, residual learner and data of these figures."""
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
    """Pooled RMSE and R² with the per-joint R², physical and (when present) fusion, of
    `label` (train, validation, a recording)."""
    lines = []
    for stage in ("physical", "fusion"):
        if stage not in metrics:
            continue
        values = metrics[stage]
        per_joint = " ".join(format_cell(v, ".4f", "nan") for v in values["r2_per_joint"])
        lines.append(
            f"{label:>{width}} {stage:<8} RMSE {values['rmse']:.4f} Nm  R² {values['r2']:.5f}"
            f"  (per joint R²: {per_joint})"
        )
    return lines


def recording_lines(recordings: list[dict[str, Any]]) -> list[str]:
    """Per recording (when there are several): samples, physical (and fusion) RMSE and R²."""
    if len(recordings) < 2:
        return []
    lines = []
    for k, entry in enumerate(recordings):
        figures = "; ".join(
            f"{stage} RMSE {entry[stage]['rmse']:.4f} Nm "
            f"R² {format_cell(entry[stage]['r2'], '.5f')}"
            for stage in ("physical", "fusion")
            if stage in entry
        )
        lines.append(
            f"{'':>10}   recording {k} {entry['path']}: {entry['samples']} samples, {figures}"
        )
    return lines


def data_lines(data: dict[str, Any]) -> list[str]:
    """Per data set: samples scored of those recorded, and what preprocessing dropped."""
    lines = []
    for split in ("train", "validation"):
        counts = data.get(f"{split}_preprocessing")
        if not counts:
            continue
        line = (
            f"{split} data: {data[f'{split}_samples']} of {counts['recorded_samples']} recorded "
            f"samples scored against the torque as recorded"
        )
        if counts.get("edge_samples_dropped"):
            line += (
                f"; {counts['edge_samples_dropped']} edge samples dropped (filter edges, "
                f"{counts['edge_trim_s']:.3g} s at each end of each piece)"
            )
        if counts.get("gaps"):
            line += f"; {counts['gaps']} timestamp gaps (segment boundaries)"
        if counts.get("max_step_jitter", 0.0) > JITTER_TOLERANCE and not counts["resampled"]:
            line += (
                f"; warning: time steps differ from their median by up to "
                f"{counts['max_step_jitter']:.3g}x it, yet were filtered as uniform "
                "(preprocessing.resample=never)"
            )
        if counts.get("short_segments_dropped"):
            line += (
                f"; {counts['short_segments_dropped']} pieces too short to filter dropped "
                f"({counts['short_segment_samples_dropped']} samples, "
                f"{counts.get('short_segment_s_dropped', 0.0):.3g} s)"
            )
        lines.append(line)
    return lines


def prediction_summary_lines(metrics: dict[str, Any]) -> list[str]:
    """mode=predict: which saved model predicted which recording, and how well (the form of
    an identification's summary)."""
    data, models = metrics["data"], metrics["models"]
    counts = data.get("preprocessing") or {}
    how = f"{counts.get('edge_samples_dropped', 0)} filter-edge samples dropped"
    if counts.get("short_segments_dropped"):
        how += (
            f", {counts['short_segments_dropped']} pieces between timestamp gaps too short to "
            f"filter dropped ({counts['short_segment_samples_dropped']} samples, "
            f"{counts['short_segment_s_dropped']:.3g} s)"
        )
    how += ", filtered on a uniform grid" if data["resampled"] else ""
    how += "; scored against the torque as recorded"
    lines = [
        f"prediction with the model of run {metrics['run']} (estimator {models['estimator']}, "
        f"friction {models['friction']}, residual {models['residual']})",
        f"on {data['path']}: {data['samples']} samples ({data['duration_s']:.2f} s) predicted of "
        f"{data['recorded_samples']} recorded ({how})",
    ]
    if "checks" in data:
        lines += check_lines({"recording": data["checks"]})
    lines += metric_lines("recording", metrics, width=9)
    lines += recording_lines(metrics.get("recordings") or [])
    per_joint = " ".join(format_cell(v, ".4f") for v in metrics["physical"]["rmse_per_joint"])
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


def twin_lines(result: IdentificationResult, twin_prefix: str = "") -> list[str]:
    """The twin write-back and its fit on the validation data, or why none was written."""
    twin = result.metrics.get("twin")
    if twin is None:
        refused = result.twin.refused
        first, more = refused[0], len(refused) - 1
        return [
            f"twin not written: the identified parameters are not physically valid ({first}"
            + (f"; and {more} more, listed in metrics.json" if more > 0 else "")
            + "). Identify with estimator=geometric (the default) or estimator=consistent to get "
            "parameters that satisfy every physical condition and can be written into twin.xml / "
            "twin.urdf."
        ]
    inverse, moving = twin["inverse_dynamics"], twin["moving_samples"]
    mjcf, urdf = twin_files(twin_prefix)
    lines = [
        f"twin written ({mjcf}, {urdf}): MuJoCo inverse dynamics on the validation "
        f"data RMSE {inverse['rmse']:.4f} Nm, R² {inverse['r2']:.5f}",
    ]
    threshold = f"|dq| ≥ {moving['speed_threshold_rad_s']:g} rad/s"
    if moving["ratio_twin_to_identified"] is None:
        lines.append(f"  no validation sample moves ({threshold}): no moving-sample comparison")
    else:
        lines.append(
            f"  on moving samples ({threshold}, {100 * moving['fraction']:.0f} %): twin in MuJoCo"
            f" {moving['twin_mujoco_rmse']:.4f} Nm, identified model"
            f" {moving['identified_model_rmse']:.4f} Nm"
            f" (ratio {moving['ratio_twin_to_identified']:.4f})"
        )
    load = twin.get("load_dependent_friction")
    if load is not None:
        lines.append(
            f"  the twin omits the load-dependent friction fL |tau_load| s(dq) (MuJoCo has none):"
            f" the identified model without it {load['validation_rmse_without_term']:.4f} Nm vs "
            f"{load['validation_rmse_with_term']:.4f} Nm with it on the validation data"
        )
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


def fusion_table(result: IdentificationResult) -> list[str]:
    """The fusion per joint on the validation data (`fusion_lines`), after the acceptance."""
    validation = result.metrics["validation"]
    if "fusion" not in validation:
        return []
    joints = list(result.model.robot.joint_names)
    lines = acceptance_lines(joints, result.metrics.get("residual"))
    return lines + fusion_lines(
        joints, validation["physical"], validation["fusion"], validation["fusion_gain"],
        "validation",
    )  # fmt: skip


def acceptance_lines(joints: list[str], report: dict[str, Any] | None) -> list[str]:
    """The residual learner's held-out acceptance per joint, when it reports one."""
    if not report or "accepted" not in report:
        return []
    lines = [
        f"residual learner judged on held-out motion ({report['held_out']}): a joint is "
        f"corrected only when its held-out RMSE drops by >= {report['margin_percent']:.1f} % "
        "in its worst fold (held-out reductions %: all folds pooled, and the worst fold)",
        "joint                 pooled  worst fold  worst fold is        training part  verdict",
    ]
    worst = report.get("worst_fold_reduction_percent") or [None] * len(joints)
    where = report.get("worst_fold") or [""] * len(joints)
    for j, joint in enumerate(joints):
        pooled = format_cell(report["held_out_reduction_percent"][j], ">8.2f", "n/a".rjust(8))
        worst_cell = format_cell(worst[j], ">12.2f", "n/a".rjust(12))
        fit = format_cell(report["training_reduction_percent"][j], ">13.2f", "n/a".rjust(13))
        lines.append(
            f"{joint:<20}{pooled}{worst_cell}  {where[j] or '-':<19}{fit}  {report['reason'][j]}"
        )
    chosen = report.get("features_per_joint")
    if chosen:  # residual.features=auto
        lines.append(
            "features chosen per joint on held-out motion (residual.features=auto; worst-fold "
            "held-out reduction % of each candidate set):"
        )
        candidates = report["feature_candidates"]
        for j, joint in enumerate(joints):
            scores = ", ".join(
                f"[{', '.join(c)}] {format_cell(v, '.1f', 'n/a')}"
                for c, v in zip(candidates, report["candidate_worst_fold_reduction_percent"][j],
                                strict=True)
            )  # fmt: skip
            lines.append(f"  {joint:<20}[{', '.join(chosen[j])}]   ({scores})")
    return lines


def fusion_lines(
    joints: list[str],
    physical: dict[str, Any],
    fusion: dict[str, Any],
    gain: dict[str, Any],
    data: str,
) -> list[str]:
    """Per joint of `data` (the recording's name): physical vs fused RMSE, reduction, R² gain
    and the share outside the learner's training range (with a range guard)."""
    per_joint = fusion.get("out_of_range_per_joint")
    header = "joint                 RMSE physical  RMSE fusion  reduction %  R² gain %"
    lines = [header + ("  outside training range %" if per_joint is not None else "")]
    for j, joint in enumerate(joints):
        line = (
            f"{joint:<20}{format_cell(physical['rmse_per_joint'][j], '>14.4f')}"
            f"{format_cell(fusion['rmse_per_joint'][j], '>13.4f')}"
            f"{format_cell(gain['rmse_reduction_percent'][j], '>13.2f')}"
            f"{format_cell(gain['r2_gain_percent'][j], '>11.3f')}"
        )
        if per_joint is not None:
            line += format_cell(100 * per_joint[j], ">27.2f")
        lines.append(line)
    if fusion.get("corrected_fraction") is not None:
        lines.append(
            f"{data} sample-joints corrected {100 * fusion['corrected_fraction']:.1f} %, shrunk "
            f"{100 * fusion['shrunk_fraction']:.1f} % (the learner is unsure or far from its "
            f"training data), refused {100 * fusion['refused_fraction']:.1f} % (physical "
            "model only)"
        )
    fraction = fusion.get("out_of_range_fraction")
    if fraction is not None:
        lines.append(
            f"{data} samples with at least one joint outside the residual learner's training "
            f"range: {100 * fraction:.2f} % (a joint outside it gets no correction there: "
            "physical model only; per joint in the table)"
        )
    return lines


def _with_unit(name: str, friction: FrictionModel) -> str:
    unit = parameter_unit(name, friction)
    return f"{name} [{unit}]" if unit else name


def friction_table(result: IdentificationResult) -> list[str]:
    """A nonlinear friction model's fit and physical parameters per joint (true, error %)."""
    fit, comparison = result.model.friction_fit, result.metrics.get("friction")
    if fit is None:
        return []
    plugin = result.config.plugins["friction"].info.name
    lines = [
        f"friction {plugin}: nonlinear {', '.join(fit.names)} fitted by variable projection "
        f"({fit.evaluations} evaluations; SSE {fit.sse:.4g} Nm², Coulomb-viscous "
        f"{fit.sse_coulomb_viscous:.4g} Nm²)"
    ]
    names = list(comparison["identified"])
    true = comparison.get("true", {})
    friction = result.model.builder.friction
    headers = [
        f"{_with_unit(k, friction)} (true, err %)" if k in true else _with_unit(k, friction)
        for k in names
    ]

    def cell(name: str, j: int) -> str:
        text = format_cell(comparison["identified"][name][j], ".4g")
        if name not in true:
            return text
        error = format_cell(comparison["error_percent"][name][j], "+.1f", "-")
        return f"{text} ({format_cell(true[name][j], '.4g')}, {error})"

    rows = [[cell(name, j) for name in names] for j in range(result.model.robot.n_joints)]
    joints = list(result.model.robot.joint_names)
    lines += aligned_table("joint", joints, headers, rows)
    if fit.at_bounds:
        shown = ", ".join(f"{joints[j]}.{name}" for j, name in fit.at_bounds)
        lines.append(f"warning: on a bound of the friction plugin's config: {shown}")
    return lines


def _value_cell(entry: dict[str, Any], truth: bool) -> str:
    """A parameter's value, `*` when not identifiable alone, then (true value) with `truth`."""
    text = format_cell(entry["value"], ".4g") + ("" if entry["identifiable_alone"] else "*")
    return text + (f" ({format_cell(entry['true'], '.4g')})" if truth else "")


def joint_parameter_table(result: IdentificationResult) -> list[str]:
    """Per joint: identified (and, for a simulated robot, true) friction and rotor inertia."""
    rows = joint_parameters(result)
    keys = [k for k in rows[0] if k != "joint"] if rows else []
    if not keys:
        return []
    truth = result.diagnostics.truth_theta is not None
    friction = result.model.builder.friction
    headers = [
        f"{_with_unit(k, friction)} (true)" if truth else _with_unit(k, friction) for k in keys
    ]
    cells = [[_value_cell(row[key], truth) for key in keys] for row in rows]
    lines = aligned_table("joint", [row["joint"] for row in rows], headers, cells)
    for motor in coupled_motor_parameters(result):
        values = ", ".join(
            f"{_with_unit(k, friction)} {_value_cell(motor[k], False)}"
            for k in result.model.builder.motor_parameters
        )
        first, driven = motor["joints"]
        lines.append(
            f"coupled motor of {driven} (speed {driven} + {motor['ratio']:g} x {first}): {values}"
        )
    if any(not row[k]["identifiable_alone"] for row in rows for k in keys):
        lines.append("* not identifiable on its own (merged into a base parameter)")
    return lines


R2_SOURCES = {  # which model a round's validation R² is of
    "twin": "twin inverse dynamics (MuJoCo)",
    "physical": "identified physical model",
}
LOOP_COLUMNS = (  # (key in a round's record, table header, number format)
    ("iteration", "iteration", "d"),
    ("seed", "seed", "d"),
    ("recordings", "recordings", "d"),
    ("samples", "samples so far", "d"),
    ("n_base", "n_base", "d"),
    ("cond", "cond", ".1f"),
    ("validation_rmse", "validation RMSE [Nm]", ".4f"),
    ("validation_r2", "R²", ".5f"),
    ("r2_source", "R² of", ""),
    ("physical_r2", "physical R²", ".5f"),
    ("rmse_ratio_to_true", "RMSE / true", ".3f"),
    ("wall_time_s", "wall time [s]", ".1f"),
)


def loop_table(loop: dict[str, Any]) -> list[str]:
    """The rounds as a Markdown table, followed by the target and which R² was judged."""
    header = [title for _, title, _ in LOOP_COLUMNS]
    rows = [
        [format_cell(record.get(key), spec) for key, _, spec in LOOP_COLUMNS]
        for record in loop["iterations"]
    ]
    sources = sorted({R2_SOURCES[r["r2_source"]] for r in loop["iterations"]})
    target = loop["target_r2"]
    outcome = (
        "no target (loop.target_r2=null)"
        if target is None
        else f"target R² {target}: {'reached' if loop['reached'] else 'not reached'} after "
        f"{len(loop['iterations'])} of {loop['max_iterations']} rounds"
    )
    return [*markdown_table(header, rows), "", f"R² of: {', '.join(sources)}. {outcome}."]


def write_loop_outputs(
    folder: Path, result: IdentificationResult, excitations: Sequence[Trajectory]
) -> None:
    """loop.csv, loop.md, loop_trajectories.yaml (every round's excitation) and
    plots/loop_r2.png of a closed-loop run whose final round is `result`."""
    from ident_framework.reports.plots import plot_loop_r2

    loop = result.metrics["loop"]
    keys = [key for key, _, _ in LOOP_COLUMNS] + ["excitation_cond"]
    rows = [",".join(keys)]
    for record in loop["iterations"]:
        rows.append(",".join("" if record[k] is None else str(record[k]) for k in keys))
    (folder / run_files.LOOP_CSV).write_text("\n".join(rows) + "\n")
    title = f"# Closed identification loop ({result.model.robot.name})\n\n"
    (folder / run_files.LOOP_MARKDOWN).write_text(title + "\n".join(loop_table(loop)) + "\n")
    rounds = [
        {"iteration": record["iteration"], "seed": record["seed"], **to_plain(e.describe())}
        for record, e in zip(loop["iterations"], excitations, strict=True)
    ]
    (folder / run_files.LOOP_TRAJECTORIES).write_text(yaml_text(rounds))
    if result.config.plots:
        (folder / run_files.PLOTS).mkdir(exist_ok=True)
        plot_loop_r2(folder / run_files.PLOTS / run_files.LOOP_R2_PLOT, loop)
