"""The layout: the package's imports (read from its source, `testing/import_graph.py`) form no
cycle between modules (`if TYPE_CHECKING:` imports included: a type-checking-only circle marks
a shared type kept by the wrong module) or between units (subpackages and base modules) and
never go up the declared layer order (`import_graph.LAYERS`); every folder of the package is a
package pyproject.toml lists; each option of a config group is one module or one folder of its
option package, and an option package holds options only; and tests import helpers from the
package, never from conftest or each other. Sizes are no rule: `python tools/module_sizes.py`
lists the largest modules and functions."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
import yaml

from ident_framework.hookspecs import EXTENSION_POINTS
from ident_framework.testing.cli import REPO
from ident_framework.testing.import_graph import (
    LAYERS,
    RANK,
    find_cycle,
    import_edges,
    picture,
    read_modules,
    unit_edges,
    upward_imports,
)

PACKAGE_ROOT = REPO / "ident_framework"


@pytest.fixture(scope="module")
def modules():
    return read_modules(PACKAGE_ROOT)


def test_print_the_import_picture(modules, capsys):
    """(Run with -s to see it; tools/import_picture.py prints the same.)"""
    lines = picture(modules)
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert len(lines) > 10


def test_every_unit_has_a_layer(modules):
    units = {info.unit for info in modules.values()}
    assert units <= set(RANK), f"units in no layer: {sorted(units - set(RANK))}"
    assert len(RANK) == sum(len(layer) for layer in LAYERS)  # no unit in two layers


def test_no_cycle_between_modules(modules):
    assert find_cycle(import_edges(modules)) is None  # type-checking imports included


def test_no_cycle_between_units(modules):
    assert find_cycle(unit_edges(modules)) is None


def test_no_upward_import(modules):
    assert upward_imports(modules) == []


OPTION_UNITS = ("friction", "estimators", "residuals", "trajectories", "sources")


def test_the_online_service_reaches_built_in_options_only_through_the_registry(modules):
    """DESIGN.md: only the one list (`hookspecs.EXTENSION_POINTS`) names the built-ins; the
    online service gets them from the plugin registry (`config/registry.py`)."""
    named = [
        f"{info.name} -> {target}"
        for info in modules.values()
        if info.unit == "online"
        for target in sorted(info.imports | info.type_imports)
        if modules[target].unit in OPTION_UNITS
    ]
    assert named == []


def test_the_checks_catch_what_they_look_for():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_type_checking_only_circle_is_a_cycle(tmp_path: Path):
    (tmp_path / "a.py").write_text("from ident_framework.b import B\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ident_framework.a import A\n"
    )
    found = read_modules(tmp_path)
    assert found["ident_framework.b"].imports == set()  # no run-time import: no layer pulled in
    assert find_cycle(import_edges(found)) == ["ident_framework.a", "ident_framework.b",
                                               "ident_framework.a"]  # fmt: skip


def test_pyproject_lists_every_package():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(["ident_framework", *p.parent.relative_to(PACKAGE_ROOT).parts])
        for p in PACKAGE_ROOT.rglob("__init__.py")
    }
    assert set(config["packages"]) == folders | {"ident_framework.conf"}
    assert config["package-dir"]["ident_framework.conf"] == "conf"


# One option = one place. Every folder of the Hydra conf (conf/, packaged as
# ident_framework.conf) is a config group whose options each come from ONE module or ONE folder
# of its option package, and every module or folder of an option package is an option.
CONF = REPO / "conf"
# config group -> its option package, from the one list of extension points (hookspecs.py)
OPTION_PACKAGES = {
    group: PACKAGE_ROOT.joinpath(*point.builtins[0].split(".")[1:-1])
    for point in EXTENSION_POINTS
    for group in point.groups
}
# conf folders that are not option groups of an extension point, and why
NOT_OPTION_GROUPS = {
    "robot": "a robot description to load (robot_data/, model/ur_description.py), not code",
    "tuning": "cv / none are settings of the one model selection in identify/tuning/",
    "hydra": "Hydra's own groups (the launcher)",
}
# options of an option group that no module of its package provides, and why
NOT_OPTION_MODULES = {
    ("validation", "split"): "the held-out tail of the identification data: modes/pipeline.py",
}


def conf_options(group: str) -> dict[str, str]:
    """conf/<group>/*.yaml -> the option each names (its `plugin:` key)."""
    return {
        path.name: yaml.safe_load(path.read_text())["plugin"]
        for path in sorted((CONF / group).glob("*.yaml"))
    }


def option_entries(package: Path) -> dict[str, list[Path]]:
    """An option package's modules and folders, by name (a name with two entries: both a
    module and a folder)."""
    entries: dict[str, list[Path]] = {}
    for path in sorted(package.iterdir()):
        if path.name in ("__init__.py", "__pycache__"):
            continue
        entries.setdefault(path.stem if path.suffix == ".py" else path.name, []).append(path)
    return entries


def test_every_conf_folder_is_an_option_group_or_a_listed_exception():
    folders = {p.name for p in CONF.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - set(NOT_OPTION_GROUPS) <= set(OPTION_PACKAGES), sorted(folders)
    assert set(NOT_OPTION_GROUPS) <= folders  # no stale exception


@pytest.mark.parametrize("group", sorted({g for g in OPTION_PACKAGES if (CONF / g).is_dir()}))
def test_each_option_is_one_module_or_one_folder(group: str):
    entries = option_entries(OPTION_PACKAGES[group])
    for yaml_file, option in conf_options(group).items():
        if (group, option) in NOT_OPTION_MODULES:
            continue
        found = entries.get(option, [])
        assert len(found) == 1, f"conf/{group}/{yaml_file}: option {option!r} is {found}"
        (place,) = found
        assert place.suffix == ".py" or (place / "__init__.py").is_file(), place


@pytest.mark.parametrize("package", sorted(set(OPTION_PACKAGES.values())), ids=lambda p: p.name)
def test_option_packages_hold_options_only(package: Path):
    """No helpers in an option package: a helper lives with the stage it serves."""
    groups = [g for g, p in OPTION_PACKAGES.items() if p == package and (CONF / g).is_dir()]
    options = {option for g in groups for option in conf_options(g).values()}
    strays = sorted(set(option_entries(package)) - options)
    assert strays == [], f"{package.relative_to(REPO)}/ holds modules that are no option"


def test_the_one_list_names_each_option_module():
    """hookspecs' list of built-in modules is the option packages' modules and folders."""
    listed = {m for point in EXTENSION_POINTS for m in point.builtins}
    present = {
        ".".join(["ident_framework", *package.relative_to(PACKAGE_ROOT).parts, name])
        for package in set(OPTION_PACKAGES.values())
        for name in option_entries(package)
    }
    assert listed == present


TEST_FOLDERS = [REPO / "tests", *sorted((REPO / "plugins").glob("*/tests"))]
TEST_MODULES = {p.stem for folder in TEST_FOLDERS for p in folder.glob("*.py")}


@pytest.mark.parametrize(
    "path", [p for f in TEST_FOLDERS for p in sorted(f.glob("*.py"))], ids=lambda p: p.name
)
def test_tests_import_from_the_package_not_from_each_other(path: Path):
    tree = ast.parse(path.read_text())
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not imported & TEST_MODULES, sorted(imported & TEST_MODULES)
