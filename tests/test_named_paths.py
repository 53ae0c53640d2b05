"""Docstrings, comments and the READMEs name only modules and files that exist: every dotted
`ident_framework.<module>` (a module, a package, or a name defined at the top of one) and every
`<folder>/<module>.py` or `<module>.py` path (from the repository, the package, conf/, or a
folder above the file that names it; a bare file name anywhere in the checkout). A move that
leaves a stale name behind fails here."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

import pytest

from ident_framework.testing.cli import REPO

PACKAGE_ROOT = REPO / "ident_framework"
FOLDERS = ("ident_framework", "tools", "benchmarks", "experiments", "tests", "plugins")
DOTTED = re.compile(r"\bident_framework(?:\.[A-Za-z_]\w*)+")
FILE_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|c))\b")
# paths of other projects' files, named where our code follows them
OTHER_PROJECTS = {
    "rtde/serialize.py": "ur_rtde's Python client, whose message layout rtde/protocol.py follows",
    "identification.py": "FIGAROH's example script (benchmarks/peers/figaroh_tx40.py)",
    "utils/staubli_tx40_tools.py": "FIGAROH's example helpers (benchmarks/peers/figaroh_tx40.py)",
    "my_friction_plugin/__init__.py": "README's example of a third party's plugin package",
    "path/to/file.py": "a placeholder (tests/test_docs.py describes its pattern)",
}
SOURCES = sorted(
    p for folder in FOLDERS for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts
)
READMES = [REPO / "README.md", *sorted(REPO.glob("experiments/**/README.md")),
           *sorted(REPO.glob("plugins/**/README.md"))]  # fmt: skip


@cache
def file_names() -> frozenset[str]:
    return frozenset(
        p.name for p in REPO.rglob("*") if ".git" not in p.parts and "__pycache__" not in p.parts
    )


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and every string statement (docstrings) of a module."""
    text = path.read_text()
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                found.append((node.lineno, node.value.value))
    return found


@cache
def top_level_names(module: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return frozenset(names)


def dotted_exists(name: str) -> bool:
    """A dotted name: its longest prefix that is a module of the checkout exists, and what
    follows is a name defined at that module's top level (or a dunder such as __file__)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:k])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if parts[k:2] == [] and base.name == "conf" and base.parent == PACKAGE_ROOT:
            return (REPO / "conf").is_dir()  # ident_framework.conf is conf/, packaged
        if module.is_file():
            rest = parts[k:]
            return not rest or rest[0].startswith("__") or rest[0] in top_level_names(module)
    return False


def path_exists(name: str, where: Path) -> bool:
    if "/" not in name:
        return name in file_names()
    roots = [REPO, PACKAGE_ROOT, REPO / "conf", *where.parents]
    return any((root / name).exists() for root in roots)


def stale_names(path: Path) -> list[str]:
    stale = []
    texts = prose(path) if path.suffix == ".py" else enumerate(path.read_text().splitlines(), 1)
    for line, text in texts:
        stale += [f"{line}: {n}" for n in DOTTED.findall(text) if not dotted_exists(n)]
        stale += [
            f"{line}: {n}"
            for n in FILE_PATH.findall(text)
            if n not in OTHER_PROJECTS and not path_exists(n, path)
        ]
    return stale


@pytest.mark.parametrize("path", SOURCES + READMES, ids=lambda p: str(p.relative_to(REPO)))
def test_docstrings_and_comments_name_existing_modules(path: Path):
    assert stale_names(path) == []


def test_a_stale_name_is_caught(tmp_path: Path):
    module = tmp_path / "moved.py"
    module.write_text(
        '"""See `ident_framework.modes.online.service` and trajectories/file.py."""\n'
        "# ident_framework.identify.metrics.no_such_function, data/preprocessing.py\n"
        "X = 'ident_framework.not.in.prose'\n"
    )
    assert stale_names(module) == [
        "2: ident_framework.identify.metrics.no_such_function",
        "1: ident_framework.modes.online.service",
        "1: trajectories/file.py",
    ]
