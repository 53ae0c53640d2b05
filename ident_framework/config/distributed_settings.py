"""The `distributed:` config section: exact distributed identification as map and reduce.

`mode=factor` (one job per part; a sweep over `distributed.part` on any Hydra launcher) reduces
part `part` of `parts` of the source's recording to sufficient statistics; `mode=combine` merges
the statistics of `inputs` and solves. Kept apart from `modes/distributed.py` so that
`run_config.py` can validate it without importing the pipeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class DistributedSettings:
    """part: the part this factor job reduces (0 .. parts-1, equal numbers of samples in time
    order); parts: how many parts the recording is split into; halo_s: s of recording on each
    side of a part that are preprocessed with it but not identified on (None: four times the
    low-pass filter's default trim plus the Savitzky-Golay window, enough for the filters'
    edge transients to decay below rounding, so the parts' preprocessed samples equal the whole
    recording's); inputs: mode=combine: factor job folders, statistics files or glob patterns
    (a sweep folder: all its jobs)."""

    part: int = 0
    parts: int = 1
    halo_s: float | None = None
    inputs: list[str] | None = None

    def __post_init__(self) -> None:
        for key in ("part", "parts"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{key} must be an integer, got {value!r}")
        if self.parts < 1:
            raise ValueError(f"parts must be >= 1, got {self.parts}")
        if not 0 <= self.part < self.parts:
            raise ValueError(f"part must be in 0 .. parts-1 = {self.parts - 1}, got {self.part}")
        if self.halo_s is not None and not (math.isfinite(self.halo_s) and self.halo_s >= 0):
            raise ValueError(f"halo_s must be >= 0 s or null, got {self.halo_s}")
        if self.inputs is not None:
            if isinstance(self.inputs, str):
                self.inputs = [self.inputs]
            self.inputs = [str(item) for item in self.inputs]
