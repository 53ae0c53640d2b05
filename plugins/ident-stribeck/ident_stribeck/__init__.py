"""ident-stribeck: the `stribeck` friction option of ident_framework, as a separate distribution.

Installed, it registers `friction=stribeck` through the `ident_framework` entry-point group and
ships its Hydra config in `ident_stribeck/conf/friction/stribeck.yaml`.
"""

from __future__ import annotations

from ident_framework.hookspecs import hookimpl

from .model import StribeckFriction, StribeckParams

__all__ = ["StribeckFriction", "StribeckParams", "register_friction_models"]


@hookimpl
def register_friction_models(register) -> None:
    register("stribeck", StribeckFriction, StribeckParams)
