"""Mechanical part of issue 12: move flat modules into subpackages and rewrite imports.

Run from the repository root: python /work/scratch/relayout.py
"""

from __future__ import annotations

import re
import textwrap
import subprocess
from pathlib import Path

PKG = "ident_framework"

# old module stem -> new dotted path below ident_framework
MOVES = {
    # config: run settings, plugin registry, Hydra search path, command-line checks
    "run_config": "config.run_config",
    "plugin_config": "config.plugin_config",
    "plugins": "config.registry",
    "config_search_path": "config.search_path",
    "preflight": "config.preflight",
    "rehearsal_settings": "config.rehearsal_settings",
    "config_keys": "config.keys",
    "required_values": "config.required_values",
    # model: robot, regressor, base parameters, friction terms, physical consistency
    "robot_model": "model.robot",
    "ur_description": "model.ur_description",
    "regressor": "model.regressor",
    "base_parameters": "model.base_parameters",
    "friction_terms": "model.friction_terms",
    "physical_consistency": "model.physical_consistency",
    "point_kinematics": "model.point_kinematics",
    "workspace": "model.workspace",
    # data: dataset, logs, preprocessing
    "dataset": "data.dataset",
    "csv_log": "data.csv_log",
    "preprocessing": "data.preprocessing",
    "parallel_filter": "data.parallel_filter",
    # identify: the linear problem, nonlinear friction fit, excitation objective, metrics
    "identification": "identify.linear_problem",
    "friction_fit": "identify.friction_fit",
    "excitation": "identify.excitation_objective",
    "metrics": "identify.metrics",
    "truth": "identify.truth",
    # options of the config groups, one module each
    "estimator_ls": "estimators.ls",
    "estimator_wls": "estimators.wls",
    "estimator_rls": "estimators.rls",
    "estimator_consistent": "estimators.consistent",
    "friction_none": "friction.none",
    "friction_coulomb_viscous": "friction.coulomb_viscous",
    "residual_none": "residuals.none",
    "residual_bpnn": "residuals.bpnn",
    "source_csv": "sources.csv",
    "source_mujoco": "sources.mujoco",
    "source_rtde": "sources.rtde",
    "trajectory_fourier": "trajectories.fourier",
    "trajectory_point_to_point": "trajectories.point_to_point",
    "trajectory_file": "trajectories.file",
    # simulation: the simulated robot
    "simulation": "simulation.tracking",
    "simulated_robot": "simulation.perturbed_robot",
    "true_friction": "simulation.true_friction",
    # rtde: protocol, recorder, playback, safety, emulator
    "rtde_protocol": "rtde.protocol",
    "rtde_recorder": "rtde.recorder",
    "rtde_torque_stream": "rtde.torque_stream",
    "excitation_playback": "rtde.playback",
    "motion_safety": "rtde.motion_safety",
    "rtde_emulator": "rtde.emulator",
    "rtde_twin": "rtde.emulated_arm",
    "rehearsal_gate": "rtde.rehearsal_gate",
    # twin: write-back and check
    "twin_export": "twin.export",
    "twin_check": "twin.check",
    # reports: run directory, plots, tables
    "report": "reports.run_report",
    "run_directory": "reports.run_directory",
    "plots": "reports.plots",
    "sweep_report": "reports.sweep",
    # modes: what a run does
    "job": "modes.job",
    "pipeline": "modes.pipeline",
    "closed_loop": "modes.closed_loop",
    "prediction": "modes.predict",
    "rehearsal": "modes.rehearsal.run",
    "rehearsal_checks": "modes.rehearsal.checks",
    "rehearsal_planting": "modes.rehearsal.planting",
    # testing helpers (not used at run time)
    "multisine": "testing.multisine",
    "drift_study": "testing.drift_study",
}

PACKAGE_DOCS = {
    "config": "Run configuration: settings dataclasses, the plugin registry, Hydra's search path "
    "and the command-line checks made before a job starts.",
    "model": "The robot model: kinematics and inertia (URDF/MJCF/UR description), the joint "
    "torque regressor with friction columns, base parameters, physical consistency.",
    "data": "Recorded data: the dataset type, CSV logs, preprocessing (filtering, "
    "differentiation, trimming).",
    "identify": "From preprocessed data to identified parameters: the linear least-squares "
    "problem, the nonlinear friction fit, the excitation objective, metrics, result types.",
    "estimators": "Built-in options of the `estimator` config group, one module each.",
    "friction": "Built-in options of the `friction` config group, one module each.",
    "residuals": "Built-in options of the `residual` config group, one module each.",
    "sources": "Built-in options of the `source` and `validation` config groups, one module each.",
    "trajectories": "Built-in options of the `trajectory` config group, and trajectory files.",
    "simulation": "The simulated robot: a perturbed model of the arm, its true friction, and a "
    "MuJoCo simulation of it tracking a trajectory.",
    "rtde": "A real UR robot over RTDE: protocol, recorder, excitation playback, motion safety, "
    "the rehearsal gate, and an RTDE controller emulator for tests.",
    "twin": "The digital twin: write identified parameters back into MJCF/URDF and check it.",
    "reports": "The run directory: file names, run report, summary, plots, sweep tables.",
    "modes": "What a run does: the identification pipeline, the closed loop, prediction, "
    "rehearsal, and the Hydra job that dispatches them.",
    "modes.rehearsal": "mode=rehearse: plant known changes, identify, check they are recovered.",
    "testing": "Helpers for tests and studies (not used at run time).",
}

ROOTS = ["ident_framework", "tests", "benchmarks", "experiments", "plugins", "conf"]


def new_dotted(old: str) -> str:
    return f"{PKG}.{MOVES[old]}"


def git(*args: str) -> None:
    subprocess.run(["git", *args], check=True)


def move_files() -> None:
    for old, new in MOVES.items():
        src = Path(PKG) / f"{old}.py"
        if not src.exists():
            print("skip (absent):", src)
            continue
        dst = Path(PKG, *new.split(".")).with_suffix(".py")
        dst.parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(src), str(dst))
    for package, doc in PACKAGE_DOCS.items():
        init = Path(PKG, *package.split("."), "__init__.py")
        init.parent.mkdir(parents=True, exist_ok=True)
        if not init.exists():
            body = textwrap.fill(doc, 90)
            init.write_text(f'"""{body}"""\n')
            git("add", str(init))


OLD = "|".join(sorted(MOVES, key=len, reverse=True))
# from .x import ... / from . import x [as y]
REL_FROM = re.compile(rf"^(\s*)from \.({OLD}) import ", re.M)
REL_MOD = re.compile(rf"^(\s*)from \. import ({OLD})( as \w+)?\s*$", re.M)
ABS_DOTTED = re.compile(rf"\b{PKG}\.({OLD})\b(?![\w])")
# remaining relative imports of modules that stay at the top level
ABS_MOD = re.compile(rf"^(\s*)from {PKG} import ({OLD})( as \w+)?\s*$", re.M)
REL_TOP = re.compile(r"^(\s*)from \.(\w+) import ", re.M)
REL_TOP_MOD = re.compile(r"^(\s*)from \. import (\w+)", re.M)


def rewrite_text(text: str, in_package: bool) -> str:
    def rel_mod(m: re.Match[str]) -> str:
        indent, old, alias = m.group(1), m.group(2), m.group(3)
        parent, _, name = new_dotted(old).rpartition(".")
        alias = alias or (f" as {old}" if name != old else "")
        return f"{indent}from {parent} import {name}{alias}"

    # absolute names first: the rewritten relative imports must not be matched again
    text = ABS_DOTTED.sub(lambda m: new_dotted(m.group(1)), text)
    text = ABS_MOD.sub(rel_mod, text)
    if not in_package:
        return text
    text = REL_MOD.sub(rel_mod, text)
    text = REL_FROM.sub(lambda m: f"{m.group(1)}from {new_dotted(m.group(2))} import ", text)
    text = REL_TOP.sub(lambda m: f"{m.group(1)}from {PKG}.{m.group(2)} import ", text)
    text = REL_TOP_MOD.sub(lambda m: f"{m.group(1)}from {PKG} import {m.group(2)}", text)
    return text


def rewrite_imports() -> None:
    for root in ROOTS:
        for path in Path(root).rglob("*"):
            if path.suffix not in {".py", ".yaml"} or "egg-info" in str(path):
                continue
            text = path.read_text()
            new = rewrite_text(text, path.parts[0] == PKG)
            if new != text:
                path.write_text(new)


def update_pyproject() -> None:
    path = Path("pyproject.toml")
    text = path.read_text()
    packages = sorted(
        ".".join(p.parent.parts) for p in Path(PKG).rglob("__init__.py") if "robot_data" not in str(p)
    )
    listed = ", ".join(f'"{p}"' for p in [*packages, f"{PKG}.conf"])
    text = re.sub(r"^packages = \[.*\]$", f"packages = [{listed}]", text, flags=re.M)
    path.write_text(text)


SHIMS = {
    "rtde_emulator": (
        "`python -m ident_framework.rtde_emulator` (documented): the RTDE controller emulator, "
        "now `ident_framework.rtde.emulator`.",
        "from ident_framework.rtde.emulator import main\n\n__all__ = [\"main\"]\n\n"
        "if __name__ == \"__main__\":\n    main()\n",
    ),
    "rehearsal_gate": (
        "`ident_framework.rehearsal_gate.require_passed_rehearsal` (documented): what a source that "
        "moves a real robot calls first; now `ident_framework.rtde.rehearsal_gate`.",
        "from ident_framework.rtde.rehearsal_gate import *  # noqa: F403\n"
        "from ident_framework.rtde.rehearsal_gate import require_passed_rehearsal\n\n"
        "__all__ = [\"require_passed_rehearsal\"]\n",
    ),
    "sweep_report": (
        "`ident_framework.sweep_report.SweepReport` (the Hydra callback of earlier configs): now "
        "`ident_framework.reports.sweep`.",
        "from ident_framework.reports.sweep import SweepReport\n\n__all__ = [\"SweepReport\"]\n",
    ),
}


def write_shims() -> None:
    for name, (doc, body) in SHIMS.items():
        path = Path(PKG) / f"{name}.py"
        path.write_text(f'"""Compatibility module. {textwrap.fill(doc, 76)}"""\n\n{body}')
        git("add", str(path))


if __name__ == "__main__":
    move_files()
    rewrite_imports()
    write_shims()
    update_pyproject()
