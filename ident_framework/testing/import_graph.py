"""The package's import graph, read from its source (nothing is imported): which module imports
which, grouped into the units of the layout (subpackages and base modules), their layer order,
and sizes (`tests/test_layout.py` checks it; `tools/import_picture.py` prints it). Imports under
`if TYPE_CHECKING:` are kept apart (`ModuleInfo.type_imports`) and count for cycles only;
deferred imports inside functions count like any other.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "ident_framework"

# The layer order, lowest first: a unit may import units of its own layer or lower, never higher.
LAYERS: tuple[tuple[str, ...], ...] = (
    # base modules: no dependency but each other (and numpy, pluggy, tqdm; numba for `c_kernels`)
    (
        "errors",
        "params",
        "plain_data",
        "launch_path",
        "hookspecs",
        "parallel_work",
        "triangular",
        "c_kernels",
        "progress",
    ),  # fmt: skip
    ("model",),  # robot model, regressor, base parameters, friction terms, physical consistency
    ("data",),  # dataset, CSV logs, preprocessing
    ("config",),  # run config, plugin registry, Hydra search path, preflight
    ("identify",),  # the steps from preprocessed data to identified parameters, result types
    ("friction", "estimators", "residuals", "trajectories"),  # options of the config groups
    ("simulation", "twin"),  # the simulated robot; the digital twin's write-back and check
    ("rtde",),  # a real UR robot over RTDE (uses the simulation for its emulator)
    ("sources",),  # options of source= / validation= (simulator, CSV, RTDE)
    ("reports",),  # the run directory: files, summary, tables, plots
    ("modes",),  # what a run does: pipeline, closed loop, predict, rehearse, distributed
    ("online",),  # the online service (a product of its own; built-ins through the registry)
    ("testing",),  # helpers for tests and studies
    # entry points: the public face, the command line (its process settings, the Hydra job
    # that runs the mode a config names) and fleet mode's command line
    ("__init__", "__main__", "command_environment", "job", "fleet"),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


@dataclass
class ModuleInfo:
    name: str  # dotted, e.g. ident_framework.identify.metrics
    path: Path
    lines: int
    imports: set[str] = field(default_factory=set)  # modules of the package it imports
    type_imports: set[str] = field(default_factory=set)  # ... under `if TYPE_CHECKING:` only
    functions: dict[str, int] = field(default_factory=dict)  # qualified name -> lines

    @property
    def unit(self) -> str:
        """The layout unit: the subpackage, or the base module's own name."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else "__init__"


def module_name(root: Path, path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_nodes(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it is under `if TYPE_CHECKING:`."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, type_only = stack.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test).split(".")[-1] == "TYPE_CHECKING":
            stack.extend((child, True) for child in node.body)
            stack.extend((child, type_only) for child in node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_only
        stack.extend((child, type_only) for child in ast.iter_child_nodes(node))


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{node.name}", node.end_lineno - node.lineno + 1
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def read_modules(root: Path) -> dict[str, ModuleInfo]:
    """Every module of the package in folder `root`, with its package imports and sizes."""
    paths = sorted(p for p in root.rglob("*.py") if "robot_data" not in p.parts)
    modules = {module_name(root, p): p for p in paths}
    infos = {}
    for name, path in modules.items():
        text = path.read_text()
        tree = ast.parse(text)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        info = ModuleInfo(name, path, len(text.splitlines()), functions=dict(_functions(tree)))
        for node, type_only in _import_nodes(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]  # fmt: skip
            found = {t for t in targets if t in modules and t != name}
            (info.type_imports if type_only else info.imports).update(found)
        infos[name] = info
    return infos


def import_edges(modules: dict[str, ModuleInfo]) -> dict[str, set[str]]:
    """Module -> the modules it imports, type-checking-only imports included (for cycles)."""
    return {name: info.imports | info.type_imports for name, info in modules.items()}


def unit_edges(modules: dict[str, ModuleInfo], type_checking: bool = False) -> dict[str, set[str]]:
    """Unit -> the other units it imports (`type_checking`: type-checking-only imports too)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for info in modules.values():
        for target in info.imports | (info.type_imports if type_checking else set()):
            other = modules[target].unit
            if other != info.unit:
                edges[info.unit].add(other)
    return edges


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph (its nodes, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def upward_imports(modules: dict[str, ModuleInfo]) -> list[str]:
    """`a.b -> c.d` per import from a higher layer (or from a unit in no layer)."""
    found = []
    for info in modules.values():
        for target in sorted(info.imports):
            src, dst = info.unit, modules[target].unit
            if src not in RANK or dst not in RANK or RANK[dst] > RANK[src]:
                found.append(f"{info.name} ({src}) -> {target} ({dst})")
    return found


def picture(modules: dict[str, ModuleInfo]) -> list[str]:
    """The units layer by layer: their modules' count and lines, the units they import."""
    edges = unit_edges(modules)
    lines = ["layer  unit              modules  lines  imports (units)"]
    for rank in reversed(range(len(LAYERS))):
        for unit in LAYERS[rank]:
            members = [m for m in modules.values() if m.unit == unit]
            if not members:
                continue
            size = sum(m.lines for m in members)
            uses = ", ".join(sorted(edges.get(unit, ()), key=lambda u: (-RANK.get(u, 99), u)))
            lines.append(f"{rank:>5}  {unit:<17} {len(members):>7} {size:>6}  {uses or '-'}")
    return lines
