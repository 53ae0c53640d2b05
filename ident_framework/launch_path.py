"""File paths given on the command line, taken relative to the directory the user launched
from (Hydra may change the working directory to the run directory)."""

from __future__ import annotations

import os


def resolve_launch_path(path: str) -> str:
    """Absolute path of `path` (`~` expanded; relative to the launch directory)."""
    path = os.path.expanduser(str(path))
    if os.path.isabs(path):
        return path
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        from hydra.utils import to_absolute_path

        return to_absolute_path(path)
    return os.path.abspath(path)
