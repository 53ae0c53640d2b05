"""Print the package's import picture: its units (subpackages and base modules) layer by layer
with their size and the units each imports, then the checks of tests/test_layout.py (cycles,
upward imports); `tools/module_sizes.py` lists the largest modules and functions.

    python tools/import_picture.py [--modules]    (--modules: every module and its imports)
"""

from __future__ import annotations

import sys
from pathlib import Path

from ident_framework.testing.import_graph import (
    find_cycle,
    picture,
    read_modules,
    unit_edges,
    upward_imports,
)

ROOT = Path(__file__).resolve().parents[1] / "ident_framework"


def main(argv: list[str]) -> None:
    modules = read_modules(ROOT)
    print("\n".join(picture(modules)))
    if "--modules" in argv:
        for name, info in sorted(modules.items()):
            imported = ", ".join(sorted(t.removeprefix("ident_framework.") for t in info.imports))
            print(f"{name.removeprefix('ident_framework.')} ({info.lines}): {imported or '-'}")
    module_cycle = find_cycle({name: info.imports for name, info in modules.items()})
    print(f"\ncycle between units: {find_cycle(unit_edges(modules)) or 'none'}")
    print(f"cycle between modules: {module_cycle or 'none'}")
    print(f"upward imports: {upward_imports(modules) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
