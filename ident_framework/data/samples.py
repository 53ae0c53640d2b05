"""The recordings that ship with the package, addressed as `sample:NAME` in `source.path` and
`validation.path`: `sample_data/NAME.csv` for `source=csv`, the ROS 2 bag
`sample_data/NAME_bag/` for `source=rosbag` (made by `tools/make_samples.py`)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from ident_framework.errors import UserError

PREFIX = "sample:"
# the file or folder of sample NAME for each reader: (how it is named, what it is)
LAYOUTS = {"csv": ("{}.csv", "CSV"), "rosbag": ("{}_bag", "ROS 2 bag")}


def sample_folder() -> Path:
    """The installed `sample_data/` folder."""
    return Path(str(files("ident_framework").joinpath("sample_data")))


def sample_names(kind: str) -> list[str]:
    """The names of the samples `kind` ("csv" or "rosbag") can read, sorted."""
    pattern, _ = LAYOUTS[kind]
    head, tail = pattern.split("{}")
    folder = sample_folder()
    if not folder.is_dir():
        return []
    return sorted(
        p.name[len(head) : len(p.name) - len(tail)]
        for p in folder.iterdir()
        if p.name.startswith(head) and p.name.endswith(tail) and p.name != pattern.format("")
    )


def resolve_sample(entry: str, kind: str, key: str) -> str | None:
    """The path of the sample `entry` (`sample:NAME`) names, None when it is no sample
    reference; UserError naming `key` and the samples for an unknown NAME."""
    if not isinstance(entry, str) or not entry.startswith(PREFIX):
        return None
    name = entry[len(PREFIX) :].strip()
    pattern, label = LAYOUTS[kind]
    path = sample_folder() / pattern.format(name)
    if name and path.exists():
        return str(path)
    names = sample_names(kind)
    listed = ", ".join(f"sample:{n}" for n in names) or "none (installed without them)"
    raise UserError(
        f"{key}={entry}: no {label} sample named '{name}'. The samples that ship with "
        f"ident_framework: {listed}. E.g. {key}=sample:{names[0] if names else 'ident'}, or "
        "give the path of your own recording."
    )
