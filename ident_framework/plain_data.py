"""Plain Python values (for YAML and JSON) from nested numpy containers."""

from __future__ import annotations

import dataclasses
import math
from functools import cache
from typing import Any

import numpy as np


def to_plain(value: Any) -> Any:
    """Copy with numpy arrays and scalars as lists and floats, dataclasses as dicts and
    non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, np.generic):
        return to_plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_plain(dataclasses.asdict(value))
    return value


def yaml_text(document: Any) -> str:
    """`document` (plain values) as YAML, keys in their order: PyYAML's safe dumper, with
    libyaml's (faster) emitter when PyYAML has it."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(document, Dumper=dumper, sort_keys=False)


def config_yaml_text(cfg: Any) -> str:
    """`OmegaConf.to_yaml(cfg, resolve=True)`, with libyaml's emitter when PyYAML has it
    (OmegaConf's quoting of strings that would load as bools or numbers kept)."""
    import yaml
    from omegaconf import OmegaConf

    if not hasattr(yaml, "CDumper"):  # PyYAML without libyaml
        return OmegaConf.to_yaml(cfg, resolve=True)
    return yaml.dump(
        OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
        default_flow_style=False,
        allow_unicode=True,
        sort_keys=False,
        Dumper=_config_dumper(),
    )


@cache
def _config_dumper() -> type:
    """libyaml's dumper with OmegaConf's string representer (made once)."""
    import yaml
    from omegaconf._utils import OmegaConfDumper

    dumper = type("ConfigDumper", (yaml.CDumper,), {})
    dumper.add_representer(str, OmegaConfDumper.str_representer)
    return dumper
