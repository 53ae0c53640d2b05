"""The `parameters.yaml` mode=online writes when it ends: the streaming estimate's base
parameters (with their standard deviations where the estimator has them), the standard
parameters B·beta, the robot, the plugins, and the last valid twin's physical parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ident_framework.online.estimator_process import OnlineSession


def estimator_settings(session: OnlineSession) -> dict[str, float]:
    est = session.settings.estimator
    if est.method == "sliding_ls":
        return {"window_s": est.window_s, "ridge": 1.0 / est.alpha}
    return {"forgetting": est.forgetting, "alpha": est.alpha}


def parameters_document(session: OnlineSession) -> dict[str, Any]:
    estimator, base = session.identifier.estimator, session.base
    theta, std = estimator.coef_, estimator.coef_std_
    combos = base.combinations()
    entries = []
    for i, name in enumerate(base.names):
        entry = {"name": name, "value": float(theta[i]), "combination": combos[i]}
        if std is not None:
            entry["std"] = float(std[i])
        entries.append(entry)
    standard = base.to_standard(theta)
    plugins = {
        group: {
            "plugin": p.info.name,
            "distribution": p.info.distribution,
            "version": p.info.version,
        }
        for group, p in session.config.plugins.items()
    }
    robot, valid = session.robot, session.twin.valid
    return {
        "robot": {
            "name": robot.name,
            "model": session.config.robot.model,
            "joint_names": list(robot.joint_names),
        },
        "plugins": plugins,
        "online": {
            "estimator": f"{estimator.method} (streaming, per sample)",
            **estimator_settings(session),
            "initial": session.initial,
            "updates": session.identifier.updates,
            "t_end_s": session.identifier.time_,
            "base": "structural (random states within the limits)",
        },
        "base_parameters": entries,
        "standard_parameters": dict(
            zip(session.builder.parameter_names, standard.tolist(), strict=True)
        ),
        "twin": None
        if valid is None
        else {
            "t_s": valid["t"],
            "path": valid.get("path"),
            "standard_parameters": valid.get("standard"),
        },
    }
