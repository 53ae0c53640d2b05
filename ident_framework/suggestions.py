"""The closest name to a misspelt one, for messages about config keys and CSV columns."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib similarity below which a name is not offered as "did you mean"


def closest(name: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The candidate most similar to `name` (difflib ratio ≥ cutoff, case-insensitive), or
    None when none is close."""
    pool = {candidate.lower(): candidate for candidate in candidates}
    found = difflib.get_close_matches(name.lower(), list(pool), n=1, cutoff=cutoff)
    return pool[found[0]] if found else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """' Did you mean 'x'?' (with its leading space), or '' when nothing is close."""
    match = closest(name, candidates)
    return f" Did you mean '{match}'?" if match else ""
