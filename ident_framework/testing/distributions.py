"""Installed plugin distributions made on the fly, exactly as pip would leave them: a
`*.dist-info` folder with an `ident_framework` entry point, and the package files, in a folder
to put on PYTHONPATH."""

from __future__ import annotations

import textwrap
from pathlib import Path


def fake_distribution(site: Path, name: str, module: str, files: dict[str, str]) -> Path:
    """An installed distribution `name` whose entry point loads `module` (files relative to
    site, their text dedented); returns site."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ident_framework]\n{module} = {module}\n")
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return site
