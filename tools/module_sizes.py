"""Print the package's largest modules and longest functions (a report, not a rule: modules
are split by role, never to fit a size).

    python tools/module_sizes.py [N]    (N: rows of each table, default 15)
"""

from __future__ import annotations

import sys
from pathlib import Path

from ident_framework.testing.import_graph import read_modules

ROOT = Path(__file__).resolve().parents[1] / "ident_framework"


def main(argv: list[str]) -> None:
    rows = int(argv[0]) if argv else 15
    modules = read_modules(ROOT)
    total = sum(m.lines for m in modules.values())
    print(f"{len(modules)} modules, {total} lines")
    print("\nlargest modules (lines):")
    for info in sorted(modules.values(), key=lambda m: -m.lines)[:rows]:
        print(f"{info.lines:>6}  {info.name.removeprefix('ident_framework.')}")
    functions = sorted(
        ((size, f"{m.name.removeprefix('ident_framework.')}.{name}")
         for m in modules.values() for name, size in m.functions.items()),
        reverse=True,
    )  # fmt: skip
    print("\nlongest functions (lines):")
    for size, name in functions[:rows]:
        print(f"{size:>6}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
