"""The extension points are declared once and the protocols are complete: the registry, the
config groups and the hook specifications agree with the declaration; every built-in plugin
implements its protocol in full; a plugin object that leaves out optional members gets their
defaults, one that lacks a required member is refused naming its distribution; and a
third-party residual learner that implements exactly the protocol runs through a whole run and
`mode=predict` (its run directory written, its saved model loaded again)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ident_framework
from ident_framework import hookspecs
from ident_framework.config.registry import (
    BUILTIN_PLUGINS,
    PluginRegistry,
    build_plugin_manager,
    get_registry,
)
from ident_framework.config.run_config import PLUGIN_GROUPS
from ident_framework.errors import UserError
from ident_framework.hookspecs import EXTENSION_POINTS, POINTS, conform
from ident_framework.testing.cli import fake_distribution, run_cli

FAST = ("trajectory.n_candidates=40", "trajectory.n_refine=0")
REQUIRED = {  # options with a required parameter
    ("data_source", "csv"): {"path": "x.csv"},
    ("data_source", "rosbag"): {"path": "x.mcap"},
}
UNBUILT = {("data_source", "rtde")}  # its parameters check that the robot answers


def test_every_hook_is_declared_once_and_everything_derives_from_the_declaration():
    hooks = {name for name in vars(hookspecs) if name.startswith("register_")}
    assert sorted(point.hook for point in EXTENSION_POINTS) == sorted(hooks)
    assert PLUGIN_GROUPS == {"source": "data_source", "trajectory": "trajectory",
                             "friction": "friction", "estimator": "estimator",
                             "residual": "residual"}  # fmt: skip
    assert BUILTIN_PLUGINS == tuple(m for p in EXTENSION_POINTS for m in p.builtins)
    # the registry lists the built-ins before importing them (each option is named as its
    # module) as they are once imported
    registry = PluginRegistry(*build_plugin_manager())
    listed = registry.installed()
    assert [(i.kind, i.name, i.distribution, i.version) for i in registry.all()] == [
        (i.kind, i.name, i.distribution, i.version) for i in listed
    ]
    # each built-in module registers its options through its own point's hook, and only it
    manager = registry.manager
    for point in EXTENSION_POINTS:
        for module in point.builtins:
            plugin = manager.get_plugin(module)
            implemented = {i.name for i in manager.get_hookcallers(plugin)}
            assert implemented == {point.hook}, (module, implemented)


def test_builtin_plugins_implement_their_protocol_in_full():
    """No built-in relies on the engine's defaults: each has every member of its protocol
    (results, trailing underscore, once fitted)."""
    registry = get_registry()
    for info in registry.all():
        if info.distribution != "ident-framework" or (info.kind, info.name) in UNBUILT:
            continue
        obj = info.factory(info.schema(**REQUIRED.get((info.kind, info.name), {})))
        point = POINTS[info.kind]
        members = [*point.required_members(), *point.optional_members()]
        missing = [m for m in members if not m.endswith("_") and not hasattr(obj, m)]
        assert not missing, (info.kind, info.name, missing)


class BareEstimator:
    def fit(self, problem):
        self.coef_, self.coef_std_ = np.zeros(2), None
        return self


def test_optional_members_get_their_defaults_and_missing_ones_are_named():
    estimator = conform("estimator", BareEstimator(), "bare", "ident-bare")
    assert estimator.standard_coef_ is None and estimator.write_outputs(Path(".")) is None
    fitted = conform("estimator", estimator.fit(None), "bare", "ident-bare", fitted=True)
    assert fitted is estimator

    class NoStd:
        def fit(self, problem):
            self.coef_ = np.zeros(2)
            return self

    with pytest.raises(UserError, match=r"'bare' from distribution 'ident-bare'.*coef_std_"):
        conform("estimator", NoStd().fit(None), "bare", "ident-bare", fitted=True)

    class NoSave:
        active = True

        def fit(self, recordings, residuals): ...

        def predict(self, inputs): ...

    with pytest.raises(UserError, match=r"does not implement \['load', 'save'\].*ResidualLearner"):
        conform("residual", NoSave(), "nosave", "ident-nosave")


def test_public_face_exports_what_plugin_authors_and_users_import():
    for name in ("hookimpl", "Dataset", "RobotModel", "UserError", "main", "get_registry",
                 "load_robot", "ResidualLearner", "FrictionModel", "run_pipeline"):  # fmt: skip
        assert name in ident_framework.__all__ and getattr(ident_framework, name) is not None
    assert sorted(ident_framework.__all__) == sorted(ident_framework._EXPORTS)
    assert ident_framework.hookimpl is hookspecs.hookimpl
    assert ident_framework.UserError is UserError
    with pytest.raises(AttributeError):
        ident_framework.not_a_public_name  # noqa: B018


LEARNER = '''
"""A third-party residual learner implementing exactly ident_framework's ResidualLearner
protocol (no optional member): per joint, least squares on [q_j, dq_j, ddq_j, 1] over all
its identification recordings."""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ident_framework.hookspecs import hookimpl


@dataclass
class LinearResidualParams:
    ridge: float = 0.0


class LinearResidual:
    active = True

    def __init__(self, params):
        self.params = params

    @staticmethod
    def _features(inputs, j):
        ones = np.ones(len(inputs.q))
        return np.column_stack([inputs.q[:, j], inputs.dq[:, j], inputs.ddq[:, j], ones])

    def fit(self, recordings, residuals):
        residual = np.concatenate(residuals)
        self.coef = np.array([
            np.linalg.lstsq(
                np.concatenate([self._features(r, j) for r in recordings]), residual[:, j],
                rcond=None,
            )[0]
            for j in range(residual.shape[1])
        ])
        return self

    def predict(self, inputs):
        return np.column_stack([self._features(inputs, j) @ c for j, c in enumerate(self.coef)])

    def save(self, folder):
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "linear_residual.npy", self.coef)

    def load(self, folder):
        loaded = LinearResidual(self.params)
        loaded.coef = np.load(Path(folder) / "linear_residual.npy")
        return loaded


@hookimpl
def register_residual_learners(register):
    register("linear_residual", LinearResidual, LinearResidualParams)
'''


@pytest.mark.slow
def test_a_learner_implementing_exactly_the_protocol_runs_and_predicts(tmp_path: Path):
    site = fake_distribution(
        tmp_path / "site", "ident-linear-residual", "ident_linear_residual",
        {"ident_linear_residual/__init__.py": LEARNER,
         "ident_linear_residual/conf/__init__.py": "",
         "ident_linear_residual/conf/residual/linear_residual.yaml":
             "plugin: linear_residual\nridge: 0.0\n"},
    )  # fmt: skip
    run = tmp_path / "run"
    result = run_cli(
        "residual=linear_residual", *FAST, f"hydra.run.dir={run}", cwd=tmp_path, pythonpath=site
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run / "residual" / "linear_residual.npy").is_file()
    metrics = json.loads((run / "metrics.json").read_text())
    fusion = metrics["validation"]["fusion"]
    assert "out_of_range_fraction" not in fusion  # the learner has no range guard
    assert fusion["rmse"] < 1.05 * metrics["validation"]["physical"]["rmse"]
    header = (run / "predictions_validation.csv").read_text().splitlines()[0].split(",")
    assert len(header) == 1 + 3 * 6 and header[-1] == "tau_pred_5"
    assert "residual linear_residual (ident-linear-residual 0.1)" in result.stdout
    # mode=predict loads the saved learner through its `load`
    _write_recording(tmp_path / "new.csv")
    predicted = tmp_path / "predicted"
    result = run_cli(
        "mode=predict", f"run={run}", "source=csv", f"source.path={tmp_path / 'new.csv'}",
        f"hydra.run.dir={predicted}", cwd=tmp_path, pythonpath=site,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    saved = json.loads((predicted / "metrics_new.json").read_text())
    assert saved["models"]["residual"] == "linear_residual" and "fusion" in saved


def _write_recording(path: Path) -> None:
    """A short point-to-point recording of the simulated UR12e, in the CSV contract."""
    from ident_framework.data.csv_log import write_csv_log
    from ident_framework.model.robot import load_robot
    from ident_framework.sources.mujoco import MujocoSource, MujocoSourceParams
    from ident_framework.trajectories.point_to_point import (
        PointToPointGenerator,
        PointToPointParams,
    )

    robot = load_robot("ur12e")
    motion = PointToPointGenerator(PointToPointParams(duration_s=6.0)).generate(robot, None, 7)
    write_csv_log(MujocoSource(MujocoSourceParams()).acquire(robot, motion, "validation"), path)
