"""Generate the docs' API reference from the package tree (run by mkdocs-gen-files at build time).

One page per module of `ident_framework` (`reference/<dotted path>.md` holding `::: module`,
rendered by mkdocstrings from its docstrings, without importing it) and `reference/SUMMARY.md`,
the navigation mkdocs-literate-nav reads. The tree is read at every build, so the reference
follows the package's layout whatever it is.
"""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ident_framework"

nav = mkdocs_gen_files.Nav()
for path in sorted(PACKAGE.rglob("*.py")):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if any(part.startswith(".") or part == "__pycache__" for part in parts):
        continue
    if parts[-1] == "__main__":
        continue
    if parts[-1] == "__init__":
        parts = parts[:-1]
        page = Path(*parts, "index.md")
    else:
        page = Path(*parts).with_suffix(".md")
    nav[tuple(parts)] = page.as_posix()
    with mkdocs_gen_files.open(Path("reference", page), "w") as file:
        file.write(f"::: {'.'.join(parts)}\n")
    mkdocs_gen_files.set_edit_path(Path("reference", page), path.relative_to(ROOT))

with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as file:
    file.writelines(nav.build_literate_nav())
