"""ident-lugre: the `lugre` friction option of ident_framework, as a separate distribution.

Installed, it registers `friction=lugre` through the `ident_framework` entry-point group and
ships its Hydra config in `ident_lugre/conf/friction/lugre.yaml`.
"""

from __future__ import annotations

from ident_framework.hookspecs import hookimpl

from .model import LugreFriction, LugreParams

__all__ = ["LugreFriction", "LugreParams", "register_friction_models"]


@hookimpl
def register_friction_models(register) -> None:
    register("lugre", LugreFriction, LugreParams)
