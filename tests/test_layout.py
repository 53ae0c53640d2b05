"""The layout: the package's imports (read from its source, `testing/import_graph.py`) form no
cycle between modules (`if TYPE_CHECKING:` imports included: a type-checking-only circle marks
a shared type kept by the wrong module) or between units (subpackages and base modules) and
never go up the declared layer order (`import_graph.LAYERS`); every folder of the package is a
package pyproject.toml lists; and tests import helpers from the package, never from conftest
or each other. Sizes are no rule: `python tools/module_sizes.py` lists the largest modules and
functions."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

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
