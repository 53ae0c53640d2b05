"""Every default in the YAML configs equals the default of the dataclass that validates it.

The configs repeat every key of every option and core section (so `--cfg job` shows them all);
the dataclasses hold the same defaults for Python users. Checked here: each option of each
config group of the core's conf/ and of every installed plugin package's conf/, the core
sections of config.yaml and its top-level keys. A validation option's data-source keys follow
source.* (`${oc.select:source.KEY,DEFAULT}`): their fallback DEFAULT is what is compared.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ident_framework.config.preflight import CONFIG_MODULE
from ident_framework.config.registry import get_registry
from ident_framework.config.run_config import (
    SECTION_SCHEMAS,
    SPLIT,
    RobotSettings,
    RunConfig,
    SplitSettings,
    TuningSettings,
)
from ident_framework.config.search_path import plugin_conf_packages
from ident_framework.hookspecs import POINTS

SELECT = re.compile(r"^\$\{oc\.select:[\w.]+,(.*)\}$")
MISSING = "???"  # a required value (robot.path of robot=urdf): no default to compare
# Values an option sets on purpose where the dataclass default is another choice.
DELIBERATE = {
    ("robot/staubli_tx40.yaml", "coupled_joints"): (
        "a robot preset: the TX40's coupled wrist is what the option is for"
    ),
    ("validation/mujoco_fourier.yaml", "trajectory.progress"): (
        "the validation motion's search prints no progress bar"
    ),
    ("source/mujoco.yaml", "true_friction"): (
        "spells out the keys a user sets (plugin: null, parameters: {}); parses as the "
        "dataclass default None: no plugin friction"
    ),
    ("source/rtde.yaml", "workspace"): (
        "follows trajectory.workspace; its fallback null is read as the default workspace"
    ),
    ("validation/mujoco.yaml", "trajectory.workspace"): (
        "follows trajectory.workspace; a trajectory option without one leaves the validation "
        "motion to the joint limits only"
    ),
    ("validation/mujoco_fourier.yaml", "trajectory.workspace"): (
        "follows trajectory.workspace, as validation/mujoco.yaml"
    ),
}
TOP_LEVEL = ("mode", "run", "seed", "chunk_size", "plots", "mcap")


def _conf_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    return Path(next(iter(spec.submodule_search_locations)))


CONF_ROOTS = [_conf_dir(CONFIG_MODULE), *(_conf_dir(p) for p in plugin_conf_packages())]
OPTIONS = sorted((root, path) for root in CONF_ROOTS for path in root.glob("*/*.yaml"))


def _defaults(schema: type) -> dict[str, Any]:
    out = {}
    for field in dataclasses.fields(schema):
        if field.default is not dataclasses.MISSING:
            out[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            out[field.name] = field.default_factory()
    return out


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _yaml_default(value: Any) -> Any:
    """The default a YAML value stands for: an `oc.select` fallback (also inside `oc.create`,
    which makes a list fallback a node OmegaConf.resolve can store), else the value itself;
    a mapping's entries each so."""
    if isinstance(value, dict):
        return {key: _yaml_default(entry) for key, entry in value.items()}
    if isinstance(value, str) and value.startswith("${oc.create:") and value.endswith("}"):
        value = value[len("${oc.create:") : -1]
    match = SELECT.match(value) if isinstance(value, str) else None
    return yaml.safe_load(match.group(1)) if match else value


def _mismatches(
    where: str, values: dict[str, Any], schema: type, identity: str, prefix: str = ""
) -> list[str]:
    """`key: yaml X, dataclass Y` for each key whose YAML default is not the dataclass's
    (and each key the dataclass has no default for); `identity` names the option (`plugin`)."""
    defaults = _defaults(schema)
    problems = []
    for key, raw in values.items():
        value = _yaml_default(raw)
        if key == identity or value == MISSING or (where, prefix + key) in DELIBERATE:
            continue
        if key not in defaults:
            problems.append(f"{where}: {prefix}{key} has no dataclass default in {schema}")
        elif _plain(value) != _plain(defaults[key]):
            problems.append(
                f"{where}: {prefix}{key}: yaml {value!r}, dataclass {schema.__name__} "
                f"{defaults[key]!r}"
            )
    return problems


def _schema(group: str, values: dict[str, Any]) -> tuple[type, str]:
    """(schema, key naming the option) of a group's option config."""
    if group == "robot":
        return RobotSettings, "model"
    if group == "tuning":
        return TuningSettings, "method"
    if group == "validation" and values.get("plugin") == SPLIT:
        return SplitSettings, "plugin"
    kind = next(p.kind for p in POINTS.values() if group in p.groups)
    return get_registry().get(kind, values["plugin"]).schema, "plugin"


def test_every_group_option_is_found():
    names = {f"{path.parent.name}/{path.stem}" for _, path in OPTIONS}
    assert {"estimator/rls", "source/mujoco", "validation/split", "robot/urdf"} <= names
    assert "friction/stribeck" in names and "friction/lugre" in names  # the plugins' conf


@pytest.mark.parametrize(
    "root, path", OPTIONS, ids=[f"{p.parent.name}/{p.name}" for _, p in OPTIONS]
)
def test_option_yaml_defaults_equal_the_dataclass_defaults(root: Path, path: Path):
    where = str(path.relative_to(root))
    values = yaml.safe_load(path.read_text())
    nested = values.pop("trajectory", None) if path.parent.name == "validation" else None
    schema, identity = _schema(path.parent.name, values)
    problems = _mismatches(where, values, schema, identity)
    if identity == "plugin":  # a plugin option's YAML lists every parameter
        listed = set(values) | ({"trajectory"} if nested is not None else set())
        absent = [f.name for f in dataclasses.fields(schema) if f.name not in listed]
        problems += [f"{where}: no key {name}" for name in absent]
    if nested is not None:
        trajectory = get_registry().get("trajectory", nested["plugin"]).schema
        problems += _mismatches(where, nested, trajectory, "plugin", prefix="trajectory.")
    assert not problems, "\n".join(problems)


def test_core_section_defaults_equal_the_dataclass_defaults():
    config = yaml.safe_load((_conf_dir(CONFIG_MODULE) / "config.yaml").read_text())
    problems = []
    for section, schema in SECTION_SCHEMAS.items():
        if section in ("robot", "tuning"):  # the robot and tuning groups' options, above
            continue
        values = config[section]
        problems += _mismatches(f"config.yaml {section}", values, schema, "")
        absent = [f.name for f in dataclasses.fields(schema) if f.name not in values]
        problems += [f"config.yaml: no key {section}.{name}" for name in absent]
    top = {key: config[key] for key in TOP_LEVEL}
    problems += _mismatches("config.yaml", top, RunConfig, "")
    assert not problems, "\n".join(problems)


def test_a_differing_default_is_caught():
    """The comparison itself: a YAML value off the dataclass default is reported."""
    problems = _mismatches("x.yaml", {"fraction": 0.25}, SplitSettings, "plugin")
    assert problems and "fraction: yaml 0.25" in problems[0]
    assert _mismatches("x.yaml", {"fraction": "${oc.select:a.b,0.3}"}, SplitSettings, "") == []
