"""Required config values left unset (`???` in a YAML, e.g. `robot=urdf` without
`robot.path`): which option needs which key, with an example command."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

# the keys that select an option inside a group's YAML
SELECTOR_KEYS = ("plugin", "model")
# required values of the built-in configs: what they are and an example value per option
REQUIRED_VALUES: dict[str, tuple[str, dict[str, str]]] = {
    "robot.path": ("the robot's model file", {"urdf": "arm.urdf", "mjcf": "arm.xml"}),
    "source.path": ("the CSV log to identify from", {"csv": "log.csv"}),
    "validation.path": ("the CSV log to validate on", {"csv": "val.csv"}),
    "source.host": ("the robot's IP address", {"rtde": "192.168.1.10"}),
}
COMMAND = "python -m ident_framework"


def _option_of(cfg: DictConfig, group: str) -> str | None:
    node = OmegaConf.select(cfg, group, throw_on_missing=False)
    if not isinstance(node, DictConfig):
        return None
    for selector in SELECTOR_KEYS:
        if selector in node and not OmegaConf.is_missing(node, selector):
            value = node[selector]
            if isinstance(value, str):
                return value
    return None


def missing_values_message(cfg: DictConfig) -> str | None:
    """None when every required value of `cfg` is set; otherwise which option needs which key
    and an example command giving them."""
    missing = sorted(k for k in OmegaConf.missing_keys(cfg) if not k.startswith("hydra."))
    if not missing:
        return None
    needs, example = [], []
    for key in missing:
        group = key.split(".", 1)[0]
        option = _option_of(cfg, group)
        what, examples = REQUIRED_VALUES.get(key, ("a value", {}))
        sample = examples.get(option or "", "VALUE")
        choice = f"{group}={option}" if option and "." in key else None
        needs.append(f"{choice + ' needs ' if choice else ''}{key} ({what})")
        if choice and choice not in example:
            example.append(choice)
        example.append(f"{key}={sample}")
    paths = any(key.rsplit(".", 1)[-1].endswith("path") for key in missing)
    return (
        f"Required config value{'s' if len(missing) > 1 else ''} not given: {'; '.join(needs)}. "
        f"Give {'them' if len(missing) > 1 else 'it'} on the command line, e.g. "
        f"`{COMMAND} {' '.join(example)}`"
        + (" (a relative path is taken from the directory you launch from)." if paths else ".")
    )
